import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { CONFIG_SOURCE_ANNOTATION } from '../../../src/api/pod-source.js';
import type { KubePodStatus, RunningPod } from '../../../src/kuberuntime/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { InMemoryPodCache } from '../../../src/pleg/pod-cache.js';
import { MetricsRegistry } from '../../../src/lib/metrics.js';
import {
  PodWorkersImpl,
  type PodSyncer,
  type SyncPodOutcome,
  type SyncPodType,
  type UpdatePodOptions,
} from '../../../src/podworkers/pod-workers.js';
import { BasicWorkQueue } from '../../../src/podworkers/work-queue.js';
import { flushPromises, kubePodStatus, runningPod } from '../helpers/fake-kube-runtime.js';

const logLines: string[] = [];
setLogSink((line) => logLines.push(line));

interface Call {
  kind: 'sync' | 'terminating' | 'terminatingRuntime' | 'terminated';
  uid: string;
  updateType?: SyncPodType;
  pod?: Pod;
  podStatus?: KubePodStatus;
  gracePeriodSeconds?: number;
  signal: AbortSignal;
  resolve: (isTerminal?: boolean, requeueAfterMs?: number) => void;
  reject: (err: Error) => void;
}

/** A syncer whose calls finish when the test says so (or at once, in auto mode). */
class ScriptedSyncer implements PodSyncer {
  readonly calls: Call[] = [];
  auto = false;
  autoTerminal = false;

  private record(
    kind: Call['kind'],
    uid: string,
    extra: Partial<Call>,
    signal: AbortSignal,
  ): Promise<SyncPodOutcome> {
    return new Promise((resolve, reject) => {
      const call: Call = {
        kind,
        uid,
        signal,
        ...extra,
        resolve: (t, requeueAfterMs) =>
          resolve({ isTerminal: t ?? false, ...(requeueAfterMs === undefined ? {} : { requeueAfterMs }) }),
        reject,
      };
      this.calls.push(call);
      // A sync honours its signal, as the real ones do through their CRI calls.
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      if (this.auto) resolve({ isTerminal: kind === 'sync' ? this.autoTerminal : false });
    });
  }

  async syncPod(
    updateType: SyncPodType,
    pod: Pod,
    _mirror: Pod | undefined,
    podStatus: KubePodStatus,
    signal: AbortSignal,
  ) {
    return this.record('sync', pod.metadata.uid!, { updateType, pod, podStatus }, signal);
  }

  async syncTerminatingPod(
    pod: Pod,
    podStatus: KubePodStatus,
    gracePeriodSeconds: number | undefined,
    signal: AbortSignal,
  ) {
    await this.record('terminating', pod.metadata.uid!, { pod, podStatus, gracePeriodSeconds }, signal);
  }

  async syncTerminatingRuntimePod(running: RunningPod, signal: AbortSignal) {
    await this.record('terminatingRuntime', running.uid, {}, signal);
  }

  async syncTerminatedPod(pod: Pod, podStatus: KubePodStatus, signal: AbortSignal) {
    await this.record('terminated', pod.metadata.uid!, { pod, podStatus }, signal);
  }

  kinds(): string[] {
    return this.calls.map((c) => `${c.kind} ${c.uid}`);
  }

  last(): Call {
    const c = this.calls.at(-1);
    assert.ok(c, 'expected a call');
    return c;
  }
}

function makePod(
  uid: string,
  extra: { static?: boolean; name?: string; grace?: number; phase?: 'Succeeded' } = {},
): Pod {
  return {
    metadata: {
      uid,
      name: extra.name ?? `pod-${uid}`,
      namespace: 'default',
      annotations: extra.static
        ? { [CONFIG_SOURCE_ANNOTATION]: 'file' }
        : { [CONFIG_SOURCE_ANNOTATION]: 'api' },
    },
    spec: { containers: [{ name: 'c', image: 'busybox' }], terminationGracePeriodSeconds: extra.grace },
    status: extra.phase ? { phase: extra.phase } : undefined,
  };
}

