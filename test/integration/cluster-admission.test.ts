/**
 * Admission in cluster mode, end to end: the built kubelet with --kubeconfig against the test API
 * server and the private containerd. One pod per kind of refusal upstream v1.30 makes (OutOfcpu,
 * OutOfmemory, OutOfpods, NodeAffinity, NodePorts, TaintToleration, PodOSSelectorNodeLabelDoesNotMatch,
 * PodOSNotSupported, SysctlForbidden) ends Failed in the API with exactly the status upstream's
 * rejectPod and status manager leave (the whole status compared, sent as one PATCH) and one Warning
 * event as upstream records it (the whole event compared), and never reaches the runtime; the pods
 * that fit run on undisturbed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import type { Node } from '../../src/api/node.js';
import { parseQuantity, valueOf } from '../../src/api/quantity.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-admission-${process.pid}`;
const NODE_NAME = `it-admission-node-${process.pid}`;

function apiPod(name: string): Pod | undefined {
  return server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
}

function podObject(
  name: string,
  spec: Partial<Pod['spec']> = {},
  cpu?: string,
  labels?: Record<string, string>,
): Pod {
  return {
    metadata: { name, namespace: ns, ...(labels ? { labels } : {}) },
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

/**
 * The whole API status of a rejected pod, as upstream's rejectPod and status manager leave it; the
 * qosClass the kubelet's patch clears is the API server's backfill (v1.29 and later).
 */
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

