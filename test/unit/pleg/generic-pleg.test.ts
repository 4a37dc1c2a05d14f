import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { GenericPLEG, type PodLifecycleEvent } from '../../../src/pleg/generic-pleg.js';
import { formatGoDuration } from '../../../src/lib/go-duration.js';
import { InMemoryPodCache } from '../../../src/pleg/pod-cache.js';
import type { Container, PodSandbox } from '../../../src/cri/types.js';
import { RunningPodAssembler } from '../../../src/kuberuntime/running-pods.js';
import type { RunningPod } from '../../../src/kuberuntime/types.js';
import { FakeKubeRuntime, flushPromises, kubePodStatus, runningPod } from '../helpers/fake-kube-runtime.js';

const logLines: string[] = [];
setLogSink((line) => logLines.push(line));

function setup(opts: { capacity?: number } = {}) {
  const clock = new FakeClock();
  const runtime = new FakeKubeRuntime();
  const cache = new InMemoryPodCache();
  const pleg = new GenericPLEG({ runtime, cache, clock, eventChannelCapacity: opts.capacity });
  return { clock, runtime, cache, pleg };
}

function drain(pleg: GenericPLEG): string[] {
  const out: string[] = [];
  for (let e: PodLifecycleEvent | undefined; (e = pleg.events.tryReceive());) {
    out.push(`${e.podUid} ${e.type} ${e.containerId}`);
  }
  return out;
}

