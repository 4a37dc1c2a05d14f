/**
 * Pod start density against the real runtime (the private containerd of scripts/runtime-stack.sh),
 * and the runtime's floor in the same run.
 *
 * For each N (default 1, 30, 100):
 *  1. floor: N sandboxes + busybox containers started directly over CRI, all at once (RunPodSandbox,
 *     CreateContainer, StartContainer per pod, with the configs the kubelet itself generates): the
 *     time containerd needs, below which no kubelet can go. Then StopContainer + StopPodSandbox.
 *  2. kubelet: a fresh bin/tskubelet; N static pod manifests written into its folder at once; each
 *     pod's latency is from its manifest's rename to the first poll of the read-only /pods that
 *     shows its container running. Meanwhile its CPU seconds (/proc/<pid>/stat) and peak RSS
 *     (VmHWM, reset before the start). Then CPU (cores) and RSS over a steady window with the N pods
 *     running; then all manifests are deleted and the time until CRI lists no running container of
 *     theirs is taken.
 * N = 1 hangs on where the PLEG's 1 s relist falls, so it is measured in several rounds of one pod.
 * The first size's kubelet first gives the idle RSS and CPU, before any manifest is written.
 *
 * A kubelet stops every pod in its runtime that none of its sources wants, and kills the processes
 * of pod cgroups it does not know (upstream does both). So the bench's kubelet runs under a cgroup
 * root of its own, and the bench waits until no other kubelet uses the runtime and no foreign pod is
 * up (refusing after BENCH_QUIET_WAIT_S); a size during which one showed up anyway is flagged.
 *
 * Env: CONTAINER_RUNTIME_ENDPOINT, BENCH_DENSITY_SIZES ("1,30,100"), BENCH_STEADY_S (30),
 * BENCH_STEADY_LARGE_S (steady window for N ≥ 100; 10), BENCH_SETTLE_S (from the last pod running to the
 * steady window; 5), BENCH_IDLE_S (10), BENCH_POLL_MS (100),
 * BENCH_QUIET_WAIT_S (120), BENCH_SINGLE_ROUNDS (rounds for N = 1; 8), BENCH_QUICK=1 (windows of 5 s,
 * 3 rounds), BENCH_KUBELET_ARGS (extra kubelet flags, space-separated, e.g.
 * `--feature-gates=EventedPLEG=false` to measure without containerd's task events), BENCH_NODE_ARGS
 * (flags for node itself, space-separated, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Pod } from '../src/api/core-v1.js';
import { connectRuntime, type RuntimeConnection } from '../src/cri/connect-runtime.js';
import type { ContainerConfig, PodSandboxConfig } from '../src/cri/types.js';
import { generateContainerConfig } from '../src/kuberuntime/container-config.js';
import { KUBERNETES_POD_NAMESPACE_LABEL } from '../src/kuberuntime/labels.js';
import { readHostDNSConfig } from '../src/kuberuntime/pod-dns.js';
import { generatePodSandboxConfig } from '../src/kuberuntime/sandbox-config.js';
import { BenchCgroupRoot } from './cgroup-root.js';
import { BenchKubelet } from './kubelet-launcher.js';
import { cpuSeconds, peakRssBytes, resetPeakRss, rssBytes } from './proc-stats.js';
import { emit, envNumber, MIB, percentile, quickMode, say, sleep, sum } from './report.js';

const BENCH = 'density';
const KUBELET_NAMESPACE = 'tskubelet-bench';
const FLOOR_NAMESPACE = 'tskubelet-bench-floor';
const NODE_NAME = 'bench-node';
const BUSYBOX = 'docker.io/library/busybox:latest';
/** The kubelet's minimum (upstream's too): `sleep` as PID 1 ignores SIGTERM, so each stop takes this long. */
const GRACE_PERIOD_S = 2;
const CRI_TIMEOUT_MS = 120_000;
const CLEANUP_PARALLELISM = 10;
const benchStartMs = performance.now();

/** Progress with the bench's elapsed time, so a slow phase shows where the minutes went. */
function phase(message: string): void {
  say(`density [${((performance.now() - benchStartMs) / 1000).toFixed(1)} s] ${message}`);
}