function setup(metrics?: MetricsRegistry) {
  const clock = new FakeClock();
  const cache = new InMemoryPodCache();
  const workQueue = new BasicWorkQueue(clock);
  const syncer = new ScriptedSyncer();
  const workers = new PodWorkersImpl({ syncer, podCache: cache, workQueue, clock, random: () => 0, metrics });
  /** What a relist does: a moment later, the cache becomes current as of then. */
  const relist = async () => {
    await flushPromises();
    clock.advance(1);
    cache.updateTime(clock.now());
    await flushPromises();
  };
  const update = async (opts: UpdatePodOptions) => {
    workers.updatePod(opts);
    await flushPromises();
  };
  return { clock, cache, workQueue, syncer, workers, relist, update };
}

describe('PodWorkers syncing', () => {
  it('observes kubelet_pod_worker_duration_seconds from an update to the end of its work, by update type', async () => {
    const metrics = new MetricsRegistry();
    const { syncer, relist, update, clock } = setup(metrics);
    await relist();
    await update({ updateType: 'create', pod: makePod('a'), startTimeMs: clock.now() });
    clock.advance(1500);
    syncer.last().resolve();
    await relist();
    // An update without a start time (the kubelet gives every one it dispatches one) is not observed.
    await update({ updateType: 'sync', pod: makePod('a') });
    await relist();
    syncer.last().resolve();
    await relist();
    await update({ updateType: 'kill', pod: makePod('a'), startTimeMs: clock.now() });
    clock.advance(2000);
    syncer.last().resolve();
    await relist();
    syncer.last().resolve();
    await relist();

    const sample = (op: string, part: 'count' | 'sum'): number => {
      const m = new RegExp(
        `^kubelet_pod_worker_duration_seconds_${part}\\{operation_type="${op}"\\} (\\S+)$`,
        'm',
      ).exec(text);
      return m ? Number(m[1]) : NaN;
    };
    const text = await metrics.expose();
    assert.deepEqual(syncer.kinds(), ['sync a', 'sync a', 'terminating a', 'terminated a']);
    assert.equal(sample('create', 'count'), 1);
    assert.ok(sample('create', 'sum') >= 1.5 && sample('create', 'sum') < 1.6, text);
    assert.equal(sample('sync', 'count'), NaN, 'no start time, nothing observed');
    assert.equal(sample('kill', 'count'), 1);
    assert.ok(sample('kill', 'sum') >= 2 && sample('kill', 'sum') < 2.1, text);
    // The terminated step replays the kill, and a replayed update has no start time (nor has upstream's).
    assert.equal(sample('terminated', 'count'), NaN);
  });

  it('syncs a new pod once the cache has state newer than its (never) last sync, then requeues at the resync interval', async () => {
    const { syncer, workers, relist, update, cache, workQueue, clock } = setup();
    cache.set('a', kubePodStatus('a', { ips: ['10.0.0.3'] }), undefined, clock.now());
    clock.advance(1);
    await update({ updateType: 'create', pod: makePod('a') });
    assert.deepEqual(syncer.kinds(), ['sync a']);
    assert.equal(syncer.last().updateType, 'create');
    assert.deepEqual(syncer.last().podStatus?.ips, ['10.0.0.3']);
    syncer.last().resolve();
    await relist();
    assert.deepEqual(workQueue.getReady(), []);
    clock.advance(60_000);
    assert.deepEqual(workQueue.getReady(), ['a']);
    assert.equal(workers.isPodTerminationRequested('a'), false);
    assert.equal(workers.couldHaveRunningContainers('a'), true);
  });

  it('waits for a relist after its last sync before syncing again', async () => {
    const { syncer, relist, update } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    syncer.last().resolve();
    await flushPromises();
    await update({ updateType: 'sync', pod: makePod('a') });
    assert.equal(syncer.calls.length, 1, 'the cache has seen nothing since the last sync');
    await relist();
    assert.equal(syncer.calls.length, 2);
    assert.equal(syncer.last().updateType, 'sync');
  });

  it('never runs two syncs of one pod at once, and coalesces waiting updates into the latest', async () => {
    const { syncer, relist, update } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    const first = syncer.last();
    const v2 = makePod('a');
    v2.metadata.labels = { v: '2' };
    const v3 = makePod('a');
    v3.metadata.labels = { v: '3' };
    await update({ updateType: 'update', pod: v2 });
    await update({ updateType: 'update', pod: v3 });
    await relist();
    assert.equal(syncer.calls.length, 1);
    first.resolve();
    await relist();
    assert.equal(syncer.calls.length, 2);
    assert.equal(syncer.last().pod?.metadata.labels?.['v'], '3');
    syncer.last().resolve();
    await relist();
    assert.equal(syncer.calls.length, 2, 'nothing left pending');
  });

  it('runs different pods in parallel lanes', async () => {
    const { syncer, relist, update } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    await update({ updateType: 'create', pod: makePod('b') });
    assert.deepEqual(syncer.kinds(), ['sync a', 'sync b']);
  });

  it('retries a failed sync after the back-off, logging rather than throwing', async () => {
    const { syncer, relist, update, workQueue, clock } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    logLines.length = 0;
    syncer.last().reject(new Error('failed to "StartContainer" for "c" with ErrImagePull'));
    await flushPromises();
    assert.ok(logLines.some((l) => l.includes('Error syncing pod, skipping') && l.includes('ErrImagePull')));
    clock.advance(9_999);
    assert.deepEqual(workQueue.getReady(), []);
    clock.advance(1);
    assert.deepEqual(workQueue.getReady(), ['a']);
  });

  it('syncs a pod that waits only on a back-off again when the back-off runs out, not after a second', async () => {
    const { syncer, relist, update, workQueue, clock } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    syncer.last().resolve(false, 20_000);
    await flushPromises();
    clock.advance(1_000);
    assert.deepEqual(workQueue.getReady(), []);
    clock.advance(18_999);
    assert.deepEqual(workQueue.getReady(), []);
    clock.advance(1);
    assert.deepEqual(workQueue.getReady(), ['a']);
  });

  it('caps a back-off requeue at the resync interval', async () => {
    const { syncer, relist, update, workQueue, clock } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    syncer.last().resolve(false, 300_000);
    await flushPromises();
    clock.advance(59_999);
    assert.deepEqual(workQueue.getReady(), []);
    clock.advance(1);
    assert.deepEqual(workQueue.getReady(), ['a']);
  });

  it('retries sooner when the pod network is not ready yet', async () => {
    const { syncer, relist, update, workQueue, clock } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    syncer.last().reject(new Error('network is not ready: container runtime network not ready'));
    await flushPromises();
    clock.advance(1_000);
    assert.deepEqual(workQueue.getReady(), ['a']);
  });

  it('fails the sync when the cache holds a runtime error for the pod', async () => {
    const { syncer, update, cache, clock, workQueue } = setup();
    cache.set('a', kubePodStatus('a'), new Error('rpc error: code = Unavailable'), clock.now());
    clock.advance(1);
    logLines.length = 0;
    await update({ updateType: 'create', pod: makePod('a') });
    assert.equal(syncer.calls.length, 0);
    assert.ok(logLines.some((l) => l.includes('error determining status: rpc error: code = Unavailable')));
    clock.advance(10_000);
    assert.deepEqual(workQueue.getReady(), ['a']);
  });
});

