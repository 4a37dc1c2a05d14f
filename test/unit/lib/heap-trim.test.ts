import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { FakeClock, type Clock } from '../../../src/lib/clock.js';
import { fullGarbageCollection, HeapTrimmer, type HeapSample } from '../../../src/lib/heap-trim.js';

const MIB = 1024 * 1024;

/**
 * A trimmer on a fake clock whose samples the test sets: the heap in MiB (20 at the first look),
 * and the CPU the process uses in each 2 s period as a fraction of one core. The clock can also
 * step, as a wall clock does (a negative period). The collection within a burst is off unless asked for
 * (burstGrowthMiB); then it counts in burstCollections.
 */
function trimmer(opts: { minGapMs?: number; burstGrowthMiB?: number } = {}) {
  const fake = new FakeClock();
  let stepMs = 0;
  const clock: Clock = {
    now: () => fake.now() + stepMs,
    setTimeout: (fn, ms) => fake.setTimeout(fn, ms),
    clearTimeout: (handle) => fake.clearTimeout(handle),
    sleep: (ms, signal) => fake.sleep(ms, signal),
  };
  const state = { heapMiB: 20, cpuMicros: 0, collections: 0, burstCollections: 0, afterCollectMiB: 15 };
  const t = new HeapTrimmer({
    clock,
    periodMs: 2000,
    quietForMs: 4000,
    growthBytes: 8 * MIB,
    quietCpuFraction: 0.05,
    minGapMs: opts.minGapMs ?? 10_000,
    burstGrowthBytes: (opts.burstGrowthMiB ?? Infinity) * MIB,
    burstMinGapMs: 5000,
    sample: (): HeapSample => ({ heapBytes: state.heapMiB * MIB, cpuMicros: state.cpuMicros }),
    collect: () => {
      state.collections++;
      state.heapMiB = state.afterCollectMiB;
    },
    collectInBurst: () => {
      state.burstCollections++;
      state.heapMiB = state.afterCollectMiB;
    },
  });
  /** `ms` (2 s) pass with the process using `cores` of CPU and the heap at `heapMiB`, then a look. */
  const period = (cores: number, heapMiB = state.heapMiB, ms = 2000): boolean => {
    if (ms >= 0) fake.advance(ms);
    else stepMs += ms;
    state.cpuMicros += cores * 2000 * 1000;
    state.heapMiB = heapMiB;
    return t.check();
  };
  assert.equal(t.check(), false, 'the first look has no CPU figure to judge by');
  return { t, state, period };
}