interface Settings {
  endpoint: string;
  sizes: number[];
  steadyMs: number;
  steadyLargeMs: number;
  idleMs: number;
  pollMs: number;
  quietWaitMs: number;
  /** Between the last pod seen running and the steady window. */
  settleMs: number;
  /** How many times N = 1 is measured. */
  singleRounds: number;
}

function settings(): Settings {
  const quick = quickMode();
  const steadyS = envNumber('BENCH_STEADY_S', quick ? 5 : 30);
  return {
    endpoint: process.env.CONTAINER_RUNTIME_ENDPOINT ?? 'unix:///run/tskubelet/containerd.sock',
    sizes: (process.env.BENCH_DENSITY_SIZES ?? '1,30,100').split(',').map((s) => Number(s.trim())),
    steadyMs: steadyS * 1000,
    steadyLargeMs: envNumber('BENCH_STEADY_LARGE_S', Math.min(steadyS, quick ? 5 : 10)) * 1000,
    idleMs: envNumber('BENCH_IDLE_S', quick ? 5 : 10) * 1000,
    pollMs: envNumber('BENCH_POLL_MS', 100),
    quietWaitMs: envNumber('BENCH_QUIET_WAIT_S', 120) * 1000,
    settleMs: envNumber('BENCH_SETTLE_S', 5) * 1000,
    singleRounds: Math.max(1, envNumber('BENCH_SINGLE_ROUNDS', quick ? 3 : 8)),
  };
}

function benchPod(name: string, namespace: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'density-bench' } },
    spec: {
      terminationGracePeriodSeconds: GRACE_PERIOD_S,
      containers: [
        { name: 'sleep', image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] },
      ],
    },
  };
}

// ---- the runtime: quiet check, clean-up ----------------------------------------------------------

/**
 * Other kubelets on this machine that use our runtime (by their command line), which would stop our
 * pods as strangers. One without --container-runtime-endpoint may name it in a config file: counted.
 */
function otherKubelets(endpoint: string): number[] {
  const socket = endpoint.replace(/^unix:\/\//, '');
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!argv.some((a) => a.endsWith('bin/tskubelet') || a.endsWith('dist/src/cmd/main.js'))) continue;
    const flag = argv.find((a) => a.startsWith('--container-runtime-endpoint'));
    if (flag === undefined || flag.includes(socket)) found.push(Number(entry));
  }
  return found;
}

async function foreignPods(conn: RuntimeConnection): Promise<string[]> {
  const ours = (ns: string) => ns === KUBELET_NAMESPACE || ns === FLOOR_NAMESPACE;
  const sandboxes = await conn.runtime.listPodSandbox(
    { state: 'SANDBOX_READY' },
    { timeoutMs: CRI_TIMEOUT_MS },
  );
  const containers = await conn.runtime.listContainers(
    { state: 'CONTAINER_RUNNING' },
    { timeoutMs: CRI_TIMEOUT_MS },
  );
  const names = new Set<string>();
  for (const s of sandboxes)
    if (!ours(s.metadata.namespace)) names.add(`${s.metadata.namespace}/${s.metadata.name}`);
  for (const c of containers) {
    const ns = c.labels[KUBERNETES_POD_NAMESPACE_LABEL] ?? '';
    if (!ours(ns)) names.add(`${ns}/${c.labels['io.kubernetes.pod.name'] ?? c.metadata.name}`);
  }
  return [...names];
}

/** Waits (bounded) until the runtime is ours alone: a kubelet of ours would stop anyone else's pods. */
async function waitForQuietRuntime(
  conn: RuntimeConnection,
  endpoint: string,
  maxWaitMs: number,
): Promise<void> {
  const deadline = Date.now() + maxWaitMs;
  let said = '';
  for (;;) {
    const kubelets = otherKubelets(endpoint);
    // A runtime that is down (someone else's test run stopped the shared stack) may come back.
    const pods = await foreignPods(conn).catch((err: unknown) => err as Error);
    if (kubelets.length === 0 && Array.isArray(pods) && pods.length === 0) return;
    const what =
      `other kubelet(s) running: ${kubelets.join(', ') || 'none'}; ` +
      (Array.isArray(pods)
        ? `foreign pods up: ${pods.slice(0, 5).join(', ') || 'none'}${pods.length > 5 ? ', …' : ''}`
        : `runtime not answering: ${pods.message}`);
    if (Date.now() > deadline) {
      throw new Error(
        `the runtime is not ours alone after ${maxWaitMs / 1000} s (${what}). ` +
          'The bench kubelet would stop those pods, and another kubelet would stop ours.',
      );
    }
    if (what !== said) say(`density: waiting for the runtime to be free: ${what}`);
    said = what;
    await sleep(5000);
  }
}

