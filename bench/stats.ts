/**
 * CPU cost of one stats pass (/stats/summary, what the eviction manager reads every 10 s) with
 * 100 pods of one container each, on the in-process fake runtime: the figures are the stats
 * provider's own work (grouping, per-container log folder walks, etc-hosts, statfs, JSON) without
 * the runtime's. Volume usage comes from the background cache and is measured apart (one refresh
 * of 100 emptyDirs of 10 files).
 *
 * Env: BENCH_STATS_PODS (default 100), BENCH_STATS_PASSES (default 20).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Pod } from '../src/api/core-v1.js';
import { FakeRuntime } from '../src/cri/testing/fake-runtime.js';
import type { PodSandboxConfig } from '../src/cri/types.js';
import { realClock } from '../src/lib/clock.js';
import { FsResourceAnalyzer } from '../src/stats/fs-resource-analyzer.js';
import { StatsProvider } from '../src/stats/stats-provider.js';
import { summaryJson } from '../src/stats/summary-types.js';
import { emit, envNumber, percentile, say } from './report.js';

const BENCH = 'stats';

async function main(): Promise<void> {
  const podCount = envNumber('BENCH_STATS_PODS', 100);
  const passes = envNumber('BENCH_STATS_PASSES', 20);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-stats-'));
  try {
    const fake = new FakeRuntime(realClock);
    fake.addImage('busybox', { size: 5 << 20 });
    const pods: Pod[] = [];
    for (let i = 0; i < podCount; i++) {
      const uid = `uid-${i}`;
      const name = `pod-${i}`;
      const config = {
        metadata: { name, namespace: 'bench', uid, attempt: 0 },
        labels: {},
        annotations: {},
      } as unknown as PodSandboxConfig;
      const sb = await fake.runPodSandbox(config, '');
      const id = await fake.createContainer(
        sb,
        {
          metadata: { name: 'c', attempt: 0 },
          image: { image: 'busybox' },
          labels: {},
          annotations: {},
        } as never,
        config,
      );
      await fake.startContainer(id);
      const logDir = path.join(dir, 'logs', `bench_${name}_${uid}`, 'c');
      mkdirSync(logDir, { recursive: true });
      writeFileSync(path.join(logDir, '0.log'), 'x'.repeat(4096));
      const vol = path.join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
      mkdirSync(vol, { recursive: true });
      for (let f = 0; f < 10; f++) writeFileSync(path.join(vol, `f${f}`), 'y'.repeat(1024));
      pods.push({
        metadata: { name, namespace: 'bench', uid },
        spec: { containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'scratch', emptyDir: {} }] },
      });
    }
    const analyzer = new FsResourceAnalyzer({
      rootDir: path.join(dir, 'root'),
      clock: realClock,
      periodMs: 60_000,
      pods: () => pods,
    });
    const provider = new StatsProvider({
      runtime: fake,
      images: fake,
      clock: realClock,
      nodeName: 'bench',
      rootDir: dir,
      podLogsDir: path.join(dir, 'logs'),
      runtimeRequestTimeoutMs: 10_000,
      pods: () => pods,
      fsResourceAnalyzer: analyzer,
    });
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await analyzer.refresh();
    const refreshCpuMs = (process.cpuUsage(cpu0).user + process.cpuUsage(cpu0).system) / 1000;
    const refreshWallMs = performance.now() - t0;
    await provider.getSummary(); // warm-up
    const cpu: number[] = [];
    const wall: number[] = [];
    for (let i = 0; i < passes; i++) {
      const c = process.cpuUsage();
      const w = performance.now();
      summaryJson(await provider.getSummary());
      const d = process.cpuUsage(c);
      cpu.push((d.user + d.system) / 1000);
      wall.push(performance.now() - w);
    }
    say(`stats: ${podCount} pods, ${passes} passes`);
    emit({
      bench: BENCH,
      n: podCount,
      metric: 'pass_cpu_p50_ms',
      value: percentile(cpu, 50),
      note: 'one /stats/summary pass, JSON included',
    });
    emit({
      bench: BENCH,
      n: podCount,
      metric: 'pass_cpu_p99_ms',
      value: percentile(cpu, 99),
      note: 'one /stats/summary pass, JSON included',
    });
    emit({
      bench: BENCH,
      n: podCount,
      metric: 'pass_wall_p50_ms',
      value: percentile(wall, 50),
      note: 'one /stats/summary pass',
    });
    emit({
      bench: BENCH,
      n: podCount,
      metric: 'volume_refresh_cpu_ms',
      value: refreshCpuMs,
      note: 'one background walk of 100 emptyDirs × 10 files',
    });
    emit({
      bench: BENCH,
      n: podCount,
      metric: 'volume_refresh_wall_ms',
      value: refreshWallMs,
      note: 'one background walk',
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
