/**
 * The kubelet's sync loop wired to its real managers over the in-memory fake CRI runtime:
 * pods from a source start, removed pods stop, and runtime pods nobody wants are stopped
 * while the ones a source still wants are adopted.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '../../../src/api/core-v1.js';
import { PodConfig, type SourceChannel } from '../../../src/config/pod-config.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { FakeContainerManager } from '../../../src/cm/testing/fake-container-manager.js';
import { MetricsRegistry } from '../../../src/lib/metrics.js';
import { Kubelet, type DeviceAdmission } from '../../../src/kubelet/kubelet.js';
import { NonePolicy } from '../../../src/cm/topologymanager/policies.js';
import type { HintProvider } from '../../../src/cm/topologymanager/topology-hint.js';
import { TopologyManager } from '../../../src/cm/topologymanager/topology-manager.js';
import { SMTAlignmentError } from '../../../src/cm/cpumanager/policy-static.js';
import type { EventRecorder } from '../../../src/kuberuntime/event-recorder.js';
import { KubeGenericRuntimeManager } from '../../../src/kuberuntime/runtime-manager.js';
import { FakeClock, realClock, type Clock } from '../../../src/lib/clock.js';
import { logger, setLogSink } from '../../../src/lib/log.js';
import { MirrorPods } from '../../../src/pod/mirror-pods.js';
import { GenericPLEG } from '../../../src/pleg/generic-pleg.js';
import { InMemoryPodCache } from '../../../src/pleg/pod-cache.js';
import { PodWorkersImpl } from '../../../src/podworkers/pod-workers.js';
import { BasicWorkQueue } from '../../../src/podworkers/work-queue.js';
import { LocalStatusManager } from '../../../src/status/status-manager.js';
import { waitFor } from '../../helpers/wait.js';

setLogSink(() => undefined);

interface Node {
  kubelet: Kubelet;
  containerManager: FakeContainerManager;
  send: SourceChannel;
  /** The API source's channel, when startNode was asked for one. */
  sendApi: SourceChannel | undefined;
  statusManager: LocalStatusManager;
  runtime: KubeGenericRuntimeManager;
  metrics: MetricsRegistry;
  events: { pod: string; type: string; reason: string; message: string }[];
  stop(): Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kubelet-unit-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'resolv.conf'), 'nameserver 10.0.0.2\n');
  return dir;
}

function runtimeManager(
  fake: FakeRuntime,
  dir: string,
  clock: Clock = realClock,
  recorder?: EventRecorder,
): KubeGenericRuntimeManager {
  return new KubeGenericRuntimeManager({
    runtimeService: fake,
    imageService: fake,
    clock,
    ...(recorder ? { recorder } : {}),
    podLogsDir: path.join(dir, 'logs'),
    rootDir: path.join(dir, 'root'),
    resolvConf: path.join(dir, 'resolv.conf'),
    nodeName: 'node-a',
    legacyContainerLogsDir: path.join(dir, 'containers'),
  });
}