/** Kubelets of others seen on our runtime while a size was measured: its figures are then suspect. */
const intruders = new Set<number>();

function lookForIntruders(endpoint: string, ownKubelet?: number): void {
  for (const pid of otherKubelets(endpoint)) {
    // The bench's own kubelet matches the same command line: it is no intruder.
    if (pid === ownKubelet) continue;
    if (!intruders.has(pid))
      say(`density: another kubelet (pid ${pid}) uses the runtime: figures may be disturbed`);
    intruders.add(pid);
  }
}

/**
 * Stops and removes every sandbox (with its containers) of namespace, a few at a time. A sandbox
 * whose removal fails (CNI tear-down racing a kubelet that is still stopping it, say) is tried
 * again; one still there after three passes is an error, with the runtime's reason.
 */
async function removeNamespace(conn: RuntimeConnection, namespace: string): Promise<void> {
  const list = () =>
    conn.runtime.listPodSandbox(
      { labelSelector: { [KUBERNETES_POD_NAMESPACE_LABEL]: namespace } },
      { timeoutMs: CRI_TIMEOUT_MS },
    );
  const errors = new Map<string, string>();
  for (let pass = 0; pass < 3; pass++) {
    const queue = await list();
    if (queue.length === 0) return;
    if (pass > 0) await sleep(1000);
    const worker = async () => {
      for (let sb = queue.pop(); sb; sb = queue.pop()) {
        try {
          await conn.runtime.stopPodSandbox(sb.id, { timeoutMs: CRI_TIMEOUT_MS });
          await conn.runtime.removePodSandbox(sb.id, { timeoutMs: CRI_TIMEOUT_MS });
        } catch (err) {
          errors.set(sb.id, err instanceof Error ? err.message : String(err));
        }
      }
    };
    await Promise.all(Array.from({ length: CLEANUP_PARALLELISM }, worker));
  }
  const left = await list();
  if (left.length > 0) {
    const reasons = left.map((sb) => `${sb.id.slice(0, 12)}: ${errors.get(sb.id) ?? 'no error given'}`);
    throw new Error(
      `${left.length} sandbox(es) of ${namespace} could not be removed (${reasons.join('; ')})`,
    );
  }
}

/** containerd's own pid, for its share of the work (the runtime-stack.sh daemon, found by its command line). */
function containerdPid(): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv[0] === 'containerd' && argv[1] === '--config') return Number(entry);
    } catch {
      continue;
    }
  }
  return undefined;
}

function containerdCpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    return cpuSeconds(pid);
  } catch {
    return NaN;
  }
}

// ---- the floor -----------------------------------------------------------------------------------

interface FloorResult {
  latenciesMs: number[];
  allMs: number;
  stopAllMs: number;
  containerdCpuS: number;
}

