/**
 * Preloaded into the kubelet for a look at its event loop (`node --import …/loop-delay-probe.js`,
 * through the density bench's BENCH_NODE_ARGS): every second it appends one JSON line to
 * $BENCH_LOOP_DELAY_FILE with that second's event-loop delay (max, p99, mean in ms, from
 * perf_hooks.monitorEventLoopDelay at 10 ms resolution) and the process's CPU and RSS, so a start of
 * N pods can be read second by second. Not part of the product: the bench alone loads it.
 * `threadsCpuMs` splits the process's CPU by thread name (the main thread, V8's compiler and GC
 * workers, libuv's pool), since `utime+stime` counts them all.
 */
import { appendFileSync, readdirSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { readStat } from './proc-stats.js';

const file = process.env.BENCH_LOOP_DELAY_FILE;
/** CPU ms so far per thread name, from /proc/self/task/<tid>/stat. */
function threadCpuMs(): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: { name: string; cpuSeconds: number };
    try {
      stat = readStat(`/proc/self/task/${tid}/stat`);
    } catch {
      continue; // the thread ended
    }
    const name = tid === String(process.pid) ? 'main' : stat.name;
    byName.set(name, (byName.get(name) ?? 0) + stat.cpuSeconds * 1000);
  }
  return byName;
}

if (file) {
  let lastThreads = threadCpuMs();
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let lastCpu = process.cpuUsage();
  const timer = setInterval(() => {
    const cpu = process.cpuUsage(lastCpu);
    lastCpu = process.cpuUsage();
    const threads = threadCpuMs();
    const threadsCpuMs: Record<string, number> = {};
    for (const [name, spent] of threads) {
      const delta = spent - (lastThreads.get(name) ?? 0);
      if (delta > 0) threadsCpuMs[name] = Math.round(delta);
    }
    lastThreads = threads;
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    const line = {
      t: Date.now(),
      maxMs: ms(histogram.max),
      p99Ms: ms(histogram.percentile(99)),
      meanMs: ms(histogram.mean),
      cpuMs: Math.round((cpu.user + cpu.system) / 1000),
      rssMiB: Math.round(process.memoryUsage.rss() / 1048576),
      heapMiB: Math.round(process.memoryUsage().heapUsed / 1048576),
      threadsCpuMs,
    };
    histogram.reset();
    appendFileSync(file, `${JSON.stringify(line)}\n`);
  }, 1000);
  timer.unref();
}
