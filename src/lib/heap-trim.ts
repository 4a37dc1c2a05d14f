/**
 * Gives the memory of a burst of work back to the system once the kubelet has settled.
 *
 * Starting pods leaves V8's old space with free pages and garbage, and V8's memory reducer collects
 * only once it judges the process idle, which on a node that keeps polling its runtime came 20 s or
 * more after the burst (docs/benchmarks.md, "Memory"). The kubelet can tell better: when its heap
 * (with the ArrayBuffers V8 counts) has grown 4 MiB past its lowest level since the last collection
 * and the process has used next to no CPU for 3 s, the burst is over, and one compacting full
 * collection (tens of ms on the main thread) gives those pages back: a plain one left the old space
 * a quarter free after a 30- or 100-pod start, the objects still alive spread over all its pages
 * (fullGarbageCollection). (Under the upstream kubelet, Go's runtime returns free pages in the
 * background with its scavenger.) 4 MiB, not more: a 30-pod start grows the heap by about 8 MiB,
 * and at 8 the trim came late or not at all.
 *
 * A node that never goes quiet is left to V8's own schedule; trims are at least minGapMs apart.
 *
 * Within a burst, V8 left a 100-pod start without any full collection: its first old-generation
 * limit is set from the survival rate of its first scavenges against a heap of gigabytes, far above
 * a kubelet's. So the garbage the scavenges promote (old-space objects, and ArrayBuffers whose
 * memory sits in malloc's heap) piled up until the burst ended: the start's peak RSS was 20–35 MiB
 * above what was live. So one full collection (plain: the memory is to be reused, not returned)
 * also runs, busy or not, whenever heapBytes has grown by burstGrowthBytes over its level after the
 * last collection, at most once every burstMinGapMs. (At 8 MiB rather than 16, so that a 30-pod
 * start has one too, the peak RSS did not fall: 0.98x and 1.00x at 30 and 100 pods.)
 *
 * The kubelet's start-up is a burst of its own, but one whose code does not run again: the bytecode
 * of the module bodies and of the start-up's functions (about 2.5 MiB of old space) stays until V8
 * finds it unused over several full collections, which a kubelet makes few of. So the first time
 * the process is quiet, whatever its growth, collectAfterStartUp (when given) runs once: the
 * kubelet's compacts and drops the bytecode of the functions that ran little (flushBytecode below;
 * docs/benchmarks.md, "Memory").
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { monotonicMs, realClock, type Clock } from './clock.js';
import { errorMessage } from './errors.js';
import { logger } from './log.js';

const log = logger('heap_trim');

const MIB = 1024 * 1024;

/** One look at the process: its V8 heap and the CPU it has used so far. */
export interface HeapSample {
  /** V8's committed heap plus the external memory (ArrayBuffers) it accounts for, in bytes. */
  heapBytes: number;
  /** process.cpuUsage() user + system, in microseconds. */
  cpuMicros: number;
}

export interface HeapTrimOptions {
  clock?: Clock;
  /** How often to look (1 s). */
  periodMs?: number;
  /** How long the process must have been quiet (3 s: a lull of a second or two within a burst does not count). */
  quietForMs?: number;
  /** Growth of heapBytes over its lowest level since the last collection that counts as a burst (4 MiB). */
  growthBytes?: number;
  /** The CPU, as a fraction of one core over the last period, below which the process is quiet (5 %). */
  quietCpuFraction?: number;
  /** At least this long between two collections after a burst (10 s). */
  minGapMs?: number;
  /** Growth of heapBytes over its level after the last collection that calls for one within a burst (16 MiB). */
  burstGrowthBytes?: number;
  /** At least this long between a collection and one within a burst (5 s). */
  burstMinGapMs?: number;
  sample?: () => HeapSample;
  /** Full, synchronous garbage collection once the burst is over (one pass, compacting). */
  collect?: () => void;
  /** The same within a burst (one pass). */
  collectInBurst?: () => void;
  /** Once, the first time the process has been quiet for quietForMs, whatever the growth; none if not given. */
  collectAfterStartUp?: () => void;
}

export function sampleHeap(): HeapSample {
  const heap = v8.getHeapStatistics();
  const cpu = process.cpuUsage();
  return { heapBytes: heap.total_heap_size + heap.external_memory, cpuMicros: cpu.user + cpu.system };
}

