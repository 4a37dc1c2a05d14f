import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { containerConfigFromCri, podSandboxConfigFromCri } from '../../../src/cri/convert.js';
import { CriNotFoundError, isNotFound } from '../../../src/cri/errors.js';
import { RemoteRuntimeService } from '../../../src/cri/remote-runtime.js';
import { FakeCriServer } from '../../../src/cri/testing/fake-cri-server.js';
import type { PodSandboxConfig } from '../../../src/cri/types.js';
import { isKubeletError, KubeletError } from '../../../src/lib/errors.js';
import { fullContainerConfig, fullSandboxConfig, simpleContainerConfig } from './cri-fixtures.js';

function podNetworkSandbox(name: string): PodSandboxConfig {
  const config = fullSandboxConfig(name);
  config.linux!.securityContext!.namespaceOptions = { network: 'POD', pid: 'CONTAINER', ipc: 'POD' };
  return config;
}

function assertCode(code: string) {
  return (err: unknown) => {
    assert.ok(isKubeletError(err), `expected a KubeletError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  };
}

describe('RemoteRuntimeService against the fake CRI server', () => {
  let server: FakeCriServer;
  let runtime: RemoteRuntimeService;

  before(async () => {
    server = await FakeCriServer.start();
    runtime = new RemoteRuntimeService(server.endpoint, { runtimeRequestTimeoutMs: 5000 });
  });

  after(async () => {
    runtime.close();
    await server.close();
  });

  test('Version announces CRI 0.1.0 and returns what the runtime says', async () => {
    const version = await runtime.version();
    assert.deepEqual(version, {
      version: '0.1.0',
      runtimeName: 'fake-cri',
      runtimeVersion: '0.1.0',
      runtimeApiVersion: 'v1',
    });
    assert.equal(server.lastRequests.get('Version')?.version, '0.1.0');
  });

  test('a sandbox goes through run, status, list, stop and remove, then is NotFound', async () => {
    const config = podNetworkSandbox('lifecycle');
    const id = await runtime.runPodSandbox(config, 'runc');
    const sent = server.lastRequests.get('RunPodSandbox')!;
    assert.equal(sent.runtimeHandler, 'runc');
    assert.deepEqual(podSandboxConfigFromCri(sent.config as never), config);

    const { status } = await runtime.podSandboxStatus(id);
    assert.equal(status.id, id);
    assert.equal(status.state, 'SANDBOX_READY');
    assert.deepEqual(status.metadata, config.metadata);
    assert.deepEqual(status.labels, config.labels);
    assert.deepEqual(status.annotations, config.annotations);
    assert.equal(status.runtimeHandler, 'runc');
    assert.match(status.network?.ip ?? '', /^10\.88\./);
    assert.ok(status.createdAt > 1e18, 'createdAt is in nanoseconds');

    const byLabel = await runtime.listPodSandbox({
      labelSelector: { 'io.kubernetes.pod.name': 'lifecycle' },
    });
    assert.deepEqual(
      byLabel.map((s) => s.id),
      [id],
    );
    assert.equal((await runtime.listPodSandbox({ id, state: 'SANDBOX_NOTREADY' })).length, 0);
    assert.equal((await runtime.listPodSandbox({ id, state: 'SANDBOX_READY' })).length, 1);

    await runtime.stopPodSandbox(id);
    assert.equal((await runtime.podSandboxStatus(id)).status.state, 'SANDBOX_NOTREADY');
    await runtime.removePodSandbox(id);
    await assert.rejects(runtime.podSandboxStatus(id), (err) => {
      assert.ok(err instanceof CriNotFoundError);
      assert.ok(isNotFound(err));
      assert.match(err.message, /not found/);
      assert.equal((err.cause as { code: number }).code, GrpcStatus.NOT_FOUND);
      return true;
    });
    await runtime.removePodSandbox(id); // idempotent, as the CRI requires
  });

  test('a container goes through create, start, list, status, exit and remove', async () => {
    const sandboxConfig = podNetworkSandbox('ctr');
    const sandboxId = await runtime.runPodSandbox(sandboxConfig, '');
    const config = fullContainerConfig('app');
    const id = await runtime.createContainer(sandboxId, config, sandboxConfig);
    const sent = server.lastRequests.get('CreateContainer')!;
    assert.equal(sent.podSandboxId, sandboxId);
    assert.deepEqual(containerConfigFromCri(sent.config as never), config);
    assert.deepEqual(podSandboxConfigFromCri(sent.sandboxConfig as never), sandboxConfig);

    assert.equal((await runtime.containerStatus(id)).status.state, 'CONTAINER_CREATED');
    await runtime.startContainer(id);

    const listed = await runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } });
    assert.equal(listed.length, 1);
    assert.deepEqual(listed[0], {
      id,
      podSandboxId: sandboxId,
      metadata: config.metadata,
      image: config.image,
      imageRef: server.findImage('busybox')!.id,
      state: 'CONTAINER_RUNNING',
      createdAt: listed[0]!.createdAt,
      labels: config.labels,
      annotations: config.annotations,
    });

    const running = (await runtime.containerStatus(id)).status;
    assert.equal(running.state, 'CONTAINER_RUNNING');
    assert.ok(running.startedAt >= running.createdAt && running.startedAt > 0);
    assert.equal(running.finishedAt, 0);
    assert.deepEqual(running.mounts, config.mounts);
    assert.equal(running.logPath, `${sandboxConfig.logDirectory}/app/0.log`);

    server.setContainerState(id, 'CONTAINER_EXITED', { exitCode: 2, message: 'bad flag' });
    const exited = (await runtime.containerStatus(id)).status;
    assert.equal(exited.state, 'CONTAINER_EXITED');
    assert.equal(exited.exitCode, 2);
    assert.equal(exited.reason, 'Error');
    assert.equal(exited.message, 'bad flag');
    assert.ok(exited.finishedAt >= exited.startedAt);
    assert.deepEqual(
      (await runtime.listContainers({ podSandboxId: sandboxId, state: 'CONTAINER_EXITED' })).map((c) => c.id),
      [id],
    );
    assert.equal(
      (await runtime.listContainers({ podSandboxId: sandboxId, state: 'CONTAINER_RUNNING' })).length,
      0,
    );

    await runtime.removeContainer(id);
    await assert.rejects(runtime.containerStatus(id), CriNotFoundError);
    await runtime.removeContainer(id);
    await runtime.removePodSandbox(sandboxId);
  });

  test('a container it created has its log path known without a call, as ContainerStatus reports it, until removed', async () => {
    const sandboxConfig = podNetworkSandbox('logs');
    const sandboxId = await runtime.runPodSandbox(sandboxConfig, '');
    const id = await runtime.createContainer(sandboxId, fullContainerConfig('logged'), sandboxConfig);
    assert.equal(runtime.createdContainerLogPath(id), (await runtime.containerStatus(id)).status.logPath);
    assert.equal(runtime.createdContainerLogPath('not-made-here'), undefined);
    await runtime.removeContainer(id);
    assert.equal(runtime.createdContainerLogPath(id), undefined);
    await runtime.removePodSandbox(sandboxId);
  });

  test('StopContainer sends the grace period; ExecSync returns bytes, exit code and the timeout it was given', async () => {
    const sandboxConfig = podNetworkSandbox('exec');
    const sandboxId = await runtime.runPodSandbox(sandboxConfig, '');
    const id = await runtime.createContainer(sandboxId, simpleContainerConfig('sh'), sandboxConfig);
    await runtime.startContainer(id);

    const hi = await runtime.execSync(id, ['echo', 'hi'], 7);
    assert.deepEqual(hi, { stdout: Buffer.from('hi\n'), stderr: Buffer.alloc(0), exitCode: 0 });
    assert.deepEqual(server.lastRequests.get('ExecSync'), {
      containerId: id,
      cmd: ['echo', 'hi'],
      timeout: 7n, // int64 on the wire
    });

    const binary = Buffer.from([0, 255, 10, 128]);
    const defaultExec = server.execHandler;
    server.execHandler = () => ({ stdout: binary, stderr: Buffer.from('warn\n'), exitCode: 3 });
    try {
      const out = await runtime.execSync(id, ['cat', '/bin/x'], 1);
      assert.ok(out.stdout.equals(binary));
      assert.equal(out.stderr.toString(), 'warn\n');
      assert.equal(out.exitCode, 3);
    } finally {
      server.execHandler = defaultExec;
    }

    await runtime.stopContainer(id, 30);
    assert.equal(server.lastRequests.get('StopContainer')?.timeout, 30n);
    const status = (await runtime.containerStatus(id)).status;
    assert.equal(status.state, 'CONTAINER_EXITED');
    assert.equal(status.exitCode, 137);
    await runtime.stopContainer(id, 0); // stopping a stopped container is not an error
    await assert.rejects(runtime.stopContainer('no-such-container', 0), CriNotFoundError);
    await runtime.removePodSandbox(sandboxId);
  });

  test('streaming URLs, resource updates, log reopening, stats and runtime status', async () => {
    const sandboxConfig = podNetworkSandbox('misc');
    const sandboxId = await runtime.runPodSandbox(sandboxConfig, '');
    const id = await runtime.createContainer(sandboxId, simpleContainerConfig('misc'), sandboxConfig);
    await runtime.startContainer(id);

    assert.match(
      await runtime.exec({
        containerId: id,
        cmd: ['sh'],
        tty: true,
        stdin: true,
        stdout: true,
        stderr: false,
      }),
      /^http:\/\//,
    );
    assert.deepEqual(server.lastRequests.get('Exec'), {
      containerId: id,
      cmd: ['sh'],
      tty: true,
      stdin: true,
      stdout: true,
      stderr: false,
    });
    assert.match(
      await runtime.attach({ containerId: id, stdin: false, tty: false, stdout: true, stderr: true }),
      /attach/,
    );
    assert.match(await runtime.portForward({ podSandboxId: sandboxId, port: [80, 443] }), /portforward/);
    assert.deepEqual(server.lastRequests.get('PortForward'), { podSandboxId: sandboxId, port: [80, 443] });

    const resources = fullContainerConfig().linux!.resources!;
    await runtime.updateContainerResources(id, resources);
    assert.deepEqual(server.containers.get(id)?.resources, resources);

    await runtime.reopenContainerLog(id);

    const stats = await runtime.containerStats(id);
    assert.equal(stats?.attributes.id, id);
    assert.ok((stats?.memory?.workingSetBytes?.value ?? 0) > 0);
    const all = await runtime.listContainerStats({ podSandboxId: sandboxId });
    assert.deepEqual(
      all.map((s) => s.attributes.id),
      [id],
    );

    const { status } = await runtime.status(true);
    assert.deepEqual(
      status.conditions.map((c) => [c.type, c.status]),
      [
        ['RuntimeReady', true],
        ['NetworkReady', true],
      ],
    );
    const saved = server.runtimeConditions;
    server.runtimeConditions = saved.slice(0, 1);
    try {
      await assert.rejects(runtime.status(), assertCode('CRI_ERROR'));
    } finally {
      server.runtimeConditions = saved;
    }
    await runtime.removePodSandbox(sandboxId);
  });

  test('gRPC statuses map to KubeletError codes and keep the runtime message and the cause', async () => {
    server.failNext(
      'StartContainer',
      GrpcStatus.UNKNOWN,
      'failed to create shim task: OCI runtime create failed',
    );
    await assert.rejects(runtime.startContainer('x'), (err) => {
      assert.ok(err instanceof KubeletError && !(err instanceof CriNotFoundError));
      assert.equal(err.code, 'CRI_ERROR');
      assert.equal(err.message, 'failed to create shim task: OCI runtime create failed');
      assert.equal((err.cause as { code: number }).code, GrpcStatus.UNKNOWN);
      return true;
    });
    server.failNext('ListContainers', GrpcStatus.UNAVAILABLE, 'shutting down');
    await assert.rejects(runtime.listContainers(), (err) => {
      assertCode('CRI_UNAVAILABLE')(err);
      assert.match((err as Error).message, new RegExp(server.endpoint.replace(/[/.]/g, '\\$&')));
      return true;
    });
    server.failNext('RemoveContainer', GrpcStatus.NOT_FOUND, 'container "x" not found');
    await assert.rejects(runtime.removeContainer('x'), CriNotFoundError);
    server.failNext('Version', GrpcStatus.DEADLINE_EXCEEDED, 'too slow inside');
    await assert.rejects(runtime.version(), assertCode('CRI_DEADLINE_EXCEEDED'));
  });

  test('a runtime response missing required fields is refused as CRI_ERROR', async () => {
    const config = podNetworkSandbox('broken');
    config.metadata.uid = '';
    const id = server.addSandbox(config);
    await assert.rejects(runtime.podSandboxStatus(id), (err) => {
      assertCode('CRI_ERROR')(err);
      assert.match((err as Error).message, /metadata/);
      return true;
    });
    server.sandboxes.delete(id);
  });

  test('a call past its deadline fails with CRI_DEADLINE_EXCEEDED, not later', async () => {
    server.setDelay('ListContainers', 3000);
    try {
      const started = Date.now();
      await assert.rejects(
        runtime.listContainers(undefined, { timeoutMs: 100 }),
        assertCode('CRI_DEADLINE_EXCEEDED'),
      );
      assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
    } finally {
      server.setDelay('ListContainers', 0);
    }
  });

  test('runtimeRequestTimeoutMs bounds plain calls; StopContainer and ExecSync add their own time to it', async () => {
    const quick = new RemoteRuntimeService(server.endpoint, { runtimeRequestTimeoutMs: 150 });
    const sandboxConfig = podNetworkSandbox('deadlines');
    const sandboxId = await runtime.runPodSandbox(sandboxConfig, '');
    const id = await runtime.createContainer(sandboxId, simpleContainerConfig('d'), sandboxConfig);
    await runtime.startContainer(id);
    try {
      server.setDelay('ContainerStatus', 600);
      await assert.rejects(quick.containerStatus(id), assertCode('CRI_DEADLINE_EXCEEDED'));
      server.setDelay('ContainerStatus', 0);

      server.setDelay('ExecSync', 600);
      await assert.rejects(quick.execSync(id, ['true'], 0), assertCode('CRI_DEADLINE_EXCEEDED'));
      assert.equal((await quick.execSync(id, ['echo', 'ok'], 1)).stdout.toString(), 'ok\n');

      server.setDelay('StopContainer', 600);
      await assert.rejects(quick.stopContainer(id, 0), assertCode('CRI_DEADLINE_EXCEEDED'));
      await quick.stopContainer(id, 1);
    } finally {
      server.setDelay('ContainerStatus', 0);
      server.setDelay('ExecSync', 0);
      server.setDelay('StopContainer', 0);
      quick.close();
      await runtime.removePodSandbox(sandboxId);
    }
  });

  test('aborting the signal cancels the call and rejects with the signal reason', async () => {
    server.setDelay('ListPodSandbox', 5000);
    try {
      const controller = new AbortController();
      const reason = new Error('kubelet is shutting down');
      setTimeout(() => controller.abort(reason), 50);
      const started = Date.now();
      await assert.rejects(
        runtime.listPodSandbox(undefined, { signal: controller.signal }),
        (err) => err === reason,
      );
      assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);

      const before = server.callCounts.get('ListPodSandbox');
      await assert.rejects(runtime.listPodSandbox(undefined, { signal: AbortSignal.abort() }), {
        name: 'AbortError',
      });
      assert.equal(server.callCounts.get('ListPodSandbox'), before, 'an aborted signal makes no call');
    } finally {
      server.setDelay('ListPodSandbox', 0);
    }
  });

  test('lists a thousand containers in one call', async () => {
    const sandboxIds: string[] = [];
    for (let p = 0; p < 10; p++) {
      const sandboxId = server.addSandbox(podNetworkSandbox(`bulk-${p}`));
      sandboxIds.push(sandboxId);
      for (let c = 0; c < 100; c++) {
        const config = fullContainerConfig(`c${c}`);
        config.labels['bulk'] = 'yes';
        server.addContainer(sandboxId, config);
      }
    }
    try {
      const all = await runtime.listContainers({ labelSelector: { bulk: 'yes' } });
      assert.equal(all.length, 1000);
      assert.ok(
        all.every(
          (c) =>
            c.state === 'CONTAINER_RUNNING' && c.annotations['io.kubernetes.container.hash'] === 'abc123',
        ),
      );
      assert.equal((await runtime.listContainers({ podSandboxId: sandboxIds[3] })).length, 100);
    } finally {
      for (const id of sandboxIds) await runtime.removePodSandbox(id);
    }
  });

  test('after close() calls fail with CRI_UNAVAILABLE', async () => {
    const closing = new RemoteRuntimeService(server.endpoint);
    await closing.version();
    closing.close();
    await assert.rejects(closing.version(), assertCode('CRI_UNAVAILABLE'));
  });
});