describe('GenericPLEG relist', () => {
  it('reports every sandbox and container on the first relist', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [runningPod('a', [{}], [{ state: 'running' }, { state: 'exited' }])];
    await pleg.relist();
    assert.deepEqual(drain(pleg), [
      'a ContainerStarted sb-a-0',
      'a ContainerStarted c-a-0',
      'a ContainerDied c-a-1',
    ]);
  });

  it('turns state changes between relists into upstream events', async () => {
    const { runtime, pleg, clock } = setup();
    runtime.pods = [runningPod('a', [{}], [{ state: 'running' }, { state: 'running' }, { state: 'exited' }])];
    await pleg.relist();
    drain(pleg);

    clock.advance(1000);
    // c0 dies; c1 vanishes while running; c2 (already dead) is removed; a new c3 starts.
    const pod = runningPod('a', [{}], [{ state: 'exited' }]);
    runtime.pods = [
      {
        ...pod,
        containers: [...pod.containers, { ...pod.containers[0]!, id: 'c-a-3', name: 'c3', state: 'running' }],
      },
    ];
    await pleg.relist();
    assert.deepEqual(drain(pleg), [
      'a ContainerDied c-a-0',
      'a ContainerDied c-a-1',
      'a ContainerRemoved c-a-1',
      'a ContainerRemoved c-a-2',
      'a ContainerStarted c-a-3',
    ]);
  });

  it('counts a sandbox that stops as a death in the pod', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [runningPod('a', [{ state: 'ready' }], [])];
    await pleg.relist();
    drain(pleg);
    runtime.pods = [runningPod('a', [{ state: 'notready' }], [])];
    await pleg.relist();
    assert.deepEqual(drain(pleg), ['a ContainerDied sb-a-0']);
  });

  it('reports a vanished pod as died and removed, and drops it from the cache', async () => {
    const { runtime, pleg, cache } = setup();
    runtime.pods = [runningPod('a', [], [{ state: 'running' }])];
    runtime.statuses.set('a', kubePodStatus('a', { ips: ['10.1.0.5'] }));
    await pleg.relist();
    drain(pleg);
    assert.deepEqual(cache.get('a').status.ips, ['10.1.0.5']);
    runtime.pods = [];
    await pleg.relist();
    assert.deepEqual(drain(pleg), ['a ContainerDied c-a-0', 'a ContainerRemoved c-a-0']);
    assert.equal(cache.get('a').modifiedMs, 0);
    // Once gone and reported, the pod produces nothing more.
    await pleg.relist();
    assert.deepEqual(drain(pleg), []);
  });

  it('does not pass on ContainerChanged, but still refreshes the cache for it', async () => {
    const { runtime, pleg, cache } = setup();
    runtime.pods = [runningPod('a', [], [{ state: 'created' }])];
    runtime.statuses.set('a', kubePodStatus('a', { ips: ['10.1.0.9'] }));
    await pleg.relist();
    assert.deepEqual(drain(pleg), []);
    assert.deepEqual(cache.get('a').status.ips, ['10.1.0.9']);
  });

  it('inspects only the pods with events', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [runningPod('a', [{}], [{}]), runningPod('b', [{}], [{}])];
    await pleg.relist();
    runtime.calls.length = 0;
    runtime.pods = [runningPod('a', [{}], [{}]), runningPod('b', [{}], [{ state: 'exited' }])];
    await pleg.relist();
    assert.deepEqual(runtime.calls, ['getPods', 'getPodStatus b']);
  });

  it('passes over a pod listed as the same object, and still sends the events of a failed reading later', async () => {
    const { runtime, pleg } = setup();
    // As the runtime manager hands them out: the same frozen pod while nothing changed.
    let listed: RunningPod[] = [Object.freeze(runningPod('a', [{}], [{}]))];
    runtime.getPods = async () => {
      runtime.calls.push('getPods');
      return listed;
    };
    runtime.podStatusErrors.set('a', new Error('deadline exceeded'));
    await pleg.relist();
    assert.deepEqual(drain(pleg), [], 'no events before the status is in the cache');
    runtime.podStatusErrors.clear();
    await pleg.relist();
    assert.deepEqual(drain(pleg), ['a ContainerStarted sb-a-0', 'a ContainerStarted c-a-0']);
    runtime.calls.length = 0;
    await pleg.relist();
    assert.deepEqual(runtime.calls, ['getPods'], 'the unchanged pod is not read again');
    listed = [Object.freeze(runningPod('a', [{}], [{ state: 'exited' }]))];
    await pleg.relist();
    assert.deepEqual(drain(pleg), ['a ContainerDied c-a-0']);
  });

  it("over the runtime manager's pods: a quiet relist reads none, a changed item only its pod, a pod gone its removal", async () => {
    const { runtime, pleg, cache, clock } = setup();
    // As the runtime manager lists them: the list cache's frozen items, grouped by its assembler.
    const item = <T extends object>(value: T): T => {
      for (const v of Object.values(value)) if (typeof v === 'object' && v) Object.freeze(v);
      return Object.freeze(value);
    };
    const sandbox = (uid: string): PodSandbox =>
      item({
        id: `sb-${uid}`,
        metadata: { name: `pod-${uid}`, namespace: 'ns', uid, attempt: 0 },
        state: 'SANDBOX_READY',
        createdAt: 1,
        labels: {},
        annotations: {},
        runtimeHandler: '',
      });
    const container = (uid: string, state: Container['state'] = 'CONTAINER_RUNNING'): Container =>
      item({
        id: `c-${uid}`,
        podSandboxId: `sb-${uid}`,
        metadata: { name: 'app', attempt: 0 },
        image: { image: 'busybox' },
        imageRef: 'sha256:abc',
        state,
        createdAt: 1,
        labels: {
          'io.kubernetes.pod.uid': uid,
          'io.kubernetes.pod.name': `pod-${uid}`,
          'io.kubernetes.pod.namespace': 'ns',
        },
        annotations: {},
      });
    const uids = Array.from({ length: 20 }, (_, i) => `p${i}`);
    const sandboxes = uids.map(sandbox);
    const containers = uids.map((uid) => container(uid));
    const assembler = new RunningPodAssembler();
    runtime.getPods = async () => {
      runtime.calls.push('getPods');
      return assembler.assemble([...sandboxes], [...containers]);
    };
    await pleg.relist();
    assert.equal(drain(pleg).length, 40);

    // Nothing changed: no pod is read, no event sent, and yet a worker waiting on a quiet pod moves on.
    runtime.calls.length = 0;
    const lastSyncMs = clock.now();
    clock.advance(1000);
    const waiting = cache.getNewerThan('p3', lastSyncMs);
    await pleg.relist();
    await waiting;
    assert.deepEqual(runtime.calls, ['getPods']);
    assert.deepEqual(drain(pleg), []);

    // One container of twenty exited: only its pod is read, and only its event goes out.
    runtime.calls.length = 0;
    containers[7] = container('p7', 'CONTAINER_EXITED');
    await pleg.relist();
    assert.deepEqual(runtime.calls, ['getPods', 'getPodStatus p7']);
    assert.deepEqual(drain(pleg), ['p7 ContainerDied c-p7']);

    // Everything of p9 is gone while running: it died and was removed, and its cache entry goes.
    runtime.calls.length = 0;
    sandboxes.splice(9, 1);
    containers.splice(9, 1);
    await pleg.relist();
    assert.deepEqual(runtime.calls, ['getPods']);
    assert.deepEqual(drain(pleg), [
      'p9 ContainerDied sb-p9',
      'p9 ContainerRemoved sb-p9',
      'p9 ContainerDied c-p9',
      'p9 ContainerRemoved c-p9',
    ]);
    assert.equal(cache.size, 19);
    await pleg.relist();
    assert.deepEqual(drain(pleg), []);
  });

  it('forgets a pod that was listed, could not be read and went away', async () => {
    const { runtime, pleg, cache } = setup();
    runtime.pods = [runningPod('a', [{}], [{}])];
    runtime.podStatusErrors.set('a', new Error('deadline exceeded'));
    await pleg.relist();
    runtime.pods = [];
    await pleg.relist();
    assert.deepEqual(drain(pleg), []);
    assert.equal((pleg as unknown as { records: Map<string, unknown> }).records.size, 0);
    assert.equal(cache.size, 0);
  });

  it("reads a changed pod's status from the relist's own listing, dated to that listing", async () => {
    const { runtime, pleg, cache, clock } = setup();
    runtime.pods = [runningPod('a', [{}], [{}])];
    runtime.onGetPodStatus = () => clock.advance(500);
    const listedAtMs = clock.now();
    await pleg.relist();
    assert.deepEqual(runtime.listed.get('a'), runtime.pods[0]);
    // Read 500 ms after the listing, yet no newer than it: a container made in between is not in it.
    assert.equal(cache.get('a').modifiedMs, listedAtMs);
  });

  it('marks the whole cache current as of the relist start, waking workers of quiet pods', async () => {
    const { runtime, pleg, cache, clock } = setup();
    runtime.pods = [runningPod('a', [{}], [{}])];
    await pleg.relist();
    const lastSyncMs = clock.now();
    let woke = false;
    const waiting = cache.getNewerThan('a', lastSyncMs).then(() => (woke = true));
    await pleg.relist(); // same time: not newer
    await flushPromises();
    assert.equal(woke, false);
    clock.advance(1000);
    await pleg.relist();
    await waiting;
    assert.equal(woke, true);
  });

  it('keeps events of a pod it failed to inspect until inspection succeeds', async () => {
    const { runtime, pleg, cache, clock } = setup();
    runtime.pods = [runningPod('a', [{}], [{}])];
    runtime.podStatusErrors.set('a', new Error('DeadlineExceeded'));
    await pleg.relist();
    assert.deepEqual(drain(pleg), []);
    assert.equal(cache.get('a').error?.message, 'DeadlineExceeded');

    clock.advance(1000);
    runtime.podStatusErrors.clear();
    runtime.statuses.set('a', kubePodStatus('a', { ips: ['10.0.0.7'] }));
    await pleg.relist();
    assert.deepEqual(drain(pleg), ['a ContainerStarted sb-a-0', 'a ContainerStarted c-a-0']);
    assert.equal(cache.get('a').error, undefined);
    assert.deepEqual(cache.get('a').status.ips, ['10.0.0.7']);
  });

  it('reinspects a pod whose earlier inspection failed even when it has no new events', async () => {
    const { runtime, pleg, cache, clock } = setup();
    runtime.pods = [runningPod('a', [{}], [{}])];
    await pleg.relist();
    drain(pleg);
    // A change whose inspection fails: the record keeps the old listing.
    runtime.pods = [runningPod('a', [{}], [{ state: 'exited' }])];
    runtime.podStatusErrors.set('a', new Error('boom'));
    clock.advance(1000);
    await pleg.relist();
    assert.deepEqual(drain(pleg), []);
    runtime.podStatusErrors.clear();
    clock.advance(1000);
    runtime.calls.length = 0;
    await pleg.relist();
    assert.deepEqual(drain(pleg), ['a ContainerDied c-a-0']);
    assert.deepEqual(runtime.calls, ['getPods', 'getPodStatus a']);
    assert.equal(cache.get('a').error, undefined);
  });

  it('keeps the last known IPs of a pod whose sandboxes have all stopped', async () => {
    const { runtime, pleg, cache, clock } = setup();
    runtime.pods = [runningPod('a', [{}], [{}])];
    runtime.statuses.set('a', kubePodStatus('a', { ips: ['10.88.0.4'] }));
    await pleg.relist();
    clock.advance(1000);
    runtime.pods = [runningPod('a', [{ state: 'notready' }], [{ state: 'exited' }])];
    runtime.statuses.set('a', kubePodStatus('a', { ips: [] }));
    await pleg.relist();
    assert.deepEqual(cache.get('a').status.ips, ['10.88.0.4']);
  });

  it('drops events with a log when the channel is full', async () => {
    const { runtime, pleg } = setup({ capacity: 2 });
    runtime.pods = [runningPod('a', [{}], [{}, {}])];
    logLines.length = 0;
    await pleg.relist();
    assert.equal(pleg.events.size, 2);
    assert.equal(pleg.metrics().discardedEvents, 1);
    assert.ok(logLines.some((l) => l.includes('Event channel is full')));
  });

  it('never runs two relists at once', async () => {
    const { runtime, pleg } = setup();
    let open!: () => void;
    runtime.getPodsGate = new Promise((resolve) => (open = resolve));
    const first = pleg.relist();
    const second = pleg.relist();
    await flushPromises();
    open();
    await Promise.all([first, second]);
    assert.equal(runtime.calls.filter((c) => c === 'getPods').length, 1);
    assert.equal(pleg.metrics().relistCount, 1);
  });
});

