import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { fullGarbageCollection, HeapTrimmer, type HeapSample } from '../../../src/lib/heap-trim.js';

const MIB = 1024 * 1024;

/**
 * A trimmer on a fake clock whose samples the test sets: `heap` in MiB, and the CPU the process
 * uses per check as a fraction of one core over the 2 s period.
 */
function trimmer(opts: { minGapMs?: number } = {}) {
  const clock = new FakeClock();
  const state = { heapMiB: 20, cpuMicros: 0, collections: 0, afterCollectMiB: 15 };
  const sample = (): HeapSample => ({ heapBytes: state.heapMiB * MIB, cpuMicros: state.cpuMicros });
  const t = new HeapTrimmer({
    clock,
    periodMs: 2000,
    growthBytes: 8 * MIB,
    quietCpuFraction: 0.05,
    minGapMs: opts.minGapMs ?? 10_000,
    sample,
    collect: () => {
      state.collections++;
      state.heapMiB = state.afterCollectMiB;
    },
  });
  /** Two seconds pass with the process using `cores` of CPU, the heap at `heapMiB`, then a check. */
  const period = (cores: number, heapMiB = state.heapMiB): boolean => {
    clock.advance(2000);
    state.cpuMicros += cores * 2000 * 1000;
    state.heapMiB = heapMiB;
    return t.check();
  };
  assert.equal(t.check(), false, 'the first look has no CPU figure to judge by');
  return { t, state, period };
}

describe('HeapTrimmer', () => {
  it('collects once in the first quiet period after start-up, then only after the heap grew by the threshold', () => {
    const { t, state, period } = trimmer();
    assert.equal(period(0.3), false, 'start-up still busy');
    assert.equal(period(0.01), true, 'start-up settled');
    assert.equal(state.collections, 1);
    // From 15 MiB after that collection: quiet but not grown enough, for long past the gap.
    for (let i = 0; i < 10; i++) assert.equal(period(0.01, 22.9), false);
    assert.equal(period(0.01, 23), true, '8 MiB above the level after the last collection');
    assert.equal(state.collections, 2);
    assert.deepEqual(t.detail(), { collections: 2 });
  });

  it('waits while the process is busy, however much the heap has grown', () => {
    const { state, period } = trimmer();
    period(0.01); // the start-up collection
    const before = state.collections;
    for (let i = 0; i < 10; i++) assert.equal(period(0.2, 40 + i), false, 'a burst under way');
    assert.equal(state.collections, before);
    assert.equal(period(0.04), true, 'the burst is over');
  });

  it('measures growth from the lowest level seen, so a heap V8 shrank on its own grows from there', () => {
    const { state, period } = trimmer();
    period(0.01);
    assert.equal(state.collections, 1); // at 15 MiB
    for (let i = 0; i < 5; i++) period(0.01, 12); // V8's own collection brought it lower; 10 s pass
    assert.equal(period(0.01, 19.9), false, 'only 7.9 MiB above 12');
    assert.equal(period(0.01, 20), true);
  });

  it('keeps collections at least minGapMs apart', () => {
    const { state, period } = trimmer({ minGapMs: 10_000 });
    period(0.01);
    assert.equal(state.collections, 1);
    // 2 s and 4 s later the heap is far above the threshold and the process quiet: too soon.
    assert.equal(period(0.01, 40), false);
    assert.equal(period(0.01, 40), false);
    assert.equal(period(0.01, 40), false);
    assert.equal(period(0.01, 40), false);
    assert.equal(period(0.01, 40), true, '10 s after the last');
  });

  it('does not count the collection’s own CPU against the next period', () => {
    const clock = new FakeClock();
    let cpuMicros = 0;
    let heapMiB = 30;
    const t = new HeapTrimmer({
      clock,
      minGapMs: 0,
      sample: () => ({ heapBytes: heapMiB * MIB, cpuMicros }),
      // A collection that takes 150 ms of CPU: 7.5 % of the next 2 s period if it were counted.
      collect: () => {
        cpuMicros += 150_000;
        heapMiB = 10;
      },
    });
    assert.equal(t.check(), false);
    clock.advance(2000);
    assert.equal(t.check(), true);
    clock.advance(2000);
    heapMiB = 18;
    assert.equal(t.check(), true, 'the period after the collection was quiet');
  });

  it('stops its loop when the signal aborts', async () => {
    const clock = new FakeClock();
    const t = new HeapTrimmer({ clock, sample: () => ({ heapBytes: 0, cpuMicros: 0 }), collect: () => {} });
    const controller = new AbortController();
    const done = t.run(controller.signal);
    controller.abort();
    await done;
  });
});

describe('fullGarbageCollection', () => {
  it('returns V8’s own collector: an object nothing refers to is gone after one call', async () => {
    const hadGc = typeof (globalThis as { gc?: unknown }).gc === 'function';
    const collect = fullGarbageCollection();
    let target: object | undefined = { big: new Array(1000).fill(0) };
    const ref = new WeakRef(target);
    target = undefined;
    // A WeakRef keeps its target through the job that made it: collect in a later one.
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    assert.equal(ref.deref(), undefined);
    assert.equal(
      typeof (globalThis as { gc?: unknown }).gc === 'function',
      hadGc,
      'the main context gained no gc()',
    );
  });
});
