/**
 * Debugging, RuntimeClass and security pod features through the kubelet process, the test API
 * server and the private containerd: an ephemeral (debug) container added through
 * pods/ephemeralcontainers runs in the target's PID namespace with logs and exec; RuntimeClass
 * handlers reach RunPodSandbox and an unknown class fails the sandbox; Localhost seccomp profiles are applied and a missing one refused; AppArmor
 * is refused where the host cannot enforce it. One kubelet serves every case, to keep the file short.
 */
import assert from 'node:assert/strict';
import https from 'node:https';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ContainerStatus, Pod } from '../../src/api/core-v1.js';
import { isAppArmorEnabled } from '../../src/kubelet/apparmor-validator.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';
import { exitCodeOf, wsExec } from '../unit/server/stream-clients.js';

const ns = `it-debug-${process.pid}`;
const WAIT_MS = 60_000;

function busybox(name: string, script: string): Record<string, unknown> {
  return { name, image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', script] };
}

/** One HTTPS request as the API server's admin. */
function apiRequest(
  server: TestApiServer,
  method: string,
  urlPath: string,
  body: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(urlPath, server.url);
    const payload = JSON.stringify(body);
    const req = https.request(url, {
      method,
      ca: server.caPem,
      agent: false,
      timeout: 10_000,
      headers: {
        authorization: `Bearer ${server.adminToken}`,
        'content-type': contentType,
        'content-length': Buffer.byteLength(payload),
      },
    });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** GET on the kubelet API (anonymous, AlwaysAllow). */
function kubeletGet(port: number, urlPath: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1',
      port,
      path: urlPath,
      rejectUnauthorized: false,
      agent: false,
      timeout: 10_000,
    });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${urlPath} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

describe('debug containers, RuntimeClass and security profiles through containerd', () => {
  let cri: CriInspector;
  let server: TestApiServer;
  let kubelet: KubeletProcess;
  let configDir: string;
  let port: number;

  const apiPod = (name: string): Pod | undefined =>
    server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
  const statusOf = (
    p: Pod | undefined,
    name: string,
    kind: 'containerStatuses' | 'ephemeralContainerStatuses',
  ) => (p?.status?.[kind] as ContainerStatus[] | undefined)?.find((c) => c.name === name);
  const createPod = (name: string, spec: Record<string, unknown>): void => {
    server.store.create('pods', {
      metadata: { name, namespace: ns },
      spec: { nodeName: kubelet.nodeName, terminationGracePeriodSeconds: 1, ...spec },
    });
  };
  const waitWithLog = async <T>(what: string, check: () => T | undefined): Promise<T> =>
    waitFor(what, check, WAIT_MS, 200).catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}\n--- kubelet log ---\n${(await kubelet.logs()).slice(-5000)}`,
      );
    });

  before(async () => {
    cri = await CriInspector.connect();
    configDir = await mkdtemp(path.join(os.tmpdir(), 'it-debug-'));
    const nodeName = `it-debug-node-${process.pid}`;
    server = await startTestApiServer({ nodeName });
    server.store.create('namespaces', { metadata: { name: ns } });
    const kubeconfig = path.join(configDir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    port = await freePort();
    kubelet = new KubeletProcess({
      nodeName,
      extraArgs: [
        `--kubeconfig=${kubeconfig}`,
        `--port=${port}`,
        '--address=127.0.0.1',
        '--anonymous-auth=true',
        '--authentication-token-webhook=false',
        '--authorization-mode=AlwaysAllow',
      ],
    });
    // Localhost profiles live under <root-dir>/seccomp; this one allows everything but is a filter.
    const profiles = path.join(kubelet.rootDir, 'seccomp', 'profiles');
    await mkdir(profiles, { recursive: true });
    await writeFile(path.join(profiles, 'allow.json'), JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW' }));
    await kubelet.start();
  });

  after(async () => {
    await kubelet?.dispose();
    await server?.stop();
    await cri?.removeNamespace(ns);
    cri?.close();
    await rm(configDir, { recursive: true, force: true });
  });

  test('kubectl debug: an ephemeral container joins the target, runs once, and serves logs and exec', async () => {
    createPod('target', { containers: [busybox('app', 'exec sleep 3601')] });
    await waitWithLog(
      'target to run',
      () => statusOf(apiPod('target'), 'app', 'containerStatuses')?.state?.running,
    );

    // What kubectl debug -it target --image=busybox --target=app sends.
    const patch = await apiRequest(
      server,
      'PATCH',
      `/api/v1/namespaces/${ns}/pods/target/ephemeralcontainers`,
      {
        spec: {
          ephemeralContainers: [
            {
              ...busybox('debugger', 'echo debug-started; ps; exec sleep 3600'),
              targetContainerName: 'app',
              stdin: true,
            },
          ],
        },
      },
      'application/strategic-merge-patch+json',
    );
    assert.equal(patch.status, 200, patch.body);

    const debuggerStatus = await waitWithLog('the debug container to run', () =>
      statusOf(apiPod('target'), 'debugger', 'ephemeralContainerStatuses')?.state?.running ? true : undefined,
    );
    assert.ok(debuggerStatus);
    const logs = await waitWithLog('the debug container log', async () => {
      const r = await kubeletGet(port, `/containerLogs/${ns}/target/debugger`);
      return r.status === 200 && r.body.includes('debug-started') ? r.body : undefined;
    });
    // The target's process namespace: its sleep is visible from the debug container.
    assert.match(logs ?? '', /sleep 3601/);
    const exec = await wsExec(
      `https://127.0.0.1:${port}/exec/${ns}/target/debugger?command=ps&output=1&error=1`,
      ['v5.channel.k8s.io'],
      { tls: { rejectUnauthorized: false } },
    );
    assert.equal(exitCodeOf(exec), 0);
    assert.match(exec.stdout, /sleep 3601/);

    // A debug container that ends is not started again, and the pod stays Running and Ready.
    const second = await apiRequest(
      server,
      'PATCH',
      `/api/v1/namespaces/${ns}/pods/target/ephemeralcontainers`,
      { spec: { ephemeralContainers: [busybox('oneshot', 'echo bye')] } },
      'application/strategic-merge-patch+json',
    );
    assert.equal(second.status, 200, second.body);
    const ended = await waitWithLog(
      'oneshot to end',
      () => statusOf(apiPod('target'), 'oneshot', 'ephemeralContainerStatuses')?.state?.terminated,
    );
    assert.equal(ended.exitCode, 0);
    await new Promise((r) => setTimeout(r, 2500));
    const runs = (await cri.podContainers(ns, 'target')).filter((c) => c.metadata.name === 'oneshot');
    assert.equal(runs.length, 1);
    const pod = apiPod('target');
    assert.equal(pod?.status?.phase, 'Running');
    assert.equal(pod?.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    assert.equal(statusOf(pod, 'oneshot', 'ephemeralContainerStatuses')?.restartCount, 0);

    // The API server refuses what an ephemeral container may not have.
    const bad = await apiRequest(
      server,
      'PATCH',
      `/api/v1/namespaces/${ns}/pods/target/ephemeralcontainers`,
      { spec: { ephemeralContainers: [{ ...busybox('app', 'true'), ports: [{ containerPort: 80 }] }] } },
      'application/strategic-merge-patch+json',
    );
    assert.equal(bad.status, 422, bad.body);
    const message = (JSON.parse(bad.body) as { message: string }).message;
    assert.match(message, /ports: Forbidden: cannot be set for an Ephemeral Container/);
    assert.match(message, /name: Duplicate value: "app"/);
  });

  test('RuntimeClass: a known class reaches RunPodSandbox with its handler; an unknown one fails the sandbox', async () => {
    server.store.create('runtimeclasses', {
      metadata: { name: 'test-rc' },
      handler: 'test-handler',
      overhead: { podFixed: { cpu: '10m', memory: '1Mi' } },
    });
    createPod('rc-known', { runtimeClassName: 'test-rc', containers: [busybox('app', 'exec sleep 3600')] });
    // The RuntimeClass admission plugin copies the class's overhead into the pod.
    assert.deepEqual((apiPod('rc-known')?.spec as { overhead?: unknown }).overhead, {
      cpu: '10m',
      memory: '1Mi',
    });

    server.store.create('runtimeclasses', { metadata: { name: 'doomed' }, handler: 'test-handler' });
    server.store.create('pods', {
      metadata: { name: 'rc-gone', namespace: ns },
      spec: { runtimeClassName: 'doomed', containers: [busybox('app', 'exec sleep 3600')] },
    });
    // The class goes away after the pod was admitted and before it is scheduled.
    server.store.delete('runtimeclasses', 'doomed', undefined, {});
    await new Promise((r) => setTimeout(r, 500));
    server.store.bindPod('rc-gone', ns, kubelet.nodeName);

    await waitWithLog(
      'rc-known to run',
      () => statusOf(apiPod('rc-known'), 'app', 'containerStatuses')?.state?.running,
    );
    const [sandbox] = (await cri.sandboxes(ns)).filter((s) => s.metadata.name === 'rc-known');
    assert.ok(sandbox);
    const { status } = await cri.conn.runtime.podSandboxStatus(sandbox.id, false);
    assert.equal(status.runtimeHandler, 'test-handler');

    const event = await waitWithLog('FailedCreatePodSandBox for rc-gone', () =>
      server.store
        .list('events', { namespace: ns })
        .items.find(
          (e) =>
            (e as { reason?: string }).reason === 'FailedCreatePodSandBox' &&
            (e as { involvedObject?: { name?: string } }).involvedObject?.name === 'rc-gone',
        ),
    );
    assert.equal(
      (event as { message?: string }).message,
      'Failed to create pod sandbox: runtimeclass.node.k8s.io "doomed" not found',
    );
    assert.equal((await cri.sandboxes(ns)).filter((s) => s.metadata.name === 'rc-gone').length, 0);
    const waiting = statusOf(apiPod('rc-gone'), 'app', 'containerStatuses')?.state?.waiting;
    assert.equal(waiting?.reason, 'ContainerCreating');
  });

  test('seccomp: a Localhost profile is applied, a missing one refused; AppArmor as the host allows', async () => {
    createPod('sc-local', {
      containers: [
        {
          ...busybox('app', 'grep Seccomp: /proc/self/status; exec sleep 3600'),
          securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/allow.json' } },
        },
      ],
    });
    createPod('sc-missing', {
      containers: [
        {
          ...busybox('app', 'exec sleep 3600'),
          securityContext: {
            seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/missing.json' },
          },
        },
      ],
    });
    createPod('aa', {
      securityContext: { appArmorProfile: { type: 'RuntimeDefault' } },
      containers: [busybox('app', 'exec sleep 3600')],
    });

    const log = await waitWithLog('sc-local to print its seccomp mode', async () => {
      const r = await kubeletGet(port, `/containerLogs/${ns}/sc-local/app`);
      return r.status === 200 && r.body.includes('Seccomp:') ? r.body : undefined;
    });
    assert.match(log ?? '', /^Seccomp:\s+2$/m);

    // The kubelet passes the path on; containerd cannot load it, so the container is not created.
    const waiting = await waitWithLog('sc-missing to be refused', () => {
      const w = statusOf(apiPod('sc-missing'), 'app', 'containerStatuses')?.state?.waiting;
      return w?.reason === 'CreateContainerError' ? w : undefined;
    });
    assert.match(waiting.message ?? '', /profiles\/missing\.json/);

    if (isAppArmorEnabled()) {
      await waitWithLog(
        'aa to run',
        () => statusOf(apiPod('aa'), 'app', 'containerStatuses')?.state?.running,
      );
    } else {
      const refused = await waitWithLog('aa to be refused', () =>
        apiPod('aa')?.status?.phase === 'Failed' ? apiPod('aa')?.status : undefined,
      );
      assert.equal(refused.reason, 'AppArmor');
      assert.equal(
        refused.message,
        'Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host',
      );
    }
  });
});
