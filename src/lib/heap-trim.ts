/**
 * Gives the memory of a burst of work back to the system once the kubelet has settled.
 *
 * Starting 100 pods leaves V8's old space with about 10 MiB of free pages and garbage: after a full
 * collection its next one is due only 16 MiB above what is live. V8's memory reducer collects and
 * compacts once it judges the process idle, which on a node that keeps polling its runtime came 20 s
 * or more after the burst (docs/benchmarks.md, "Memory"). The kubelet can tell better: when its
 * heap (with the ArrayBuffers V8 counts) has grown well past the level of the last collection and
 * the process has used next to no CPU for a period, the burst is over, and one full collection
 * (about 10–30 ms on the main thread with 100 pods) frees those pages. Go's runtime does the same
 * for the upstream kubelet with its background scavenger.
 *
 * A node that never goes quiet is left to V8's own schedule; collections are at least minGapMs apart.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { realClock, type Clock } from './clock.js';
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
  /** How often to look (2 s). */
  periodMs?: number;
  /** Growth of heapBytes over the level after the last collection that counts as a burst (8 MiB). */
  growthBytes?: number;
  /** The CPU, as a fraction of one core over the last period, below which the process is quiet (5 %). */
  quietCpuFraction?: number;
  /** At least this long between two collections (10 s). */
  minGapMs?: number;
  sample?: () => HeapSample;
  /** A full, synchronous garbage collection. */
  collect?: () => void;
}

export function sampleHeap(): HeapSample {
  const heap = v8.getHeapStatistics();
  const cpu = process.cpuUsage();
  return { heapBytes: heap.total_heap_size + heap.external_memory, cpuMicros: cpu.user + cpu.system };
}

/**
 * V8's `gc()` without `--expose-gc` on the command line: the flag is set for as long as it takes to
 * make one context that has the function, and set back, so no other context gains it.
 */
export function fullGarbageCollection(): () => void {
  const given = (globalThis as { gc?: unknown }).gc;
  if (typeof given === 'function') return () => void (given as () => void)();
  v8.setFlagsFromString('--expose-gc');
  let gc: unknown;
  try {
    gc = vm.runInNewContext('gc');
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
  if (typeof gc !== 'function') throw new Error('V8 did not provide gc() in a new context');
  return () => {
    (gc as () => void)();
    (gc as () => void)();
  };
}

export class HeapTrimmer {
  private readonly clock: Clock;
  private readonly periodMs: number;
  private readonly growthBytes: number;
  private readonly quietCpuFraction: number;
  private readonly minGapMs: number;
  private readonly sample: () => HeapSample;
  private readonly collect: () => void;
  /** heapBytes after the last collection, lowered whenever V8 shrinks below it; undefined until the first. */
  private baseBytes: number | undefined;
  private last: { atMs: number; cpuMicros: number } | undefined;
  private lastCollectMs = -Infinity;
  private collections = 0;

  constructor(opts: HeapTrimOptions = {}) {
    this.clock = opts.clock ?? realClock;
    this.periodMs = opts.periodMs ?? 2000;
    this.growthBytes = opts.growthBytes ?? 8 * MIB;
    this.quietCpuFraction = opts.quietCpuFraction ?? 0.05;
    this.minGapMs = opts.minGapMs ?? 10_000;
    this.sample = opts.sample ?? sampleHeap;
    this.collect = opts.collect ?? fullGarbageCollection();
  }

  /** Looks every periodMs until signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    this.check();
    while (!signal.aborted) {
      try {
        await this.clock.sleep(this.periodMs, signal);
      } catch {
        return;
      }
      this.check();
    }
  }

  /**
   * One look; returns whether it collected. The first quiet period after start-up collects too (the
   * start-up is a burst of its own: modules loaded, configuration read, the runtime dialled).
   */
  check(): boolean {
    const now = this.clock.now();
    const s = this.sample();
    const previous = this.last;
    this.last = { atMs: now, cpuMicros: s.cpuMicros };
    if (this.baseBytes !== undefined && s.heapBytes < this.baseBytes) this.baseBytes = s.heapBytes;
    if (!previous || now <= previous.atMs) return false;
    const cpuFraction = (s.cpuMicros - previous.cpuMicros) / 1000 / (now - previous.atMs);
    const grown = this.baseBytes === undefined || s.heapBytes - this.baseBytes >= this.growthBytes;
    if (!grown || cpuFraction >= this.quietCpuFraction || now - this.lastCollectMs < this.minGapMs)
      return false;

    const t0 = performance.now();
    this.collect();
    const after = this.sample();
    this.baseBytes = after.heapBytes;
    this.lastCollectMs = this.clock.now();
    this.last = { atMs: this.lastCollectMs, cpuMicros: after.cpuMicros };
    this.collections++;
    log.v(2, 'Collected garbage after a burst of work', {
      beforeMiB: +(s.heapBytes / MIB).toFixed(1),
      afterMiB: +(after.heapBytes / MIB).toFixed(1),
      ms: +(performance.now() - t0).toFixed(1),
    });
    return true;
  }

  detail(): Record<string, unknown> {
    return { collections: this.collections };
  }
}