async function floorRun(conn: RuntimeConnection, n: number, workDir: string): Promise<FloorResult> {
  const image = await conn.images.imageStatus({ image: BUSYBOX }, false, { timeoutMs: CRI_TIMEOUT_MS });
  if (!image) throw new Error(`${BUSYBOX} is not in the runtime: run 'bash scripts/runtime-stack.sh up'`);
  const hostDNS = await readHostDNSConfig('/etc/resolv.conf').catch(() => undefined);
  const podLogsDir = path.join(workDir, 'floor-logs');
  const rootDir = path.join(workDir, 'floor-root');

  // The configs are the kubelet's own, made before the clock starts: making them is the kubelet's work, not the floor's.
  const prepared: { sandbox: PodSandboxConfig; container: ContainerConfig }[] = [];
  for (let i = 0; i < n; i++) {
    const pod = benchPod(`floor-${i}`, FLOOR_NAMESPACE);
    pod.metadata.uid = randomUUID();
    pod.spec.nodeName = NODE_NAME;
    const sandbox = generatePodSandboxConfig(pod, 0, {
      podLogsDir,
      hostDNS,
      clusterDNS: [],
      clusterDomain: '',
      nodeIPs: [],
      cgroupParent: '',
    });
    await mkdir(sandbox.logDirectory, { recursive: true });
    const container = await generateContainerConfig(
      {
        pod,
        container: pod.spec.containers[0]!,
        restartCount: 0,
        imageRef: image.id,
        image,
        podIP: '',
        podIPs: [],
      },
      {
        podLogsDir,
        rootDir,
        nodeName: NODE_NAME,
        hostIPs: [],
        nodeAllocatable: { cpu: String(os.cpus().length), memory: String(os.totalmem()) },
        memoryCapacityBytes: os.totalmem(),
        cpuCFSQuota: true,
        cpuCFSQuotaPeriodUs: 100_000,
        seccompDefault: false,
        envSources: {},
      },
    );
    prepared.push({ sandbox, container });
  }

  const cdPid = containerdPid();
  const cd0 = containerdCpuSeconds(cdPid);
  const t0 = performance.now();
  const started = await Promise.all(
    prepared.map(async ({ sandbox, container }) => {
      const opts = { timeoutMs: CRI_TIMEOUT_MS };
      const sandboxId = await conn.runtime.runPodSandbox(sandbox, '', opts);
      const containerId = await conn.runtime.createContainer(sandboxId, container, sandbox, opts);
      await conn.runtime.startContainer(containerId, opts);
      return { sandboxId, containerId, doneMs: performance.now() - t0 };
    }),
  );
  const allMs = performance.now() - t0;
  const containerdCpuS = containerdCpuSeconds(cdPid) - cd0;

  const t1 = performance.now();
  await Promise.all(
    started.map(async ({ sandboxId, containerId }) => {
      const opts = { timeoutMs: CRI_TIMEOUT_MS };
      await conn.runtime.stopContainer(containerId, GRACE_PERIOD_S, opts);
      await conn.runtime.stopPodSandbox(sandboxId, opts);
    }),
  );
  const stopAllMs = performance.now() - t1;
  if (n > 1)
    phase(
      `n=${n}: floor started in ${Math.round(allMs)} ms, stopped in ${Math.round(stopAllMs)} ms; removing`,
    );
  await removeNamespace(conn, FLOOR_NAMESPACE);
  await rm(podLogsDir, { recursive: true, force: true });
  await rm(rootDir, { recursive: true, force: true });
  return { latenciesMs: started.map((s) => s.doneMs), allMs, stopAllMs, containerdCpuS };
}

/** floorRun `rounds` times: latencies over all rounds, the median round's totals, containerd's CPU per round. */
async function floorRounds(
  conn: RuntimeConnection,
  n: number,
  rounds: number,
  workDir: string,
): Promise<FloorResult> {
  const results: FloorResult[] = [];
  for (let r = 0; r < rounds; r++) results.push(await floorRun(conn, n, workDir));
  return {
    latenciesMs: results.flatMap((r) => r.latenciesMs),
    allMs: percentile(
      results.map((r) => r.allMs),
      50,
    ),
    stopAllMs: percentile(
      results.map((r) => r.stopAllMs),
      50,
    ),
    containerdCpuS: sum(results.map((r) => r.containerdCpuS)) / rounds,
  };
}

// ---- the kubelet ---------------------------------------------------------------------------------

interface StartRound {
  latenciesMs: number[];
  /** From the manifest's rename to the container's start as the runtime recorded it (no poll in it). */
  runtimeStartedMs: number[];
  allMs: number;
  cpuS: number;
  peakRssBytes: number;
  containerdCpuS: number;
  polls: number;
  pollTotalMs: number;
}

interface KubeletResult {
  rounds: number;
  latenciesMs: number[];
  runtimeStartedMs: number[];
  /** Median over the rounds. */
  allMs: number;
  /** Mean per round. */
  startCpuS: number;
  /** Highest over the rounds. */
  startPeakRssBytes: number;
  containerdCpuS: number;
  meanPollMs: number;
  steadyCores: number;
  steadyRssBytes: number;
  /** The lowest sample: the RSS once the garbage of the start has been collected. */
  steadyMinRssBytes: number;
  steadyMs: number;
  /** Median over the rounds. */
  stopAllMs: number;
  restarts: number;
  /** /pods polls made while starting the pods (mean per round). */
  polls: number;
  /** The kubelet's CPU seconds to serve one /pods poll with the N pods (measured after the steady window). */
  pollCpuS: number;
}