describe('PodWorkers and the PLEG events of a reading already synced', () => {
  /**
   * A pod start as the kubelet sees it: the create sync runs while the sandbox's event comes; the
   * sync after it is woken by the relist's reading of the pod, whose event for the container comes next.
   */
  async function startedPod() {
    const t = setup();
    const pod = makePod('a');
    const read = (ips: string[]) => {
      t.clock.advance(1);
      t.cache.set('a', kubePodStatus('a', { ips }), undefined, t.clock.now());
      return t.cache.get('a').status;
    };
    await t.relist();
    await t.update({ updateType: 'create', pod });
    const sandboxReading = read(['10.0.0.3']);
    await t.update({ updateType: 'sync', pod, plegReading: sandboxReading });
    t.syncer.last().resolve();
    await flushPromises();
    const containerReading = read(['10.0.0.3', '10.0.0.4']);
    await flushPromises();
    assert.equal(t.syncer.calls.length, 2, 'the reading woke the waiting sync');
    assert.equal(t.syncer.last().podStatus, containerReading);
    return { ...t, pod, read, containerReading };
  }

  it('runs no sync for an event whose reading the previous sync succeeded on, with the same pod', async () => {
    const { syncer, update, relist, pod, read, containerReading } = await startedPod();
    await update({ updateType: 'sync', pod, plegReading: containerReading });
    syncer.last().resolve();
    await relist();
    assert.equal(syncer.calls.length, 2);
    // A reading the last sync has not seen is synced.
    await update({ updateType: 'sync', pod, plegReading: read(['10.0.0.5']) });
    assert.equal(syncer.calls.length, 3);
    assert.deepEqual(syncer.last().podStatus?.ips, ['10.0.0.5']);
  });

  it('syncs for the event when the previous sync on that reading failed', async () => {
    const { syncer, update, relist, pod, containerReading } = await startedPod();
    await update({ updateType: 'sync', pod, plegReading: containerReading });
    syncer.last().reject(new Error('failed to "StartContainer"'));
    await relist();
    assert.equal(syncer.calls.length, 3);
  });

  it('syncs for the event when the pod changed, or when an update it replaced was not an event', async () => {
    const { syncer, update, relist, read, containerReading } = await startedPod();
    const changed = makePod('a');
    await update({ updateType: 'sync', pod: changed, plegReading: containerReading });
    syncer.last().resolve();
    await relist();
    assert.equal(syncer.calls.length, 3, 'another pod object');
    syncer.last().resolve();
    await relist();
    const reading = read(['10.0.0.6']);
    await update({ updateType: 'sync', pod: changed, plegReading: reading });
    assert.equal(syncer.calls.length, 4);
    // While that sync runs, a resync waits, then the event for the same reading takes its place.
    await update({ updateType: 'sync', pod: changed });
    await update({ updateType: 'sync', pod: changed, plegReading: reading });
    syncer.last().resolve();
    await relist();
    assert.equal(syncer.calls.length, 5, 'the resync it replaced runs');
  });
});

