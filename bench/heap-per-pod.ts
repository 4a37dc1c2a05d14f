/**
 * The JS heap the kubelet holds per pod and per container, against the real runtime (the private
 * containerd of scripts/runtime-stack.sh).
 *
 * One fresh bin/tskubelet (its defaults, its own cgroup root as in the density bench) with the
 * bench/heap-probe.ts preload and --expose-gc. The probe collects all garbage on SIGUSR2 and reports
 * what is left, so the figures are live memory, not garbage waiting for a collection:
 *  1. idle: no pods;
 *  2. for each containers-per-pod count C (default 1 and 3): N busybox pods of C containers each
 *     written at once, until /pods shows every container running; then BENCH_HEAP_SETTLE_S (a few
 *     relists, probes, stats passes); sample; the manifests deleted, until no container of ours
 *     runs; settle; sample again (what the pods left behind).
 * Per pod = (heap with N pods of one container − idle) / N; per container = the difference between
 * the C = 3 and C = 1 rounds over the 2N extra containers.
 *
 * Env: CONTAINER_RUNTIME_ENDPOINT, BENCH_HEAP_PODS (100), BENCH_HEAP_CONTAINERS ("1,3"),
 * BENCH_HEAP_SETTLE_S (10), BENCH_KUBELET_ARGS, BENCH_NODE_ARGS (both space-separated, as in
 * density), BENCH_HEAP_SNAPSHOT_DIR (a heap snapshot at every sample, for a look with DevTools).
 * Run: `npm run build && node dist/bench/heap-per-pod.js` (as root, stack up).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Container, Pod } from '../src/api/core-v1.js';
import { connectRuntime, type RuntimeConnection } from '../src/cri/connect-runtime.js';
import { KUBERNETES_POD_NAMESPACE_LABEL } from '../src/kuberuntime/labels.js';
import { BenchCgroupRoot } from './cgroup-root.js';
import type { HeapProbeSample } from './heap-probe.js';
import { BenchKubelet } from './kubelet-launcher.js';
import { emit, envNumber, MIB, say, sleep } from './report.js';

const BENCH = 'heap';
const NAMESPACE = 'tskubelet-bench-heap';
const CRI_TIMEOUT_MS = 120_000;
const KIB = 1024;
const probeModule = path.join(path.dirname(fileURLToPath(import.meta.url)), 'heap-probe.js');

function benchPod(name: string, containers: number): Pod {
  const list: Container[] = Array.from({ length: containers }, (_, i) => ({
    name: `sleep-${i}`,
    image: 'busybox',
    imagePullPolicy: 'IfNotPresent',
    command: ['sleep', '3600'],
  }));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE, labels: { app: 'heap-bench' } },
    spec: { terminationGracePeriodSeconds: 2, containers: list },
  };
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    // Not written yet.
    return [];
  }
}

/** Asks the probe for a sample and waits (bounded) for its line. */
class Probe {
  private seen = 0;
  constructor(
    private readonly file: string,
    private readonly pid: number,
  ) {}

  async sample(): Promise<HeapProbeSample> {
    process.kill(this.pid, 'SIGUSR2');
    const deadline = Date.now() + 120_000;
    for (;;) {
      const lines = readLines(this.file);
      if (lines.length > this.seen) {
        this.seen = lines.length;
        return JSON.parse(lines[lines.length - 1]!) as HeapProbeSample;
      }
      if (Date.now() > deadline) throw new Error('the heap probe did not answer within 120 s');
      await sleep(100);
    }
  }
}

async function ourContainers(conn: RuntimeConnection) {
  const list = await conn.runtime.listContainers({}, { timeoutMs: CRI_TIMEOUT_MS });
  return list.filter((c) => c.labels[KUBERNETES_POD_NAMESPACE_LABEL] === NAMESPACE);
}

async function waitFor(what: string, timeoutMs: number, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(500);
  }
}

/** Stops and removes what the bench's pods left in the runtime (the kubelet leaves sandboxes to its GC). */
async function removeOurSandboxes(conn: RuntimeConnection): Promise<void> {
  const sandboxes = await conn.runtime.listPodSandbox(
    { labelSelector: { [KUBERNETES_POD_NAMESPACE_LABEL]: NAMESPACE } },
    { timeoutMs: CRI_TIMEOUT_MS },
  );
  for (const sb of sandboxes) {
    await conn.runtime.stopPodSandbox(sb.id, { timeoutMs: CRI_TIMEOUT_MS });
    await conn.runtime.removePodSandbox(sb.id, { timeoutMs: CRI_TIMEOUT_MS });
  }
}