interface Idle {
  rssBytes: number;
  cores: number;
}

/** RSS samples once a second and the CPU used over windowMs. */
async function observe(
  pid: number,
  windowMs: number,
): Promise<{ cores: number; rssBytes: number; minRssBytes: number }> {
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  const rss: number[] = [];
  while (performance.now() - t0 < windowMs) {
    rss.push(rssBytes(pid));
    await sleep(Math.min(1000, windowMs - (performance.now() - t0)));
  }
  const elapsedS = (performance.now() - t0) / 1000;
  rss.push(rssBytes(pid));
  return {
    cores: (cpuSeconds(pid) - cpu0) / elapsedS,
    rssBytes: sum(rss) / rss.length,
    minRssBytes: Math.min(...rss),
  };
}

function isRunning(pod: Pod): boolean {
  const statuses = pod.status?.containerStatuses ?? [];
  return statuses.length > 0 && statuses.every((s) => s.state?.running !== undefined);
}

function listOurContainers(conn: RuntimeConnection) {
  return conn.runtime.listContainers(
    { labelSelector: { [KUBERNETES_POD_NAMESPACE_LABEL]: KUBELET_NAMESPACE } },
    { timeoutMs: CRI_TIMEOUT_MS },
  );
}

/** Writes the manifests of names at once and waits until /pods shows each pod's container running. */
async function startRound(
  conn: RuntimeConnection,
  kubelet: BenchKubelet,
  names: string[],
  pollMs: number,
): Promise<StartRound> {
  const pid = kubelet.pid;
  if (!resetPeakRss(pid))
    say('density: cannot reset VmHWM (not root?): peak RSS is since the kubelet started');
  const cdPid = containerdPid();
  const cd0 = containerdCpuSeconds(cdPid);
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  const writtenAt = await Promise.all(
    names.map(async (name) => {
      await kubelet.writeManifest(`${name}.json`, benchPod(name, KUBELET_NAMESPACE));
      return performance.now();
    }),
  );

  // Pod names on the node are `<name>-<node>`, as upstream names static pods.
  const seenAt = new Map<string, number>();
  const deadline = t0 + 60_000 + names.length * 2000;
  let polls = 0;
  let pollTotalMs = 0;
  while (seenAt.size < names.length) {
    if (performance.now() > deadline) {
      throw new Error(
        `only ${seenAt.size} of ${names.length} pods were running after ${Math.round(performance.now() - t0)} ms`,
      );
    }
    if (!kubelet.isRunning()) throw new Error(`the kubelet exited: ${await kubelet.tail()}`);
    const p0 = performance.now();
    const pods = await kubelet.pods();
    const p1 = performance.now();
    polls++;
    pollTotalMs += p1 - p0;
    for (const pod of pods) {
      const name = pod.metadata.name ?? '';
      if (pod.metadata.namespace === KUBELET_NAMESPACE && !seenAt.has(name) && isRunning(pod)) {
        seenAt.set(name, p1);
      }
    }
    await sleep(Math.max(0, pollMs - (performance.now() - p0)));
  }
  const allMs = Math.max(...seenAt.values()) - t0;
  const cpuS = cpuSeconds(pid) - cpu0;
  const peakRss = peakRssBytes(pid);
  const containerdCpuS = containerdCpuSeconds(cdPid) - cd0;
  const latenciesMs = names.map((name, i) => seenAt.get(`${name}-${NODE_NAME}`)! - writtenAt[i]!);

  // When the runtime started each container, on the bench's clock (performance.now() counts from
  // timeOrigin). Only the running ones: a container that was replaced meanwhile is not the one seen.
  const runtimeStartedMs: number[] = [];
  for (const c of await listOurContainers(conn)) {
    const index = names.indexOf((c.labels['io.kubernetes.pod.name'] ?? '').replace(`-${NODE_NAME}`, ''));
    if (index < 0 || c.state !== 'CONTAINER_RUNNING') continue;
    const status = await conn.runtime
      .containerStatus(c.id, false, { timeoutMs: CRI_TIMEOUT_MS })
      .then((r) => r.status)
      .catch(() => undefined);
    if (status) runtimeStartedMs.push(status.startedAt / 1e6 - performance.timeOrigin - writtenAt[index]!);
  }
  return {
    latenciesMs,
    runtimeStartedMs,
    allMs,
    cpuS,
    peakRssBytes: peakRss,
    containerdCpuS,
    polls,
    pollTotalMs,
  };
}