describe('PodWorkers termination', () => {
  it('kill aborts the sync under way, terminates with the pod grace period, then finishes', async () => {
    const { syncer, workers, relist, update, workQueue } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a', { grace: 45 }) });
    const sync = syncer.last();
    await update({ updateType: 'kill', pod: makePod('a', { grace: 45 }) });
    assert.equal(sync.signal.aborted, true);
    assert.equal(workers.isPodTerminationRequested('a'), true);
    assert.equal(
      workers.shouldPodContainersBeTerminating('a'),
      false,
      'the lane has not begun terminating yet',
    );
    await relist();
    assert.deepEqual(syncer.kinds(), ['sync a', 'terminating a']);
    assert.equal(syncer.last().gracePeriodSeconds, 45);
    assert.equal(workers.shouldPodContainersBeTerminating('a'), true);
    assert.equal(workers.isPodKnownTerminated('a'), false);
    syncer.last().resolve();
    await relist();
    assert.equal(workers.isPodKnownTerminated('a'), true);
    assert.equal(workers.couldHaveRunningContainers('a'), false);
    assert.equal(workers.shouldPodRuntimeBeRemoved('a'), true);
    assert.deepEqual(syncer.kinds(), ['sync a', 'terminating a', 'terminated a']);
    assert.equal(workers.shouldPodBeFinished('a'), false);
    syncer.last().resolve();
    await relist();
    assert.equal(workers.shouldPodBeFinished('a'), true);
    assert.ok(workQueue.getReady().includes('a'), 'each state change requeues at once');
    // A finished UID takes no more work.
    await update({ updateType: 'sync', pod: makePod('a') });
    await relist();
    assert.equal(syncer.calls.length, 3);
  });

  it('never goes back to syncing once a kill was requested', async () => {
    const { syncer, relist, update } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    syncer.last().resolve();
    await update({ updateType: 'kill', pod: makePod('a') });
    await relist();
    syncer.last().reject(new Error('StopContainer: deadline exceeded'));
    await flushPromises();
    await update({ updateType: 'update', pod: makePod('a') });
    await relist();
    assert.deepEqual(syncer.kinds(), ['sync a', 'terminating a', 'terminating a']);
    assert.equal(syncer.last().gracePeriodSeconds, 30, 'the API default when the pod names none');
  });

  it('keeps the shortest grace period asked for, and cuts a longer termination short', async () => {
    const { syncer, relist, update } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a', { grace: 60 }) });
    syncer.last().resolve();
    await update({
      updateType: 'kill',
      pod: makePod('a', { grace: 60 }),
      killPodOptions: { gracePeriodSecondsOverride: 20 },
    });
    await relist();
    const slow = syncer.last();
    assert.equal(slow.gracePeriodSeconds, 20);
    await update({
      updateType: 'kill',
      pod: makePod('a', { grace: 60 }),
      killPodOptions: { gracePeriodSecondsOverride: 5 },
    });
    assert.equal(slow.signal.aborted, true, 'a shorter grace period cancels the termination under way');
    await relist();
    assert.equal(syncer.last().gracePeriodSeconds, 5);
    const fast = syncer.last();
    await update({
      updateType: 'kill',
      pod: makePod('a', { grace: 60 }),
      killPodOptions: { gracePeriodSecondsOverride: 10 },
    });
    assert.equal(fast.signal.aborted, false, 'a longer one changes nothing');
    fast.reject(new Error('retry'));
    await relist();
    assert.equal(syncer.last().gracePeriodSeconds, 5);
  });

  it('uses the API deletion grace period when the pod is being deleted', async () => {
    const { syncer, relist, update } = setup();
    await relist();
    const deleting = makePod('a', { grace: 30 });
    deleting.metadata.deletionTimestamp = '2026-11-21T06:50:00Z';
    deleting.metadata.deletionGracePeriodSeconds = 12;
    await update({ updateType: 'update', pod: deleting });
    await relist();
    assert.deepEqual(syncer.kinds(), ['terminating a']);
    assert.equal(syncer.last().gracePeriodSeconds, 12);
  });

  it('does not lose a kill that arrives while another update is pending', async () => {
    const { syncer, relist, update } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    const first = syncer.last();
    first.resolve();
    await update({
      updateType: 'kill',
      pod: makePod('a'),
      killPodOptions: { gracePeriodSecondsOverride: 3 },
    });
    await update({ updateType: 'update', pod: makePod('a') });
    await relist();
    assert.deepEqual(syncer.kinds(), ['sync a', 'terminating a']);
    assert.equal(syncer.last().gracePeriodSeconds, 3);
  });

  it('moves a pod that ran to completion to terminating and terminated', async () => {
    const { syncer, workers, relist, update } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    syncer.last().resolve(true);
    await relist();
    assert.equal(workers.isPodTerminationRequested('a'), true);
    assert.deepEqual(syncer.kinds(), ['sync a', 'terminating a']);
    syncer.last().resolve();
    await relist();
    assert.deepEqual(syncer.kinds(), ['sync a', 'terminating a', 'terminated a']);
  });

  it('tells the kill requester when the containers have stopped', async () => {
    const { syncer, relist, update } = setup();
    await relist();
    let completed = 0;
    await update({ updateType: 'create', pod: makePod('a') });
    syncer.last().resolve();
    await update({
      updateType: 'kill',
      pod: makePod('a'),
      killPodOptions: { onCompleted: () => completed++ },
    });
    await relist();
    assert.equal(completed, 0);
    syncer.last().resolve();
    await flushPromises();
    assert.equal(completed, 1);
    // A kill sent once the pod has terminated is answered at once.
    await update({
      updateType: 'kill',
      pod: makePod('a'),
      killPodOptions: { onCompleted: () => completed++ },
    });
    assert.equal(completed, 2);
  });

  it('terminates a pod known only from the runtime, then forgets it', async () => {
    const { syncer, workers, update } = setup();
    const orphan = runningPod('x', [{}], [{}]);
    await update({ updateType: 'sync', runningPod: orphan });
    assert.deepEqual(syncer.kinds(), [], 'runtime pods can only be killed');
    await update({ updateType: 'kill', runningPod: orphan });
    assert.deepEqual(syncer.kinds(), ['terminatingRuntime x'], 'no need to wait for the cache');
    syncer.last().resolve();
    await flushPromises();
    assert.equal(workers.syncKnownPods([]).size, 0);
  });

  it('goes straight to terminated for a pod already finished in the API and stopped in the runtime', async () => {
    const { syncer, workers, relist, update, cache, clock } = setup();
    cache.set('a', kubePodStatus('a'), undefined, clock.now());
    await relist();
    await update({ updateType: 'create', pod: makePod('a', { phase: 'Succeeded' }) });
    assert.deepEqual(syncer.kinds(), ['terminated a']);
    assert.equal(workers.isPodKnownTerminated('a'), true);
  });
});