/** A kubelet as main.ts wires it, with a fast PLEG so the test needs no long waits. */
function startNode(
  fake: FakeRuntime,
  dir: string,
  opts: {
    withApi?: boolean;
    allocatable?: Record<string, string>;
    networkErrors?: () => string[];
    deviceAdmission?: DeviceAdmission;
    clock?: Clock;
    runtimeEvents?: boolean;
    /** The topology manager's providers, in order, under its none policy (as built by default). */
    hintProviders?: HintProvider[];
    /** Cluster mode's mirror pods of the static pods. */
    mirrorPods?: MirrorPods;
    /** False: built but not started, as between buildKubelet and the start of its components. */
    start?: boolean;
  } = {},
): Node {
  const clock = opts.clock ?? realClock;
  const events: Node['events'] = [];
  // The runtime's own events (Created, Started, BackOff, …) only where a test asks for them.
  const runtime = runtimeManager(
    fake,
    dir,
    clock,
    opts.runtimeEvents
      ? {
          event: (p, _fieldPath, type, reason, message) =>
            events.push({ pod: p.metadata.name ?? '', type, reason, message }),
        }
      : undefined,
  );
  const containerManager = new FakeContainerManager();
  const podCache = new InMemoryPodCache();
  const pleg = new GenericPLEG({ runtime, cache: podCache, clock, relistPeriodMs: 50 });
  const workQueue = new BasicWorkQueue(clock);
  const podConfig = new PodConfig({ clock });
  const send = podConfig.channel('file');
  const sendApi = opts.withApi ? podConfig.channel('api') : undefined;
  const statusManager = new LocalStatusManager({ clock });
  const metrics = new MetricsRegistry();
  const kubelet: Kubelet = new Kubelet({
    nodeName: 'node-a',
    rootDir: path.join(dir, 'root'),
    // Room for two pods (upstream: allocatable pods, from maxPods).
    getNode: () => ({
      metadata: { name: 'node-a', labels: { 'kubernetes.io/os': 'linux' } },
      status: { allocatable: opts.allocatable ?? { cpu: '4', memory: '8Gi', pods: '2' } },
    }),
    recorder: {
      event: (p, _fieldPath, type, reason, message) =>
        events.push({ pod: p.metadata.name ?? '', type, reason, message }),
      eventFor: (ref, type, reason, message) =>
        events.push({ pod: `${ref.kind ?? ''}/${ref.name ?? ''}`, type, reason, message }),
    },
    clock,
    runtime,
    ...(opts.networkErrors ? { networkErrors: opts.networkErrors } : {}),
    podConfig,
    podCache,
    pleg,
    workQueue,
    statusManager,
    containerManager,
    metrics,
    deviceAdmission: opts.deviceAdmission,
    topologyAdmission: topologyManagerOf(opts.hintProviders ?? []),
    ...(opts.mirrorPods ? { mirrorPods: opts.mirrorPods } : {}),
    podWorkers: () => new PodWorkersImpl({ syncer: kubelet, podCache, workQueue, clock, metrics }),
  });
  if (opts.start !== false) kubelet.start();
  const stop = async () => {
    podConfig.stop();
    await kubelet.stop();
  };
  cleanups.push(stop);
  return { kubelet, containerManager, send, sendApi, statusManager, runtime, events, metrics, stop };
}

function topologyManagerOf(providers: HintProvider[]): TopologyManager {
  const m = new TopologyManager(new NonePolicy(), 'none', []);
  for (const p of providers) m.addHintProvider(p);
  return m;
}

/** A provider with no hints that allocates with allocate. */
function allocatingProvider(allocate: HintProvider['allocate']): HintProvider {
  return { getTopologyHints: () => undefined, getPodTopologyHints: () => undefined, allocate };
}

function pod(name: string, uid: string, script = 'sleep 3600'): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      uid,
      annotations: { 'kubernetes.io/config.source': 'file' },
    },
    spec: {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'main',
          image: 'busybox:1.36',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', script],
        },
      ],
    },
  };
}

function runningContainers(fake: FakeRuntime, podUid: string): string[] {
  return [...fake.containers.values()]
    .filter((c) => c.config.labels['io.kubernetes.pod.uid'] === podUid && c.state === 'CONTAINER_RUNNING')
    .map((c) => c.id);
}

function newFake(): FakeRuntime {
  const fake = new FakeRuntime(realClock);
  fake.addImage('busybox:1.36');
  return fake;
}

