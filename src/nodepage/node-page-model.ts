/**
 * What the node page shows, as plain JSON views built from the kubelet's own state: the node, each
 * pod with its containers, back-offs and probes, the events and the image pulls. Built on the
 * server, so the browser only draws, and times are absolute (ms since the epoch) so a view changes
 * only when the state does: ages and back-off countdowns tick in the browser.
 */
import type { Container, ContainerState, ContainerStatus, Pod } from '../api/core-v1.js';
import type { Node } from '../api/node.js';
import { podDisplay } from '../api/pod-display.js';
import { CONFIG_SOURCE_ANNOTATION } from '../api/pod-source.js';
import type { CoreEvent } from '../events/event-types.js';
import type { EventStore } from '../events/event-store.js';
import type { Summary } from '../stats/summary-types.js';
import type { PullsView } from '../images/pull-progress.js';
import { compareStrings } from '../lib/compare.js';

export type ProbeKind = 'liveness' | 'readiness' | 'startup';

/** What the page reads from the kubelet; the wiring (src/cmd) fills it from the real parts. */
export interface NodePageSource {
  nodeName: string;
  kubeletVersion: string;
  runtime: { name: string; version: string };
  /** When this kubelet started (ms since the epoch). */
  startedAtMs: number;
  now(): number;
  /** The pods this kubelet manages, with their latest status. */
  pods(): Pod[];
  /** The node as this kubelet would register it (capacity, nodeInfo) or the API's copy. */
  node(): Node | undefined;
  pleg(): { healthy: boolean; message?: string };
  pressure(): { memory: boolean; disk: boolean; pid: boolean };
  /** The stats summary (the same provider as /stats/summary); read at most every few seconds. */
  summary?(signal?: AbortSignal): Promise<Summary>;
  /** The prober's state for one probe of a container, when it has a worker for it. */
  probe(
    podUid: string,
    containerName: string,
    kind: ProbeKind,
  ): { lastResult?: string; resultRun: number } | undefined;
  /** The crash-loop back-off delay in force for a container (0 when none). */
  backoffDelayMs(pod: Pod, container: Container): number;
  events: EventStore;
  pulls?: PullsView;
}

export interface ProbeView {
  kind: ProbeKind;
  lastResult?: string;
  /** Failures in a row (0 when the last result was not a failure). */
  failures: number;
}

export interface ContainerView {
  name: string;
  kind: 'init' | 'sidecar' | 'app';
  image: string;
  state: 'Running' | 'Waiting' | 'Terminated' | 'Unknown';
  reason?: string;
  message?: string;
  /** Running since, or terminated at (ms). */
  sinceMs?: number;
  ready: boolean;
  restartCount: number;
  lastTermination?: { exitCode: number; reason?: string; finishedAtMs?: number; message?: string };
  /** While the container waits out its crash-loop back-off: when it may start again (ms). */
  backoffUntilMs?: number;
  probes: ProbeView[];
}

export interface PodView {
  uid: string;
  namespace: string;
  name: string;
  phase: string;
  /** kubectl's STATUS column. */
  status: string;
  /** kubectl's READY column. */
  ready: string;
  restarts: number;
  lastRestartMs?: number;
  backoffUntilMs?: number;
  ip?: string;
  createdMs?: number;
  source: string;
  containers: ContainerView[];
}

export interface NodeView {
  name: string;
  kubeletVersion: string;
  runtime: string;
  os?: string;
  kernel?: string;
  arch?: string;
  startedAtMs: number;
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  usage?: {
    cpuNanoCores?: number;
    memoryWorkingSetBytes?: number;
    fsUsedBytes?: number;
    fsCapacityBytes?: number;
    imageFsUsedBytes?: number;
    atMs: number;
  };
  pressure: { memory: boolean; disk: boolean; pid: boolean };
  pleg: { healthy: boolean; message?: string };
}

