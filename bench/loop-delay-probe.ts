/**
 * Preloaded into the kubelet for a look at its event loop (`node --import …/loop-delay-probe.js`,
 * through the density bench's BENCH_NODE_ARGS): every second it appends one JSON line to
 * $BENCH_LOOP_DELAY_FILE with that second's event-loop delay (max, p99, mean in ms, from
 * perf_hooks.monitorEventLoopDelay at 10 ms resolution) and the process's CPU and RSS, so a start of
 * N pods can be read second by second. Not part of the product: the bench alone loads it.
 */
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const file = process.env.BENCH_LOOP_DELAY_FILE;
if (file) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let lastCpu = process.cpuUsage();
  const timer = setInterval(() => {
    const cpu = process.cpuUsage(lastCpu);
    lastCpu = process.cpuUsage();
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    const line = {
      t: Date.now(),
      maxMs: ms(histogram.max),
      p99Ms: ms(histogram.percentile(99)),
      meanMs: ms(histogram.mean),
      cpuMs: Math.round((cpu.user + cpu.system) / 1000),
      rssMiB: Math.round(process.memoryUsage.rss() / 1048576),
      heapMiB: Math.round(process.memoryUsage().heapUsed / 1048576),
    };
    histogram.reset();
    appendFileSync(file, `${JSON.stringify(line)}\n`);
  }, 1000);
  timer.unref();
}
