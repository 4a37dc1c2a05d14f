import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import {
  cpuByRole,
  sampleThreads,
  threadLayout,
  threadRoles,
  type ProcessSample,
} from '../../../bench/thread-roles.js';

test("the layout follows node's flags and libuv's environment", () => {
  assert.deepEqual(threadLayout([], {}), { v8Workers: 4, uvThreads: 4 });
  assert.deepEqual(threadLayout(['--v8-pool-size=2'], { UV_THREADPOOL_SIZE: '8' }), {
    v8Workers: 2,
    uvThreads: 8,
  });
  // The command line wins over NODE_OPTIONS; a value that is not a count leaves libuv's default.
  assert.deepEqual(
    threadLayout(['--v8_pool_size=1'], { NODE_OPTIONS: '--v8-pool-size=3', UV_THREADPOOL_SIZE: 'x' }),
    { v8Workers: 1, uvThreads: 4 },
  );
  assert.ok(threadLayout(['--v8-pool-size=0'], {}).v8Workers >= 1);
});

test('threads get their role by creation order, io_uring by name, the rest of a Go process is other', () => {
  const names = ['node', 'node', 'node', 'node', 'iou-sqp-100', 'node', 'node', 'node', 'node'];
  const sample: ProcessSample = {
    cpuSeconds: 0,
    threads: names.map((name, i) => ({ tid: 100 + i, name, cpuSeconds: 0 })),
  };
  const roles = threadRoles(100, sample, { v8Workers: 1, uvThreads: 2 });
  // main; the delayed-task thread and 1 worker; the inspector's; io_uring; libuv's 2; a later one.
  assert.deepEqual(
    [...roles.values()],
    ['main', 'v8', 'v8', 'other', 'io_uring', 'libuv', 'libuv', 'other', 'other'],
  );
  assert.deepEqual(
    [...threadRoles(100, sample, undefined).values()],
    ['main', 'other', 'other', 'other', 'io_uring', 'other', 'other', 'other', 'other'],
  );
});

test("CPU by role adds up to the process's, and an ended thread's share is `ended`", () => {
  const before: ProcessSample = {
    cpuSeconds: 1,
    threads: [
      { tid: 10, name: 'node', cpuSeconds: 0.5 },
      { tid: 11, name: 'node', cpuSeconds: 0.2 },
      { tid: 12, name: 'iou-wrk-10', cpuSeconds: 0.3 },
    ],
  };
  const after: ProcessSample = {
    cpuSeconds: 2.5,
    threads: [
      { tid: 10, name: 'node', cpuSeconds: 1.1 },
      { tid: 11, name: 'node', cpuSeconds: 0.4 },
    ],
  };
  const byRole = cpuByRole(10, before, after, { v8Workers: 1, uvThreads: 1 });
  assert.deepEqual(byRole, { main: 0.6, v8: 0.2, libuv: 0, io_uring: 0, other: 0, ended: 0.7 });
});

test("a node process's file calls show as libuv's CPU, its JavaScript as main's", async () => {
  // Many stats at once: the pool's threads make the system calls, the main thread the promises.
  const script = `
    const fs = require('node:fs/promises');
    process.stdin.once('data', async () => {
      const deadline = Date.now() + 10000;
      const cpu0 = process.cpuUsage();
      while (Date.now() < deadline) {
        await Promise.all(Array.from({ length: 64 }, () => fs.stat('/proc/self/status')));
        const used = process.cpuUsage(cpu0);
        if (used.user + used.system > 600000) break;
      }
      console.log('done');
    });
    fs.stat('/').then(() => console.log('ready'));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    const lines: string[] = [];
    const line = async (want: string) => {
      const deadline = Date.now() + 20_000;
      while (!lines.includes(want)) {
        if (Date.now() > deadline) throw new Error(`the child never said ${want}`);
        const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
        lines.push(...chunk.toString().split('\n'));
      }
    };
    await line('ready');
    const pid = child.pid!;
    const before = sampleThreads(pid);
    child.stdin!.write('go\n');
    await line('done');
    const after = sampleThreads(pid);
    const layout = threadLayout([], {});
    const roles = [...threadRoles(pid, after, layout).values()];
    assert.equal(roles.filter((r) => r === 'v8').length, 5);
    assert.equal(roles.filter((r) => r === 'libuv').length, 4);
    const byRole = cpuByRole(pid, before, after, layout);
    assert.ok(byRole.main > 0.05, `main ${byRole.main}`);
    assert.ok(byRole.libuv > 0.02, `libuv ${byRole.libuv}`);
  } finally {
    child.kill();
  }
});
