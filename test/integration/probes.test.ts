/**
 * Liveness, readiness and startup probes end to end: the built kubelet with a manifest folder, the
 * private containerd (scripts/runtime-stack.sh) and busybox pods whose health changes on a schedule.
 * The kubelet probes the pods over their CNI addresses and through CRI ExecSync, exactly as it would
 * on a node. Each test runs its own kubelet and removes the sandboxes it made, by namespace.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import type { Container, ContainerStatus, Pod, PodCondition } from '../../src/api/core-v1.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-probes-${process.pid}`;

function pod(name: string, containers: Container[], extra: Partial<Pod['spec']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: { terminationGracePeriodSeconds: 2, containers, ...extra },
  };
}

function busybox(name: string, script: string, extra: Partial<Container> = {}): Container {
  return { name, image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', script], ...extra };
}

function containerStatus(p: Pod | undefined, name: string): ContainerStatus | undefined {
  return p?.status?.containerStatuses?.find((c) => c.name === name);
}

function condition(p: Pod | undefined, type: string): PodCondition | undefined {
  return p?.status?.conditions?.find((c) => c.type === type);
}

describe('probes through the kubelet and containerd', () => {
  let cri: CriInspector;
  let kubelet: KubeletProcess | undefined;

  before(async () => {
    cri = await CriInspector.connect();
  });

  afterEach(async () => {
    await kubelet?.dispose();
    kubelet = undefined;
    await cri.removeNamespace(ns);
  });

  after(() => cri.close());

  async function startKubelet(): Promise<KubeletProcess> {
    kubelet = new KubeletProcess();
    await kubelet.start();
    return kubelet;
  }

  test('a readiness exec probe keeps the pod not Ready until its file appears', async () => {
    const k = await startKubelet();
    await k.writeManifest(
      'ready.yaml',
      pod('ready', [
        busybox('app', 'sleep 8; touch /tmp/ready; exec sleep 3600', {
          readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1, failureThreshold: 1 },
        }),
      ]),
    );

    // Running, but not ready: the probe has not passed yet.
    const notReady = await waitFor(
      'ready to be Running and not Ready',
      async () => {
        const p = await k.pod('ready');
        const cs = containerStatus(p, 'app');
        return cs?.state?.running && cs.ready === false ? p : undefined;
      },
      60_000,
    );
    assert.equal(condition(notReady, 'Ready')?.status, 'False');
    assert.equal(condition(notReady, 'ContainersReady')?.status, 'False');
    assert.equal(containerStatus(notReady, 'app')?.started, true);

    const ready = await waitFor(
      'ready to become Ready',
      async () => {
        const p = await k.pod('ready');
        return condition(p, 'Ready')?.status === 'True' ? p : undefined;
      },
      60_000,
    );
    const cs = containerStatus(ready, 'app')!;
    assert.equal(cs.ready, true);
    assert.equal(cs.restartCount, 0);
    assert.equal(condition(ready, 'ContainersReady')?.status, 'True');
    // The failing probes were reported with upstream's wording.
    assert.match(await k.logs(), /Readiness probe failed: cat: (can't open '\/tmp\/ready'|\/tmp\/ready)/);
  });

  test('a liveness httpGet probe that starts failing restarts the container', async () => {
    const k = await startKubelet();
    // busybox httpd serves /healthz for 5 s, then the file goes and it answers 404.
    await k.writeManifest(
      'live.yaml',
      pod('live', [
        busybox(
          'web',
          'mkdir -p /www; echo ok > /www/healthz; (sleep 5; rm /www/healthz) & exec httpd -f -p 8080 -h /www',
          {
            ports: [{ name: 'http', containerPort: 8080 }],
            livenessProbe: {
              httpGet: { path: '/healthz', port: 'http' },
              periodSeconds: 1,
              failureThreshold: 2,
              terminationGracePeriodSeconds: 2,
            },
          },
        ),
      ]),
    );
    const live = await waitFor(
      'live to be Running',
      async () => {
        const p = await k.pod('live');
        return containerStatus(p, 'web')?.state?.running ? p : undefined;
      },
      60_000,
    );
    const firstId = containerStatus(live, 'web')!.containerID;
    assert.equal(containerStatus(live, 'web')?.ready, true);

    const restarted = await waitFor(
      'web to be restarted by its liveness probe',
      async () => {
        const p = await k.pod('live');
        const cs = containerStatus(p, 'web');
        return cs && cs.restartCount >= 1 && cs.state?.running ? p : undefined;
      },
      90_000,
    );
    const cs = containerStatus(restarted, 'web')!;
    assert.notEqual(cs.containerID, firstId);
    assert.ok(cs.lastState?.terminated, 'the killed container shows as the last state');

    const logs = await k.logs();
    assert.match(logs, /Unhealthy/);
    assert.match(logs, /Liveness probe failed: HTTP probe failed with statuscode: 404/);
  });

  test('an exec probe that outlives its timeout fails; a tcpSocket probe passes', async () => {
    const k = await startKubelet();
    await k.writeManifest(
      'mixed.yaml',
      pod('mixed', [
        busybox('slow', 'exec sleep 3600', {
          readinessProbe: { exec: { command: ['sh', '-c', 'sleep 5'] }, timeoutSeconds: 1, periodSeconds: 2 },
        }),
        busybox('tcp', 'mkdir -p /www; exec httpd -f -p 8081 -h /www', {
          readinessProbe: { tcpSocket: { port: 8081 }, periodSeconds: 1 },
        }),
      ]),
    );
    const p = await waitFor(
      'tcp to be ready while slow is not',
      async () => {
        const got = await k.pod('mixed');
        const tcp = containerStatus(got, 'tcp');
        const slow = containerStatus(got, 'slow');
        return tcp?.ready === true && slow?.state?.running ? got : undefined;
      },
      60_000,
    );
    assert.equal(containerStatus(p, 'slow')?.ready, false);
    assert.equal(condition(p, 'Ready')?.status, 'False');
    await waitFor(
      'the exec timeout to be reported',
      async () => /Readiness probe failed: command \\"sh -c sleep 5\\" timed out/.test(await k.logs()),
      30_000,
    );
  });

  test('a startup probe holds the liveness probe back until it passes', async () => {
    const k = await startKubelet();
    // Liveness alone would fail at once and restart the container; the startup probe gives it 8 s.
    await k.writeManifest(
      'slow.yaml',
      pod('slow', [
        busybox('app', 'sleep 8; touch /tmp/started; exec sleep 3600', {
          startupProbe: {
            exec: { command: ['test', '-f', '/tmp/started'] },
            periodSeconds: 1,
            failureThreshold: 30,
          },
          livenessProbe: {
            exec: { command: ['test', '-f', '/tmp/started'] },
            periodSeconds: 1,
            failureThreshold: 1,
          },
        }),
      ]),
    );

    const starting = await waitFor(
      'slow to be Running but not started',
      async () => {
        const p = await k.pod('slow');
        const c = containerStatus(p, 'app');
        return c?.state?.running && c.started === false ? p : undefined;
      },
      60_000,
    );
    assert.equal(containerStatus(starting, 'app')?.ready, false);

    const started = await waitFor(
      'slow to have started and be Ready',
      async () => {
        const p = await k.pod('slow');
        const c = containerStatus(p, 'app');
        return c?.started === true && c.ready === true ? p : undefined;
      },
      60_000,
    );
    assert.equal(containerStatus(started, 'app')?.restartCount, 0);

    // Liveness runs from now on, and passes: still no restart a few periods later.
    await new Promise((r) => setTimeout(r, 4000));
    const later = await k.pod('slow');
    assert.equal(containerStatus(later, 'app')?.restartCount, 0);
    assert.equal(containerStatus(later, 'app')?.containerID, containerStatus(started, 'app')?.containerID);
    assert.match(await k.logs(), /Startup probe failed/);
    assert.doesNotMatch(await k.logs(), /Liveness probe failed/);
  });
});