test('while the network is not ready only host-network pods start; the others get NetworkNotReady (upstream syncPod)', async () => {
  const dir = await tempDir();
  const fake = newFake();
  let networkErrors = [
    'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized',
  ];
  const node = startNode(fake, dir, { networkErrors: () => networkErrors });
  const host = pod('host', 'uid-host');
  host.spec.hostNetwork = true;
  node.send({ op: 'SET', pods: [pod('web', 'uid-web'), host] });
  await waitFor(
    'the host-network pod to run',
    () => runningContainers(fake, 'uid-host').length === 1,
    5000,
    20,
  );
  const event = await waitFor(
    'NetworkNotReady',
    () => node.events.find((e) => e.reason === 'NetworkNotReady'),
    5000,
    20,
  );
  assert.deepEqual(event, {
    pod: 'web',
    type: 'Warning',
    reason: 'NetworkNotReady',
    message:
      'network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized',
  });
  assert.equal(runningContainers(fake, 'uid-web').length, 0);
  assert.equal(fake.callsOf('runPodSandbox').length, 1, 'no sandbox for the pod that waits');
  networkErrors = [];
  await waitFor(
    'the pod to run once the network is ready',
    () => runningContainers(fake, 'uid-web').length === 1,
    15_000,
    20,
  );
});

test('a pod from a source runs, shows Running in getPods, and stops when the source drops it', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const node = startNode(fake, dir);

  node.send({ op: 'SET', pods: [pod('web', 'uid-web')] });
  await waitFor('the container to run', () => runningContainers(fake, 'uid-web').length === 1, 5000, 20);
  assert.ok(node.containerManager.podCgroups.has('uid-web'), 'the pod cgroup was made before the sandbox');
  const shown = await waitFor(
    'Running in getPods',
    () => node.kubelet.getPods().find((p) => p.status?.phase === 'Running'),
    5000,
    20,
  );
  assert.equal(shown.status?.containerStatuses?.[0]?.restartCount, 0);
  // Seen once, running once: one pod start observed, and one first sync of its worker.
  const metrics = await node.metrics.expose();
  assert.match(metrics, /^kubelet_pod_start_duration_seconds_count 1$/m);
  assert.match(metrics, /^kubelet_pod_worker_start_duration_seconds_count 1$/m);

  node.send({ op: 'SET', pods: [] });
  await waitFor('the container to stop', () => runningContainers(fake, 'uid-web').length === 0, 5000, 20);
  const stops = fake.callsOf('stopContainer');
  assert.equal(stops.length >= 1, true);
  assert.equal(stops[0]![1], 5, 'stopped with the pod terminationGracePeriodSeconds');
  await waitFor('the pod to leave getPods', () => node.kubelet.getPods().length === 0, 5000, 20);
  await waitFor(
    'the pod cgroup to be removed',
    () => !node.containerManager.podCgroups.has('uid-web'),
    5000,
    20,
  );
});

test('a static pod beyond maxPods, with no pod it may preempt, is rejected and never started', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const node = startNode(fake, dir);
  node.send({ op: 'SET', pods: [pod('a', 'uid-a'), pod('b', 'uid-b'), pod('c', 'uid-c')] });
  await waitFor(
    'two pods to run',
    () => runningContainers(fake, 'uid-a').length + runningContainers(fake, 'uid-b').length === 2,
    5000,
    20,
  );
  const rejected = await waitFor(
    'the third pod to be Failed',
    () => node.kubelet.getPods().find((p) => p.metadata.uid === 'uid-c' && p.status?.phase === 'Failed'),
    5000,
    20,
  );
  // Static pods are critical: OutOfpods sends upstream looking for pods to preempt, and there are none.
  assert.equal(rejected.status?.reason, 'UnexpectedAdmissionError');
  assert.equal(
    rejected.status?.message,
    'Pod was rejected: Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: pods, q: 1), ]',
  );
  assert.equal(runningContainers(fake, 'uid-c').length, 0);
});

