import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TaskEvent } from '../../../src/cri/containerd-events/subscribe-task-events.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { EventedPLEG, type TaskEventSubscriber } from '../../../src/pleg/evented-pleg.js';
import { GenericPLEG, type PodLifecycleEvent } from '../../../src/pleg/generic-pleg.js';
import { InMemoryPodCache } from '../../../src/pleg/pod-cache.js';
import { FakeKubeRuntime, flushPromises, runningPod } from '../helpers/fake-kube-runtime.js';

setLogSink(() => undefined);

/** A task event source the test drives: open a stream, send events, break it. */
class FakeEventSource {
  onEvent: ((event: TaskEvent) => void) | undefined;
  hooks: Parameters<TaskEventSubscriber>[2] | undefined;
  private finish: (() => void) | undefined;

  readonly subscribe: TaskEventSubscriber = (onEvent, signal, hooks) => {
    this.onEvent = onEvent;
    this.hooks = hooks;
    return new Promise<void>((resolve) => {
      this.finish = resolve;
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  };

  open(): void {
    this.hooks!.onSubscribe();
  }

  exit(containerId: string, execId = ''): void {
    this.onEvent!({
      type: 'TaskExit',
      namespace: 'k8s.io',
      topic: '/tasks/exit',
      timestamp: undefined,
      containerId,
      execId,
      pid: 1,
      exitStatus: 0,
      exitedAt: undefined,
    });
  }

  end(): void {
    this.finish?.();
  }
}

function setup() {
  const clock = new FakeClock();
  const runtime = new FakeKubeRuntime();
  const cache = new InMemoryPodCache();
  const generic = new GenericPLEG({ runtime, cache, clock });
  const source = new FakeEventSource();
  const pleg = new EventedPLEG({ generic, clock, subscribe: source.subscribe });
  return { clock, runtime, generic, source, pleg };
}

function drain(pleg: EventedPLEG): string[] {
  const out: string[] = [];
  for (let e: PodLifecycleEvent | undefined; (e = pleg.events.tryReceive());)
    out.push(`${e.type} ${e.containerId}`);
  return out;
}

describe('EventedPLEG', () => {
  it('relists at once on a task event, with the periodic relist slowed to 10 s while the stream is open', async () => {
    const { runtime, generic, source, pleg } = setup();
    runtime.pods = [runningPod('a', [{}], [{ state: 'running' }])];
    pleg.start();
    await flushPromises();
    source.open();
    await flushPromises();
    assert.equal(generic.relistPeriod, 10_000);
    drain(pleg);
    const relists = pleg.metrics().relistCount;

    // No time passes: only the event can make the PLEG look again.
    runtime.pods = [runningPod('a', [{}], [{ state: 'exited' }])];
    source.exit('c-a-0');
    await flushPromises();
    assert.deepEqual(drain(pleg), ['ContainerDied c-a-0']);
    assert.equal(pleg.metrics().relistCount, relists + 1);
    assert.equal(pleg.metrics().taskEvents, 1);

    // An exec's exit (a probe) changes no container: no relist.
    source.exit('c-a-0', 'probe-1');
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, relists + 1);
    await pleg.stop();
  });

  it('relists again shortly after an event, for a runtime that records the change after publishing it', async () => {
    const { clock, runtime, source, pleg } = setup();
    runtime.pods = [runningPod('a', [{}], [{ state: 'running' }])];
    pleg.start();
    await flushPromises();
    source.open();
    await flushPromises();
    drain(pleg);

    // containerd's CRI plugin records the exit only after the event: the relist at once sees no change.
    source.exit('c-a-0');
    await flushPromises();
    assert.deepEqual(drain(pleg), []);
    runtime.pods = [runningPod('a', [{}], [{ state: 'exited' }])];
    clock.advance(100);
    await flushPromises();
    assert.deepEqual(drain(pleg), ['ContainerDied c-a-0']);
    await pleg.stop();
  });

  it('the events of a burst share relists: one at once, then one per 250 ms gap, and the last event keeps its follow-ups', async () => {
    const { clock, runtime, source, pleg } = setup();
    runtime.pods = [runningPod('a', [{}], [{ state: 'running' }, { state: 'running' }])];
    pleg.start();
    await flushPromises();
    source.open();
    await flushPromises();
    drain(pleg);
    const before = pleg.metrics().relistCount;

    // Five events 20 ms apart: only the first relists at once.
    for (let i = 0; i < 5; i++) {
      if (i > 0) clock.advance(20);
      source.exit('c-a-0');
      await flushPromises();
    }
    assert.equal(pleg.metrics().relistCount, before + 1);
    assert.equal(pleg.metrics().taskEvents, 5);

    // A change the first relist could not see: the last event's first follow-up (100 ms after it)
    // finds it, and the burst's shared relist follows at 250 ms after the first.
    runtime.pods = [runningPod('a', [{}], [{ state: 'exited' }, { state: 'running' }])];
    clock.advance(99);
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, before + 1);
    clock.advance(1);
    await flushPromises();
    assert.deepEqual(drain(pleg), ['ContainerDied c-a-0']);
    assert.equal(pleg.metrics().relistCount, before + 2);
    runtime.pods = [runningPod('a', [{}], [{ state: 'exited' }, { state: 'exited' }])];
    clock.advance(69);
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, before + 2);
    clock.advance(1);
    await flushPromises();
    assert.deepEqual(drain(pleg), ['ContainerDied c-a-1']);
    assert.equal(pleg.metrics().relistCount, before + 3);

    // Once the gap has passed, a lone event relists at once again.
    clock.advance(250);
    await flushPromises();
    const settled = pleg.metrics().relistCount;
    source.exit('c-a-1');
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, settled + 1);
    await pleg.stop();
    assert.equal(clock.pendingTimers(), 0);
  });

  it('a relist asked for shares the gap with the task events: at once when none ran for 250 ms, else once it has passed', async () => {
    const { clock, source, pleg } = setup();
    pleg.start();
    await flushPromises();
    source.open();
    await flushPromises();
    const before = pleg.metrics().relistCount;
    pleg.requestRelist();
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, before + 1);
    clock.advance(50);
    source.exit('c-a-0');
    pleg.requestRelist();
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, before + 1, 'within the gap');
    clock.advance(99);
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, before + 1);
    clock.advance(1);
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, before + 2, "the event's first follow-up");
    clock.advance(100);
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, before + 3, 'the shared relist, 250 ms after the first');
    await pleg.stop();
  });

  it('waits 10 s between relists while subscribed, and only 1 s once the stream breaks', async () => {
    const { clock, generic, source, pleg } = setup();
    pleg.start();
    await flushPromises();
    source.open();
    await flushPromises();
    const afterOpen = pleg.metrics().relistCount;
    clock.advance(5000);
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, afterOpen, 'no periodic relist within 10 s');

    source.hooks!.onBreak('14 UNAVAILABLE: connection refused');
    await flushPromises();
    assert.equal(generic.relistPeriod, 1000);
    assert.equal(pleg.metrics().subscribed, false);
    const afterBreak = pleg.metrics().relistCount;
    assert.equal(afterBreak, afterOpen + 1, 'the break itself relists, to cover missed events');
    for (let i = 1; i <= 3; i++) {
      clock.advance(1000);
      await flushPromises();
      assert.equal(pleg.metrics().relistCount, afterBreak + i);
    }

    // Back: one relist for the gap, then 10 s again.
    source.open();
    await flushPromises();
    assert.equal(generic.relistPeriod, 10_000);
    await pleg.stop();
  });

  it('stays a generic PLEG, relisting every second, when the runtime has no Events service', async () => {
    const { clock, generic, source, pleg } = setup();
    pleg.start();
    await flushPromises();
    source.open();
    source.hooks!.onBreak('12 UNIMPLEMENTED: unknown service containerd.services.events.v1.Events');
    await flushPromises();
    assert.equal(generic.relistPeriod, 1000);
    const before = pleg.metrics().relistCount;
    clock.advance(1000);
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, before + 1);
    await pleg.stop();
  });

  it('falls back to relisting every second when the subscription fails outright', async () => {
    const { clock, generic } = setup();
    const pleg = new EventedPLEG({ generic, clock, subscribe: () => Promise.reject(new Error('no socket')) });
    pleg.start();
    await flushPromises();
    assert.equal(generic.relistPeriod, 1000);
    const before = pleg.metrics().relistCount;
    clock.advance(1000);
    await flushPromises();
    assert.equal(pleg.metrics().relistCount, before + 1);
    await pleg.stop();
  });
});
