/**
 * A node process's CPU by what its threads do. Node names none of its threads (all are `node`), so
 * they are told apart by when they were made, which follows node's start-up order: the main thread
 * (the JavaScript; its thread ID is the PID), then V8's platform (one delayed-task thread and
 * `--v8-pool-size` workers: TurboFan's concurrent compiles, the GC's concurrent marking, parallel
 * scavenges and sweeping), then the inspector's signal thread (idle), then, at the first file-system
 * or DNS call, libuv's pool (`UV_THREADPOOL_SIZE`). The kernel's io_uring threads (`iou-sqp-*`, the
 * submission queue poller; `iou-wrk-*`, blocking requests), present with `UV_USE_IO_URING=1`, are
 * named. Threads made later (worker_threads, each with several) are `other`. A thread that ended
 * between two samples takes its CPU with it from /proc/<pid>/task, but not from the process's total:
 * that difference is `ended` (io_uring's workers end after a few idle seconds).
 */
import { readdirSync } from 'node:fs';
import os from 'node:os';
import { cpuSeconds, readStat } from './proc-stats.js';

export const THREAD_ROLES = ['main', 'v8', 'libuv', 'io_uring', 'other', 'ended'] as const;
export type ThreadRole = (typeof THREAD_ROLES)[number];

/** How many threads of each kind node starts, from its flags and environment. */
export interface ThreadLayout {
  /** V8's platform workers (`--v8-pool-size`; 4 by default; 0: the CPUs less one). */
  v8Workers: number;
  /** libuv's pool (`UV_THREADPOOL_SIZE`, 4 by default). */
  uvThreads: number;
}

export function threadLayout(nodeArgs: readonly string[], env: NodeJS.ProcessEnv): ThreadLayout {
  let v8Workers = 4;
  for (const arg of [...(env.NODE_OPTIONS ?? '').split(/\s+/), ...nodeArgs]) {
    const m = /^--v8[-_]pool[-_]size=(\d+)$/.exec(arg);
    if (m) v8Workers = Number(m[1]);
  }
  if (v8Workers < 1) v8Workers = Math.max(1, os.availableParallelism() - 1);
  const uv = Number(env.UV_THREADPOOL_SIZE);
  return { v8Workers, uvThreads: Number.isInteger(uv) && uv > 0 ? Math.min(uv, 1024) : 4 };
}

export interface ThreadSample {
  tid: number;
  name: string;
  cpuSeconds: number;
}

export interface ProcessSample {
  /** The whole process's CPU (its live and ended threads, not its children). */
  cpuSeconds: number;
  threads: ThreadSample[];
}

export function sampleThreads(pid: number): ProcessSample {
  const total = cpuSeconds(pid);
  const threads: ThreadSample[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const { name, cpuSeconds: s } = readStat(`/proc/${pid}/task/${tid}/stat`);
      threads.push({ tid: Number(tid), name, cpuSeconds: s });
    } catch {
      // The thread ended between the listing and the read: its CPU lands in `ended`.
    }
  }
  return { cpuSeconds: total, threads: threads.sort((a, b) => a.tid - b.tid) };
}

/**
 * Each thread's role, by creation order (thread IDs grow; a wrap of the PID space during the
 * process's start-up would confuse it, which a bench machine does not see). Without a layout (not a
 * node process: the upstream kubelet's Go threads), every thread but the main one is `other`.
 */
export function threadRoles(
  pid: number,
  sample: ProcessSample,
  layout: ThreadLayout | undefined,
): Map<number, ThreadRole> {
  const roles = new Map<number, ThreadRole>();
  // The `node` threads other than main, oldest first: the platform's 1 + v8Workers, the inspector's, libuv's.
  let index = 0;
  for (const t of sample.threads) {
    if (t.tid === pid) roles.set(t.tid, 'main');
    else if (t.name.startsWith('iou-')) roles.set(t.tid, 'io_uring');
    else if (!layout) roles.set(t.tid, 'other');
    else {
      const platform = 1 + layout.v8Workers;
      if (index < platform) roles.set(t.tid, 'v8');
      else if (index === platform) roles.set(t.tid, 'other');
      else if (index <= platform + layout.uvThreads) roles.set(t.tid, 'libuv');
      else roles.set(t.tid, 'other');
      index++;
    }
  }
  return roles;
}

/** CPU seconds by role between two samples of the same process (the roles from the later one). */
export function cpuByRole(
  pid: number,
  before: ProcessSample,
  after: ProcessSample,
  layout: ThreadLayout | undefined,
): Record<ThreadRole, number> {
  const out = Object.fromEntries(THREAD_ROLES.map((r) => [r, 0])) as Record<ThreadRole, number>;
  const roles = threadRoles(pid, after, layout);
  const earlier = new Map(before.threads.map((t) => [t.tid, t.cpuSeconds]));
  let live = 0;
  for (const t of after.threads) {
    const d = t.cpuSeconds - (earlier.get(t.tid) ?? 0);
    out[roles.get(t.tid)!] += d;
    live += d;
  }
  out.ended = Math.max(0, after.cpuSeconds - before.cpuSeconds - live);
  for (const r of THREAD_ROLES) out[r] = Math.round(out[r] * 100) / 100;
  return out;
}