/**
 * Full collections through V8's `gc()`, without `--expose-gc` on the command line: `passes` of
 * them (without compaction, after one the kubelet's free pages went back only with V8's next full
 * collection, 9 s later in a run of 100 pods; after two, within a second).
 *
 * `compact` moves every object left in the old space together, so that the pages the dead ones
 * leave are given back (within 0.1 s, one pass). V8 moves the objects of a page only when 70 % of
 * it is free, and a burst's garbage is spread thinner than that: after a 30- or 100-pod start a
 * plain full collection left the old space a quarter free (3-6 MiB of RSS) until the next burst.
 * It costs the copying of what is live (about 40 ms of CPU with 17 MiB live), so only the
 * collection after a burst asks.
 *
 * `gc()` lives in a context made with the flag set, set back at once so that no other context
 * gains it; the context is made for each call and dropped with it (held, it kept about 0.8 MiB).
 * V8 reads `--compact-on-every-full-gc` as each collection picks the pages to move, so it is set
 * around these passes only; a user's own, as a node flag, is left alone.
 *
 * `flushBytecode` drops the bytecode of every function without Sparkplug's baseline code (those
 * that ran little), as V8 does on its own only for bytecode unused over 5 full collections
 * (`--bytecode-old-age`): such a function is compiled again from the source if it is called again.
 * V8 reads `--stress-flush-code` as each collection starts, so it too is set around these passes
 * only (a user's own is left alone, as is `--no-flush-bytecode`, which V8 lets win). Two passes:
 * the first drops the bytecode, the second what only it held.
 */
