/**
 * A preload for the kubelet under the cluster bench with V8's function-event log (BENCH_NODE_ARGS=
 * `--import=dist/bench/function-events-mark.js --log-function-events --logfile=DIR/%p.log
 * --no-logfile-per-isolate`, BENCH_WINDOW_SIGNAL=1): each SIGUSR2 runs a function named
 * `__window_mark_<n>__` once, whose first execution marks the start window's edges in the log for
 * bench/function-events-summary.ts.
 *
 * The kubelet itself never listens for SIGUSR2, and without this preload Node's default (exit) stays.
 */
let marks = 0;
process.on('SIGUSR2', () => {
  marks++;
  // Indirect eval: a function V8 has not seen, so that its first execution is logged now.
  (0, eval)(`(function __window_mark_${marks}__() {})()`);
});
