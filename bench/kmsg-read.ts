/**
 * The CPU of reading the kernel's log (/dev/kmsg) to its end, as the OOM watcher does at every
 * kubelet start (v1.30 reads the ring buffer from its start: about two thousand records on a
 * machine that has run for a day): one record a read, through libuv's pool (fs/promises) against
 * in place (readSync), alternating, so the pair is taken under the same load. Needs root.
 *
 * Env: BENCH_ROUNDS (default 5). Run: node --import tsx bench/kmsg-read.ts
 */
import { constants, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { KMSG_PATH } from '../src/oom/oom-watcher.js';

type Reader = 'pool' | 'in place';

async function readToEnd(how: Reader): Promise<number> {
  const file = await open(KMSG_PATH, constants.O_RDONLY | constants.O_NONBLOCK);
  const buffer = Buffer.alloc(8192);
  let records = 0;
  try {
    for (;;) {
      try {
        const bytes =
          how === 'pool'
            ? (await file.read(buffer, 0, buffer.length, null)).bytesRead
            : readSync(file.fd, buffer, 0, buffer.length, null);
        if (bytes === 0) return records;
        buffer.toString('utf8', 0, bytes);
        records++;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') continue;
        if (code === 'EAGAIN') return records;
        throw err;
      }
    }
  } finally {
    await file.close();
  }
}

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const cpuMs: Record<Reader, number[]> = { pool: [], 'in place': [] };
let records = 0;
await readToEnd('in place'); // warm-up
for (let round = 0; round < rounds; round++) {
  const order: Reader[] = round % 2 === 0 ? ['pool', 'in place'] : ['in place', 'pool'];
  for (const how of order) {
    const before = process.cpuUsage();
    const t0 = performance.now();
    records = await readToEnd(how);
    const used = process.cpuUsage(before);
    cpuMs[how].push((used.user + used.system) / 1000);
    console.log(`round ${round + 1} ${how}: ${records} records, ${(performance.now() - t0).toFixed(1)} ms`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const how of ['pool', 'in place'] as const)
  console.log(
    `${how}: ${median(cpuMs[how]).toFixed(1)} ms of CPU for ${records} records (median of ${rounds})`,
  );
console.log(`in place ÷ pool: ${(median(cpuMs['in place']) / median(cpuMs.pool)).toFixed(2)}`);
