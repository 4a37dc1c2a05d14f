/**
 * Pod start density against the real runtime (the private containerd of scripts/runtime-stack.sh),
 * and the runtime's floor in the same run; optionally side by side with a second kubelet.
 *
 * Every N (default 1, 30, 100) is measured in R rounds (BENCH_ROUNDS). Within a round, for each N:
 *  1. floor: N sandboxes + busybox containers started directly over CRI, all at once (RunPodSandbox,
 *     CreateContainer, StartContainer per pod, with the configs the kubelet itself generates): the
 *     time containerd needs, below which no kubelet can go. Then StopContainer + StopPodSandbox.
 *  2. kubelet: a fresh bin/tskubelet; N static pod manifests written into its folder at once; each
 *     pod's latency is from its manifest's rename to the first poll of the read-only /pods that
 *     shows its container running. Meanwhile its CPU seconds (/proc/<pid>/stat) and peak RSS
 *     (VmHWM, reset before the start). Then CPU (cores) and RSS over a steady window with the N pods
 *     running; then all manifests are deleted and the time until CRI lists no running container of
 *     theirs is taken.
 *  3. with BENCH_PEER_KUBELET, the same as 2 for the peer kubelet (another checkout's bin/tskubelet,
 *     or an upstream kubelet binary); in even rounds the peer goes before tskubelet.
 * Floor and kubelets thus alternate within a round and see the same machine; the figures are the
 * medians over the rounds (with the lowest and highest round), and every ratio (to the floor, to
 * the peer) is taken within a round first: the pair saw the same machine.
 * N = 1 hangs on where the PLEG's 1 s relist falls, so each round starts BENCH_SINGLE_STARTS pods one
 * after another, each at a random phase. Each round's first size's kubelets first give the idle
 * RSS and CPU, before any manifest is written.
 *
 * A kubelet stops every pod in its runtime that none of its sources wants, and kills the processes
 * of pod cgroups it does not know (upstream does both). So the bench's kubelet runs under a cgroup
 * root of its own, and the bench waits until no other kubelet uses the runtime and no foreign pod is
 * up (refusing after BENCH_QUIET_WAIT_S); a size during which one showed up anyway is flagged.
 *
 * Env: CONTAINER_RUNTIME_ENDPOINT, BENCH_DENSITY_SIZES ("1,30,100"), BENCH_ROUNDS (3, 4 with a peer; quick: 2),
 * BENCH_STEADY_S (15), BENCH_STEADY_LARGE_S (steady window for N ≥ 100; 10), BENCH_SETTLE_S (from the
 * last pod running to the steady window; 5), BENCH_IDLE_S (10), BENCH_POLL_MS (100),
 * BENCH_QUIET_WAIT_S (120), BENCH_SINGLE_STARTS (pods started one after another per round for N = 1;
 * 3, quick: 2), BENCH_FLOOR_SLOTS (the floor starts at most this many pods at once; 0, the default:
 * all at once), BENCH_QUICK=1 (windows of 5 s, 2 rounds), BENCH_KUBELET_ARGS (extra tskubelet flags,
 * space-separated, e.g. `--feature-gates=EventedPLEG=false` to measure without containerd's task
 * events), BENCH_NODE_ARGS (flags for node itself, space-separated, e.g. `--cpu-prof
 * --cpu-prof-dir=/tmp/prof`), BENCH_PEER_KUBELET (a second kubelet binary to measure side by side),
 * BENCH_PEER_KIND (tskubelet | upstream: overrides what `--version` says), BENCH_PEER_NODE_ARGS
 * (node flags for a tskubelet peer), BENCH_PEER_KUBELET_ARGS
 * (extra flags for the peer), BENCH_KUBELET_ENV and BENCH_PEER_ENV (NAME=VALUE pairs, space-separated,
 * for our kubelet's or the peer's environment alone: with BENCH_PEER_KUBELET=bin/tskubelet, an A/B
 * of one setting on the same code, e.g. `BENCH_PEER_ENV=MALLOC_MMAP_THRESHOLD_=1048576`).
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
import { Slots } from '../src/lib/slots.js';
import { BenchCgroupRoot } from './cgroup-root.js';
import {
  cpuByRole,
  sampleThreads,
  threadLayout,
  type ThreadLayout,
  type ThreadRole,
} from './thread-roles.js';
import { BenchKubelet, identifyKubelet, type KubeletKind } from './kubelet-launcher.js';
import {
  cpuSeconds,
  machineBusySeconds,
  mainThreadCpuSeconds,
  peakRssBytes,
  resetPeakRss,
  rssBytes,
} from './proc-stats.js';
import { emit, envNumber, envPairs, median, MIB, percentile, quickMode, say, sleep, sum } from './report.js';
import {
  containerdCpuSeconds,
  containerdPid,
  removeNamespace,
  waitForIdleContainerd,
} from './runtime-sweep.js';

const BENCH = 'density';
const KUBELET_NAMESPACE = 'tskubelet-bench';
const FLOOR_NAMESPACE = 'tskubelet-bench-floor';
const NODE_NAME = 'bench-node';
const BUSYBOX = 'docker.io/library/busybox:latest';
/** The kubelet's minimum (upstream's too): `sleep` as PID 1 ignores SIGTERM, so each stop takes this long. */
const GRACE_PERIOD_S = 2;
const CRI_TIMEOUT_MS = 120_000;
const benchStartMs = performance.now();