function emitSample(label: string, n: number, s: HeapProbeSample): void {
  const f = (metric: string, bytes: number, note?: string) =>
    emit({ bench: BENCH, n, metric: `${label}_${metric}`, value: bytes / MIB, note });
  f('heap_used_mib', s.heapUsed, 'live JS heap after two forced full collections');
  f('heap_total_mib', s.heapTotal, 'heap committed by V8 (live + free + young generation)');
  f('external_mib', s.external, 'memory outside the heap held by JS objects (buffers)');
  f('rss_mib', s.rss, 'right after the collections');
  say(
    `heap ${label} (${n} containers): heapUsed ${(s.heapUsed / MIB).toFixed(1)} MiB, heapTotal ` +
      `${(s.heapTotal / MIB).toFixed(1)} MiB, external ${(s.external / MIB).toFixed(1)} MiB, ` +
      `RSS ${(s.rss / MIB).toFixed(1)} MiB${s.snapshot ? `, snapshot ${s.snapshot}` : ''}`,
  );
  const spaces = Object.entries(s.spaces)
    .filter(([, v]) => v.size > 0)
    .map(([name, v]) => `${name} ${(v.used / MIB).toFixed(1)}/${(v.size / MIB).toFixed(1)}`);
  say(`  V8 spaces, live/committed MiB: ${spaces.join(', ')}`);
}

async function main(): Promise<void> {
  const endpoint = process.env.CONTAINER_RUNTIME_ENDPOINT ?? 'unix:///run/tskubelet/containerd.sock';
  const pods = envNumber('BENCH_HEAP_PODS', 100);
  const counts = (process.env.BENCH_HEAP_CONTAINERS ?? '1,3').split(',').map((s) => Number(s.trim()));
  const settleMs = envNumber('BENCH_HEAP_SETTLE_S', 10) * 1000;
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'tskubelet-bench-heap-'));
  const probeFile = path.join(workDir, 'probe.jsonl');
  process.env.TSKUBELET_HEAP_PROBE_FILE = probeFile;
  if (process.env.BENCH_HEAP_SNAPSHOT_DIR)
    process.env.TSKUBELET_HEAP_SNAPSHOT_DIR = path.resolve(process.env.BENCH_HEAP_SNAPSHOT_DIR);

  const conn = await connectRuntime(endpoint, {
    runtimeRequestTimeoutMs: CRI_TIMEOUT_MS,
    signal: AbortSignal.timeout(30_000),
  });
  const cgroupRoot = await BenchCgroupRoot.create(`/tskubelet-bench-heap-${process.pid}`);
  const kubelet = new BenchKubelet({
    runtimeEndpoint: endpoint,
    nodeName: 'bench-node',
    extraArgs: [
      `--cgroup-root=${cgroupRoot.name}`,
      ...(process.env.BENCH_KUBELET_ARGS?.split(' ').filter(Boolean) ?? []),
    ],
    nodeArgs: [
      '--expose-gc',
      `--import=${probeModule}`,
      ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
    ],
  });
  let failed = true;
  try {
    await removeOurSandboxes(conn);
    await kubelet.start();
    const probe = new Probe(probeFile, kubelet.pid);
    await sleep(3000 + settleMs);
    const idle = await probe.sample();
    emitSample('idle', 0, idle);
    const withPods = new Map<number, HeapProbeSample>();
    for (const c of counts) {
      const names = Array.from({ length: pods }, (_, i) => `heap-${c}-${i}`);
      say(`heap: ${pods} pods of ${c} container(s)`);
      await Promise.all(names.map((name) => kubelet.writeManifest(`${name}.json`, benchPod(name, c))));
      await waitFor(`${pods * c} containers running`, 120_000 + pods * c * 1000, async () => {
        const running = (await kubelet.pods())
          .filter((p) => p.metadata.namespace === NAMESPACE)
          .flatMap((p) => p.status?.containerStatuses ?? [])
          .filter((s) => s.state?.running);
        return running.length === pods * c;
      });
      await sleep(settleMs);
      const sample = await probe.sample();
      withPods.set(c, sample);
      emitSample('pods', pods * c, sample);
      await Promise.all(names.map((name) => kubelet.removeManifest(`${name}.json`)));
      await waitFor('containers stopped', 60_000 + pods * c * 500, async () =>
        (await ourContainers(conn)).every((s) => s.state !== 'CONTAINER_RUNNING'),
      );
      await sleep(settleMs);
      emitSample('after', pods * c, await probe.sample());
    }

    const one = withPods.get(1);
    if (one) {
      const perPod = (one.heapUsed - idle.heapUsed) / pods;
      emit({
        bench: BENCH,
        n: pods,
        metric: 'heap_per_pod_kib',
        value: perPod / KIB,
        note: 'live heap with N one-container pods, less idle, over N',
      });
      say(`heap: ${(perPod / KIB).toFixed(1)} KiB per one-container pod`);
    }
    const more = counts.filter((c) => c > 1 && withPods.has(c)).at(-1);
    if (one && more !== undefined) {
      const perContainer = (withPods.get(more)!.heapUsed - one.heapUsed) / (pods * (more - 1));
      emit({
        bench: BENCH,
        n: pods,
        metric: 'heap_per_container_kib',
        value: perContainer / KIB,
        note: `live heap with N pods of ${more} containers less with N of one, over the extra containers`,
      });
      say(`heap: ${(perContainer / KIB).toFixed(1)} KiB per extra container`);
    }
    failed = false;
  } finally {
    if (failed) say(`heap: the kubelet's log is kept in ${kubelet.logFile}`);
    await kubelet.dispose(failed);
    await removeOurSandboxes(conn).catch(() => undefined);
    await cgroupRoot.destroy().catch((err: unknown) => say(`heap: ${String(err)}`));
    conn.close();
    await rm(workDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  say(`heap bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
