/**
 * A preload for the kubelet under a bench (`node --perf-basic-prof --interpreted-frames-native-stack
 * --import dist/bench/perf-window.js bin/tskubelet …`, e.g. through the cluster bench's
 * BENCH_NODE_ARGS with BENCH_WINDOW_SIGNAL=1): Linux `perf record` on this process over a window
 * that SIGUSR2 opens and the next SIGUSR2 closes. Summarise with bench/perf-summary.ts.
 *
 * Why perf and not `--cpu-prof`: V8's profiler samples wall time, so a system call that wakes
 * another process (a socket write to containerd or the API server on a 2-core machine) is charged
 * with the wait for that process; perf's `cpu-clock` samples a thread only while it is on a CPU,
 * and sees what V8's profiler cannot: the kernel's side of each call, GC and compiler threads,
 * V8's builtins (inline caches, calls) and the tier each JavaScript function ran in.
 * `--perf-basic-prof` writes /tmp/perf-<pid>.map, which names the JIT's code for perf;
 * `--interpreted-frames-native-stack` gives interpreted functions frames of their own.
 *
 * Writes `perf-<pid>-<n>.data` to TSKUBELET_PERF_DIR (all threads, call graphs by frame pointers;
 * TSKUBELET_PERF_HZ samples a second, default 1999). Needs `perf` on PATH (Debian: linux-perf) and
 * root or kernel.perf_event_paranoid ≤ 0.
 *
 * The kubelet itself never listens for SIGUSR2, and without this preload Node's default (exit) stays.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const dir = process.env.TSKUBELET_PERF_DIR;
const hz = process.env.TSKUBELET_PERF_HZ ?? '1999';

if (dir) {
  let perf: ChildProcess | undefined;
  let seq = 0;
  process.on('SIGUSR2', () => {
    if (perf) {
      // SIGINT makes perf write its header and exit; the window closes here.
      perf.kill('SIGINT');
      perf = undefined;
      return;
    }
    const out = path.join(dir, `perf-${process.pid}-${++seq}.data`);
    const args = ['record', '-e', 'cpu-clock', '-F', hz, '-g', '-p', String(process.pid), '-o', out];
    perf = spawn('perf', args, { stdio: ['ignore', 'ignore', 'inherit'] });
    perf.on('error', (err) => console.error(`perf-window: perf did not start: ${err.message}`));
  });
}
