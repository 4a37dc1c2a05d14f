/**
 * Pod deletion in cluster mode, end to end (the built kubelet, the test API server, the private
 * containerd). A graceful deletion (deletionTimestamp and a grace period) stops the containers within
 * the grace period (SIGTERM, then SIGKILL for the one that ignores it), after which the kubelet deletes
 * the pod with grace 0 and its UID as precondition. A forced deletion (the pod gone from the API at
 * once) still stops the pod on the node.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ContainerStatus, Pod } from '../../src/api/core-v1.js';
import { startTestApiServer, type DeleteOptions, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-deletion-${process.pid}`;
const NODE_NAME = `it-deletion-node-${process.pid}`;
const GRACE_SECONDS = 4;

/** Two containers: one leaves at SIGTERM, one ignores it and must be killed when the grace period ends. */
function twoContainerPod(name: string): Record<string, unknown> {
  return {
    metadata: { name, namespace: ns },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: GRACE_SECONDS,
      containers: [
        {
          name: 'polite',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 0.2; done"],
        },
        {
          name: 'stubborn',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', "trap '' TERM; while true; do sleep 0.2; done"],
        },
      ],
    },
  };
}

interface RecordedDelete {
  name: string;
  options: DeleteOptions;
  /** The pod as it was when the delete came. */
  before: Pod | undefined;
}

describe('cluster mode: pod deletion', () => {
  let server: TestApiServer;
  let kubelet: KubeletProcess;
  let cri: CriInspector;
  let dir = '';
  const deletes: RecordedDelete[] = [];

  const apiPod = (name: string) => server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
  const withLog = async <T>(p: Promise<T>): Promise<T> =>
    p.catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}\n--- kubelet log ---\n${(await kubelet.logs()).slice(-8000)}`,
      );
    });
  const runningContainers = async (name: string) =>
    (await cri.podContainers(ns, name)).filter((c) => c.state === 'CONTAINER_RUNNING');
  const startPod = async (name: string): Promise<Pod> => {
    server.store.create('pods', twoContainerPod(name));
    const running = await withLog(
      waitFor(
        `${name} to run both containers`,
        () => {
          const p = apiPod(name);
          const all = p?.status?.containerStatuses ?? [];
          return all.length === 2 && all.every((c) => c.state?.running) ? p : undefined;
        },
        60_000,
      ),
    );
    // The polite container's trap must be in place before it is asked to stop.
    await new Promise((r) => setTimeout(r, 500));
    return running;
  };

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE_NAME });
    server.store.create('namespaces', { metadata: { name: ns } });
    // Every delete, by the test or over HTTP by the kubelet, with its options.
    const store = server.store;
    const realDelete = store.delete.bind(store);
    store.delete = (resource, name, namespace, options = {}) => {
      if (resource === 'pods' && namespace === ns) {
        deletes.push({ name, options: structuredClone(options), before: apiPod(name) });
      }
      return realDelete(resource, name, namespace, options);
    };
    cri = await CriInspector.connect();
    dir = await mkdtemp(path.join(os.tmpdir(), 'it-deletion-'));
    const kubeconfig = path.join(dir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    kubelet = new KubeletProcess({ nodeName: NODE_NAME, extraArgs: [`--kubeconfig=${kubeconfig}`] });
    await kubelet.start();
  });

  after(async () => {
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('graceful: stopped within the grace period, then deleted by the kubelet with grace 0 and its UID', async () => {
    const running = await startPod('graceful');
    const uid = running.metadata.uid;
    deletes.length = 0;

    const startedMs = Date.now();
    server.store.delete('pods', 'graceful', ns);
    const deleting = apiPod('graceful');
    assert.equal(deleting?.metadata.deletionGracePeriodSeconds, GRACE_SECONDS);

    // Both containers stop: the polite one at once, the stubborn one when the grace period ends.
    const stoppedMs = await withLog(
      waitFor(
        'the containers to stop',
        async () => ((await runningContainers('graceful')).length === 0 ? Date.now() : undefined),
        30_000,
        100,
      ),
    );
    const tookMs = stoppedMs - startedMs;
    assert.ok(
      tookMs >= (GRACE_SECONDS - 1) * 1000,
      `the stubborn container had its grace period (${tookMs} ms)`,
    );
    assert.ok(tookMs < (GRACE_SECONDS + 5) * 1000, `and no more (${tookMs} ms)`);

    // The kubelet then removes the pod for good.
    await withLog(waitFor('the kubelet to delete the pod', () => apiPod('graceful') === undefined, 30_000));
    const byKubelet = deletes.filter((d) => d.name === 'graceful').slice(1);
    assert.equal(byKubelet.length, 1, 'one delete from the kubelet');
    assert.deepEqual(byKubelet[0]!.options.gracePeriodSeconds, 0);
    assert.deepEqual(byKubelet[0]!.options.preconditions, { uid });
    const httpDeletes = server.requests.filter(
      (r) => r.verb === 'delete' && r.resource === 'pods' && r.name === 'graceful',
    );
    assert.deepEqual(
      httpDeletes.map((r) => [r.user, r.code]),
      [[server.nodeUser, 200]],
    );

    // Its last status, as the kubelet reported it before deleting: Failed... or Succeeded, and each
    // container terminated the way it was stopped.
    const last = byKubelet[0]!.before;
    const state = (name: string): ContainerStatus | undefined =>
      last?.status?.containerStatuses?.find((c) => c.name === name);
    assert.ok(last?.status?.phase === 'Failed' || last?.status?.phase === 'Succeeded', last?.status?.phase);
    assert.equal(state('polite')?.state?.terminated?.exitCode, 0);
    assert.equal(state('stubborn')?.state?.terminated?.exitCode, 137);
  });

  test('forced: gone from the API at once, still stopped on the node', async () => {
    await startPod('forced');
    deletes.length = 0;
    server.store.delete('pods', 'forced', ns, { gracePeriodSeconds: 0 });
    assert.equal(apiPod('forced'), undefined, 'removed from the API at once');
    await withLog(
      waitFor(
        'the containers and the sandbox to stop',
        async () =>
          (await runningContainers('forced')).length === 0 &&
          (await cri.sandboxes(ns)).every(
            (sb) => sb.metadata.name !== 'forced' || sb.state === 'SANDBOX_NOTREADY',
          ),
        30_000,
        200,
      ),
    );
    // Nothing was left for the kubelet to delete.
    assert.deepEqual(
      deletes.map((d) => d.name),
      ['forced'],
    );
  });
});