export interface PullInFlightView {
  image: string;
  bytesDone: number;
  bytesTotal: number;
  startedAt: number;
}

export interface PullDoneView {
  image: string;
  bytes: number;
  durationMs: number;
  at: number;
}

export interface PullsSnapshot {
  available: boolean;
  inFlight: PullInFlightView[];
  recent: PullDoneView[];
}

export interface NodePageSnapshot {
  node: NodeView;
  pods: PodView[];
  events: CoreEvent[];
  pulls: PullsSnapshot;
}

function stateOf(
  s: ContainerState | undefined,
): Pick<ContainerView, 'state' | 'reason' | 'message' | 'sinceMs'> {
  if (s?.running) return { state: 'Running', ...timeField(s.running.startedAt) };
  if (s?.terminated)
    return {
      state: 'Terminated',
      ...(s.terminated.reason ? { reason: s.terminated.reason } : {}),
      ...(s.terminated.message ? { message: s.terminated.message } : {}),
      ...timeField(s.terminated.finishedAt),
    };
  if (s?.waiting)
    return {
      state: 'Waiting',
      ...(s.waiting.reason ? { reason: s.waiting.reason } : {}),
      ...(s.waiting.message ? { message: s.waiting.message } : {}),
    };
  return { state: 'Unknown' };
}

function timeField(at: string | undefined): { sinceMs?: number } {
  const t = at ? Date.parse(at) : NaN;
  return Number.isNaN(t) ? {} : { sinceMs: t };
}

const PROBE_KINDS: readonly ProbeKind[] = ['startup', 'liveness', 'readiness'];
const PROBE_FIELD = {
  startup: 'startupProbe',
  liveness: 'livenessProbe',
  readiness: 'readinessProbe',
} as const;

function containerView(
  src: NodePageSource,
  pod: Pod,
  spec: Container,
  kind: ContainerView['kind'],
  cs: ContainerStatus | undefined,
  nowMs: number,
): ContainerView {
  const uid = pod.metadata.uid ?? '';
  const probes: ProbeView[] = [];
  for (const k of PROBE_KINDS) {
    if (!(spec as unknown as Record<string, unknown>)[PROBE_FIELD[k]]) continue;
    const st = src.probe(uid, spec.name, k);
    probes.push({
      kind: k,
      ...(st?.lastResult ? { lastResult: st.lastResult } : {}),
      failures: st?.lastResult === 'Failure' ? st.resultRun : 0,
    });
  }
  const last = cs?.lastState?.terminated;
  const view: ContainerView = {
    name: spec.name,
    kind,
    image: spec.image ?? '',
    ...stateOf(cs?.state),
    ready: cs?.ready ?? false,
    restartCount: cs?.restartCount ?? 0,
    probes,
  };
  if (last) {
    const finished = last.finishedAt ? Date.parse(last.finishedAt) : NaN;
    view.lastTermination = {
      exitCode: last.exitCode,
      ...(last.reason ? { reason: last.reason } : {}),
      ...(last.message ? { message: last.message } : {}),
      ...(Number.isNaN(finished) ? {} : { finishedAtMs: finished }),
    };
  }
  // Back-off is measured from when the newest run exited (upstream's isInBackOff).
  if (cs?.state?.waiting?.reason === 'CrashLoopBackOff') {
    const exited = cs.state.waiting && last?.finishedAt ? Date.parse(last.finishedAt) : NaN;
    const delayMs = src.backoffDelayMs(pod, spec);
    if (!Number.isNaN(exited) && delayMs > 0 && exited + delayMs > nowMs)
      view.backoffUntilMs = exited + delayMs;
  }
  return view;
}

