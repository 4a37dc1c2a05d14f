/**
 * An API server outage in the middle of cluster mode, end to end (the built kubelet, the test API
 * server, the private containerd). While the server is away (pause() for about 15 s) the pods keep
 * running and the kubelet stays healthy, retrying with back-off; once it is back (resume()) what
 * happened meanwhile catches up: a container that exited reaches the pod's status, and a pod deleted
 * from the API during the outage is stopped once the pod source is in sync again.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { sleep, waitFor } from '../helpers/wait.js';

const ns = `it-outage-${process.pid}`;
const NODE_NAME = `it-outage-node-${process.pid}`;
const OUTAGE_MS = 15_000;
/** The exiting container's lifetime: it ends in the middle of the outage. */
const EXIT_AFTER_SECONDS = 6;

function podObject(
  name: string,
  script: string,
  restartPolicy: 'Always' | 'Never' = 'Always',
): Record<string, unknown> {
  return {
    metadata: { name, namespace: ns },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy,
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: 'main', image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', script] },
      ],
    },
  };
}

describe('cluster mode: an API server outage', () => {
  let server: TestApiServer;
  let kubelet: KubeletProcess;
  let cri: CriInspector;
  let dir = '';

  const apiPod = (name: string) => server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
  const withLog = async <T>(p: Promise<T>): Promise<T> =>
    p.catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}\n--- kubelet log ---\n${(await kubelet.logs()).slice(-8000)}`,
      );
    });
  const runningContainers = async (name: string) =>
    (await cri.podContainers(ns, name)).filter((c) => c.state === 'CONTAINER_RUNNING');
  const healthz = async () =>
    (await fetch(`http://127.0.0.1:${kubelet.healthzPort}/healthz`, { signal: AbortSignal.timeout(2000) }))
      .status;

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE_NAME });
    server.store.create('namespaces', { metadata: { name: ns } });
    cri = await CriInspector.connect();
    dir = await mkdtemp(path.join(os.tmpdir(), 'it-outage-'));
    const kubeconfig = path.join(dir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    kubelet = new KubeletProcess({ nodeName: NODE_NAME, extraArgs: [`--kubeconfig=${kubeconfig}`] });
    await kubelet.start();
  });

  after(async () => {
    await server?.resume();
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('pods run on through it, and what changed meanwhile reaches the API or the node after', async () => {
    server.store.create('pods', podObject('steady', 'exec sleep 3600'));
    server.store.create('pods', podObject('doomed', 'exec sleep 3600'));
    await withLog(
      waitFor(
        'steady and doomed to run',
        () => ['steady', 'doomed'].every((n) => apiPod(n)?.status?.phase === 'Running'),
        60_000,
      ),
    );
    server.store.create('pods', podObject('exiter', `sleep ${EXIT_AFTER_SECONDS}; exit 3`, 'Never'));
    await withLog(waitFor('exiter to run', () => apiPod('exiter')?.status?.phase === 'Running', 60_000));
    const [steadyContainer] = await runningContainers('steady');
    assert.ok(steadyContainer);
    // A static pod, shown in the API as its mirror pod.
    await kubelet.writeManifest('static.json', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'static', namespace: ns },
      spec: {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            imagePullPolicy: 'IfNotPresent',
            command: ['sh', '-c', 'exec sleep 3600'],
          },
        ],
      },
    });
    const mirrorName = `static-${NODE_NAME}`;
    const mirror = () => server.store.tryGet('pods', mirrorName, ns) as unknown as Pod | undefined;
    const firstMirror = await withLog(waitFor('the mirror pod', mirror, 60_000));

    // The outage.
    await server.pause();
    const outageStartedMs = Date.now();
    // A pod deleted while the kubelet cannot hear of it.
    server.store.delete('pods', 'doomed', ns, { gracePeriodSeconds: 0 });
    // And a mirror pod deleted meanwhile.
    server.store.delete('pods', mirrorName, ns, { gracePeriodSeconds: 0 });
    await sleep(OUTAGE_MS / 2);
    assert.equal(kubelet.isRunning(), true);
    assert.equal(await healthz(), 200, 'the kubelet stays healthy without its API server');
    assert.equal((await runningContainers('steady')).length, 1, 'pods keep running');
    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - outageStartedMs)));
    assert.deepEqual(await runningContainers('exiter'), [], 'exiter ended during the outage');
    assert.equal(apiPod('exiter')?.status?.phase, 'Running', 'which the API cannot know yet');
    assert.equal(kubelet.isRunning(), true);
    await server.resume();

    // The status of the container that exited catches up.
    const exited = await withLog(
      waitFor(
        'exiter to be Failed in the API with exit code 3',
        () => {
          const p = apiPod('exiter');
          const terminated = p?.status?.containerStatuses?.[0]?.state?.terminated;
          return p?.status?.phase === 'Failed' && terminated?.exitCode === 3 ? p : undefined;
        },
        60_000,
        500,
      ),
    );
    assert.equal(exited.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Error');

    // The pod deleted during the outage is stopped once the watch is back in sync.
    await withLog(
      waitFor(
        'doomed to be stopped',
        async () => (await runningContainers('doomed')).length === 0,
        60_000,
        500,
      ),
    );

    // The mirror pod is made again.
    await withLog(
      waitFor(
        'the mirror pod to be recreated',
        () => {
          const m = mirror();
          return m && m.metadata.uid !== firstMirror.metadata.uid ? m : undefined;
        },
        60_000,
        500,
      ),
    );

    // The steady pod was never disturbed.
    const steady = apiPod('steady');
    assert.equal(steady?.status?.phase, 'Running');
    assert.equal(steady?.status?.containerStatuses?.[0]?.restartCount, 0);
    assert.deepEqual(
      (await runningContainers('steady')).map((c) => c.id),
      [steadyContainer.id],
    );
    assert.equal(kubelet.isRunning(), true);
    assert.equal(await healthz(), 200);
    // It said it was failing, and backed off rather than hammering the server.
    const log = await kubelet.logs();
    assert.match(log, /Failed to update status for pod; retrying with back-off/);
  });
});
