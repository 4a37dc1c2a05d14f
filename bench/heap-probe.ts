/**
 * A preload for the kubelet under a memory bench (`node --expose-gc --import dist/bench/heap-probe.js
 * bin/tskubelet …`): on SIGUSR2 it collects all garbage and appends one JSON line to the file named by
 * TSKUBELET_HEAP_PROBE_FILE with what is left: `process.memoryUsage()`, VmRSS and the V8 heap spaces.
 * With TSKUBELET_HEAP_SNAPSHOT_DIR set it also writes a heap snapshot there (seconds of CPU and a file
 * the size of the heap; for looking into a figure, not for measuring it).
 *
 * The kubelet itself never listens for SIGUSR2, and without this preload Node's default (exit) stays.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';

export interface HeapProbeSample {
  /** Sequence number of the SIGUSR2 this answers, from 1. */
  seq: number;
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** The kernel's own count (VmRSS), for comparison with what the density bench reads. */
  vmRss: number;
  /** Per V8 space: committed (size) and live (used) bytes. */
  spaces: Record<string, { size: number; used: number }>;
  snapshot?: string;
}

const probeFile = process.env.TSKUBELET_HEAP_PROBE_FILE;
const snapshotDir = process.env.TSKUBELET_HEAP_SNAPSHOT_DIR;
const gc = (globalThis as { gc?: () => void }).gc;
let seq = 0;

function vmRssBytes(): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

if (probeFile) {
  if (!gc) throw new Error('heap-probe: run node with --expose-gc');
  process.on('SIGUSR2', () => {
    seq++;
    // Two full collections: the first may leave what weak callbacks and finalizers free on its way.
    gc();
    gc();
    const m = process.memoryUsage();
    const spaces: HeapProbeSample['spaces'] = {};
    for (const s of v8.getHeapSpaceStatistics())
      spaces[s.space_name] = { size: s.space_size, used: s.space_used_size };
    const sample: HeapProbeSample = {
      seq,
      rss: m.rss,
      heapTotal: m.heapTotal,
      heapUsed: m.heapUsed,
      external: m.external,
      arrayBuffers: m.arrayBuffers,
      vmRss: vmRssBytes(),
      spaces,
    };
    if (snapshotDir)
      sample.snapshot = v8.writeHeapSnapshot(path.join(snapshotDir, `kubelet-${seq}.heapsnapshot`));
    appendFileSync(probeFile, `${JSON.stringify(sample)}\n`);
  });
}