describe('PodWorkers housekeeping', () => {
  it('answers for unknown pods according to whether all pods have been handed over', () => {
    const { workers } = setup();
    assert.equal(workers.couldHaveRunningContainers('ghost'), true);
    assert.equal(workers.shouldPodRuntimeBeRemoved('ghost'), false);
    workers.syncKnownPods([]);
    assert.equal(workers.couldHaveRunningContainers('ghost'), false);
    assert.equal(workers.shouldPodRuntimeBeRemoved('ghost'), true);
    assert.equal(workers.shouldPodContentBeRemoved('ghost'), true);
    assert.equal(workers.shouldPodContainersBeTerminating('ghost'), true);
    assert.equal(workers.isPodTerminationRequested('ghost'), false);
  });

  it('forgets finished workers that are no longer desired and keeps the rest', async () => {
    const { syncer, workers, relist, update } = setup();
    syncer.auto = true;
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    await update({ updateType: 'create', pod: makePod('b') });
    await update({ updateType: 'kill', pod: makePod('a') });
    await relist();
    await relist();
    assert.deepEqual(syncer.kinds(), ['sync a', 'sync b', 'terminating a', 'terminated a']);
    assert.equal(workers.shouldPodBeFinished('a'), true);
    const known = workers.syncKnownPods(['b']);
    assert.deepEqual([...known.keys()], ['b']);
    assert.deepEqual(known.get('b'), { state: 'SyncPod', orphan: false, hasConfig: true, static: false });
  });

  it('keeps an undesired worker until it finishes, counting it as deleted', async () => {
    const { syncer, workers, relist, update } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    syncer.last().resolve();
    await update({ updateType: 'kill', pod: makePod('a') });
    await relist();
    const known = workers.syncKnownPods([]);
    assert.equal(known.get('a')?.orphan, true);
    assert.equal(known.get('a')?.state, 'TerminatingPod');
    syncer.last().resolve();
    await relist();
    assert.equal(workers.shouldPodContentBeRemoved('a'), true, 'deleted and terminated');
  });

  it('restarts a UID that was created again while terminating, once housekeeping clears the old worker', async () => {
    const { syncer, workers, relist, update } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    syncer.last().resolve();
    await update({ updateType: 'kill', pod: makePod('a') });
    await update({ updateType: 'create', pod: makePod('a') });
    await relist();
    syncer.last().resolve(); // terminating
    await relist();
    syncer.last().resolve(); // terminated
    await relist();
    assert.deepEqual(syncer.kinds(), ['sync a', 'terminating a', 'terminated a']);
    assert.equal(workers.syncKnownPods(['a']).has('a'), false, 'the old worker is gone');
    await update({ updateType: 'create', pod: makePod('a') });
    await relist();
    assert.deepEqual(syncer.kinds(), ['sync a', 'terminating a', 'terminated a', 'sync a']);
  });

  it('starts a static pod only after the one with the same full name has terminated', async () => {
    const { syncer, workers, relist, update, workQueue, clock } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('old', { static: true, name: 'web' }) });
    syncer.last().resolve();
    await update({ updateType: 'create', pod: makePod('new', { static: true, name: 'web' }) });
    await relist();
    assert.deepEqual(syncer.kinds(), ['sync old']);
    clock.advance(10_000);
    assert.ok(workQueue.getReady().includes('new'), 'the waiting pod is retried after the back-off');
    await update({ updateType: 'kill', pod: makePod('old', { static: true, name: 'web' }) });
    await relist();
    assert.equal(workers.isPodForMirrorPodTerminatingByFullName('web_default'), true);
    syncer.last().resolve();
    await relist();
    syncer.last().resolve();
    await relist();
    await update({ updateType: 'sync', pod: makePod('new', { static: true, name: 'web' }) });
    await relist();
    assert.deepEqual(syncer.kinds(), ['sync old', 'terminating old', 'terminated old', 'sync new']);
  });

  it('stop aborts the syncs under way, waits for the lanes, and ignores later updates', async () => {
    const { syncer, workers, relist, update } = setup();
    await relist();
    await update({ updateType: 'create', pod: makePod('a') });
    const inFlight = syncer.last();
    await update({ updateType: 'create', pod: makePod('b') });
    let stopped = false;
    const stopping = workers.stop().then(() => (stopped = true));
    assert.equal(inFlight.signal.aborted, true);
    await stopping;
    assert.equal(stopped, true);
    await update({ updateType: 'create', pod: makePod('c') });
    await relist();
    assert.deepEqual(syncer.kinds(), ['sync a', 'sync b']);
  });

  it('stop also releases a lane waiting on the cache', async () => {
    const { syncer, workers, relist, update, cache } = setup();
    const waits: AbortSignal[] = [];
    const getNewerThan = cache.getNewerThan.bind(cache);
    cache.getNewerThan = (uid, minTimeMs, signal) => {
      if (signal) waits.push(signal);
      return getNewerThan(uid, minTimeMs, signal);
    };
    // No relist yet: the lane waits for state newer than its (never) last sync.
    await update({ updateType: 'create', pod: makePod('a') });
    assert.equal(waits.length, 1, 'the lane waits on the cache');
    assert.equal(waits[0]?.aborted, false);
    let timer: NodeJS.Timeout | undefined;
    const stopped = await Promise.race([
      workers.stop().then(() => 'stopped'),
      new Promise((resolve) => (timer = setTimeout(() => resolve('still waiting after 2 s'), 2000))),
    ]);
    clearTimeout(timer);
    assert.equal(stopped, 'stopped');
    assert.equal(waits[0]?.aborted, true, 'the wait was cut short');
    // The state the lane waited for arrives after the stop: nothing syncs on it.
    await relist();
    assert.deepEqual(syncer.kinds(), []);
  });
});