/**
 * What one /pods poll costs the kubelet with the pods it has now: the bench's polling is part of
 * the start's CPU figure, and this says how much. Many polls, as /proc counts in 10 ms ticks.
 */
async function pollCost(kubelet: BenchKubelet): Promise<number> {
  const polls = 50;
  const cpu0 = cpuSeconds(kubelet.pid);
  for (let i = 0; i < polls; i++) await kubelet.pods();
  return (cpuSeconds(kubelet.pid) - cpu0) / polls;
}

/** Deletes the manifests of names at once; resolves with the time until CRI lists none of their containers running. */
async function stopRound(
  conn: RuntimeConnection,
  kubelet: BenchKubelet,
  names: string[],
  pollMs: number,
): Promise<number> {
  const t0 = performance.now();
  await Promise.all(names.map((name) => kubelet.removeManifest(`${name}.json`)));
  const deadline = t0 + 60_000 + names.length * 1000;
  for (;;) {
    const list = await listOurContainers(conn);
    if (list.every((c) => c.state !== 'CONTAINER_RUNNING')) return performance.now() - t0;
    if (performance.now() > deadline) {
      throw new Error(
        `containers still running ${Math.round(performance.now() - t0)} ms after the manifests went`,
      );
    }
    await sleep(pollMs);
  }
}

/**
 * One fresh kubelet for one N. A single pod's latency hangs on where the PLEG's 1 s relist falls, so
 * N = 1 is measured `rounds` times in a row (each round starts and deletes one pod) and reported
 * over all of them; larger N are one round. The steady window follows the last round's start.
 */
async function kubeletRun(
  conn: RuntimeConnection,
  n: number,
  rounds: number,
  s: Settings,
  measureIdle: boolean,
): Promise<{ result: KubeletResult; idle?: Idle }> {
  const cgroupRoot = await BenchCgroupRoot.create(`/tskubelet-bench-${process.pid}`);
  const kubelet = new BenchKubelet({
    runtimeEndpoint: s.endpoint,
    nodeName: NODE_NAME,
    extraArgs: [
      `--cgroup-root=${cgroupRoot.name}`,
      ...(process.env.BENCH_KUBELET_ARGS?.split(' ').filter(Boolean) ?? []),
    ],
    nodeArgs: process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean),
  });
  let failed = true;
  let restarts = 0;
  try {
    await kubelet.start();
    const pid = kubelet.pid;
    // Start-up work (the first relist, housekeeping) settles before anything is measured.
    await sleep(3000);
    const idle = measureIdle ? await observe(pid, s.idleMs) : undefined;

    const starts: StartRound[] = [];
    const stopsMs: number[] = [];
    const steadyMs = n >= 100 ? s.steadyLargeMs : s.steadyMs;
    let steady = { cores: NaN, rssBytes: NaN, minRssBytes: NaN };
    let pollCpuS = NaN;
    for (let r = 0; r < rounds; r++) {
      const names = Array.from({ length: n }, (_, i) => `density-${r}-${i}`);
      // A random phase against the PLEG's 1 s relist: rounds that kept in step with it would all
      // wait the same share of a relist period, and their spread would say nothing.
      if (rounds > 1) await sleep(Math.random() * 1000);
      starts.push(await startRound(conn, kubelet, names, s.pollMs));
      lookForIntruders(s.endpoint, pid);
      if (r === rounds - 1) {
        phase(`n=${n}: steady window`);
        await sleep(s.settleMs);
        steady = await observe(pid, steadyMs);
        const pods = await kubelet.pods();
        restarts = sum(
          pods.flatMap((p) => (p.status?.containerStatuses ?? []).map((c) => c.restartCount ?? 0)),
        );
        lookForIntruders(s.endpoint, pid);
        pollCpuS = await pollCost(kubelet);
      }
      phase(`n=${n}: deleting the manifests`);
      stopsMs.push(await stopRound(conn, kubelet, names, s.pollMs));
      // Quiet between rounds, so that one round's clean-up is not the next one's load.
      if (r < rounds - 1) await sleep(500);
    }
    failed = false;
    return {
      idle,
      result: {
        rounds,
        latenciesMs: starts.flatMap((r) => r.latenciesMs),
        runtimeStartedMs: starts.flatMap((r) => r.runtimeStartedMs),
        allMs: percentile(
          starts.map((r) => r.allMs),
          50,
        ),
        startCpuS: sum(starts.map((r) => r.cpuS)) / rounds,
        startPeakRssBytes: Math.max(...starts.map((r) => r.peakRssBytes)),
        containerdCpuS: sum(starts.map((r) => r.containerdCpuS)) / rounds,
        meanPollMs: sum(starts.map((r) => r.pollTotalMs)) / sum(starts.map((r) => r.polls)),
        steadyCores: steady.cores,
        steadyRssBytes: steady.rssBytes,
        steadyMinRssBytes: steady.minRssBytes,
        steadyMs,
        stopAllMs: percentile(stopsMs, 50),
        restarts,
        polls: sum(starts.map((r) => r.polls)) / rounds,
        pollCpuS,
      },
    };
  } finally {
    // A failure, or a restart of a container that should have run on, is worth the kubelet's log.
    const keepLog = failed || restarts > 0;
    if (keepLog) say(`density: the kubelet's log is kept in ${kubelet.logFile}`);
    phase(`n=${n}: stopping the kubelet`);
    await kubelet.dispose(keepLog);
    phase(`n=${n}: removing the sandboxes`);
    await removeNamespace(conn, KUBELET_NAMESPACE);
    await cgroupRoot.destroy();
  }
}