describe('GenericPLEG health and loop', () => {
  it('is unhealthy before the first successful relist', () => {
    const { pleg } = setup();
    assert.deepEqual(pleg.healthy(), { healthy: false, message: 'pleg has yet to be successful' });
  });

  it("falls unhealthy with upstream's message once relists have failed past the threshold", async () => {
    const { runtime, pleg, clock } = setup();
    await pleg.relist();
    assert.deepEqual(pleg.healthy(), { healthy: true });
    runtime.getPodsError = new Error('connection refused');
    logLines.length = 0;
    clock.advance(180_000);
    await pleg.relist();
    assert.equal(pleg.healthy().healthy, true, 'exactly at the threshold is still healthy');
    assert.ok(
      logLines.some((l) => l.includes('Unable to retrieve pods') && l.includes('connection refused')),
    );
    clock.advance(500);
    assert.deepEqual(pleg.healthy(), {
      healthy: false,
      message: 'pleg was last seen active 3m0.5s ago; threshold is 3m0s',
    });
    assert.equal(pleg.metrics().relistFailures, 1);
    runtime.getPodsError = undefined;
    await pleg.relist();
    assert.deepEqual(pleg.healthy(), { healthy: true });
  });

  it('relists every period after the previous relist ends, until stopped', async () => {
    const { runtime, pleg, clock } = setup();
    pleg.start();
    await flushPromises();
    assert.equal(runtime.calls.filter((c) => c === 'getPods').length, 1);
    clock.advance(999);
    await flushPromises();
    assert.equal(runtime.calls.filter((c) => c === 'getPods').length, 1);
    clock.advance(1);
    await flushPromises();
    assert.equal(runtime.calls.filter((c) => c === 'getPods').length, 2);
    await pleg.stop();
    clock.advance(5000);
    await flushPromises();
    assert.equal(runtime.calls.filter((c) => c === 'getPods').length, 2);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('a relist asked for during a relist of 40 ms starts 80 ms after it, not at once', async () => {
    const { runtime, pleg, clock } = setup();
    const relists = () => runtime.calls.filter((c) => c === 'getPods').length;
    let open!: () => void;
    runtime.getPodsGate = new Promise((resolve) => (open = resolve));
    pleg.start();
    await flushPromises();
    clock.advance(40);
    pleg.requestRelist();
    runtime.getPodsGate = undefined;
    open();
    await flushPromises();
    assert.equal(relists(), 1);
    clock.advance(79);
    await flushPromises();
    assert.equal(relists(), 1);
    clock.advance(1);
    await flushPromises();
    assert.equal(relists(), 2);
    // That one took no time: the next asked for runs at once.
    pleg.requestRelist();
    await flushPromises();
    assert.equal(relists(), 3);
    await pleg.stop();
  });

  it('measures relists', async () => {
    const { runtime, pleg, clock } = setup();
    let open!: () => void;
    runtime.getPodsGate = new Promise((resolve) => (open = resolve));
    const start = clock.now();
    const p = pleg.relist();
    await flushPromises();
    clock.advance(250);
    open();
    await p;
    const m = pleg.metrics();
    assert.equal(m.relistCount, 1);
    assert.equal(m.lastRelistDurationMs, 250);
    assert.equal(m.lastRelistTimeMs, start);
  });
});

describe('formatGoDuration', () => {
  it('writes durations as Go does', () => {
    assert.equal(formatGoDuration(0), '0s');
    assert.equal(formatGoDuration(250), '250ms');
    assert.equal(formatGoDuration(1500), '1.5s');
    assert.equal(formatGoDuration(180_000), '3m0s');
    assert.equal(formatGoDuration(180_500), '3m0.5s');
    assert.equal(formatGoDuration(3_600_000), '1h0m0s');
    assert.equal(formatGoDuration(3_723_250), '1h2m3.25s');
  });
});

describe('GenericPLEG relist failures', () => {
  it('reports a failing relist once per state change, and recovers once the runtime answers', async () => {
    const { runtime, pleg, clock, cache } = setup();
    runtime.pods = [runningPod('a', [{}], [{ state: 'running' }])];
    pleg.start();
    await flushPromises();
    assert.equal(pleg.healthy().healthy, true);
    drain(pleg);

    // The runtime answers with an error a relist after another, for longer than the threshold.
    const tooLarge = new Error(
      'rpc error: code = ResourceExhausted desc = Received message larger than max (17000000 vs 16777216)',
    );
    runtime.getPodsError = tooLarge;
    logLines.length = 0;
    for (let i = 0; i < 200; i++) {
      clock.advance(1000);
      await flushPromises();
    }
    const errors = () => logLines.filter((l) => l.startsWith('E') && l.includes('Unable to retrieve pods'));
    assert.equal(errors().length, 1, 'one error line for 200 failed relists');
    assert.ok(pleg.metrics().relistFailures >= 200);
    assert.equal(pleg.healthy().healthy, false, 'past the threshold the node is unhealthy');

    // A new reason is a new state: reported once more.
    runtime.getPodsError = new Error('connection refused');
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      await flushPromises();
    }
    assert.equal(errors().length, 2);

    // The cause is gone: the next relist succeeds, health comes back, and a killed container is seen.
    runtime.getPodsError = undefined;
    runtime.pods = [runningPod('a', [{}], [{ state: 'exited' }])];
    clock.advance(1000);
    await flushPromises();
    assert.deepEqual(pleg.healthy(), { healthy: true });
    assert.ok(logLines.some((l) => l.includes('Retrieving pods works again')));
    assert.deepEqual(drain(pleg), ['a ContainerDied c-a-0']);
    assert.ok(cache.get('a'), 'the cache was refreshed');
    await pleg.stop();
  });
});
