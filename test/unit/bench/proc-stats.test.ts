import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cpuSeconds, machineBusySeconds, mainThreadCpuSeconds } from '../../../bench/proc-stats.js';

/**
 * Spins this thread until read() has grown by at least `seconds`, or 10 s have passed: on a busy
 * machine a spin of fixed length may get little CPU. Returns how much read() grew.
 */
function spinUntil(read: () => number, seconds: number): number {
  const start = read();
  const deadline = Date.now() + 10_000;
  while (read() - start < seconds && Date.now() < deadline) {
    for (let i = 0; i < 100_000; i++) Math.sqrt(i);
  }
  return read() - start;
}

test("the main thread's CPU is part of the process's, and counts this thread's work", () => {
  const main0 = mainThreadCpuSeconds(process.pid);
  assert.ok(main0 > 0 && main0 <= cpuSeconds(process.pid));
  const gained = spinUntil(() => mainThreadCpuSeconds(process.pid), 0.1);
  assert.ok(gained >= 0.1, `the main thread gained ${gained} s in 10 s of spinning`);
  assert.ok(mainThreadCpuSeconds(process.pid) <= cpuSeconds(process.pid));
});

test("the machine's busy time holds this process's work", () => {
  const busy0 = machineBusySeconds();
  assert.ok(Number.isFinite(busy0) && busy0 > 0);
  const ours = spinUntil(() => cpuSeconds(process.pid), 0.2);
  // Both count in 10 ms ticks, the machine's per core: allow a tick or two.
  assert.ok(machineBusySeconds() - busy0 >= ours - 0.05, 'at least what this process used');
});
