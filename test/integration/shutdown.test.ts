/**
 * Shutdown under one deadline, through the built kubelet and the private containerd: a pod being
 * terminated with a long grace period does not hold SIGTERM (upstream's kubelet exits without
 * waiting for it either), the runtime keeps the pod, and the next start finishes the termination.
 * And SIGUSR1, which Node answers by opening its inspector unless someone listens for it.
 */
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Pod } from '../../src/api/core-v1.js';
import { SHUTDOWN_DEADLINE_MS } from '../../src/cmd/main.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-shutdown-${process.pid}`;
/** Exit takes the deadline plus process exit and log flushing. */
const EXIT_MARGIN_MS = 3000;

/** A container that ignores SIGTERM: only the grace period's SIGKILL stops it. */
const stubborn: Pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'stubborn', namespace: ns },
  spec: {
    terminationGracePeriodSeconds: 120,
    containers: [
      {
        name: 'main',
        image: 'busybox',
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', "trap '' TERM; sleep 1000"],
      },
    ],
  },
};

describe('shutdown under a deadline', () => {
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

  async function runningContainers(k: KubeletProcess): Promise<number> {
    const cs = await cri.podContainers(ns, `stubborn-${k.nodeName}`);
    return cs.filter((c) => c.state === 'CONTAINER_RUNNING').length;
  }

  /** Starts the stubborn pod, then removes its manifest and waits until its StopContainer is under way. */
  async function terminating(): Promise<KubeletProcess> {
    const k = new KubeletProcess();
    kubelet = k;
    await k.start();
    await k.writeManifest('stubborn.yaml', stubborn);
    await waitFor(
      'stubborn to be Running',
      async () => (await k.pod('stubborn'))?.status?.containerStatuses?.[0]?.state?.running !== undefined,
      60_000,
    );
    await k.removeManifest('stubborn.yaml');
    await waitFor(
      'the kubelet to stop the container with its grace period',
      async () => /Killing container with a grace period.*containerName="main"/.test(await k.logs()),
      20_000,
    );
    assert.equal(
      await runningContainers(k),
      1,
      'the container stopped at SIGTERM; the test needs it to ignore it',
    );
    return k;
  }

  test('SIGTERM exits within the deadline; the pod stays to the runtime and a restarted kubelet finishes it', async (t) => {
    const k = await terminating();
    const t0 = Date.now();
    const code = await k.stop('SIGTERM');
    const elapsedMs = Date.now() - t0;
    t.diagnostic(`SIGTERM to exit: ${elapsedMs} ms`);
    assert.equal(code, 0);
    assert.ok(
      elapsedMs < SHUTDOWN_DEADLINE_MS + EXIT_MARGIN_MS,
      `the kubelet took ${elapsedMs} ms to exit; the deadline is ${SHUTDOWN_DEADLINE_MS} ms`,
    );
    assert.match(await k.logs(), /Shutdown deadline passed.*podworkers/);
    assert.equal(await runningContainers(k), 1, 'the container should be left to the runtime');

    // The next start finds a pod no source wants and stops it with a short grace period.
    await k.start();
    const restartedMs = Date.now();
    await waitFor(
      'the restarted kubelet to stop the pod',
      async () => (await runningContainers(k)) === 0,
      30_000,
    );
    t.diagnostic(`restart to the pod stopped: ${Date.now() - restartedMs} ms`);
  });

  test('a second signal exits at once', async (t) => {
    const k = await terminating();
    k.signal('SIGTERM');
    await waitFor('the shutdown to begin', async () => /Shutting down/.test(await k.logs()), 5000);
    const t0 = Date.now();
    const code = await k.stop('SIGTERM');
    const elapsedMs = Date.now() - t0;
    t.diagnostic(`second signal to exit: ${elapsedMs} ms`);
    assert.equal(code, 1);
    assert.ok(elapsedMs < 1500, `the second signal took ${elapsedMs} ms to end the process`);
    assert.match(await k.logs(), /Second signal: exiting now/);
  });
});

describe('SIGUSR1 without graceful node shutdown', () => {
  let kubelet: KubeletProcess | undefined;

  afterEach(async () => {
    await kubelet?.dispose();
    kubelet = undefined;
  });

  test('is logged and opens no inspector', async () => {
    // Port 0: should the inspector open after all, it must not take another process's 9229.
    const k = new KubeletProcess({ env: { NODE_OPTIONS: '--inspect-port=127.0.0.1:0' } });
    kubelet = k;
    await k.start();
    k.signal('SIGUSR1');
    await waitFor(
      'the kubelet to say what it did with SIGUSR1',
      async () => /Debugger listening|SIGUSR1/.test(await k.logs()),
      5000,
    );
    const logs = await k.logs();
    assert.doesNotMatch(logs, /Debugger listening/, 'SIGUSR1 opened the Node inspector');
    assert.match(logs, /"Ignored SIGUSR1: graceful node shutdown is off"/);
    assert.ok(k.isRunning(), 'the kubelet runs on');
  });
});