/** The one Warning event of a rejected pod, whole, as upstream's recorder writes it. */
function assertRejectedEvent(event: CoreEvent, pod: Pod, reason: string, message: string): void {
  const { metadata, firstTimestamp, lastTimestamp, ...rest } = event as CoreEvent & Record<string, unknown>;
  assert.match(metadata.name, new RegExp(`^${pod.metadata.name}\\.[0-9a-f]+$`));
  assert.equal(metadata.namespace, ns);
  assert.match(firstTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(lastTimestamp, firstTimestamp);
  for (const k of ['apiVersion', 'kind']) delete rest[k];
  assert.deepEqual(rest, {
    involvedObject: {
      kind: 'Pod',
      namespace: ns,
      name: pod.metadata.name,
      uid: pod.metadata.uid,
      apiVersion: 'v1',
      resourceVersion: rest.involvedObject.resourceVersion,
    },
    reason,
    message,
    source: { component: 'kubelet', host: NODE_NAME },
    count: 1,
    type: 'Warning',
    eventTime: null,
    reportingComponent: 'kubelet',
    reportingInstance: NODE_NAME,
  });
}

/** Allocatable memory in bytes, as the scheduler reads it. */
function allocatableMemory(node: Node): bigint {
  return valueOf(parseQuantity(node.status?.allocatable?.memory ?? '0'));
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
        // Two pods run at once here ('fits', then 'matching'): a third is OutOfpods.
        '--max-pods=2',
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

  test('each kind of refusal: upstream’s status, one PATCH, one Warning event; the pods that fit run on', async () => {
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
    // The node's own events at start, as upstream's BirthCry and status setters record them.
    const nodeEvents = await withLog(
      waitFor(
        "the node's start events",
        () => {
          const evs = (
            server.store.list('events', { namespace: 'default' }).items as unknown as CoreEvent[]
          ).filter((e) => e.involvedObject.kind === 'Node' && e.involvedObject.name === NODE_NAME);
          const reasons = new Set(evs.map((e) => e.reason));
          return [
            'Starting',
            'NodeHasSufficientMemory',
            'NodeHasNoDiskPressure',
            'NodeHasSufficientPID',
          ].every((r) => reasons.has(r))
            ? evs
            : undefined;
        },
        30_000,
      ),
    );
    for (const [reason, message] of [
      ['Starting', 'Starting kubelet.'],
      ['NodeHasSufficientMemory', `Node ${NODE_NAME} status is now: NodeHasSufficientMemory`],
      ['NodeHasNoDiskPressure', `Node ${NODE_NAME} status is now: NodeHasNoDiskPressure`],
      ['NodeHasSufficientPID', `Node ${NODE_NAME} status is now: NodeHasSufficientPID`],
    ] as const) {
      const e = nodeEvents.find((x) => x.reason === reason)!;
      assert.equal(e.message, message);
      assert.equal(e.type, 'Normal');
      assert.deepEqual(e.involvedObject, { kind: 'Node', name: NODE_NAME, uid: NODE_NAME });
      assert.deepEqual(e.source, { component: 'kubelet', host: NODE_NAME });
      assert.equal(e.reportingComponent, 'kubelet');
      assert.equal(e.reportingInstance, NODE_NAME);
    }
    // A host port of its own per run, so that stacks side by side do not share one.
    const hostPort = 20_000 + (process.pid % 10_000);
    const fitsSpec = {
      ...tolerateMaintenance,
      containers: [
        {
          ...podObject('x').spec.containers[0]!,
          resources: { requests: { cpu: '100m' } },
          ports: [{ containerPort: 8080, hostPort, protocol: 'TCP' as const }],
        },
      ],
    };
    createPod(podObject('fits', fitsSpec, '100m'));
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

    const cpu = allocatableMilliCpu(node);
    const memory = allocatableMemory(node);
    const refused: {
      name: string;
      pod: Pod;
      qosClass: string;
      reason: string;
      message: string;
    }[] = [
      {
        // More cpu than the node has: upstream's numbers, the running pod's 100m counted as used.
        name: 'too-big',
        pod: podObject('too-big', tolerateMaintenance, `${cpu + 1000}m`),
        qosClass: 'Burstable',
        reason: 'OutOfcpu',
        message: `Node didn't have enough resource: cpu, requested: ${cpu + 1000}, used: 100, capacity: ${cpu}`,
      },
      {
        name: 'hungry',
        pod: {
          ...podObject('hungry', tolerateMaintenance),
          spec: {
            ...podObject('hungry', tolerateMaintenance).spec,
            containers: [
              {
                ...podObject('x').spec.containers[0]!,
                resources: { requests: { memory: `${memory + 1n}` } },
              },
            ],
          },
          status: { phase: 'Pending', qosClass: 'Burstable' },
        },
        qosClass: 'Burstable',
        reason: 'OutOfmemory',
        message: `Node didn't have enough resource: memory, requested: ${memory + 1n}, used: 0, capacity: ${memory}`,
      },
      {
        // A nodeSelector the node's labels do not match.
        name: 'picky',
        pod: podObject('picky', { ...tolerateMaintenance, nodeSelector: { 'tskubelet.test/disk': 'ssd' } }),
        qosClass: 'BestEffort',
        reason: 'NodeAffinity',
        message: 'Predicate NodeAffinity failed',
      },
      {
        // The host port 'fits' holds.
        name: 'clash',
        pod: podObject('clash', { ...fitsSpec, containers: [{ ...fitsSpec.containers[0]!, resources: {} }] }),
        qosClass: 'BestEffort',
        reason: 'NodePorts',
        message: 'Predicate NodePorts failed',
      },
      {
        // The node's NoExecute taint, not tolerated.
        name: 'intolerant',
        pod: podObject('intolerant'),
        qosClass: 'BestEffort',
        reason: 'TaintToleration',
        message: 'Predicate TaintToleration failed',
      },
      {
        name: 'windows-label',
        pod: podObject('windows-label', tolerateMaintenance, undefined, { 'kubernetes.io/os': 'windows' }),
        qosClass: 'BestEffort',
        reason: 'PodOSSelectorNodeLabelDoesNotMatch',
        message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
      },
      {
        name: 'windows-os',
        pod: podObject('windows-os', { ...tolerateMaintenance, os: { name: 'windows' } }),
        qosClass: 'BestEffort',
        reason: 'PodOSNotSupported',
        message: "Failed to admit pod as the OS field doesn't match node OS",
      },
      {
        name: 'unsafe-sysctl',
        pod: podObject('unsafe-sysctl', {
          ...tolerateMaintenance,
          securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '65536' }] },
        }),
        qosClass: 'BestEffort',
        reason: 'SysctlForbidden',
        message: 'forbidden sysctl: "kernel.msgmax" not allowlisted',
      },
    ];
    for (const r of refused) createPod(r.pod);
    for (const r of refused) {
      const pod = await failedWith(r.name);
      assertRejectedStatus(pod, r.qosClass, r.reason, r.message);
      assertRejectedEvent(await warning(r.name, r.reason), pod, r.reason, r.message);
    }

    // A selector that matches, and the matching node label from --node-labels: admitted.
    createPod(
      podObject('matching', { ...tolerateMaintenance, nodeSelector: { 'tskubelet.test/disk': 'hdd' } }),
    );
    await withLog(waitFor('matching to run', () => apiPod('matching')?.status?.phase === 'Running', 60_000));
    // Now two pods run, as many as --max-pods allows.
    createPod(podObject('crowd', tolerateMaintenance));
    const crowd = await failedWith('crowd');
    const crowdMessage = "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2";
    assertRejectedStatus(crowd, 'BestEffort', 'OutOfpods', crowdMessage);
    assertRejectedEvent(await warning('crowd', 'OutOfpods'), crowd, 'OutOfpods', crowdMessage);

    const names = [...refused.map((r) => r.name), 'crowd'];
    const expected = new Map(refused.map((r) => [r.name, r]));
    expected.set('crowd', {
      name: 'crowd',
      pod: crowd,
      qosClass: 'BestEffort',
      reason: 'OutOfpods',
      message: crowdMessage,
    });
    for (const name of names) {
      const pod = apiPod(name)!;
      const { reason, message } = expected.get(name)!;
      const uid = pod.metadata.uid!;
      const startTime = pod.status!.startTime!;
      // The exact bodies upstream's statusutil.PatchPodStatus sends. Until the first housekeeping
      // has synced the pod workers (podsSynced), upstream's mergePodStatus holds a pod's phase back,
      // so a pod rejected in the kubelet's first seconds gets its startTime first and its Failed
      // phase at the next reconcile; after that, one patch carries it all.
      const bodies = server.requests
        .filter(
          (q) => q.resource === 'pods' && q.subresource === 'status' && q.verb === 'patch' && q.name === name,
        )
        .map((q) => q.patch);
      const terminal = (withStart: boolean) =>
        JSON.stringify({
          metadata: { uid },
          status: {
            message: `Pod was rejected: ${message}`,
            phase: 'Failed',
            // v1.28's bare rejection status has none; this v1.32 API server backfills it each time.
            qosClass: null,
            reason,
            ...(withStart ? { startTime } : {}),
          },
        });
      if (bodies.length === 1) assert.deepEqual(bodies, [terminal(true)], name);
      else
        assert.deepEqual(
          bodies,
          [JSON.stringify({ metadata: { uid }, status: { qosClass: null, startTime } }), terminal(false)],
          name,
        );
      const events = (server.store.list('events', { namespace: ns }).items as unknown as CoreEvent[]).filter(
        (e) => e.involvedObject.name === name,
      );
      assert.equal(events.length, 1, `${name}: one event`);
    }

    // The rejected pods never reached the runtime; the one that fit was never disturbed.
    const sandboxes = await cri.sandboxes(ns);
    for (const name of names) {
      assert.deepEqual(await cri.podContainers(ns, name), [], `${name} has no containers`);
      assert.deepEqual(
        sandboxes.filter((s) => s.metadata.name === name),
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