describe('HeapTrimmer', () => {
  it('collects once the heap has grown by the threshold and the process has been quiet for 4 s', () => {
    const { t, state, period } = trimmer();
    assert.equal(period(0.3, 30), false, 'busy');
    assert.equal(period(0.01, 30), false, 'quiet for 2 s only');
    assert.equal(period(0.01, 30), true, 'quiet for 4 s');
    assert.equal(state.collections, 1);
    // From 15 MiB after that collection: quiet, but not grown enough, for long past the gap.
    for (let i = 0; i < 10; i++) assert.equal(period(0.01, 22.9), false);
    assert.equal(period(0.01, 23), true, '8 MiB above the level after the last collection');
    assert.deepEqual(t.detail(), { collections: 2 });
  });

  it('does not collect while the process is busy, nor in a lull within a burst', () => {
    const { state, period } = trimmer();
    for (let i = 0; i < 5; i++) assert.equal(period(0.2, 40 + i), false, 'a burst under way');
    assert.equal(period(0.01), false, 'a lull');
    assert.equal(period(0.3), false, 'busy again');
    assert.equal(period(0.04), false);
    assert.equal(period(0.05), false, '5 % of a core is not quiet');
    assert.equal(period(0.04), false);
    assert.equal(state.collections, 0);
    assert.equal(period(0.04), true, 'the burst is over');
  });

  it('measures growth from the lowest level seen, so a heap V8 shrank on its own grows from there', () => {
    const { period } = trimmer();
    assert.equal(period(0.01, 12), false, 'V8 brought it below the first look’s 20 MiB');
    assert.equal(period(0.01, 19.9), false, 'only 7.9 MiB above 12');
    assert.equal(period(0.01, 20), true);
  });

  it('keeps collections at least minGapMs apart', () => {
    const { state, period } = trimmer({ minGapMs: 10_000 });
    period(0.01, 30);
    assert.equal(period(0.01, 30), true);
    // Far above the threshold and quiet, but 2 to 8 s after the last collection: too soon.
    for (let i = 0; i < 4; i++) assert.equal(period(0.01, 40), false);
    assert.equal(period(0.01, 40), true, '10 s after the last');
    assert.equal(state.collections, 2);
  });

  it('collects once within a burst when the heap has grown by burstGrowthBytes since the last collection', () => {
    const { t, state, period } = trimmer({ burstGrowthMiB: 16 });
    assert.equal(period(0.5, 30), false, 'busy, 10 MiB above the first look');
    assert.equal(period(0.5, 35.9), false, 'busy, 15.9 MiB above');
    assert.equal(period(0.5, 36), true, 'busy, 16 MiB above: one collection, busy or not');
    assert.deepEqual([state.collections, state.burstCollections], [0, 1]);
    // From 15 MiB after it; the next within the burst no sooner than 5 s after.
    assert.equal(period(0.5, 31), false, '16 MiB above, but 2 s after the last');
    assert.equal(period(0.5, 31), false, '4 s after');
    assert.equal(period(0.5, 31), true, '6 s after');
    assert.deepEqual(t.detail(), { collections: 0, burstCollections: 2 });
  });

  it('after a collection within a burst, trims as before once the burst is over', () => {
    const { state, period } = trimmer({ burstGrowthMiB: 16 });
    assert.equal(period(0.5, 40), true, 'within the burst');
    assert.equal(period(0.5, 24), false, 'busy, from 15 MiB');
    assert.equal(period(0.01, 24), false, 'quiet for 2 s');
    // The gap between trims does not count from a collection within the burst.
    assert.equal(period(0.01, 24), true, 'quiet for 4 s, 9 MiB above the level after the last collection');
    assert.deepEqual([state.collections, state.burstCollections], [1, 1]);
  });

  it('measures the trim after a burst from before it, though a collection within it left the heap committed', () => {
    const { state, period } = trimmer({ burstGrowthMiB: 16 });
    state.afterCollectMiB = 38; // V8 keeps the freed pages until the trim gives them back
    assert.equal(period(0.5, 40), true, 'within the burst');
    assert.equal(period(0.01, 38), false, 'quiet for 2 s');
    assert.equal(period(0.01, 38), true, 'quiet for 4 s: 18 MiB above the first look’s 20');
    assert.deepEqual([state.collections, state.burstCollections], [1, 1]);
  });

  it('does not count the collection’s own CPU against the next period', () => {
    const clock = new FakeClock();
    let cpuMicros = 0;
    let heapMiB = 20;
    const t = new HeapTrimmer({
      clock,
      quietForMs: 2000,
      minGapMs: 0,
      burstGrowthBytes: Infinity,
      sample: () => ({ heapBytes: heapMiB * MIB, cpuMicros }),
      // A collection that takes 150 ms of CPU: 7.5 % of the next 2 s period if it were counted.
      collect: () => {
        cpuMicros += 150_000;
        heapMiB = 10;
      },
    });
    assert.equal(t.check(), false);
    clock.advance(2000);
    heapMiB = 30;
    assert.equal(t.check(), true);
    clock.advance(2000);
    heapMiB = 18;
    assert.equal(t.check(), true, 'the period after the collection was quiet');
  });

  it('does not take a step of the wall clock for a quiet period', () => {
    const { state, period } = trimmer();
    period(0.01, 30);
    assert.equal(period(0.01, 30, 60_000), false, 'a minute passed in one look: no period to judge');
    assert.equal(period(0.01, 30), false, 'quiet for 2 s since the step');
    assert.equal(period(0.01, 30), true);
    assert.equal(period(0.01, 60, -30_000), false, 'the clock went back');
    assert.equal(state.collections, 1);
  });

  it('looks once a period until a look fails, then stops looking', { timeout: 5000 }, async () => {
    const clock = new FakeClock();
    let looks = 0;
    let cpuMicros = 0;
    const t = new HeapTrimmer({
      clock,
      periodMs: 1000,
      quietForMs: 1000,
      burstGrowthBytes: Infinity,
      sample: () => {
        looks++;
        return { heapBytes: looks * 4 * MIB, cpuMicros };
      },
      collect: () => {
        throw new Error('no collector');
      },
    });
    const done = t.run(new AbortController().signal);
    const tick = async () => {
      clock.advance(1000);
      await new Promise((resolve) => setImmediate(resolve));
    };
    for (let i = 0; i < 2; i++) {
      cpuMicros += 500_000; // busy: no collection
      await tick();
    }
    assert.equal(looks, 3, 'one look at the start and one a second');
    await tick(); // quiet, and 12 MiB above the first look: the collection throws
    await done;
    assert.equal(looks, 4);
    assert.deepEqual(t.detail(), { collections: 0, error: 'no collector' });
    assert.equal(clock.pendingTimers(), 0, 'no timer left behind');
  });

  it('runs the collection after the start-up once, at the first quiet period, whatever the growth', () => {
    const clock = new FakeClock();
    let cpuMicros = 0;
    const done: string[] = [];
    const t = new HeapTrimmer({
      clock,
      sample: () => ({ heapBytes: 20 * MIB, cpuMicros }),
      collect: () => done.push('after a burst'),
      collectAfterStartUp: () => done.push('after the start-up'),
    });
    const second = (cores: number) => {
      clock.advance(1000);
      cpuMicros += cores * 1_000_000;
      return t.check();
    };
    t.check();
    assert.equal(second(0.5), false, 'starting up');
    assert.equal(second(0.01), false);
    assert.equal(second(0.01), false, 'quiet for 2 s');
    assert.equal(second(0.01), true, 'quiet for 3 s, though the heap has not grown');
    assert.deepEqual(done, ['after the start-up']);
    for (let i = 0; i < 30; i++)
      assert.equal(second(0.01), false, 'once only; then trims after bursts that grow');
    assert.deepEqual(t.detail(), { collections: 1 });
  });

  it('by default trims a burst of 4 MiB once quiet for 3 s, and collects within one every 16 MiB', () => {
    const clock = new FakeClock();
    let heapMiB = 20;
    let cpuMicros = 0;
    const done: string[] = [];
    const t = new HeapTrimmer({
      clock,
      sample: () => ({ heapBytes: heapMiB * MIB, cpuMicros }),
      collect: () => done.push(`after at ${heapMiB}`),
      collectInBurst: () => done.push(`within at ${heapMiB}`),
    });
    const second = (heap: number, cores: number) => {
      clock.advance(1000);
      cpuMicros += cores * 1_000_000;
      heapMiB = heap;
      t.check();
    };
    t.check();
    second(35.5, 0.5);
    assert.deepEqual(done, [], '15.5 MiB within a burst');
    second(36, 0.5);
    assert.deepEqual(done, ['within at 36'], '16 MiB within a burst');
    for (let i = 0; i < 2; i++) second(24, 0.01);
    assert.deepEqual(done, ['within at 36'], 'quiet for 2 s');
    second(24, 0.01);
    assert.deepEqual(
      done,
      ['within at 36', 'after at 24'],
      'quiet for 3 s, 4 MiB above the level before the burst',
    );
  });

  it('stops at once when its signal aborts', { timeout: 5000 }, async () => {
    const clock = new FakeClock();
    const t = new HeapTrimmer({ clock, sample: () => ({ heapBytes: 0, cpuMicros: 0 }), collect: () => {} });
    const controller = new AbortController();
    const done = t.run(controller.signal);
    assert.equal(clock.pendingTimers(), 1, 'waiting for the next look');
    controller.abort();
    await done;
    assert.equal(clock.pendingTimers(), 0);
  });
});

