/**
 * The CRI client against the project's private containerd (scripts/runtime-stack.sh up): one pod
 * sandbox and one busybox container taken through their whole life. Everything it creates carries
 * a fresh pod UID and is removed in after(), whatever happened.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectRuntime, type RuntimeConnection } from '../../src/cri/connect-runtime.js';
import { CriNotFoundError, isNotFound } from '../../src/cri/errors.js';
import { FakeCriServer } from '../../src/cri/testing/fake-cri-server.js';
import type { ContainerConfig, PodSandboxConfig } from '../../src/cri/types.js';
import { waitFor } from '../helpers/wait.js';

const endpoint = process.env.CONTAINER_RUNTIME_ENDPOINT ?? 'unix:///run/tskubelet/containerd.sock';
const BUSYBOX = 'docker.io/library/busybox:latest';
const CALL_TIMEOUT_MS = 60_000;

describe(`CRI client against containerd at ${endpoint}`, () => {
  let connection: RuntimeConnection;
  let logDir: string;
  const podUid = randomUUID();
  const podName = `cri-it-${podUid.slice(0, 8)}`;
  const podNamespace = 'tskubelet-test';
  const sandboxIds: string[] = [];
  const containerIds: string[] = [];
  let sandboxConfig: PodSandboxConfig;
  let sandboxId: string;
  let containerId: string;

  before(async () => {
    logDir = mkdtempSync(join(tmpdir(), 'cri-it-logs-'));
    connection = await connectRuntime(endpoint, {
      signal: AbortSignal.timeout(30_000),
      retryInitialDelayMs: 500,
      retryMaxDelayMs: 2000,
    }).catch((err: unknown) => {
      throw new Error(
        `no CRI runtime answered at ${endpoint} within 30 s: is the stack up (scripts/runtime-stack.sh up)?`,
        {
          cause: err,
        },
      );
    });
    sandboxConfig = {
      metadata: { name: podName, uid: podUid, namespace: podNamespace, attempt: 0 },
      hostname: podName,
      logDirectory: join(logDir, `${podNamespace}_${podName}_${podUid}`),
      portMappings: [],
      labels: {
        'io.kubernetes.pod.name': podName,
        'io.kubernetes.pod.namespace': podNamespace,
        'io.kubernetes.pod.uid': podUid,
      },
      annotations: { 'kubernetes.io/config.source': 'cri-integration-test' },
      linux: {
        // Empty: containerd puts the sandbox under its own default parent, whatever the cgroup driver.
        cgroupParent: '',
        securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } },
        sysctls: {},
      },
    };
  });

  after(async () => {
    const { runtime } = connection ?? {};
    if (runtime) {
      for (const id of containerIds) {
        await runtime.removeContainer(id, { timeoutMs: CALL_TIMEOUT_MS }).catch(() => undefined);
      }
      for (const id of sandboxIds) {
        await runtime.stopPodSandbox(id, { timeoutMs: CALL_TIMEOUT_MS }).catch(() => undefined);
        await runtime.removePodSandbox(id, { timeoutMs: CALL_TIMEOUT_MS }).catch(() => undefined);
      }
    }
    connection?.close();
    rmSync(logDir, { recursive: true, force: true });
  });

  test('Version reports containerd speaking CRI v1', async () => {
    assert.equal(connection.version.version, '0.1.0');
    assert.equal(connection.version.runtimeName, 'containerd');
    assert.equal(connection.version.runtimeApiVersion, 'v1');
    const { status } = await connection.runtime.status();
    assert.ok(status.conditions.some((c) => c.type === 'RuntimeReady' && c.status));
  });

  test('ImageStatus finds busybox and returns undefined for an image that is not there', async () => {
    const busybox = await connection.images.imageStatus({ image: BUSYBOX });
    assert.ok(busybox, `${BUSYBOX} is not imported into containerd`);
    assert.match(busybox.id, /^sha256:[0-9a-f]{64}$/);
    assert.ok(busybox.repoTags.includes(BUSYBOX));
    assert.ok(busybox.size > 0);
    assert.equal(
      await connection.images.imageStatus({ image: 'example.invalid/tskubelet/missing:0' }),
      undefined,
    );
    const filesystems = await connection.images.imageFsInfo();
    assert.ok(filesystems.length > 0 && filesystems[0]!.timestamp > 0);
  });

  test('RunPodSandbox starts a ready sandbox with an IP', async () => {
    sandboxId = await connection.runtime.runPodSandbox(sandboxConfig, '', { timeoutMs: 4 * CALL_TIMEOUT_MS });
    sandboxIds.push(sandboxId);
    const { status } = await connection.runtime.podSandboxStatus(sandboxId);
    assert.equal(status.state, 'SANDBOX_READY');
    assert.deepEqual(status.metadata, sandboxConfig.metadata);
    assert.equal(status.labels['io.kubernetes.pod.uid'], podUid);
    assert.equal(status.annotations['kubernetes.io/config.source'], 'cri-integration-test');
    assert.match(
      status.network?.ip ?? '',
      /^\d+\.\d+\.\d+\.\d+$|:/,
      `sandbox IP: ${JSON.stringify(status.network)}`,
    );
    assert.ok(status.createdAt > 1e18);
    const listed = await connection.runtime.listPodSandbox({
      labelSelector: { 'io.kubernetes.pod.uid': podUid },
    });
    assert.deepEqual(
      listed.map((s) => [s.id, s.state]),
      [[sandboxId, 'SANDBOX_READY']],
    );
  });

  test('a busybox container is created, started, listed by label and RUNNING', async () => {
    const config: ContainerConfig = {
      metadata: { name: 'sleeper', attempt: 0 },
      image: { image: BUSYBOX },
      command: ['sleep', '3600'],
      args: [],
      workingDir: '',
      envs: [{ key: 'GREETING', value: 'hello' }],
      mounts: [],
      labels: { ...sandboxConfig.labels, 'io.kubernetes.container.name': 'sleeper' },
      annotations: { 'io.kubernetes.container.restartCount': '0' },
      logPath: 'sleeper/0.log',
      stdin: false,
      stdinOnce: false,
      tty: false,
      linux: {},
    };
    containerId = await connection.runtime.createContainer(sandboxId, config, sandboxConfig);
    containerIds.push(containerId);
    await connection.runtime.startContainer(containerId);

    const listed = await connection.runtime.listContainers({
      labelSelector: { 'io.kubernetes.pod.uid': podUid, 'io.kubernetes.container.name': 'sleeper' },
    });
    assert.equal(listed.length, 1);
    assert.equal(listed[0]!.id, containerId);
    assert.equal(listed[0]!.podSandboxId, sandboxId);
    assert.equal(listed[0]!.state, 'CONTAINER_RUNNING');

    const { status } = await connection.runtime.containerStatus(containerId);
    assert.equal(status.state, 'CONTAINER_RUNNING');
    assert.equal(status.metadata.name, 'sleeper');
    assert.ok(status.startedAt > 0 && status.startedAt >= status.createdAt);
    assert.equal(status.finishedAt, 0);
    assert.match(status.imageRef, /sha256:/);
    assert.equal(status.logPath, join(sandboxConfig.logDirectory, 'sleeper/0.log'));
    assert.equal(status.annotations['io.kubernetes.container.restartCount'], '0');
  });

  test('ExecSync returns the output and exit code of a command', async () => {
    const hi = await connection.runtime.execSync(containerId, ['echo', 'hi'], 10);
    assert.equal(hi.stdout.toString(), 'hi\n');
    assert.equal(hi.stderr.length, 0);
    assert.equal(hi.exitCode, 0);
    const env = await connection.runtime.execSync(
      containerId,
      ['sh', '-c', 'echo "$GREETING" >&2; exit 3'],
      10,
    );
    assert.equal(env.stderr.toString(), 'hello\n');
    assert.equal(env.exitCode, 3);
  });

  test('StopContainer with a 1 s grace period leaves the container EXITED', async () => {
    await connection.runtime.stopContainer(containerId, 1);
    const status = await waitFor(
      'the container to exit',
      async () => {
        const { status: s } = await connection.runtime.containerStatus(containerId);
        return s.state === 'CONTAINER_EXITED' ? s : undefined;
      },
      10_000,
      100,
    );
    assert.ok(status.finishedAt >= status.startedAt);
    // Ended by a signal: SIGTERM (143), or SIGKILL (137) if the process ignored SIGTERM for the grace period.
    assert.ok([137, 143].includes(status.exitCode), `exit code ${status.exitCode}`);
    await connection.runtime.stopContainer(containerId, 1); // stopping again is not an error
  });

  test('removing the container and the sandbox leaves nothing: status is NotFound', async () => {
    await connection.runtime.removeContainer(containerId);
    await assert.rejects(connection.runtime.containerStatus(containerId), CriNotFoundError);
    await connection.runtime.removeContainer(containerId); // idempotent

    await connection.runtime.stopPodSandbox(sandboxId);
    assert.equal((await connection.runtime.podSandboxStatus(sandboxId)).status.state, 'SANDBOX_NOTREADY');
    await connection.runtime.removePodSandbox(sandboxId);
    await assert.rejects(connection.runtime.podSandboxStatus(sandboxId), (err) => isNotFound(err));
    await connection.runtime.removePodSandbox(sandboxId); // idempotent
    assert.equal(
      (await connection.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': podUid } }))
        .length,
      0,
    );
  });
});

/** What a call came to, in terms a caller branches on: success, or the error class and gRPC code. */
async function outcome(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return 'ok';
  } catch (err) {
    const grpcCode = (err as { cause?: { code?: number } }).cause?.code;
    return `${(err as Error).constructor.name}(${grpcCode})`;
  }
}