// ---- reporting -----------------------------------------------------------------------------------

function reportSize(n: number, floor: FloorResult, k: KubeletResult, pollMs: number, settleS: number): void {
  const f = (metric: string, value: number, note?: string) => emit({ bench: BENCH, n, metric, value, note });
  const rounds = k.rounds > 1 ? `; over ${k.rounds} rounds of one pod (totals: median round)` : '';
  const pollNote =
    `manifest rename → first /pods poll showing the container running; polled every ${pollMs} ms ` +
    `(mean poll took ${k.meanPollMs.toFixed(1)} ms), so up to ${pollMs} ms of each figure is the poll's${rounds}`;
  f('p50_ms', percentile(k.latenciesMs, 50), pollNote);
  f('p90_ms', percentile(k.latenciesMs, 90));
  f('p99_ms', percentile(k.latenciesMs, 99));
  f('all_ms', k.allMs, 'first manifest write → last pod seen running');
  f(
    'runtime_started_p50_ms',
    percentile(k.runtimeStartedMs, 50),
    "manifest rename → the container's start as CRI records it",
  );
  f('runtime_started_p99_ms', percentile(k.runtimeStartedMs, 99));
  f(
    'start_cpu_s',
    k.startCpuS,
    "the kubelet's utime+stime from the first write to the last pod seen running",
  );
  f(
    'start_cpu_s_less_polls',
    k.startCpuS - k.polls * k.pollCpuS,
    `start_cpu_s less the ${Math.round(k.polls)} /pods polls the bench made (${(k.pollCpuS * 1000).toFixed(1)} ms each)`,
  );
  f('start_peak_rss_mib', k.startPeakRssBytes / MIB, 'VmHWM over the start (reset before it)');
  f(
    'steady_cpu_cores',
    k.steadyCores,
    `over ${k.steadyMs / 1000} s with the ${n} pod(s) running, from ${settleS} s after the last was seen running`,
  );
  f('steady_rss_mib', k.steadyRssBytes / MIB, `mean VmRSS over ${k.steadyMs / 1000} s`);
  f(
    'steady_rss_min_mib',
    k.steadyMinRssBytes / MIB,
    'lowest VmRSS sample of the window (start garbage collected)',
  );
  f(
    'stop_all_ms',
    k.stopAllMs,
    `manifests deleted → no container running (grace period ${GRACE_PERIOD_S} s; sleep ignores SIGTERM)`,
  );
  f(
    'containerd_start_cpu_s',
    k.containerdCpuS,
    "containerd's CPU seconds while the kubelet started the pods",
  );
  f('restarts', k.restarts, 'container restarts seen during the steady window (should be 0)');
  if (intruders.size > 0) {
    f(
      'intruders',
      intruders.size,
      'other kubelets used the runtime during this size: its figures are suspect',
    );
  }
  f(
    'floor_p50_ms',
    percentile(floor.latenciesMs, 50),
    'RunPodSandbox+CreateContainer+StartContainer over CRI, all pods at once',
  );
  f('floor_p90_ms', percentile(floor.latenciesMs, 90));
  f('floor_p99_ms', percentile(floor.latenciesMs, 99));
  f('floor_all_ms', floor.allMs);
  f('floor_stop_all_ms', floor.stopAllMs, `StopContainer(${GRACE_PERIOD_S} s)+StopPodSandbox, all at once`);
  f(
    'floor_containerd_cpu_s',
    floor.containerdCpuS,
    "containerd's CPU seconds while the floor started the pods",
  );
  f(
    'overhead_p50_ratio',
    percentile(k.latenciesMs, 50) / percentile(floor.latenciesMs, 50),
    'kubelet p50 / floor p50',
  );
  f('overhead_p90_ratio', percentile(k.latenciesMs, 90) / percentile(floor.latenciesMs, 90));
  f('overhead_p99_ratio', percentile(k.latenciesMs, 99) / percentile(floor.latenciesMs, 99));
  f('overhead_all_ratio', k.allMs / floor.allMs);
  say(
    `density n=${n}: kubelet p50 ${percentile(k.latenciesMs, 50).toFixed(0)} ms, p99 ${percentile(
      k.latenciesMs,
      99,
    ).toFixed(0)} ms, all ${k.allMs.toFixed(0)} ms; floor p50 ${percentile(floor.latenciesMs, 50).toFixed(
      0,
    )} ms, all ${floor.allMs.toFixed(0)} ms; start CPU ${k.startCpuS.toFixed(2)} s, steady ${k.steadyCores.toFixed(
      3,
    )} cores, RSS ${(k.steadyRssBytes / MIB).toFixed(0)} MiB`,
  );
}