export function podView(src: NodePageSource, pod: Pod, nowMs: number): PodView {
  const status = pod.status ?? {};
  const find = (list: ContainerStatus[] | undefined, name: string) => list?.find((c) => c.name === name);
  const containers: ContainerView[] = [
    ...(pod.spec.initContainers ?? []).map((c) =>
      containerView(
        src,
        pod,
        c,
        c.restartPolicy === 'Always' ? 'sidecar' : 'init',
        find(status.initContainerStatuses, c.name),
        nowMs,
      ),
    ),
    ...pod.spec.containers.map((c) =>
      containerView(src, pod, c, 'app', find(status.containerStatuses, c.name), nowMs),
    ),
  ];
  const display = podDisplay(pod);
  // Static pods have no API object, so no creationTimestamp: their age runs from when the kubelet took them in.
  const createdAt = pod.metadata.creationTimestamp ?? status.startTime;
  const created = createdAt ? Date.parse(createdAt) : NaN;
  const backoffs = containers.map((c) => c.backoffUntilMs).filter((t): t is number => t !== undefined);
  return {
    uid: pod.metadata.uid ?? '',
    namespace: pod.metadata.namespace ?? '',
    name: pod.metadata.name ?? '',
    phase: status.phase ?? 'Pending',
    status: display.status,
    ready: display.ready,
    restarts: display.restarts,
    ...(display.lastRestartMs !== undefined ? { lastRestartMs: display.lastRestartMs } : {}),
    ...(backoffs.length > 0 ? { backoffUntilMs: Math.max(...backoffs) } : {}),
    ...(status.podIP ? { ip: status.podIP } : {}),
    ...(Number.isNaN(created) ? {} : { createdMs: created }),
    source: pod.metadata.annotations?.[CONFIG_SOURCE_ANNOTATION] ?? 'api',
    containers,
  };
}

export function nodeView(src: NodePageSource, usage: NodeView['usage']): NodeView {
  const node = src.node();
  const info = node?.status?.nodeInfo;
  return {
    name: src.nodeName,
    kubeletVersion: src.kubeletVersion,
    runtime: `${src.runtime.name}://${src.runtime.version}`,
    ...(info?.osImage ? { os: info.osImage } : {}),
    ...(info?.kernelVersion ? { kernel: info.kernelVersion } : {}),
    ...(info?.architecture ? { arch: info.architecture } : {}),
    startedAtMs: src.startedAtMs,
    capacity: { ...(node?.status?.capacity ?? {}) },
    allocatable: { ...(node?.status?.allocatable ?? {}) },
    ...(usage ? { usage } : {}),
    pressure: src.pressure(),
    pleg: src.pleg(),
  };
}

/** The node's usage from a stats summary, in the units the page prints. */
export function usageFromSummary(summary: Summary, atMs: number): NonNullable<NodeView['usage']> {
  const n = summary.node;
  const usage: NonNullable<NodeView['usage']> = { atMs };
  if (n.cpu?.usageNanoCores !== undefined) usage.cpuNanoCores = n.cpu.usageNanoCores;
  if (n.memory?.workingSetBytes !== undefined) usage.memoryWorkingSetBytes = n.memory.workingSetBytes;
  if (n.fs?.usedBytes !== undefined) usage.fsUsedBytes = n.fs.usedBytes;
  if (n.fs?.capacityBytes !== undefined) usage.fsCapacityBytes = n.fs.capacityBytes;
  if (n.runtime?.imageFs?.usedBytes !== undefined) usage.imageFsUsedBytes = n.runtime.imageFs.usedBytes;
  return usage;
}

export const RECENT_EVENTS_ON_PAGE = 200;

export function pullsSnapshot(pulls: PullsView | undefined): PullsSnapshot {
  if (!pulls) return { available: false, inFlight: [], recent: [] };
  return { available: true, inFlight: pulls.inFlight(), recent: pulls.recent() };
}

/** Pods in a stable order: namespace, then name. */
export function sortPods(pods: Pod[]): Pod[] {
  return [...pods].sort(
    (a, b) =>
      compareStrings(a.metadata.namespace ?? '', b.metadata.namespace ?? '') ||
      compareStrings(a.metadata.name ?? '', b.metadata.name ?? ''),
  );
}