/** Progress with the bench's elapsed time, so a slow phase shows where the minutes went. */
function phase(message: string): void {
  say(`density [${((performance.now() - benchStartMs) / 1000).toFixed(1)} s] ${message}`);
}

/** A kubelet the bench measures: this checkout's tskubelet, or the peer it is compared with. */
interface KubeletUnderTest {
  role: 'tskubelet' | 'peer';
  kind: KubeletKind;
  /** Undefined: this checkout's bin/tskubelet. */
  binary?: string;
  minor?: number;
  extraArgs: string[];
  nodeArgs?: string[];
  env: Record<string, string>;
  /** For the report: kind, binary and what its --version printed. */
  description: string;
}

interface Settings {
  endpoint: string;
  sizes: number[];
  /** Every size is measured this many times, floor and kubelet(s) alternating. */
  rounds: number;
  steadyMs: number;
  steadyLargeMs: number;
  idleMs: number;
  pollMs: number;
  quietWaitMs: number;
  /** Between the last pod seen running and the steady window. */
  settleMs: number;
  /** How many single pods are started one after another in each round of N = 1. */
  singleStarts: number;
  /** The floor starts at most this many pods at once (0: all at once). */
  floorSlots: number;
  kubelets: KubeletUnderTest[];
}

const splitArgs = (raw: string | undefined) => raw?.split(' ').filter(Boolean) ?? [];

const envText = (env: Record<string, string>): string =>
  Object.keys(env).length > 0
    ? ` with ${Object.entries(env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`
    : '';

