/**
 * Pod start density in cluster mode: pods created through a real kube-apiserver and bound
 * to the node (spec.nodeName), tskubelet as the node and, with BENCH_PEER_KUBELET, the upstream
 * kubelet (or another tskubelet) as the same node in alternating runs (A B, then B A, …). Run it through bench/cluster-density.sh
 * (npm run bench:cluster), which starts the control plane, the private containerd and the cgroup
 * root, and hands them over in BENCH_CLUSTER_* variables.
 *
 * Each run: a fresh kubelet process; the Node object and its Lease deleted before, so it registers
 * afresh; it is Ready, then after BENCH_SETTLE_S the N pods are created (BENCH_CREATE_PARALLEL at a
 * time) and a watch of the bench's own sees each Running; after the steady window all pods are
 * deleted at once and the watch sees each gone; the kubelet stops, and whatever it left in
 * containerd is removed over CRI before the next run. Only one kubelet runs at a time.
 * What the kubelet sent the API server comes from the API server's audit log (the node's user) and
 * its /metrics, per window: start (first create → all Running + settle), steady, delete (first
 * delete → all gone + settle). The CRI calls it made in the start window, by method, and its pod
 * worker's syncs, by update type, come from its own /metrics through the API server's node proxy
 * (bench/cluster-cri-calls.ts).
 *
 * Env: BENCH_PODS ("30,100"), BENCH_ROUNDS (3: runs per kubelet and size), BENCH_STEADY_S (30),
 * BENCH_SETTLE_S (5), BENCH_CREATE_PARALLEL (10), BENCH_AUTOMOUNT_TOKEN (1: the pods get the
 * service account token volume, as a cluster's pods do; 0: none), BENCH_READY_TIMEOUT_S (120),
 * BENCH_KUBELET_ARGS (extra tskubelet flags, space-separated), BENCH_NODE_ARGS (flags for node
 * itself under tskubelet, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), BENCH_PEER_KUBELET (the
 * upstream kubelet, or a tskubelet such as this checkout's bin/tskubelet for an A/B of our own),
 * BENCH_PEER_KIND (tskubelet | upstream: overrides what `--version` says), BENCH_PEER_KUBELET_ARGS
 * (its extra flags), BENCH_PEER_NODE_ARGS (node flags for a tskubelet peer, e.g. a V8 setting
 * against none), BENCH_PEER_NODE (the node binary that runs a tskubelet peer, e.g. another node
 * release against this one), BENCH_KUBELET_ENV and BENCH_PEER_ENV (NAME=VALUE pairs, space-separated, for
 * this checkout's kubelet's or the peer's environment alone, e.g. `BENCH_PEER_ENV=UV_USE_IO_URING=1`
 * for an A/B of a libuv setting on the same build), BENCH_TIMELINE (1: each pod's stages and the
 * kubelet's CPU by thread role, bench/cluster-timeline.ts and bench/thread-roles.ts),
 * BENCH_WINDOW_SIGNAL (1: SIGUSR2 to tskubelet as the pods' creation starts and again once all run,
 * for a preload such as bench/heap-sampler.ts or bench/perf-window.ts), BENCH_WARM_BATCH (1: a
 * second batch of as many pods on the same kubelet once the first is gone, its figures `warm_*`).
 * From the driver: BENCH_CLUSTER_WORK,
 * BENCH_CLUSTER_OUT, BENCH_CLUSTER_NODE_NAME, BENCH_CLUSTER_ADMIN_KUBECONFIG,
 * BENCH_CLUSTER_NODE_KUBECONFIG, BENCH_CLUSTER_AUDIT_LOG (may be empty), BENCH_CLUSTER_MOUNT_NS,
 * CONTAINER_RUNTIME_ENDPOINT.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { connectRuntime, type RuntimeConnection } from '../src/cri/connect-runtime.js';
import {
  ClusterApi,
  clusterBenchPod,
  PodWatch,
  type ProtobufWatchCounter,
  type WatchTally,
} from './cluster-api.js';
import { criCallsPerPod, criOperations, podSyncs, podSyncsPerPod } from './cluster-cri-calls.js';
import { ClusterKubelet, type Side } from './cluster-kubelet.js';
import { identifyKubelet, type KubeletKind } from './kubelet-launcher.js';
import { clusterNotes, clusterReport, type RunFigures } from './cluster-report.js';
import {
  addRows,
  addWire,
  AuditReader,
  otherWriters,
  parseMetrics,
  scaleRows,
  tally,
  totals,
  wireDiff,
  type AuditRecord,
  type MetricsSnapshot,
  type RoundTraffic,
  type WireTraffic,
} from './cluster-traffic.js';
import {
  cpuSeconds,
  liveDescendantsCpuSeconds,
  peakRssBytes,
  reapedChildrenCpuSeconds,
  resetPeakRss,
  rssBytes,
} from './proc-stats.js';
import { envNumber, envPairs, MIB, percentile, say, sleep, sum } from './report.js';
import { cpuByRole, sampleThreads, threadLayout } from './thread-roles.js';
import { removeNamespace, waitForIdleContainerd } from './runtime-sweep.js';
import { runtimeTimes, wallMs, writeTimeline, type PodTimes } from './cluster-timeline.js';

const NAMESPACE = 'cluster-density';
const BENCH_AGENT = 'tskubelet-cluster-bench';
const benchStartMs = performance.now();

function phase(message: string): void {
  say(`cluster-density [${((performance.now() - benchStartMs) / 1000).toFixed(1)} s] ${message}`);
}

const envWords = (env: Record<string, string>) =>
  Object.entries(env)
    .map(([k, v]) => ` ${k}=${v}`)
    .join('');
const splitArgs = (raw: string | undefined) => raw?.split(' ').filter(Boolean) ?? [];

function required(name: string): string {
  const v = process.env[name];
  if (!v)
    throw new Error(
      `${name} is not set: run the bench through bench/cluster-density.sh (npm run bench:cluster)`,
    );
  return v;
}

export interface ClusterSettings {
  sizes: number[];
  rounds: number;
  steadyMs: number;
  settleMs: number;
  createParallel: number;
  automountToken: boolean;
  readyTimeoutMs: number;
  sides: Side[];
  peerBinary?: string;
  /** The peer's kind and `--version`, from identifyKubelet. */
  peerKind?: KubeletKind;
  peerVersion?: string;
  kubeletArgs: string[];
  nodeArgs: string[];
  peerArgs: string[];
  peerNodeArgs: string[];
  /** BENCH_PEER_NODE: another node binary for a tskubelet peer (an A/B of the runtime on the same build). */
  peerNode?: string;
  kubeletEnv: Record<string, string>;
  peerEnv: Record<string, string>;
  work: string;
  out: string;
  nodeName: string;
  adminKubeconfig: string;
  nodeKubeconfig: string;
  auditLog?: string;
  mountNs?: string;
  /** The bench started the API server: it knows which other watches it holds (its own informers'). */
  ownControlPlane: boolean;
  endpoint: string;
  /** BENCH_TIMELINE=1: each pod's stages and the kubelet's CPU by thread (bench/cluster-timeline.ts). */
  timeline: boolean;
  /** BENCH_WINDOW_SIGNAL=1: SIGUSR2 to tskubelet at the start window's edges (bench/heap-sampler.ts). */
  windowSignal: boolean;
  /**
   * BENCH_WARM_BATCH=1: once the first batch is deleted and gone, the same kubelet starts a second
   * batch of as many pods (`warm_*` figures): what a node that has run pods before pays per start.
   */
  warmBatch: boolean;
}