test('a static pod short of cpu preempts an API pod: Failed/Preempting with an event, and killed', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const node = startNode(fake, dir, { withApi: true, allocatable: { cpu: '1', memory: '8Gi', pods: '10' } });
  const apiPod = pod('api-burstable', 'uid-api', 'sleep 3600');
  apiPod.metadata.annotations = { 'kubernetes.io/config.source': 'api' };
  apiPod.spec.containers[0]!.resources = { requests: { cpu: '800m' } };
  node.sendApi!({ op: 'SET', pods: [apiPod] });
  await waitFor('the API pod to run', () => runningContainers(fake, 'uid-api').length === 1, 5000, 20);

  const staticPod = pod('static', 'uid-static');
  staticPod.spec.containers[0]!.resources = { requests: { cpu: '500m' } };
  node.send({ op: 'SET', pods: [staticPod] });
  await waitFor('the static pod to run', () => runningContainers(fake, 'uid-static').length === 1, 5000, 20);
  await waitFor(
    'the API pod to be stopped',
    () => runningContainers(fake, 'uid-api').length === 0,
    10_000,
    20,
  );
  const status = node.statusManager.getPodStatus('uid-api');
  assert.equal(status?.phase, 'Failed');
  assert.equal(status?.reason, 'Preempting');
  assert.equal(status?.message, 'Preempted in order to admit critical pod');
  assert.equal(status?.conditions?.find((c) => c.type === 'DisruptionTarget')?.status, 'True');
  assert.deepEqual(node.events, [
    {
      pod: 'api-burstable',
      type: 'Warning',
      reason: 'Preempting',
      message: 'Preempted in order to admit critical pod',
    },
  ]);
});

test('a pod that does not fit is rejected with an event; the pods that fit run on', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const node = startNode(fake, dir, { withApi: true, allocatable: { cpu: '1', memory: '8Gi', pods: '10' } });
  const fits = pod('fits', 'uid-fits');
  fits.metadata.annotations = { 'kubernetes.io/config.source': 'api' };
  fits.spec.containers[0]!.resources = { requests: { cpu: '600m' } };
  node.sendApi!({ op: 'SET', pods: [fits] });
  await waitFor('fits to run', () => runningContainers(fake, 'uid-fits').length === 1, 5000, 20);
  const [running] = runningContainers(fake, 'uid-fits');

  const big = pod('big', 'uid-big');
  big.metadata.annotations = { 'kubernetes.io/config.source': 'api' };
  big.spec.containers[0]!.resources = { requests: { cpu: '600m' } };
  node.sendApi!({ op: 'SET', pods: [fits, big] });
  const message = "Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000";
  await waitFor(
    'big to be rejected',
    () => node.statusManager.getPodStatus('uid-big')?.phase === 'Failed',
    5000,
    20,
  );
  // Long enough for a pod worker to have written container statuses, had the pod reached one.
  await new Promise((r) => setTimeout(r, 300));
  // Upstream's rejectPod status whole, with the startTime its status manager adds: no conditions,
  // no container statuses.
  const status = node.statusManager.getPodStatus('uid-big');
  assert.match(status?.startTime ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.deepEqual(status, {
    startTime: status?.startTime,
    phase: 'Failed',
    reason: 'OutOfcpu',
    message: `Pod was rejected: ${message}`,
  });
  assert.deepEqual(node.events, [{ pod: 'big', type: 'Warning', reason: 'OutOfcpu', message }]);
  assert.equal(runningContainers(fake, 'uid-big').length, 0);
  assert.deepEqual(runningContainers(fake, 'uid-fits'), [running]);
});

test('after a restart, wanted runtime pods are adopted and unwanted ones are stopped', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const first = startNode(fake, dir);
  first.send({ op: 'SET', pods: [pod('keep', 'uid-keep'), pod('drop', 'uid-drop')] });
  await waitFor(
    'both to run',
    () => runningContainers(fake, 'uid-keep').length + runningContainers(fake, 'uid-drop').length === 2,
    5000,
    20,
  );
  const keptId = runningContainers(fake, 'uid-keep')[0];
  await first.stop();
  const created = fake.callsOf('createContainer').length;

  // A new kubelet over the same runtime, whose source no longer has "drop".
  const second = startNode(fake, dir);
  second.send({ op: 'SET', pods: [pod('keep', 'uid-keep')] });
  await waitFor('the unwanted pod to stop', () => runningContainers(fake, 'uid-drop').length === 0, 8000, 50);
  await waitFor(
    'keep to show Running',
    () => second.kubelet.getPods().find((p) => p.status?.phase === 'Running'),
    5000,
    20,
  );
  assert.deepEqual(runningContainers(fake, 'uid-keep'), [keptId], 'the same container, adopted');
  assert.equal(fake.callsOf('createContainer').length, created, 'no container was created again');
});