export function fullGarbageCollection({
  passes = 2,
  compact = false,
  flushBytecode = false,
} = {}): () => void {
  const given = (globalThis as { gc?: unknown }).gc;
  const gcFunction = (): (() => void) => {
    if (typeof given === 'function') return given as () => void;
    // Under another name V8 would not call it gc, and setting the flag back would take it from the user.
    if (/--expose[-_]gc[-_]as\b/.test([...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ')))
      throw new Error('node was started with --expose-gc-as, whose flags the heap trim leaves alone');
    v8.setFlagsFromString('--expose-gc');
    let gc: unknown;
    try {
      gc = vm.runInNewContext('gc');
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
    if (typeof gc !== 'function') throw new Error('V8 did not provide gc() in a new context');
    return gc as () => void;
  };
  const setCompaction =
    compact && !process.execArgv.some((f) => /^--(no[-_])?compact[-_]on[-_]every[-_]full[-_]gc\b/.test(f));
  const setFlush =
    flushBytecode && !process.execArgv.some((f) => /^--(no[-_])?stress[-_]flush[-_]code\b/.test(f));
  return () => {
    const gc = gcFunction();
    if (setCompaction) v8.setFlagsFromString('--compact-on-every-full-gc');
    if (setFlush) v8.setFlagsFromString('--stress-flush-code');
    try {
      for (let i = 0; i < passes; i++) gc();
    } finally {
      if (setCompaction) v8.setFlagsFromString('--no-compact-on-every-full-gc');
      if (setFlush) v8.setFlagsFromString('--no-stress-flush-code');
    }
  };
}

export class HeapTrimmer {
  private readonly clock: Clock;
  private readonly periodMs: number;
  private readonly quietForMs: number;
  private readonly growthBytes: number;
  private readonly quietCpuFraction: number;
  private readonly minGapMs: number;
  private readonly burstGrowthBytes: number;
  private readonly burstMinGapMs: number;
  private readonly sample: () => HeapSample;
  private readonly collect: () => void;
  private readonly collectInBurst: () => void;
  /** Until it has run. */
  private collectAfterStartUp: (() => void) | undefined;
  /** The lowest heapBytes since the last collection (or the first look). */
  private baseBytes = Infinity;
  /** heapBytes after the last collection (or at the first look). */
  private afterCollectBytes: number | undefined;
  /** Since when every period has been quiet; undefined while busy. */
  private quietSinceMs: number | undefined;
  private last: { atMs: number; cpuMicros: number } | undefined;
  private lastCollectMs = -Infinity;
  /**
   * When the last collection after a burst ran. minGapMs counts from it, not from one within the
   * burst, which may come just before the burst ends and leaves the pages the trim is there to give
   * back committed.
   */
  private lastTrimMs = -Infinity;
  private collections = 0;
  private burstCollections = 0;
  /** Why trimming stopped (a sample or collection that threw); V8's own schedule goes on. */
  private failure: string | undefined;

  constructor(opts: HeapTrimOptions = {}) {
    this.clock = opts.clock ?? realClock;
    this.periodMs = opts.periodMs ?? 1000;
    this.quietForMs = opts.quietForMs ?? 3000;
    this.growthBytes = opts.growthBytes ?? 4 * MIB;
    this.quietCpuFraction = opts.quietCpuFraction ?? 0.05;
    this.minGapMs = opts.minGapMs ?? 10_000;
    this.burstGrowthBytes = opts.burstGrowthBytes ?? 16 * MIB;
    this.burstMinGapMs = opts.burstMinGapMs ?? 5000;
    this.sample = opts.sample ?? sampleHeap;
    this.collect = opts.collect ?? fullGarbageCollection({ passes: 1, compact: true });
    this.collectInBurst = opts.collectInBurst ?? fullGarbageCollection({ passes: 1 });
    this.collectAfterStartUp = opts.collectAfterStartUp;
  }

  /** Looks every periodMs until signal aborts, or until a look fails: then the kubelet runs on without it. */
  async run(signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        this.check();
      } catch (err) {
        this.failure = errorMessage(err);
        log.warn('Heap trim stopped; V8 collects garbage on its own schedule', { err: this.failure });
        return;
      }
      try {
        await this.clock.sleep(this.periodMs, signal);
      } catch {
        return;
      }
    }
  }

  /** One look; returns whether it collected. */
  check(): boolean {
    const now = this.clock.now();
    const s = this.sample();
    const previous = this.last;
    this.last = { atMs: now, cpuMicros: s.cpuMicros };
    this.baseBytes = Math.min(this.baseBytes, s.heapBytes);
    this.afterCollectBytes ??= s.heapBytes;
    if (!previous) return false;
    if (
      s.heapBytes - this.afterCollectBytes >= this.burstGrowthBytes &&
      now - this.lastCollectMs >= this.burstMinGapMs
    ) {
      // baseBytes stays the lowest level since the last trim: V8 keeps the pages this frees
      // committed, and the trim once the burst is over, which gives them back, is to measure the
      // burst's growth from before it.
      const after = this.runCollection(this.collectInBurst, s, 'Collected garbage within a burst of work');
      this.baseBytes = Math.min(this.baseBytes, after);
      this.burstCollections++;
      return true;
    }
    // The wall clock stepped, or the process was stopped or its loop blocked: no period to judge.
    if (now <= previous.atMs || now - previous.atMs > 3 * this.periodMs) {
      this.quietSinceMs = undefined;
      this.lastCollectMs = Math.min(this.lastCollectMs, now);
      this.lastTrimMs = Math.min(this.lastTrimMs, now);
      return false;
    }
    const cpuFraction = (s.cpuMicros - previous.cpuMicros) / 1000 / (now - previous.atMs);
    if (cpuFraction >= this.quietCpuFraction) {
      this.quietSinceMs = undefined;
      return false;
    }
    this.quietSinceMs ??= previous.atMs;
    if (now - this.quietSinceMs < this.quietForMs || now - this.lastTrimMs < this.minGapMs) return false;
    const afterStartUp = this.collectAfterStartUp;
    if (!afterStartUp && s.heapBytes - this.baseBytes < this.growthBytes) return false;
    this.collectAfterStartUp = undefined;
    this.baseBytes = afterStartUp
      ? this.runCollection(afterStartUp, s, 'Collected garbage after the start-up')
      : this.runCollection(this.collect, s, 'Collected garbage after a burst of work');
    this.lastTrimMs = this.lastCollectMs;
    this.collections++;
    return true;
  }

  /** Returns heapBytes after the collection. */
  private runCollection(collect: () => void, before: HeapSample, message: string): number {
    const t0 = monotonicMs();
    collect();
    const after = this.sample();
    this.afterCollectBytes = after.heapBytes;
    this.lastCollectMs = this.clock.now();
    // The collection's own CPU is not the process's work: the next period starts after it.
    this.last = { atMs: this.lastCollectMs, cpuMicros: after.cpuMicros };
    log.v(2, message, {
      beforeMiB: +(before.heapBytes / MIB).toFixed(1),
      afterMiB: +(after.heapBytes / MIB).toFixed(1),
      ms: +(monotonicMs() - t0).toFixed(1),
    });
    return after.heapBytes;
  }

  detail(): Record<string, unknown> {
    return {
      collections: this.collections,
      ...(this.burstCollections > 0 ? { burstCollections: this.burstCollections } : {}),
      ...(this.failure ? { error: this.failure } : {}),
    };
  }
}