async function settings(): Promise<Settings> {
  const quick = quickMode();
  const steadyS = envNumber('BENCH_STEADY_S', quick ? 5 : 15);
  const kubelets: KubeletUnderTest[] = [
    {
      role: 'tskubelet',
      kind: 'tskubelet',
      extraArgs: splitArgs(process.env.BENCH_KUBELET_ARGS),
      nodeArgs: splitArgs(process.env.BENCH_NODE_ARGS),
      env: envPairs('BENCH_KUBELET_ENV'),
      description: `tskubelet of this checkout${envText(envPairs('BENCH_KUBELET_ENV'))}`,
    },
  ];
  const peerBinary = process.env.BENCH_PEER_KUBELET;
  if (peerBinary) {
    const binary = path.resolve(peerBinary);
    const id = await identifyKubelet(binary, process.env.BENCH_PEER_KIND || undefined);
    kubelets.push({
      role: 'peer',
      kind: id.kind,
      binary,
      minor: id.minor,
      extraArgs: splitArgs(process.env.BENCH_PEER_KUBELET_ARGS),
      // Node's own flags apply to a tskubelet peer only (e.g. --lite-mode, to weigh a V8 flag).
      nodeArgs: splitArgs(process.env.BENCH_PEER_NODE_ARGS),
      env: envPairs('BENCH_PEER_ENV'),
      description: `${id.kind} ${binary} (${id.version})${process.env.BENCH_PEER_NODE_ARGS ? ` with node ${process.env.BENCH_PEER_NODE_ARGS}` : ''}${envText(envPairs('BENCH_PEER_ENV'))}`,
    });
  }
  return {
    endpoint: process.env.CONTAINER_RUNTIME_ENDPOINT ?? 'unix:///run/tskubelet/containerd.sock',
    sizes: (process.env.BENCH_DENSITY_SIZES ?? '1,30,100').split(',').map((s) => Number(s.trim())),
    // With a peer, an even number of rounds by default: each kubelet goes first in half of them.
    rounds: Math.max(1, envNumber('BENCH_ROUNDS', quick ? 2 : peerBinary ? 4 : 3)),
    steadyMs: steadyS * 1000,
    steadyLargeMs: envNumber('BENCH_STEADY_LARGE_S', Math.min(steadyS, quick ? 5 : 10)) * 1000,
    idleMs: envNumber('BENCH_IDLE_S', quick ? 5 : 10) * 1000,
    pollMs: envNumber('BENCH_POLL_MS', 100),
    quietWaitMs: envNumber('BENCH_QUIET_WAIT_S', 120) * 1000,
    settleMs: envNumber('BENCH_SETTLE_S', 5) * 1000,
    singleStarts: Math.max(1, envNumber('BENCH_SINGLE_STARTS', quick ? 2 : 3)),
    floorSlots: Math.max(0, envNumber('BENCH_FLOOR_SLOTS', 0)),
    kubelets,
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
    const isKubelet =
      path.basename(argv[0] ?? '') === 'kubelet' ||
      // Not a `NAME=…/bin/tskubelet` word: that is `env` or `flock` handing a bench its settings.
      argv.some(
        (a) => !a.includes('=') && (a.endsWith('bin/tskubelet') || a.endsWith('dist/kubelet/main.js')),
      );
    if (!isKubelet) continue;
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

/** Per size: kubelets of others seen on our runtime while it was measured; its figures are then suspect. */
const intruders = new Map<number, Set<number>>();

function lookForIntruders(endpoint: string, n: number, ownKubelet?: number): void {
  const seen = intruders.get(n) ?? new Set<number>();
  intruders.set(n, seen);
  for (const pid of otherKubelets(endpoint)) {
    // The bench's own kubelet matches the same command line: it is no intruder.
    if (pid === ownKubelet) continue;
    if (!seen.has(pid))
      say(`density: another kubelet (pid ${pid}) uses the runtime: figures may be disturbed`);
    seen.add(pid);
  }
}

// ---- the floor -----------------------------------------------------------------------------------

interface FloorResult {
  latenciesMs: number[];
  allMs: number;
  stopAllMs: number;
  containerdCpuS: number;
  machineBusyS: number;
}

async function floorRun(
  conn: RuntimeConnection,
  endpoint: string,
  n: number,
  workDir: string,
  slots = 0,
): Promise<FloorResult> {
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

  const cdPid = containerdPid(endpoint);
  const cd0 = containerdCpuSeconds(cdPid);
  const busy0 = machineBusySeconds();
  // BENCH_FLOOR_SLOTS: a floor that starts its pods a few at a time, as the kubelet does (its
  // --max-parallel-pod-starts), to compare with the kubelet on equal terms.
  const limit = slots > 0 ? new Slots(slots) : undefined;
  const t0 = performance.now();
  const started = await Promise.all(
    prepared.map(async ({ sandbox, container }) => {
      const release = await limit?.acquire();
      try {
        const opts = { timeoutMs: CRI_TIMEOUT_MS };
        const sandboxId = await conn.runtime.runPodSandbox(sandbox, '', opts);
        const containerId = await conn.runtime.createContainer(sandboxId, container, sandbox, opts);
        await conn.runtime.startContainer(containerId, opts);
        return { sandboxId, containerId, doneMs: performance.now() - t0 };
      } finally {
        release?.();
      }
    }),
  );
  const allMs = performance.now() - t0;
  const containerdCpuS = containerdCpuSeconds(cdPid) - cd0;
  const machineBusyS = machineBusySeconds() - busy0;

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
  await waitForIdleContainerd(endpoint);
  return { latenciesMs: started.map((s) => s.doneMs), allMs, stopAllMs, containerdCpuS, machineBusyS };
}

/** floorRun `starts` times: latencies over all starts, the median start's totals, containerd's CPU per start. */
async function floorStarts(
  conn: RuntimeConnection,
  endpoint: string,
  n: number,
  starts: number,
  workDir: string,
  slots: number,
): Promise<FloorResult> {
  const results: FloorResult[] = [];
  for (let r = 0; r < starts; r++) results.push(await floorRun(conn, endpoint, n, workDir, slots));
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
    containerdCpuS: sum(results.map((r) => r.containerdCpuS)) / starts,
    machineBusyS: sum(results.map((r) => r.machineBusyS)) / starts,
  };
}

// ---- the kubelet ---------------------------------------------------------------------------------

interface StartResult {
  latenciesMs: number[];
  /** From the manifest's rename to the container's start as the runtime recorded it (no poll in it). */
  runtimeStartedMs: number[];
  allMs: number;
  cpuS: number;
  mainThreadCpuS: number;
  /** startCpuS by thread role (bench/thread-roles.ts). */
  threadCpuS: Record<ThreadRole, number>;
  peakRssBytes: number;
  containerdCpuS: number;
  machineBusyS: number;
  polls: number;
  pollTotalMs: number;
}

/** One kubelet's figures in one round (for N = 1: over that round's single-pod starts). */
interface KubeletResult {
  starts: number;
  latenciesMs: number[];
  runtimeStartedMs: number[];
  /** Median over the starts. */
  allMs: number;
  /** Mean per start. */
  startCpuS: number;
  /** Mean per start: the main thread's share of startCpuS. */
  startMainThreadCpuS: number;
  /** Mean per start: the whole machine's busy core-seconds. */
  startMachineBusyS: number;
  /** Highest over the starts. */
  startPeakRssBytes: number;
  containerdCpuS: number;
  meanPollMs: number;
  steadyCores: number;
  steadyRssBytes: number;
  /** The lowest sample: the RSS once the garbage of the start has been collected. */
  steadyMinRssBytes: number;
  steadyMs: number;
  /** Median over the starts. */
  stopAllMs: number;
  restarts: number;
  /** /pods polls made while starting the pods (mean per start). */
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
async function startPods(
  conn: RuntimeConnection,
  endpoint: string,
  kubelet: BenchKubelet,
  names: string[],
  pollMs: number,
  layout: ThreadLayout,
): Promise<StartResult> {
  const pid = kubelet.pid;
  if (!resetPeakRss(pid))
    say('density: cannot reset VmHWM (not root?): peak RSS is since the kubelet started');
  const cdPid = containerdPid(endpoint);
  const cd0 = containerdCpuSeconds(cdPid);
  const cpu0 = cpuSeconds(pid);
  const main0 = mainThreadCpuSeconds(pid);
  const threads0 = sampleThreads(pid);
  const busy0 = machineBusySeconds();
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
  const mainThreadCpuS = mainThreadCpuSeconds(pid) - main0;
  const threadCpuS = cpuByRole(pid, threads0, sampleThreads(pid), layout);
  const machineBusyS = machineBusySeconds() - busy0;
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
    mainThreadCpuS,
    threadCpuS,
    peakRssBytes: peakRss,
    containerdCpuS,
    machineBusyS,
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
async function stopPods(
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
 * One fresh kubelet for one N in one round. A single pod's latency hangs on where the PLEG's 1 s
 * relist falls, so N = 1 starts `starts` pods one after another (each started and deleted, at a
 * random phase); larger N start once. The steady window follows the last start.
 */
async function kubeletRun(
  conn: RuntimeConnection,
  n: number,
  starts: number,
  s: Settings,
  who: KubeletUnderTest,
  measureIdle: boolean,
): Promise<{ result: KubeletResult; idle?: Idle }> {
  const cgroupRoot = await BenchCgroupRoot.create(`/tskubelet-bench-${process.pid}-${who.role}`);
  const kubelet = new BenchKubelet({
    runtimeEndpoint: s.endpoint,
    nodeName: NODE_NAME,
    binary: who.binary,
    kind: who.kind,
    minor: who.minor,
    cgroupRoot: cgroupRoot.name,
    cgroupDriver: 'cgroupfs',
    extraArgs: who.extraArgs,
    nodeArgs: who.nodeArgs,
    env: who.env,
  });
  const label = `n=${n} ${who.role}`;
  const layout = threadLayout(who.nodeArgs ?? [], { ...process.env, ...who.env });
  let failed = true;
  let restarts = 0;
  try {
    await kubelet.start();
    const pid = kubelet.pid;
    // Start-up work (the first relist, housekeeping) settles before anything is measured.
    await sleep(3000);
    const idle = measureIdle ? await observe(pid, s.idleMs) : undefined;

    const results: StartResult[] = [];
    const stopsMs: number[] = [];
    const steadyMs = n >= 100 ? s.steadyLargeMs : s.steadyMs;
    let steady = { cores: NaN, rssBytes: NaN, minRssBytes: NaN };
    let pollCpuS = NaN;
    for (let r = 0; r < starts; r++) {
      const names = Array.from({ length: n }, (_, i) => `density-${r}-${i}`);
      // A random phase against the PLEG's 1 s relist: starts that kept in step with it would all
      // wait the same share of a relist period, and their spread would say nothing.
      if (n === 1) await sleep(Math.random() * 1000);
      results.push(await startPods(conn, s.endpoint, kubelet, names, s.pollMs, layout));
      phase(
        `${label}: start CPU ${results.at(-1)!.cpuS.toFixed(2)} s, by thread ${JSON.stringify(results.at(-1)!.threadCpuS)}`,
      );
      lookForIntruders(s.endpoint, n, pid);
      if (r === starts - 1) {
        phase(`${label}: steady window`);
        await sleep(s.settleMs);
        steady = await observe(pid, steadyMs);
        const pods = await kubelet.pods();
        restarts = sum(
          pods.flatMap((p) => (p.status?.containerStatuses ?? []).map((c) => c.restartCount ?? 0)),
        );
        lookForIntruders(s.endpoint, n, pid);
        pollCpuS = await pollCost(kubelet);
      }
      phase(`${label}: deleting the manifests`);
      stopsMs.push(await stopPods(conn, kubelet, names, s.pollMs));
      // Quiet between starts, so that one start's clean-up is not the next one's load.
      if (r < starts - 1) await sleep(500);
    }
    failed = false;
    return {
      idle,
      result: {
        starts,
        latenciesMs: results.flatMap((r) => r.latenciesMs),
        runtimeStartedMs: results.flatMap((r) => r.runtimeStartedMs),
        allMs: median(results.map((r) => r.allMs)),
        startCpuS: sum(results.map((r) => r.cpuS)) / starts,
        startMainThreadCpuS: sum(results.map((r) => r.mainThreadCpuS)) / starts,
        startMachineBusyS: sum(results.map((r) => r.machineBusyS)) / starts,
        startPeakRssBytes: Math.max(...results.map((r) => r.peakRssBytes)),
        containerdCpuS: sum(results.map((r) => r.containerdCpuS)) / starts,
        meanPollMs: sum(results.map((r) => r.pollTotalMs)) / sum(results.map((r) => r.polls)),
        steadyCores: steady.cores,
        steadyRssBytes: steady.rssBytes,
        steadyMinRssBytes: steady.minRssBytes,
        steadyMs,
        stopAllMs: median(stopsMs),
        restarts,
        polls: sum(results.map((r) => r.polls)) / starts,
        pollCpuS,
      },
    };
  } finally {
    // A failure, or a restart of a container that should have run on, is worth the kubelet's log.
    const keepLog = failed || restarts > 0;
    if (keepLog) say(`density: the kubelet's log is kept in ${kubelet.logFile}`);
    phase(`${label}: stopping the kubelet`);
    await kubelet.dispose(keepLog);
    phase(`${label}: removing the sandboxes`);
    await removeNamespace(conn, KUBELET_NAMESPACE);
    await cgroupRoot.destroy();
    await waitForIdleContainerd(s.endpoint);
  }
}

// ---- reporting -----------------------------------------------------------------------------------

/** Per size (0: no pods) and figure name, one value per round, in the order first recorded. */
class RoundFigures {
  private readonly values = new Map<string, { n: number; metric: string; values: number[] }>();

  add(n: number, figures: Record<string, number>): void {
    for (const [metric, value] of Object.entries(figures)) {
      const key = `${n}/${metric}`;
      const entry = this.values.get(key) ?? { n, metric, values: [] };
      this.values.set(key, entry);
      entry.values.push(value);
    }
  }

  entries(): { n: number; metric: string; values: number[] }[] {
    return [...this.values.values()];
  }
}

function floorFigures(floor: FloorResult): Record<string, number> {
  return {
    floor_p50_ms: percentile(floor.latenciesMs, 50),
    floor_p90_ms: percentile(floor.latenciesMs, 90),
    floor_p99_ms: percentile(floor.latenciesMs, 99),
    floor_all_ms: floor.allMs,
    floor_stop_all_ms: floor.stopAllMs,
    floor_containerd_cpu_s: floor.containerdCpuS,
    floor_machine_busy_core_s: floor.machineBusyS,
  };
}

/** A kubelet's own figures in one round (the ones the peer comparison divides). */
function kubeletFigures(k: KubeletResult): Record<string, number> {
  return {
    p50_ms: percentile(k.latenciesMs, 50),
    p90_ms: percentile(k.latenciesMs, 90),
    p99_ms: percentile(k.latenciesMs, 99),
    all_ms: k.allMs,
    runtime_started_p50_ms: percentile(k.runtimeStartedMs, 50),
    runtime_started_p99_ms: percentile(k.runtimeStartedMs, 99),
    start_cpu_s: k.startCpuS,
    start_cpu_s_less_polls: k.startCpuS - k.polls * k.pollCpuS,
    start_cpu_main_thread_s: k.startMainThreadCpuS,
    start_machine_busy_core_s: k.startMachineBusyS,
    start_peak_rss_mib: k.startPeakRssBytes / MIB,
    steady_cpu_cores: k.steadyCores,
    steady_rss_mib: k.steadyRssBytes / MIB,
    steady_rss_min_mib: k.steadyMinRssBytes / MIB,
    stop_all_ms: k.stopAllMs,
    containerd_start_cpu_s: k.containerdCpuS,
    mean_poll_ms: k.meanPollMs,
  };
}

/** A kubelet's figures over the floor's of the same round. */
function overheadFigures(k: Record<string, number>, floor: Record<string, number>): Record<string, number> {
  const over = (a: string, b: string) => (k[a] ?? NaN) / (floor[b] ?? NaN);
  return {
    overhead_p50_ratio: over('p50_ms', 'floor_p50_ms'),
    overhead_p90_ratio: over('p90_ms', 'floor_p90_ms'),
    overhead_p99_ratio: over('p99_ms', 'floor_p99_ms'),
    overhead_all_ratio: over('all_ms', 'floor_all_ms'),
    containerd_cpu_ratio: over('containerd_start_cpu_s', 'floor_containerd_cpu_s'),
  };
}

const prefixed = (prefix: string, figures: Record<string, number>) =>
  Object.fromEntries(Object.entries(figures).map(([m, v]) => [`${prefix}${m}`, v]));

/** tskubelet's figures over the peer's, per round. */
function versusPeer(ours: Record<string, number>, peer: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(ours).map(([m, v]) => [`vs_peer_${m}`, v / (peer[m] ?? NaN)]));
}

function figureNotes(s: Settings): Record<string, string> {
  const rounds = `median of ${s.rounds} round(s), min and max the lowest and highest round`;
  return {
    p50_ms:
      `manifest rename → first /pods poll showing the container running; polled every ${s.pollMs} ms, ` +
      `so up to ${s.pollMs} ms of each figure is the poll's (mean_poll_ms: what one took); ${rounds}` +
      (s.sizes.includes(1)
        ? `; N = 1: percentiles over each round's ${s.singleStarts} single-pod starts`
        : ''),
    all_ms: 'first manifest write → last pod seen running',
    runtime_started_p50_ms: "manifest rename → the container's start as CRI records it",
    start_cpu_s: "the kubelet's utime+stime from the first write to the last pod seen running",
    start_cpu_s_less_polls:
      "start_cpu_s less what the bench's /pods polls cost (50 polls measured after the steady window)",
    start_cpu_main_thread_s:
      "start_cpu_s's main thread (the JavaScript); the rest is V8's compiler and GC threads and libuv's pool",
    start_machine_busy_core_s:
      'busy core-seconds of the whole machine over the start (/proc/stat less idle, iowait and steal)',
    start_peak_rss_mib: 'VmHWM over the start (reset before it)',
    steady_cpu_cores: `with the N pod(s) running, from ${s.settleMs / 1000} s after the last was seen running, over ${s.steadyMs / 1000} s (${s.steadyLargeMs / 1000} s for N ≥ 100)`,
    steady_rss_mib: 'mean VmRSS over the steady window',
    steady_rss_min_mib: 'lowest VmRSS sample of the window (start garbage collected)',
    stop_all_ms: `manifests deleted → no container running (grace period ${GRACE_PERIOD_S} s; sleep ignores SIGTERM)`,
    containerd_start_cpu_s: "containerd's CPU seconds while the kubelet started the pods",
    restarts: 'container restarts seen during the steady windows, summed over the rounds (should be 0)',
    intruders: 'other kubelets used the runtime during this size: its figures are suspect',
    floor_p50_ms: `RunPodSandbox+CreateContainer+StartContainer over CRI, ${s.floorSlots > 0 ? `at most ${s.floorSlots} pods at a time (BENCH_FLOOR_SLOTS)` : 'all pods at once'}`,
    floor_stop_all_ms: `StopContainer(${GRACE_PERIOD_S} s)+StopPodSandbox, all at once`,
    floor_containerd_cpu_s: "containerd's CPU seconds while the floor started the pods",
    floor_machine_busy_core_s:
      'busy core-seconds of the whole machine while the floor started the pods (start_machine_busy_core_s)',
    overhead_p50_ratio: 'kubelet p50 / floor p50 of the same round; median over the rounds',
    containerd_cpu_ratio:
      "containerd's CPU while the kubelet started the pods / while the floor did, same round",
    idle_rss_mib: `mean VmRSS over ${s.idleMs / 1000} s, no pods, in each round`,
    idle_cpu_cores: `over ${s.idleMs / 1000} s, no pods`,
  };
}

function report(figures: RoundFigures, s: Settings): void {
  const notes = figureNotes(s);
  const peer = s.kubelets.find((k) => k.role === 'peer');
  if (peer) {
    emit({
      bench: BENCH,
      n: 0,
      metric: 'peer_rounds',
      value: s.rounds,
      note:
        `peer: ${peer.description}. peer_<figure> is its figure, vs_peer_<figure> tskubelet's over the ` +
        "peer's in the same round (median over the rounds): below 1 is tskubelet faster or lighter",
    });
  }
  for (const { n, metric, values } of figures.entries()) {
    const finite = values.filter((v) => Number.isFinite(v));
    const value = metric.endsWith('restarts') ? sum(finite) : median(finite);
    emit({
      bench: BENCH,
      n,
      metric,
      value,
      ...(values.length > 1 && finite.length > 0
        ? { min: Math.min(...finite), max: Math.max(...finite), rounds: values.length }
        : {}),
      note: notes[metric],
    });
  }
  for (const [n, pids] of intruders) {
    if (pids.size > 0)
      emit({ bench: BENCH, n, metric: 'intruders', value: pids.size, note: notes.intruders });
  }
}

function summary(n: number, who: string, k: Record<string, number>, floor: Record<string, number>): string {
  const ms = (m: string) => `${Math.round(k[m] ?? NaN)} ms`;
  return (
    `density n=${n} ${who}: p50 ${ms('p50_ms')}, p99 ${ms('p99_ms')}, all ${ms('all_ms')} ` +
    `(floor p50 ${Math.round(floor.floor_p50_ms ?? NaN)} ms, all ${Math.round(floor.floor_all_ms ?? NaN)} ms); ` +
    `start CPU ${(k.start_cpu_s ?? NaN).toFixed(2)} s, steady ${(k.steady_cpu_cores ?? NaN).toFixed(3)} cores, ` +
    `RSS ${(k.steady_rss_mib ?? NaN).toFixed(0)} MiB`
  );
}

async function main(): Promise<void> {
  const s = await settings();
  say(
    `density: sizes ${s.sizes.join(', ')}, ${s.rounds} round(s); steady window ${s.steadyMs / 1000} s ` +
      `(${s.steadyLargeMs / 1000} s for N ≥ 100); idle ${s.idleMs / 1000} s; /pods polled every ${s.pollMs} ms; ` +
      `floor ${s.floorSlots > 0 ? `${s.floorSlots} pods at a time` : 'all pods at once'}; ` +
      `runtime ${s.endpoint}`,
  );
  for (const k of s.kubelets) say(`density: ${k.role}: ${k.description}`);
  const conn = await connectRuntime(s.endpoint, {
    runtimeRequestTimeoutMs: CRI_TIMEOUT_MS,
    signal: AbortSignal.timeout(30_000),
  });
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'tskubelet-bench-floor-'));
  const figures = new RoundFigures();
  try {
    say(`density: runtime ${conn.version.runtimeName} ${conn.version.runtimeVersion}`);
    if (containerdPid(s.endpoint) === undefined)
      say(
        `density: no runtime-stack.sh containerd serves ${s.endpoint}: containerd's CPU figures stay empty`,
      );
    await waitForQuietRuntime(conn, s.endpoint, s.quietWaitMs);
    // Left over by a run that was killed.
    await removeNamespace(conn, KUBELET_NAMESPACE);
    await removeNamespace(conn, FLOOR_NAMESPACE);
    // A first sandbox pays for cold caches (snapshots, CNI plugin binaries): not part of any figure.
    await floorRun(conn, s.endpoint, 2, workDir);

    for (let round = 1; round <= s.rounds; round++) {
      // The peer goes first in even rounds, so that neither kubelet always runs after the other.
      const order = round % 2 === 1 ? s.kubelets : [...s.kubelets].reverse();
      for (const [i, n] of s.sizes.entries()) {
        await waitForQuietRuntime(conn, s.endpoint, s.quietWaitMs);
        const starts = n === 1 ? s.singleStarts : 1;
        phase(`round ${round}/${s.rounds} n=${n}: floor, ${starts} start(s)`);
        const floor = floorFigures(await floorStarts(conn, s.endpoint, n, starts, workDir, s.floorSlots));
        lookForIntruders(s.endpoint, n);
        const own: Record<string, Record<string, number>> = {};
        const idles: Record<string, Record<string, number>> = {};
        for (const who of order) {
          phase(`round ${round}/${s.rounds} n=${n}: ${who.role}, ${starts} start(s)`);
          const { result, idle } = await kubeletRun(conn, n, starts, s, who, i === 0);
          const mine = { ...kubeletFigures(result), restarts: result.restarts };
          own[who.role] = mine;
          if (idle) {
            idles[who.role] = { idle_rss_mib: idle.rssBytes / MIB, idle_cpu_cores: idle.cores };
            say(
              `density idle ${who.role}: RSS ${(idle.rssBytes / MIB).toFixed(1)} MiB, CPU ${idle.cores.toFixed(4)} cores`,
            );
          }
          say(summary(n, who.role, mine, floor));
        }
        phase(`round ${round}/${s.rounds} n=${n}: done`);
        const ours = own.tskubelet!;
        const theirs = own.peer;
        figures.add(n, ours);
        figures.add(n, floor);
        figures.add(n, overheadFigures(ours, floor));
        if (theirs) {
          figures.add(n, prefixed('peer_', theirs));
          figures.add(n, prefixed('peer_', overheadFigures(theirs, floor)));
          const { restarts: _ours, ...oursCompared } = ours;
          figures.add(
            n,
            versusPeer(
              { ...oursCompared, ...overheadFigures(ours, floor) },
              { ...theirs, ...overheadFigures(theirs, floor) },
            ),
          );
        }
        if (idles.tskubelet) {
          figures.add(0, idles.tskubelet);
          if (idles.peer) {
            figures.add(0, prefixed('peer_', idles.peer));
            figures.add(0, versusPeer(idles.tskubelet, idles.peer));
          }
        }
      }
    }
    report(figures, s);
    phase('finished');
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