test('admission that waits on a device plugin: the pods behind it wait their turn; a failed Allocate rejects as upstream', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const order: string[] = [];
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  const deviceAdmission: DeviceAdmission = {
    podRequestsDevices: (p) => p.metadata.name !== 'plain',
    allocatedDeviceCounts: () => new Map([['example.com/dev', 1]]),
  };
  // As the device manager answers: at once for a pod without devices, later for the others.
  const devices = allocatingProvider((p) => {
    if (p.metadata.name === 'plain') return undefined;
    order.push(`allocate ${p.metadata.name}`);
    return (async () => {
      if (p.metadata.name === 'gpu') await gate;
      if (p.metadata.name === 'greedy')
        throw new Error(
          'requested number of devices unavailable for example.com/dev. Requested: 3, Available: 1',
        );
    })();
  });
  const node = startNode(fake, dir, {
    deviceAdmission,
    hintProviders: [devices],
    allocatable: { cpu: '4', memory: '8Gi', pods: '10' },
  });
  node.send({
    op: 'SET',
    pods: [pod('gpu', 'uid-gpu'), pod('plain', 'uid-plain'), pod('greedy', 'uid-greedy')],
  });
  await waitFor('the gpu allocation to start', () => order.length === 1, 5000, 20);
  // Nothing behind the waiting admission has started.
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(fake.callsOf('runPodSandbox').length, 0);
  release();
  await waitFor(
    'gpu and plain to run',
    () => runningContainers(fake, 'uid-gpu').length + runningContainers(fake, 'uid-plain').length === 2,
    5000,
    20,
  );
  const greedy = await waitFor(
    'greedy to be Failed',
    () => node.kubelet.getPods().find((p) => p.metadata.uid === 'uid-greedy' && p.status?.phase === 'Failed'),
    5000,
    20,
  );
  assert.equal(greedy.status?.reason, 'UnexpectedAdmissionError');
  assert.equal(
    greedy.status?.message,
    'Pod was rejected: Allocate failed due to requested number of devices unavailable for example.com/dev. Requested: 3, Available: 1, which is unexpected',
  );
  assert.deepEqual(order, ['allocate gpu', 'allocate greedy']);
  assert.equal(runningContainers(fake, 'uid-greedy').length, 0);
});

test('the CPU manager refuses at admission with its own reason (SMTAlignmentError) or UnexpectedAdmissionError, as upstream', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const allocated: string[] = [];
  const cpus = allocatingProvider((p) => {
    if (p.metadata.name === 'smt') throw new SMTAlignmentError(1, 2);
    if (p.metadata.name === 'big') throw new Error('not enough cpus available to satisfy request');
    allocated.push(p.metadata.name ?? '');
  });
  const node = startNode(fake, dir, {
    hintProviders: [cpus],
    allocatable: { cpu: '4', memory: '8Gi', pods: '10' },
  });
  node.send({ op: 'SET', pods: [pod('smt', 'uid-smt'), pod('big', 'uid-big'), pod('ok', 'uid-ok')] });
  const failed = (uid: string): Promise<Pod> =>
    waitFor(
      `${uid} to be Failed`,
      () => node.kubelet.getPods().find((p) => p.metadata.uid === uid && p.status?.phase === 'Failed'),
      5000,
      20,
    );
  const smt = await failed('uid-smt');
  assert.equal(smt.status?.reason, 'SMTAlignmentError');
  assert.equal(
    smt.status?.message,
    'Pod was rejected: SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2',
  );
  const big = await failed('uid-big');
  assert.equal(big.status?.reason, 'UnexpectedAdmissionError');
  assert.equal(
    big.status?.message,
    'Pod was rejected: Allocate failed due to not enough cpus available to satisfy request, which is unexpected',
  );
  await waitFor('ok to run', () => runningContainers(fake, 'uid-ok').length === 1, 5000, 20);
  assert.deepEqual(allocated, ['ok']);
});

