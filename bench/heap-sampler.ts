/**
 * A preload for the kubelet under a bench (`node --import dist/bench/heap-sampler.js bin/tskubelet …`,
 * e.g. through the cluster bench's BENCH_NODE_ARGS with BENCH_WINDOW_SIGNAL=1): V8's sampling heap
 * profiler over a window that SIGUSR2 opens and the next SIGUSR2 closes, keeping the samples of
 * objects the scavenger and the full collector have already freed, so that the profile is of what
 * the window *allocated* (the garbage that drives the scavenges), not of what it left alive.
 * `node --heap-prof` cannot do this: it keeps only the objects alive at its end.
 *
 * Writes `heap-<pid>-<n>.heapprofile` (the DevTools format) to TSKUBELET_HEAP_PROFILE_DIR, and beside
 * it `heap-<pid>-<n>.gc.json`: the window's collections by kind (count, pause ms), as `--trace-gc`
 * would list them. Summarise with
 * bench/heap-profile-summary.ts. TSKUBELET_HEAP_SAMPLE_BYTES: the mean bytes between two samples
 * (default 4096; V8's own default is 32768).
 *
 * The kubelet itself never listens for SIGUSR2, and without this preload Node's default (exit) stays.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

const dir = process.env.TSKUBELET_HEAP_PROFILE_DIR;
const samplingInterval = Number(process.env.TSKUBELET_HEAP_SAMPLE_BYTES ?? 4096);

// The in-process inspector session answers synchronously: the callback has run when post returns.
function post<T>(session: Session, method: string, params?: object): T {
  let result: T | undefined;
  let failure: Error | null = null;
  session.post(method, params, (err, res) => {
    failure = err;
    result = res as T;
  });
  if (failure) throw failure;
  return result as T;
}

if (dir) {
  const session = new Session();
  session.connect();
  let open = false;
  let seq = 0;
  const gcKinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
  };
  let gc: Record<string, { count: number; ms: number }> = {};
  const observer = new PerformanceObserver((list) => {
    if (!open) return;
    for (const e of list.getEntries() as (PerformanceEntry & { detail?: { kind?: number } })[]) {
      const kind = gcKinds[e.detail?.kind ?? -1] ?? `kind ${e.detail?.kind}`;
      const entry = (gc[kind] ??= { count: 0, ms: 0 });
      entry.count++;
      entry.ms += e.duration;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  process.on('SIGUSR2', () => {
    const atMs = Math.round(process.uptime() * 1000);
    if (!open) {
      post(session, 'HeapProfiler.startSampling', {
        samplingInterval,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      open = true;
      gc = {};
      process.stdout.write(`heap-sampler: window open at ${atMs}\n`);
      return;
    }
    const { profile } = post<{ profile: unknown }>(session, 'HeapProfiler.stopSampling');
    open = false;
    seq++;
    const file = path.join(dir, `heap-${process.pid}-${seq}.heapprofile`);
    writeFileSync(file, JSON.stringify(profile));
    writeFileSync(file.replace(/\.heapprofile$/, '.gc.json'), JSON.stringify(gc, null, 1));
    process.stdout.write(`heap-sampler: window closed at ${atMs}, profile in ${file}\n`);
  });
}