async function main(): Promise<void> {
  const s = settings();
  say(
    `density: sizes ${s.sizes.join(', ')}; steady window ${s.steadyMs / 1000} s (${s.steadyLargeMs / 1000} s ` +
      `for N ≥ 100); idle ${s.idleMs / 1000} s; /pods polled every ${s.pollMs} ms; runtime ${s.endpoint}`,
  );
  const conn = await connectRuntime(s.endpoint, {
    runtimeRequestTimeoutMs: CRI_TIMEOUT_MS,
    signal: AbortSignal.timeout(30_000),
  });
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'tskubelet-bench-floor-'));
  try {
    say(`density: runtime ${conn.version.runtimeName} ${conn.version.runtimeVersion}`);
    await waitForQuietRuntime(conn, s.endpoint, s.quietWaitMs);
    // Left over by a run that was killed.
    await removeNamespace(conn, KUBELET_NAMESPACE);
    await removeNamespace(conn, FLOOR_NAMESPACE);
    // A first sandbox pays for cold caches (snapshots, CNI plugin binaries): not part of any figure.
    await floorRun(conn, 2, workDir);

    for (const [i, n] of s.sizes.entries()) {
      await waitForQuietRuntime(conn, s.endpoint, s.quietWaitMs);
      const rounds = n === 1 ? s.singleRounds : 1;
      phase(`n=${n}: floor, ${rounds} round(s)`);
      intruders.clear();
      const floor = await floorRounds(conn, n, rounds, workDir);
      lookForIntruders(s.endpoint);
      phase(`n=${n}: kubelet, ${rounds} round(s)`);
      const { result, idle } = await kubeletRun(conn, n, rounds, s, i === 0);
      phase(`n=${n}: done`);
      if (idle) {
        emit({
          bench: BENCH,
          n: 0,
          metric: 'idle_rss_mib',
          value: idle.rssBytes / MIB,
          note: `mean VmRSS over ${s.idleMs / 1000} s, no pods`,
        });
        emit({ bench: BENCH, n: 0, metric: 'idle_cpu_cores', value: idle.cores });
        say(`density idle: RSS ${(idle.rssBytes / MIB).toFixed(1)} MiB, CPU ${idle.cores.toFixed(4)} cores`);
      }
      reportSize(n, floor, result, s.pollMs, s.settleMs / 1000);
    }
  } finally {
    await removeNamespace(conn, KUBELET_NAMESPACE).catch(() => undefined);
    await removeNamespace(conn, FLOOR_NAMESPACE).catch(() => undefined);
    conn.close();
    await rm(workDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  say(`density bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