/** The error cases the kubelet meets, run against one runtime; every sandbox it makes is removed before it returns. */
async function edgeCaseOutcomes(
  connection: RuntimeConnection,
  logDir: string,
): Promise<Record<string, string>> {
  const { runtime } = connection;
  const uid = randomUUID();
  const sandboxConfig: PodSandboxConfig = {
    metadata: { name: 'parity', uid, namespace: 'tskubelet-test', attempt: 0 },
    hostname: 'parity',
    logDirectory: join(logDir, uid),
    portMappings: [],
    labels: { 'io.kubernetes.pod.uid': uid },
    annotations: {},
    linux: { cgroupParent: '', sysctls: {} },
  };
  const container = (name: string, image = BUSYBOX): ContainerConfig => ({
    metadata: { name, attempt: 0 },
    image: { image },
    command: ['sleep', '3600'],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: { 'io.kubernetes.pod.uid': uid },
    annotations: {},
    logPath: `${name}/0.log`,
    stdin: false,
    stdinOnce: false,
    tty: false,
  });
  const missing = 'f'.repeat(64);
  const out: Record<string, string> = {};
  out['stopPodSandbox of a missing sandbox'] = await outcome(runtime.stopPodSandbox(missing));
  out['removePodSandbox of a missing sandbox'] = await outcome(runtime.removePodSandbox(missing));
  out['stopContainer of a missing container'] = await outcome(runtime.stopContainer(missing, 0));
  out['removeContainer of a missing container'] = await outcome(runtime.removeContainer(missing));
  out['execSync in a missing container'] = await outcome(runtime.execSync(missing, ['true'], 1));
  const sandboxId = await runtime.runPodSandbox(sandboxConfig, '', { timeoutMs: 4 * CALL_TIMEOUT_MS });
  try {
    const id = await runtime.createContainer(sandboxId, container('a'), sandboxConfig);
    out['createContainer with a name in use'] = await outcome(
      runtime.createContainer(sandboxId, container('a'), sandboxConfig),
    );
    out['createContainer of a missing image'] = await outcome(
      runtime.createContainer(sandboxId, container('b', 'example.invalid/missing:0'), sandboxConfig),
    );
    out['execSync in a created container'] = await outcome(runtime.execSync(id, ['true'], 1));
    await runtime.startContainer(id);
    out['startContainer twice'] = await outcome(runtime.startContainer(id));
    await runtime.stopPodSandbox(sandboxId);
    const { status } = await runtime.containerStatus(id);
    out['container state after stopPodSandbox'] = status.state;
    out['createContainer in a stopped sandbox'] = await outcome(
      runtime.createContainer(sandboxId, container('c'), sandboxConfig),
    );
    await runtime.removePodSandbox(sandboxId);
    out['containerStatus after removePodSandbox'] = await outcome(runtime.containerStatus(id));
  } finally {
    await runtime.stopPodSandbox(sandboxId).catch(() => undefined);
    await runtime.removePodSandbox(sandboxId).catch(() => undefined);
  }
  return out;
}

describe('the fake CRI server answers edge cases as containerd does', () => {
  test('same outcomes, call by call', async () => {
    const logDir = mkdtempSync(join(tmpdir(), 'cri-parity-'));
    const fake = await FakeCriServer.start();
    const connections: RuntimeConnection[] = [];
    try {
      const real = await connectRuntime(endpoint, {
        signal: AbortSignal.timeout(30_000),
        retryInitialDelayMs: 500,
      });
      connections.push(real);
      const simulated = await connectRuntime(fake.endpoint, { signal: AbortSignal.timeout(5000) });
      connections.push(simulated);
      const expected = await edgeCaseOutcomes(real, logDir);
      assert.equal(
        expected['stopContainer of a missing container'],
        'CriNotFoundError(5)',
        'sanity check of the real runtime',
      );
      assert.deepEqual(await edgeCaseOutcomes(simulated, logDir), expected);
    } finally {
      for (const c of connections) c.close();
      await fake.close();
      rmSync(logDir, { recursive: true, force: true });
    }
  });
});