describe('fullGarbageCollection', () => {
  it('is V8’s own collector: an object nothing refers to is gone after a call, and no gc() is left behind', async () => {
    const hadGc = typeof (globalThis as { gc?: unknown }).gc === 'function';
    const collect = fullGarbageCollection();
    for (let round = 0; round < 2; round++) {
      let target: object | undefined = { big: new Array(1000).fill(round) };
      const ref = new WeakRef(target);
      target = undefined;
      // A WeakRef keeps its target through the job that made it: collect in a later one.
      await new Promise((resolve) => setImmediate(resolve));
      collect();
      assert.equal(ref.deref(), undefined, `round ${round}`);
    }
    assert.equal(
      vm.runInNewContext('typeof gc'),
      hadGc ? 'function' : 'undefined',
      'contexts made later have no gc()',
    );
  });

  it('compacts when asked: the free space between the objects a burst left alive goes back', async () => {
    const oldSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!;
    const freeMiB = () => (oldSpace().space_size - oldSpace().space_used_size) / MIB;
    const plain = fullGarbageCollection();
    // Objects in the old space, two of every three then dropped: each page a third free, too little
    // for V8's own heuristics (70 % free) to move what is left and free the page.
    let all: { i: number; list: number[] }[] | undefined = Array.from({ length: 300_000 }, (_, i) => ({
      i,
      list: [i],
    }));
    plain();
    let kept = all.filter((_, i) => i % 3 !== 0);
    all = undefined;
    await new Promise((resolve) => setImmediate(resolve));
    plain();
    const freeAfterPlain = freeMiB();
    assert.ok(
      freeAfterPlain > 4,
      `a plain collection leaves the pages as they are (${freeAfterPlain.toFixed(1)} MiB free)`,
    );
    fullGarbageCollection({ passes: 2, compact: true })();
    const freeAfterCompact = freeMiB();
    assert.ok(
      freeAfterCompact < freeAfterPlain / 3,
      `free in the old space: ${freeAfterCompact.toFixed(1)} MiB after compacting, ${freeAfterPlain.toFixed(1)} before`,
    );
    assert.equal(kept.length, 200_000);
    // The compaction is for that call only: the next plain collection leaves new gaps in place.
    kept = kept.filter((_, i) => i % 2 === 0);
    await new Promise((resolve) => setImmediate(resolve));
    plain();
    assert.ok(
      freeMiB() > 2,
      `a plain collection afterwards moves nothing (${freeMiB().toFixed(1)} MiB free)`,
    );
  });

  it('drops the bytecode of functions run once when asked, for that call only', () => {
    const usedMiB = () => v8.getHeapStatistics().used_heap_size / MIB;
    const plain = fullGarbageCollection();
    // Functions kept alive but run once each: each keeps its bytecode, too little run for more.
    const runOnce = (tag: string): Array<(n: number) => number> => {
      const functions = vm.runInThisContext(
        `[${Array.from(
          { length: 2000 },
          (_, i) =>
            `function ${tag}${i}(n) { let s = 0; for (let j = 0; j < n; j++) s += j * ${i}; return s; }`,
        ).join(',')}]`,
      ) as Array<(n: number) => number>;
      for (const f of functions) f(3);
      return functions;
    };
    const first = runOnce('first');
    plain();
    const beforeFlush = usedMiB();
    fullGarbageCollection({ flushBytecode: true })();
    const flushed = beforeFlush - usedMiB();
    assert.ok(flushed > 0.2, `${flushed.toFixed(2)} MiB of bytecode dropped`);
    const second = runOnce('second');
    plain();
    const beforePlain = usedMiB();
    plain();
    assert.ok(
      beforePlain - usedMiB() < flushed / 2,
      `a plain collection afterwards keeps the bytecode (${(beforePlain - usedMiB()).toFixed(2)} MiB dropped)`,
    );
    assert.equal(first.length + second.length, 4000);
  });
});