test("the memory manager refuses at admission as upstream: UnexpectedAdmissionError with the policy's words", async () => {
  const dir = await tempDir();
  const fake = newFake();
  const allocated: string[] = [];
  const memory = allocatingProvider((p) => {
    if (p.metadata.name === 'big')
      throw new Error(
        '[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available',
      );
    allocated.push(p.metadata.name ?? '');
  });
  const node = startNode(fake, dir, {
    hintProviders: [memory],
    allocatable: { cpu: '4', memory: '8Gi', pods: '10' },
  });
  node.send({ op: 'SET', pods: [pod('big', 'uid-big'), pod('ok', 'uid-ok')] });
  const big = await waitFor(
    'big to be Failed',
    () => node.kubelet.getPods().find((p) => p.metadata.uid === 'uid-big' && p.status?.phase === 'Failed'),
    5000,
    20,
  );
  assert.equal(big.status?.reason, 'UnexpectedAdmissionError');
  assert.equal(
    big.status?.message,
    'Pod was rejected: Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available, which is unexpected',
  );
  await waitFor('ok to run', () => runningContainers(fake, 'uid-ok').length === 1, 5000, 20);
  assert.deepEqual(allocated, ['ok']);
});

test('container GC asks the pod workers when it decides: a pod that ran while housekeeping was under way keeps its dead container and logs until it is deleted', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const node = startNode(fake, dir);
  // Housekeeping's runtime listing waits until the pod below has run and finished, as a slow pass
  // on a busy node lets it.
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let reached!: () => void;
  const gated = new Promise<void>((r) => (reached = r));
  let armed = true;
  const getPods = node.runtime.getPods.bind(node.runtime);
  node.runtime.getPods = async (all) => {
    if (!all && armed) {
      armed = false;
      reached();
      await gate;
    }
    return getPods(all);
  };
  let isPodWanted: ((uid: string) => boolean) | undefined;
  const wantedAtGc: boolean[] = [];
  node.runtime.garbageCollect = (pred) => {
    isPodWanted = pred;
    wantedAtGc.push(pred('uid-done'));
    return Promise.resolve();
  };
  node.send({ op: 'SET', pods: [] });
  await gated;

  const done = pod('done', 'uid-done');
  done.spec.restartPolicy = 'Never';
  node.send({ op: 'SET', pods: [done] });
  const id = await waitFor('the container to run', () => runningContainers(fake, 'uid-done')[0], 5000, 20);
  fake.exitContainer(id, 0);
  await waitFor(
    'the pod to succeed and its worker to finish terminating',
    () =>
      node.kubelet.getPods().some((p) => p.status?.phase === 'Succeeded') &&
      !node.kubelet.podCouldHaveRunningContainers('uid-done'),
    5000,
    20,
  );
  release();
  await waitFor('a GC pass', () => wantedAtGc.length > 0, 5000, 20);
  assert.deepEqual(
    wantedAtGc,
    [true],
    'a succeeded pod that is not deleted keeps its content (upstream ShouldPodContentBeRemoved)',
  );

  node.send({ op: 'SET', pods: [] });
  await waitFor('the deleted pod to be unwanted', () => isPodWanted?.('uid-done') === false, 5000, 20);
});

