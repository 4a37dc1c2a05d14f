/**
 * Admission in cluster mode, end to end: the built kubelet with --kubeconfig against the test API
 * server and the private containerd. Pods that do not fit the node (more cpu than it has, a
 * nodeSelector its labels do not match, a NoExecute taint they do not tolerate) end Failed in the API
 * with upstream's reason and message and a Warning event, and never reach the runtime; a pod that fits
 * runs on undisturbed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import type { Node } from '../../src/api/node.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-admission-${process.pid}`;
const NODE_NAME = `it-admission-node-${process.pid}`;

function apiPod(name: string): Pod | undefined {
  return server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
}

function podObject(name: string, spec: Partial<Pod['spec']> = {}, cpu?: string): Pod {
  return {
    metadata: { name, namespace: ns },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'main',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', 'exec sleep 3600'],
          ...(cpu ? { resources: { requests: { cpu } } } : {}),
        },
      ],
      ...spec,
    },
    // As the API server and the scheduler leave it before the kubelet sees the pod.
    status: {
      phase: 'Pending',
      qosClass: cpu ? 'Burstable' : 'BestEffort',
      conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    },
  };
}

/** The whole API status of a rejected pod, as upstream's rejectPod and status manager leave it. */
function assertRejectedStatus(pod: Pod, qosClass: string, reason: string, message: string): void {
  const status = pod.status ?? {};
  assert.match(status.startTime ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.deepEqual(status, {
    phase: 'Failed',
    qosClass,
    reason,
    message: `Pod was rejected: ${message}`,
    startTime: status.startTime,
  });
}

function createPod(pod: Pod): void {
  server.store.create('pods', pod as unknown as Record<string, unknown>);
}

/** Allocatable cpu in millicores, as the scheduler reads it. */
function allocatableMilliCpu(node: Node): number {
  const text = node.status?.allocatable?.cpu ?? '0';
  return text.endsWith('m') ? Number(text.slice(0, -1)) : Number(text) * 1000;
}

let server: TestApiServer;

describe('cluster mode: admission', () => {
  let kubelet: KubeletProcess;
  let cri: CriInspector;
  let dir = '';

  const withLog = async <T>(p: Promise<T>): Promise<T> =>
    p.catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}\n--- kubelet log ---\n${(await kubelet.logs()).slice(-6000)}`,
      );
    });

  const failedWith = (name: string) =>
    withLog(
      waitFor(
        `${name} to be Failed in the API`,
        () => {
          const p = apiPod(name);
          return p?.status?.phase === 'Failed' ? p : undefined;
        },
        30_000,
      ),
    );

  const warning = (name: string, reason: string) =>
    withLog(
      waitFor(
        `the ${reason} event of ${name}`,
        () =>
          (server.store.list('events', { namespace: ns }).items as unknown as CoreEvent[]).find(
            (e) => e.reason === reason && e.involvedObject.name === name,
          ),
        15_000,
      ),
    );

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE_NAME });
    server.store.create('namespaces', { metadata: { name: ns } });
    cri = await CriInspector.connect();
    dir = await mkdtemp(path.join(os.tmpdir(), 'it-admission-'));
    const kubeconfig = path.join(dir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    kubelet = new KubeletProcess({
      nodeName: NODE_NAME,
      extraArgs: [
        `--kubeconfig=${kubeconfig}`,
        '--node-labels=tskubelet.test/disk=hdd',
        '--register-with-taints=tskubelet.test/maintenance=soon:NoExecute',
      ],
    });
    await kubelet.start();
  });

  after(async () => {
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('pods that do not fit are Failed with upstream’s reason; the pod that fits runs on', async () => {
    const tolerateMaintenance = {
      tolerations: [
        { key: 'tskubelet.test/maintenance', operator: 'Exists' as const, effect: 'NoExecute' as const },
      ],
    };
    const node = await waitFor(
      'the Node',
      () => server.store.tryGet('nodes', NODE_NAME) as Node | undefined,
      30_000,
    );
    createPod(podObject('fits', tolerateMaintenance, '100m'));
    const running = await withLog(
      waitFor(
        'fits to run',
        () => {
          const p = apiPod('fits');
          return p?.status?.phase === 'Running' ? p : undefined;
        },
        60_000,
      ),
    );
    const fitsContainer = running.status?.containerStatuses?.[0]?.containerID;
    assert.ok(fitsContainer);

    // More cpu than the node has: upstream's numbers, the running pod's 100m counted as used.
    const capacity = allocatableMilliCpu(node);
    createPod(podObject('too-big', tolerateMaintenance, `${capacity + 1000}m`));
    const tooBig = await failedWith('too-big');
    const cpuMessage = `Node didn't have enough resource: cpu, requested: ${capacity + 1000}, used: 100, capacity: ${capacity}`;
    assertRejectedStatus(tooBig, 'Burstable', 'OutOfcpu', cpuMessage);
    const cpuEvent = await warning('too-big', 'OutOfcpu');
    assert.equal(cpuEvent.type, 'Warning');
    assert.equal(cpuEvent.message, cpuMessage);
    assert.equal(cpuEvent.involvedObject.uid, tooBig.metadata.uid);
    assert.deepEqual(cpuEvent.source, { component: 'kubelet', host: NODE_NAME });

    // A nodeSelector the node's labels do not match.
    createPod(podObject('picky', { ...tolerateMaintenance, nodeSelector: { 'tskubelet.test/disk': 'ssd' } }));
    const picky = await failedWith('picky');
    assertRejectedStatus(picky, 'BestEffort', 'NodeAffinity', 'Predicate NodeAffinity failed');
    assert.equal((await warning('picky', 'NodeAffinity')).message, 'Predicate NodeAffinity failed');

    // The node's NoExecute taint, not tolerated.
    createPod(podObject('intolerant'));
    const intolerant = await failedWith('intolerant');
    assertRejectedStatus(intolerant, 'BestEffort', 'TaintToleration', 'Predicate TaintToleration failed');

    // A selector that matches, and the matching node label from --node-labels: admitted.
    createPod(
      podObject('matching', { ...tolerateMaintenance, nodeSelector: { 'tskubelet.test/disk': 'hdd' } }),
    );
    await withLog(waitFor('matching to run', () => apiPod('matching')?.status?.phase === 'Running', 60_000));

    // The rejected pods never reached the runtime; the one that fit was never disturbed.
    for (const name of ['too-big', 'picky', 'intolerant']) {
      assert.deepEqual(await cri.podContainers(ns, name), [], `${name} has no containers`);
      assert.deepEqual(
        (await cri.sandboxes(ns)).filter((s) => s.metadata.name === name),
        [],
        `${name} has no sandbox`,
      );
    }
    const fits = apiPod('fits');
    assert.equal(fits?.status?.phase, 'Running');
    const cs = fits?.status?.containerStatuses?.[0];
    assert.equal(cs?.containerID, fitsContainer);
    assert.equal(cs?.restartCount, 0);
    const containers = await cri.podContainers(ns, 'fits');
    assert.equal(containers.filter((c) => c.state === 'CONTAINER_RUNNING').length, 1);
  });
});