async function settings(): Promise<ClusterSettings> {
  const sizes = (process.env.BENCH_PODS || '30,100').split(',').map((x) => Number(x.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error(`BENCH_PODS must be pod counts, got ${process.env.BENCH_PODS}`);
  // Absolute: the kubelets run under nsenter, which leaves them in / (bin/tskubelet would not be found).
  const peerBinary = process.env.BENCH_PEER_KUBELET
    ? path.resolve(process.env.BENCH_PEER_KUBELET)
    : undefined;
  const peer = peerBinary
    ? await identifyKubelet(peerBinary, process.env.BENCH_PEER_KIND || undefined)
    : undefined;
  const peerNodeArgs = splitArgs(process.env.BENCH_PEER_NODE_ARGS);
  if (peerNodeArgs.length > 0 && peer?.kind !== 'tskubelet')
    throw new Error('BENCH_PEER_NODE_ARGS is for a tskubelet peer (BENCH_PEER_KUBELET=bin/tskubelet)');
  return {
    sizes,
    rounds: Math.max(1, envNumber('BENCH_ROUNDS', 3)),
    steadyMs: envNumber('BENCH_STEADY_S', 30) * 1000,
    settleMs: envNumber('BENCH_SETTLE_S', 5) * 1000,
    createParallel: Math.max(1, envNumber('BENCH_CREATE_PARALLEL', 10)),
    automountToken: process.env.BENCH_AUTOMOUNT_TOKEN !== '0',
    readyTimeoutMs: envNumber('BENCH_READY_TIMEOUT_S', 120) * 1000,
    sides: peerBinary ? ['tskubelet', 'peer'] : ['tskubelet'],
    peerBinary,
    peerKind: peer?.kind,
    peerVersion: peer?.version,
    kubeletArgs: splitArgs(process.env.BENCH_KUBELET_ARGS),
    nodeArgs: splitArgs(process.env.BENCH_NODE_ARGS),
    peerArgs: splitArgs(process.env.BENCH_PEER_KUBELET_ARGS),
    peerNodeArgs,
    peerNode: process.env.BENCH_PEER_NODE || undefined,
    kubeletEnv: envPairs('BENCH_KUBELET_ENV'),
    peerEnv: envPairs('BENCH_PEER_ENV'),
    work: required('BENCH_CLUSTER_WORK'),
    out: required('BENCH_CLUSTER_OUT'),
    nodeName: required('BENCH_CLUSTER_NODE_NAME'),
    adminKubeconfig: required('BENCH_CLUSTER_ADMIN_KUBECONFIG'),
    nodeKubeconfig: required('BENCH_CLUSTER_NODE_KUBECONFIG'),
    auditLog: process.env.BENCH_CLUSTER_AUDIT_LOG || undefined,
    mountNs: process.env.BENCH_CLUSTER_MOUNT_NS || undefined,
    ownControlPlane: process.env.BENCH_CLUSTER_OWN_CONTROL_PLANE === 'true',
    endpoint: required('CONTAINER_RUNTIME_ENDPOINT'),
    timeline: process.env.BENCH_TIMELINE === '1',
    windowSignal: process.env.BENCH_WINDOW_SIGNAL === '1',
    warmBatch: process.env.BENCH_WARM_BATCH === '1',
  };
}

/**
 * A kubelet's CPU seconds: its own threads, the children it has waited for, and those it keeps
 * running (tskubelet's mount helper) with what they ran.
 */
function kubeletCpu(pid: number): { total: number; children: number } {
  const children = reapedChildrenCpuSeconds(pid) + liveDescendantsCpuSeconds(pid);
  return { total: cpuSeconds(pid) + children, children };
}

/** CPU (cores, children included) and mean RSS over windowMs, RSS sampled once a second. */
async function observe(pid: number, windowMs: number): Promise<{ cores: number; rssBytes: number }> {
  const cpu0 = kubeletCpu(pid).total;
  const t0 = performance.now();
  const rss: number[] = [];
  while (performance.now() - t0 < windowMs) {
    rss.push(rssBytes(pid));
    await sleep(Math.min(1000, windowMs - (performance.now() - t0)));
  }
  rss.push(rssBytes(pid));
  return {
    cores: (kubeletCpu(pid).total - cpu0) / ((performance.now() - t0) / 1000),
    rssBytes: sum(rss) / rss.length,
  };
}

async function waitUntil(
  what: string,
  timeoutMs: number,
  probe: () => Promise<boolean>,
  alive: () => Promise<void>,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    await alive();
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(200);
  }
}

/** The windows of one run, on the wall clock (the audit log's), and the metrics and watch tallies at their edges. */
interface Windows {
  kubeletStartMs: number;
  startMs: number;
  startEndMs: number;
  steadyEndMs: number;
  deleteMs: number;
  deleteEndMs: number;
  metrics: MetricsSnapshot[];
  tallies: Tallies[];
}

/**
 * What the bench's watches had received at a window's edge: its JSON pod watch, and its counting
 * protobuf watches of pods and nodes (only with a control plane of its own: they stand for the API
 * server's own informers, whose watches an existing cluster's controllers outnumber).
 */
interface Tallies {
  json: WatchTally;
  pbPods?: WatchTally;
  pbNodes?: WatchTally;
}

const minus = (a: WatchTally, b: WatchTally): WatchTally => ({
  events: a.events - b.events,
  bytes: a.bytes - b.bytes,
});

/**
 * The watch events the API server sent the kubelet in a window: all it sent, less what the bench's
 * watches got and, for pods and nodes, what the API server's own informers got (the same stream as
 * the bench's protobuf watch). Undefined without the protobuf watches: the kubelet's share is unknown.
 */
function kubeletWire(
  before: MetricsSnapshot,
  after: MetricsSnapshot,
  a: Tallies,
  b: Tallies,
): WireTraffic | undefined {
  if (!a.pbPods || !b.pbPods || !a.pbNodes || !b.pbNodes) return undefined;
  const wire = wireDiff(before, after);
  const take = (kind: string, ...tallies: WatchTally[]) => {
    const entry = (wire.watchEvents[kind] ??= { events: 0, bytes: 0 });
    for (const x of tallies) {
      entry.events -= x.events;
      entry.bytes -= x.bytes;
    }
  };
  const pbPods = minus(b.pbPods, a.pbPods);
  const pbNodes = minus(b.pbNodes, a.pbNodes);
  take('Pod', minus(b.json, a.json), pbPods, pbPods);
  take('Node', pbNodes, pbNodes);
  return wire;
}

function roundTraffic(
  records: AuditRecord[],
  s: ClusterSettings,
  n: number,
  w: Windows,
): RoundTraffic & { otherWrites: number } {
  const user = `system:node:${s.nodeName}`;
  const perPod = scaleRows(
    addRows(tally(records, user, w.startMs, w.startEndMs), tally(records, user, w.deleteMs, w.deleteEndMs)),
    1 / n,
  );
  const steadyPerMin = scaleRows(
    tally(records, user, w.startEndMs, w.steadyEndMs),
    60_000 / (w.steadyEndMs - w.startEndMs),
  );
  const [m0, m1, m2, m3] = w.metrics as [MetricsSnapshot, MetricsSnapshot, MetricsSnapshot, MetricsSnapshot];
  const [t0, t1, t2, t3] = w.tallies as [Tallies, Tallies, Tallies, Tallies];
  const bench = [minus(t1.json, t0.json), minus(t3.json, t2.json)] as const;
  const start = kubeletWire(m0, m1, t0, t1);
  const end = kubeletWire(m2, m3, t2, t3);
  const wire = start && end ? addWire(start, end) : { watchEvents: {} };
  const benchWatchPerPod = {
    events: (bench[0].events + bench[1].events) / n,
    bytes: (bench[0].bytes + bench[1].bytes) / n,
  };
  const wirePerPod: WireTraffic = {
    watchEvents: Object.fromEntries(
      Object.entries(wire.watchEvents).map(([k, v]) => [k, { events: v.events / n, bytes: v.bytes / n }]),
    ),
  };
  const others = otherWriters(records, user, BENCH_AGENT, w.startMs, w.deleteEndMs);
  if (others.length > 0)
    say(
      `cluster-density: ${others.length} write(s) by other clients during the run (${others
        .slice(0, 3)
        .map((r) => `${r.user} ${r.verb} ${r.resource}`)
        .join('; ')})`,
    );
  const startup = tally(records, user, w.kubeletStartMs, w.startMs - 1);
  return { perPod, steadyPerMin, startup, wirePerPod, benchWatchPerPod, otherWrites: others.length };
}

interface RunContext {
  s: ClusterSettings;
  api: ClusterApi;
  conn: RuntimeConnection;
  audit?: AuditReader;
}

/** The kubelet of the run under way, for the signal handler. */
let current: ClusterKubelet | undefined;

/**
 * Creates the pods (BENCH_CREATE_PARALLEL at a time) and waits until the bench's watch has seen each
 * Running: each pod's latency from its create returning, and when the last one ran.
 */
async function createUntilRunning(
  ctx: RunContext,
  watch: PodWatch,
  names: string[],
  alive: () => Promise<void>,
): Promise<{ createdAt: Map<string, number>; latencies: number[]; lastRunningAt: number }> {
  const { s, api } = ctx;
  const pods = names.map((name) => clusterBenchPod(name, NAMESPACE, s.nodeName, s.automountToken));
  const { createdAt } = await api.createPods(pods, s.createParallel);
  await watch.waitFor(watch.runningAt, names, 60_000 + names.length * 2000, 'pods Running', alive);
  const runningAt = names.map((x) => watch.runningAt.get(x)!);
  const latencies = names.map((x, i) => runningAt[i]! - createdAt.get(x)!);
  return { createdAt, latencies, lastRunningAt: Math.max(...runningAt) };
}

/** Deletes the pods and waits until the bench's watch has seen each gone: when the last one went. */
async function deleteUntilGone(
  ctx: RunContext,
  watch: PodWatch,
  names: string[],
  alive: () => Promise<void>,
): Promise<number> {
  await ctx.api.deletePods(NAMESPACE, names, ctx.s.createParallel);
  await watch.waitFor(watch.goneAt, names, 60_000 + names.length * 1000, 'pods gone', alive);
  return Math.max(...names.map((x) => watch.goneAt.get(x)!));
}

/**
 * A second batch on the kubelet that started the first (BENCH_WARM_BATCH): the same number of pods
 * under new names, created, Running, then deleted and gone; its start window measured as the
 * first's (CPU, peak RSS, latencies). Its API traffic is outside the windows the traffic tables count.
 */
async function warmBatch(
  ctx: RunContext,
  watch: PodWatch,
  pid: number,
  label: string,
  first: string[],
  alive: () => Promise<void>,
): Promise<Record<string, number>> {
  const names = first.map((x) => x.replace(/^cd-(.)/, 'cd-$1w'));
  resetPeakRss(pid);
  const cpu0 = kubeletCpu(pid);
  const tStart = performance.now();
  phase(`${label}: creating ${names.length} pods on the warm kubelet`);
  const { latencies, lastRunningAt } = await createUntilRunning(ctx, watch, names, alive);
  const cpu1 = kubeletCpu(pid);
  const peakRss = peakRssBytes(pid);
  const figures = {
    warm_p50_ms: percentile(latencies, 50),
    warm_all_running_ms: lastRunningAt - tStart,
    warm_start_cpu_s: cpu1.total - cpu0.total,
    warm_start_peak_rss_mib: peakRss / MIB,
  };
  say(
    `cluster-density ${label} (warm): p50 ${Math.round(figures.warm_p50_ms)} ms, all running ` +
      `${Math.round(figures.warm_all_running_ms)} ms, start CPU ${figures.warm_start_cpu_s.toFixed(2)} s`,
  );
  await sleep(ctx.s.settleMs);
  phase(`${label}: deleting the warm batch`);
  await deleteUntilGone(ctx, watch, names, alive);
  return figures;
}

/** One fresh kubelet of side, n pods through their life. */
async function measureRun(ctx: RunContext, side: Side, n: number, round: number): Promise<RunFigures> {
  const { s, api, conn } = ctx;
  const kubelet = new ClusterKubelet({
    side,
    binary: s.peerBinary,
    peerKind: s.peerKind,
    configFile: path.join(s.work, side, 'config.yaml'),
    kubeconfig: s.nodeKubeconfig,
    nodeName: s.nodeName,
    runtimeEndpoint: s.endpoint,
    dir: path.join(s.work, side, `run-${round}-${n}`),
    mountNs: s.mountNs,
    pidFile: path.join(s.work, 'kubelet.pid'),
    extraArgs: side === 'tskubelet' ? s.kubeletArgs : s.peerArgs,
    nodeArgs: side === 'tskubelet' ? s.nodeArgs : s.peerNodeArgs,
    node: side === 'peer' ? s.peerNode : undefined,
    env: side === 'tskubelet' ? s.kubeletEnv : s.peerEnv,
  });
  // Threads by role for a node process only: the upstream kubelet's are Go's.
  const layout =
    side === 'tskubelet' || s.peerKind === 'tskubelet'
      ? threadLayout(side === 'tskubelet' ? s.nodeArgs : s.peerNodeArgs, {
          ...process.env,
          ...(side === 'tskubelet' ? s.kubeletEnv : s.peerEnv),
        })
      : undefined;
  const label = `round ${round} n=${n} ${side}`;
  const names = Array.from({ length: n }, (_, i) => `cd-${side === 'tskubelet' ? 't' : 'p'}${round}-${i}`);
  const alive = async () => {
    if (!kubelet.isRunning()) throw new Error(`the kubelet exited: ${await kubelet.tail()}`);
  };
  const metrics = async () => parseMetrics(await api.metricsText());
  const kubeletMetrics = async () => {
    const text = await api.metricsText(`/api/v1/nodes/${s.nodeName}/proxy/metrics`);
    return { cri: criOperations(text), syncs: podSyncs(text) };
  };
  let failed = true;
  let watch: PodWatch | undefined;
  let counters: ProtobufWatchCounter[] | undefined;
  let figures: Record<string, number> = {};
  let windows: Windows | undefined;
  let threadsDelta: Record<string, number> = {};
  let runtime: Map<string, PodTimes> | undefined;
  let createdAtWall = new Map<string, number>();
  let runningAtWall = new Map<string, number>();
  try {
    await api.forgetNode(s.nodeName);
    phase(`${label}: starting the kubelet`);
    const t0 = performance.now();
    const kubeletStartMs = Date.now();
    current = kubelet;
    await kubelet.start();
    const pid = kubelet.pid;
    await waitUntil(`node ${s.nodeName} Ready`, s.readyTimeoutMs, () => api.nodeReady(s.nodeName), alive);
    const readyMs = performance.now() - t0;
    const readyCpuS = kubeletCpu(pid).total;
    await sleep(s.settleMs);

    watch = new PodWatch(api, NAMESPACE);
    await watch.open();
    if (s.ownControlPlane) {
      counters = [api.protobufCounter('pods'), api.protobufCounter('nodes')];
      for (const c of counters) await c.open(api);
    }
    const snap = (): Tallies => ({
      json: { ...watch!.tally },
      ...(counters ? { pbPods: counters[0]!.snapshot(), pbNodes: counters[1]!.snapshot() } : {}),
    });
    const m0 = await metrics();
    const own0 = await kubeletMetrics();
    const tally0 = snap();
    resetPeakRss(pid);
    const cpu0 = kubeletCpu(pid);
    const threads0 = s.timeline ? sampleThreads(pid) : undefined;
    const startMs = Date.now();
    const tStart = performance.now();
    if (s.windowSignal && side === 'tskubelet') process.kill(pid, 'SIGUSR2');
    phase(`${label}: creating ${n} pods`);
    const { createdAt, latencies, lastRunningAt } = await createUntilRunning(ctx, watch, names, alive);
    const cpu1 = kubeletCpu(pid);
    if (s.windowSignal && side === 'tskubelet') process.kill(pid, 'SIGUSR2');
    if (threads0) threadsDelta = cpuByRole(pid, threads0, sampleThreads(pid), layout);
    if (s.timeline) {
      runtime = await runtimeTimes(conn, NAMESPACE);
      createdAtWall = new Map([...createdAt].map(([k, v]) => [k, wallMs(v)]));
      runningAtWall = new Map([...watch.runningAt].map(([k, v]) => [k, wallMs(v)]));
    }
    const peakRss = peakRssBytes(pid);
    const allRunningMs = lastRunningAt - tStart;
    await sleep(s.settleMs);
    const startEndMs = Date.now();
    const m1 = await metrics();
    const own1 = await kubeletMetrics();
    const tally1 = snap();

    phase(`${label}: steady window`);
    const steady = await observe(pid, s.steadyMs);
    const steadyEndMs = Date.now();
    const restarts = sum(names.map((x) => watch!.restarts.get(x) ?? 0));
    const m2 = await metrics();
    const tally2 = snap();

    phase(`${label}: deleting the pods`);
    const deleteMs = Date.now();
    const tDelete = performance.now();
    const deleteAllMs = (await deleteUntilGone(ctx, watch, names, alive)) - tDelete;
    await sleep(s.settleMs);
    const deleteEndMs = Date.now();
    const m3 = await metrics();
    const tally3 = snap();
    const warm = s.warmBatch ? await warmBatch(ctx, watch, pid, label, names, alive) : {};
    windows = {
      kubeletStartMs,
      startMs,
      startEndMs,
      steadyEndMs,
      deleteMs,
      deleteEndMs,
      metrics: [m0, m1, m2, m3],
      tallies: [tally0, tally1, tally2, tally3],
    };
    figures = {
      p50_ms: percentile(latencies, 50),
      p90_ms: percentile(latencies, 90),
      p99_ms: percentile(latencies, 99),
      all_running_ms: allRunningMs,
      start_cpu_s: cpu1.total - cpu0.total,
      start_cpu_children_s: cpu1.children - cpu0.children,
      start_peak_rss_mib: peakRss / MIB,
      steady_rss_mib: steady.rssBytes / MIB,
      steady_cpu_cores: steady.cores,
      delete_ms: deleteAllMs,
      ready_ms: readyMs,
      ready_cpu_s: readyCpuS,
      restarts,
      // The start window's CRI calls by method and pod syncs by update type (the kubelet's own
      // metrics, which both kinds keep).
      ...criCallsPerPod(own0.cri, own1.cri, n),
      ...podSyncsPerPod(own0.syncs, own1.syncs, n),
      ...warm,
    };
    say(
      `cluster-density ${label}: p50 ${Math.round(figures.p50_ms!)} ms, all running ${Math.round(allRunningMs)} ms, ` +
        `start CPU ${figures.start_cpu_s!.toFixed(2)} s, steady ${steady.cores.toFixed(3)} cores, RSS ${(steady.rssBytes / MIB).toFixed(0)} MiB, ` +
        `delete ${Math.round(deleteAllMs)} ms`,
    );
    failed = false;
  } finally {
    await watch?.close().catch(() => undefined);
    for (const c of counters ?? []) c.close();
    phase(`${label}: stopping the kubelet`);
    await kubelet.stop();
    current = undefined;
    if (failed) say(`cluster-density: the kubelet's log is ${kubelet.logFile}`);
    await api
      .forgetNode(s.nodeName)
      .catch((err: unknown) => say(`cluster-density: ${(err as Error).message}`));
    // The next run starts from an empty runtime: no sandbox or container of this one left.
    await removeNamespace(conn, NAMESPACE);
    await kubelet.removeRootDir();
    await waitForIdleContainerd(s.endpoint);
  }
  if (runtime && windows)
    await writeTimeline({
      label,
      out: s.out,
      names,
      createdAtWallMs: createdAtWall,
      runningAtWallMs: runningAtWall,
      runtime,
      auditLog: s.auditLog,
      user: `system:node:${s.nodeName}`,
      namespace: NAMESPACE,
      windowMs: [windows.startMs, windows.startEndMs],
      kubeletLog: kubelet.logFile,
      threads: threadsDelta,
    });
  let traffic: RoundTraffic | undefined;
  if (ctx.audit && windows) {
    const records = await ctx.audit.readNew();
    const t = roundTraffic(records, s, n, windows);
    traffic = t;
    const all = totals(t.perPod);
    const watchPod = t.wirePerPod.watchEvents;
    figures = {
      ...figures,
      api_requests_per_pod: all.requests,
      api_sent_json_bytes_per_pod: all.requestBytes,
      api_received_json_bytes_per_pod: all.responseBytes,
      // Pods and nodes: the kinds that change in the windows (the rest is the control plane's stir).
      watch_events_per_pod: s.ownControlPlane
        ? (watchPod.Pod?.events ?? 0) + (watchPod.Node?.events ?? 0)
        : NaN,
      watch_event_bytes_per_pod: s.ownControlPlane
        ? (watchPod.Pod?.bytes ?? 0) + (watchPod.Node?.bytes ?? 0)
        : NaN,
      steady_api_requests_per_min: totals(t.steadyPerMin).requests,
      other_writes: t.otherWrites,
    };
  }
  return { side, n, round, figures, traffic };
}

async function main(): Promise<void> {
  const s = await settings();
  phase(
    `sizes ${s.sizes.join(', ')}; ${s.rounds} round(s) of ${s.sides.join(' and ')}${s.peerBinary ? ` (${s.peerKind} ${s.peerBinary}${s.peerNode ? ` under ${s.peerNode}` : ''}${s.peerNodeArgs.length ? ` with node ${s.peerNodeArgs.join(' ')}` : ''}${envWords(s.peerEnv)})` : ''}${Object.keys(s.kubeletEnv).length ? `; tskubelet${envWords(s.kubeletEnv)}` : ''}; steady ${s.steadyMs / 1000} s; ` +
      `settle ${s.settleMs / 1000} s; ${s.createParallel} creates at a time; token volume ${s.automountToken ? 'yes' : 'no'}; ` +
      `audit log ${s.auditLog ?? 'none: no traffic figures'}`,
  );
  const api = await ClusterApi.connect(s.adminKubeconfig);
  const conn = await connectRuntime(s.endpoint, {
    runtimeRequestTimeoutMs: 120_000,
    signal: AbortSignal.timeout(30_000),
  });
  const onSignal = () => {
    current?.kill();
    process.exit(130);
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const ctx: RunContext = { s, api, conn, audit: s.auditLog ? new AuditReader(s.auditLog) : undefined };
  const runs: RunFigures[] = [];
  try {
    await api.prepareNamespace(NAMESPACE);
    const left = await api.podNames(NAMESPACE);
    if (left.length > 0)
      throw new Error(
        `namespace ${NAMESPACE} has pods already (${left.slice(0, 3).join(', ')}): delete them first`,
      );
    await removeNamespace(conn, NAMESPACE);
    // What happened before the first run (the control plane's start) is no run's.
    await ctx.audit?.readNew();
    for (let round = 1; round <= s.rounds; round++) {
      for (const n of s.sizes) {
        // The peer goes first in even rounds: neither kubelet always runs on the machine the other just left.
        const order = round % 2 === 0 ? [...s.sides].reverse() : s.sides;
        for (const side of order) runs.push(await measureRun(ctx, side, n, round));
      }
    }
    const { figures, results, traffic } = clusterReport(runs, s, clusterNotes(s));
    for (const f of figures) process.stdout.write(`${JSON.stringify(f)}\n`);
    await writeFile(path.join(s.out, 'results.json'), JSON.stringify(results, null, 2));
    await writeFile(path.join(s.out, 'traffic.md'), traffic);
    phase('finished');
  } finally {
    conn.close();
    api.close();
  }
}

main().catch((err: unknown) => {
  say(`cluster-density bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  current?.kill();
  process.exit(1);
});