test('a pod whose container waits in crash-loop back-off is synced again when the back-off runs out, not every tick', async () => {
  const dir = await tempDir();
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  fake.addImage('busybox:1.36');
  const node = startNode(fake, dir, { clock, runtimeEvents: true });
  /** Moves the fake clock in PLEG-sized steps, letting the real I/O of each sync finish in between. */
  const runUntil = async <T>(what: string, fn: () => T | undefined, maxFakeMs: number): Promise<T> => {
    for (let elapsed = 0; elapsed <= maxFakeMs; elapsed += 50) {
      const v = fn();
      if (v) return v;
      clock.advance(50);
      for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 1));
    }
    throw new Error(`timed out (fake ${maxFakeMs} ms) waiting for ${what}`);
  };
  const backOffs = () => node.events.filter((e) => e.reason === 'BackOff').length;

  node.send({ op: 'SET', pods: [pod('crash', 'uid-crash')] });
  const first = await runUntil('the container to run', () => runningContainers(fake, 'uid-crash')[0], 5000);
  // The first exit restarts at once (and starts the back-off); the second waits 10 s.
  fake.exitContainer(first, 1);
  const second = await runUntil(
    'the first restart',
    () => runningContainers(fake, 'uid-crash').find((id) => id !== first),
    5000,
  );
  fake.exitContainer(second, 1);
  const exitedAtMs = clock.now();
  await runUntil('the first BackOff', () => backOffs() > 0, 5000);
  // The exit's own syncs (its PLEG event, and the update that arrived meanwhile) are done within a second.
  await runUntil('a second to pass', () => clock.now() - exitedAtMs >= 1000 || undefined, 2000);
  const backOffsAfterExit = backOffs();
  const createsBefore = fake.callsOf('createContainer').length;

  await runUntil(
    'the restart after the back-off',
    () => runningContainers(fake, 'uid-crash').find((id) => id !== first && id !== second),
    20_000,
  );
  const restartedAfterMs = clock.now() - exitedAtMs;
  assert.ok(
    restartedAfterMs >= 10_000,
    `restarted ${restartedAfterMs} ms after the exit, before its 10 s back-off`,
  );
  assert.ok(
    restartedAfterMs <= 12_000,
    `restarted ${restartedAfterMs} ms after the exit: late for a 10 s back-off`,
  );
  assert.equal(fake.callsOf('createContainer').length, createsBefore + 1);
  assert.ok(backOffsAfterExit <= 2, `${backOffsAfterExit} BackOff events for one exit`);
  assert.equal(
    backOffs(),
    backOffsAfterExit,
    'no BackOff while the back-off ran: the pod was not synced each tick while it waited',
  );
});

test('a container that exits into a crash-loop back-off shows CrashLoopBackOff while the back-off runs, not only when it runs out', async () => {
  const dir = await tempDir();
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  fake.addImage('busybox:1.36');
  const node = startNode(fake, dir, { clock, runtimeEvents: true });
  /** Moves the fake clock in PLEG-sized steps, letting the real I/O of each sync finish in between. */
  const runUntil = async <T>(what: string, fn: () => T | undefined, maxFakeMs: number): Promise<T> => {
    for (let elapsed = 0; elapsed <= maxFakeMs; elapsed += 50) {
      const v = fn();
      if (v) return v;
      clock.advance(50);
      for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 1));
    }
    throw new Error(`timed out (fake ${maxFakeMs} ms) waiting for ${what}`);
  };
  const state = () => {
    const cs = node.statusManager.getPodStatus('uid-crash')?.containerStatuses?.[0];
    return { waiting: cs?.state?.waiting?.reason, terminated: cs?.state?.terminated?.reason, cs };
  };

  node.send({ op: 'SET', pods: [pod('crash', 'uid-crash')] });
  const first = await runUntil('the container to run', () => runningContainers(fake, 'uid-crash')[0], 5000);
  fake.exitContainer(first, 1);
  const second = await runUntil(
    'the first restart',
    () => runningContainers(fake, 'uid-crash').find((id) => id !== first),
    5000,
  );
  // The restart's own syncs are over (the status shows it running) before it exits: then the exit
  // wakes one sync, the one that meets the back-off, and nothing else wakes the pod until it runs out.
  await runUntil('the restarted container to show running', () => state().cs?.state?.running, 5000);
  const settledAtMs = clock.now();
  await runUntil('the pod to settle', () => clock.now() - settledAtMs >= 500 || undefined, 1000);
  fake.exitContainer(second, 1);
  const exitedAtMs = clock.now();
  await runUntil(
    'the first BackOff',
    () => node.events.some((e) => e.reason === 'BackOff') || undefined,
    5000,
  );
  // Nothing but the back-off's end syncs the pod again: its status must already say why it waits.
  await runUntil(
    'two seconds of the 10 s back-off to pass',
    () => clock.now() - exitedAtMs >= 2000 || undefined,
    3000,
  );
  const during = state();
  assert.equal(
    during.waiting,
    'CrashLoopBackOff',
    `2 s into the back-off the status shows ${JSON.stringify(during.cs?.state)}`,
  );
  assert.equal(during.cs?.restartCount, 1);
  assert.equal(during.cs?.lastState?.terminated?.exitCode, 1);
  assert.match(during.cs?.state?.waiting?.message ?? '', /^back-off 10s restarting failed container=main /);
});

