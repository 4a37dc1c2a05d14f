/**
 * What mounting costs the kubelet: BENCH_MOUNT_PAIRS (default 100) tmpfs mount + umount pairs under a
 * temporary folder, through SystemMounter as the volume manager calls it for each token volume, by
 * each way it can run mount(8) (BENCH_MOUNT_VARIANTS, default "spawn,helper"), in alternating rounds
 * (BENCH_ROUNDS, default 3). Per pair: the process's CPU (process.cpuUsage, all threads), its main
 * thread's (/proc/self/task/<pid>/stat, 10 ms ticks), its children's once reaped (cutime + cstime),
 * and the wall time.
 *
 * A kubelet's fork copies a larger process than this bench's: BENCH_BALLAST_MB (default 48) of
 * touched memory makes the bench's RSS about a 100-pod kubelet's.
 *
 * Needs root (mount(2)). Run: `npm run build && node dist/bench/mount-helper.js`.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { MountHelper, spawnCommand } from '../src/volume/mount-helper.js';
import { SystemMounter } from '../src/volume/mounter.js';
import { mainThreadCpuSeconds, reapedChildrenCpuSeconds, rssBytes } from './proc-stats.js';

/** spawn: child_process for each command (the way before the helper); helper: the mount helper. */
type Variant = 'spawn' | 'helper';

interface Sample {
  variant: Variant;
  processCpuUs: number;
  mainThreadUs: number;
  childrenUs: number;
  wallUs: number;
}

function newMounter(variant: Variant): { mounter: SystemMounter; close: () => Promise<void> } {
  switch (variant) {
    case 'spawn': {
      const runner = { run: spawnCommand, close: async () => undefined };
      return { mounter: new SystemMounter(undefined, undefined, runner), close: runner.close };
    }
    case 'helper': {
      const mounter = new SystemMounter(undefined, undefined, new MountHelper());
      return { mounter, close: () => mounter.close() };
    }
  }
}

async function measure(variant: Variant, dir: string, pairs: number): Promise<Sample> {
  const { mounter, close } = newMounter(variant);
  const targets: string[] = [];
  for (let i = 0; i < pairs; i++) {
    const target = path.join(dir, `${variant}-${i}`);
    await mkdir(target);
    targets.push(target);
  }
  const pid = process.pid;
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadCpuSeconds(pid);
  const children0 = reapedChildrenCpuSeconds(pid);
  const t0 = performance.now();
  for (const target of targets) {
    await mounter.mount('tmpfs', target, 'tmpfs', ['size=1m']);
    await mounter.unmount(target);
  }
  // A helper's children are reaped by the helper: its time reaches ours once it has exited.
  await close();
  const wallUs = (performance.now() - t0) * 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    variant,
    processCpuUs: (cpu.user + cpu.system) / pairs,
    mainThreadUs: ((mainThreadCpuSeconds(pid) - main0) * 1e6) / pairs,
    childrenUs: ((reapedChildrenCpuSeconds(pid) - children0) * 1e6) / pairs,
    wallUs: wallUs / pairs,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('mount-helper bench: needs root (mount(2))');
  const pairs = Number(process.env.BENCH_MOUNT_PAIRS ?? 100);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const variants = (process.env.BENCH_MOUNT_VARIANTS ?? 'spawn,helper').split(',') as Variant[];
  const ballastMb = Number(process.env.BENCH_BALLAST_MB ?? 48);
  const ballast = Buffer.alloc(ballastMb * 1024 * 1024, 1);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tsk-mount-bench-'));
  const samples: Sample[] = [];
  try {
    // A warm-up pair per variant, so neither pays for the first load of mount(8) from disk.
    for (const v of variants) await measure(v, await mkdtemp(path.join(dir, 'warm-')), 1);
    for (let r = 0; r < rounds; r++) {
      // Alternating order, so a trend in the machine's load weighs on both alike.
      const order = r % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) {
        const s = await measure(v, await mkdtemp(path.join(dir, `r${r}-`)), pairs);
        samples.push(s);
        console.log(JSON.stringify({ bench: 'mount-helper', round: r, ...s }));
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  console.log(
    `\n${pairs} tmpfs mount + umount pairs, ${rounds} rounds, RSS ${(rssBytes(process.pid) / 2 ** 20).toFixed(0)} MiB` +
      ` (ballast ${ballast.length / 2 ** 20} MiB), load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  console.log('per pair, medians [range] (µs) | process CPU | main thread | children | wall');
  for (const v of variants) {
    const of = samples.filter((s) => s.variant === v);
    const cell = (k: keyof Omit<Sample, 'variant'>): string => {
      const xs = of.map((s) => s[k]);
      return `${median(xs).toFixed(0)} [${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}]`;
    };
    console.log(
      `${v} | ${cell('processCpuUs')} | ${cell('mainThreadUs')} | ${cell('childrenUs')} | ${cell('wallUs')}`,
    );
  }
}

await main();