/** Starts pod web and counts the pod worker's 'sync' updates once it runs and its relists are quiet. */
async function syncsOfAPodStart(node: Node): Promise<number> {
  node.send({ op: 'SET', pods: [pod('web', 'uid-web')] });
  await waitFor(
    'the pod to run',
    () => node.statusManager.getPodStatus('uid-web')?.phase === 'Running',
    5000,
    20,
  );
  // Relists of the running pod bring no events, so no sync comes after these.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const syncs = /^kubelet_pod_worker_duration_seconds_count\{operation_type="sync"\} (\S+)$/m.exec(
    await node.metrics.expose(),
  );
  return Number(syncs?.[1]);
}

test('a pod start syncs once per runtime reading: the PLEG events of the reading its last sync acted on bring no more syncs', async () => {
  const node = startNode(newFake(), await tempDir());
  const syncs = await syncsOfAPodStart(node);
  // The create sync starts the sandbox and the container; one relist reads both running and sends an
  // event for each. The first event's sync reports the pod Running; the second's would repeat it.
  assert.equal(syncs, 1);
});

test('a static pod whose mirror pod could not be made is synced for each PLEG event, so its next sync tries again', async () => {
  let creates = 0;
  const mirrorPods = new MirrorPods({
    client: {
      createMirrorPod: () => {
        creates++;
        return Promise.reject(new Error('the API server is away'));
      },
      deleteMirrorPod: () => Promise.resolve(false),
    },
    getNode: () => ({ metadata: { name: 'node-a' } }),
    log: logger('test'),
  });
  const syncs = await syncsOfAPodStart(startNode(newFake(), await tempDir(), { mirrorPods }));
  // Both events of the relist that read the sandbox and the container running bring a sync.
  assert.equal(syncs, 2);
  assert.equal(creates, 3, 'the create sync and both event syncs tried to make the mirror pod');
});

test("/healthz's pleg check: a PLEG that has not relisted yet is starting, not failing, from the kubelet's build until upstream's 3-minute threshold; then it fails until a relist succeeds", async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  fake.injectError('listPodSandbox', new Error('the runtime is not answering'));
  const built = startNode(fake, await tempDir(), { clock, start: false });
  const notStartedCheck = built.kubelet.healthChecks().find((c) => c.name === 'pleg');
  assert.equal(await notStartedCheck?.check(), undefined, 'built, not started yet');
  const node = startNode(fake, await tempDir(), { clock });
  const plegCheck = node.kubelet.healthChecks().find((c) => c.name === 'pleg');
  assert.ok(plegCheck);
  /** Moves the fake clock, letting the relist it wakes run. */
  const advance = async (ms: number) => {
    clock.advance(ms);
    for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 1));
  };
  await advance(50);
  assert.equal(await plegCheck.check(), undefined, 'before any relist succeeded, within the threshold');
  await advance(3 * 60 * 1000 + 50);
  assert.equal(await plegCheck.check(), 'pleg has yet to be successful');
  fake.clearErrors();
  await waitFor(
    'a relist to succeed',
    async () => {
      await advance(50);
      return (await plegCheck.check()) === undefined;
    },
    5_000,
  );
});
