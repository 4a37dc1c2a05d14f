/**
 * The eviction manager's arithmetic, as upstream's helpers.go: signal observations from a summary,
 * which thresholds are met, the node conditions they raise, the order pods are evicted in, and the
 * messages an evicted pod carries.
 */
import type { Pod, Volume } from '../api/core-v1.js';
import { podRequests } from '../api/pod-resources.js';
import {
  approximateValue,
  formatQuantity,
  parseQuantity,
  quantityOf,
  valueOf,
  type ResourceQuantity,
} from '../api/quantity.js';
import type { FsStats, PodStats, Summary } from '../stats/summary-types.js';
// eslint-disable-next-line @typescript-eslint/no-restricted-imports -- one predicate shared with the stats analyzer
import { isLocalEphemeralVolume } from '../stats/fs-resource-analyzer.js';
import {
  formatThresholdQuantity,
  getThresholdQuantity,
  SIGNAL_TO_NODE_CONDITION,
  SIGNAL_TO_RESOURCE,
  thresholdKey,
  type NodeConditionType,
  type Signal,
  type Threshold,
} from './threshold.js';

export const EVICTED_REASON = 'Evicted';

export interface SignalObservation {
  available: number;
  capacity: number;
  timeMs: number;
}

export type SignalObservations = Map<Signal, SignalObservation>;

export type StatsFunc = (pod: Pod) => PodStats | undefined;

/** Upstream makeSignalObservations. */
export function makeSignalObservations(summary: Summary): {
  observations: SignalObservations;
  statsFunc: StatsFunc;
} {
  const byUid = new Map(summary.pods.map((p) => [p.podRef.uid, p]));
  const statsFunc: StatsFunc = (pod) => byUid.get(pod.metadata.uid ?? '');
  const o: SignalObservations = new Map();
  const mem = summary.node.memory;
  if (mem?.availableBytes !== undefined && mem.workingSetBytes !== undefined)
    o.set('memory.available', {
      available: mem.availableBytes,
      capacity: mem.availableBytes + mem.workingSetBytes,
      timeMs: mem.time,
    });
  const podsMem = summary.node.systemContainers?.find((c) => c.name === 'pods')?.memory;
  if (podsMem?.availableBytes !== undefined && podsMem.workingSetBytes !== undefined)
    o.set('allocatableMemory.available', {
      available: podsMem.availableBytes,
      capacity: podsMem.availableBytes + podsMem.workingSetBytes,
      timeMs: podsMem.time,
    });
  const fsSignals = (fs: FsStats | undefined, bytes: Signal, inodes: Signal) => {
    if (!fs) return;
    if (fs.availableBytes !== undefined && fs.capacityBytes !== undefined)
      o.set(bytes, { available: fs.availableBytes, capacity: fs.capacityBytes, timeMs: fs.time });
    if (fs.inodesFree !== undefined && fs.inodes !== undefined)
      o.set(inodes, { available: fs.inodesFree, capacity: fs.inodes, timeMs: fs.time });
  };
  fsSignals(summary.node.fs, 'nodefs.available', 'nodefs.inodesFree');
  fsSignals(summary.node.runtime?.imageFs, 'imagefs.available', 'imagefs.inodesFree');
  fsSignals(summary.node.runtime?.containerFs, 'containerfs.available', 'containerfs.inodesFree');
  const rl = summary.node.rlimit;
  if (rl?.maxpid !== undefined && rl.curproc !== undefined)
    o.set('pid.available', { available: rl.maxpid - rl.curproc, capacity: rl.maxpid, timeMs: rl.time });
  return { observations: o, statsFunc };
}

/** Upstream thresholdsMet: with enforceMinReclaim a threshold holds until available exceeds value + minReclaim. */
export function thresholdsMet(
  thresholds: readonly Threshold[],
  observations: SignalObservations,
  enforceMinReclaim: boolean,
): Threshold[] {
  return thresholds.filter((t) => {
    const observed = observations.get(t.signal);
    if (!observed) return false;
    let quantity = getThresholdQuantity(t.value, observed.capacity);
    if (enforceMinReclaim && t.minReclaim) quantity += getThresholdQuantity(t.minReclaim, observed.capacity);
    return quantity > observed.available;
  });
}

export function mergeThresholds(a: readonly Threshold[], b: readonly Threshold[]): Threshold[] {
  const out = [...a];
  const keys = new Set(a.map(thresholdKey));
  for (const t of b) if (!keys.has(thresholdKey(t))) out.push(t);
  return out;
}

export function nodeConditions(thresholds: readonly Threshold[]): NodeConditionType[] {
  const out: NodeConditionType[] = [];
  for (const t of thresholds) {
    const c = SIGNAL_TO_NODE_CONDITION[t.signal];
    if (!out.includes(c)) out.push(c);
  }
  return out;
}

/** Upstream byEvictionPriority: memory first, thresholds without a resource last. */
export function sortByEvictionPriority(thresholds: Threshold[]): Threshold[] {
  const isMemory = (t: Threshold) =>
    t.signal === 'memory.available' || t.signal === 'allocatableMemory.available';
  return [...thresholds].sort((a, b) => Number(isMemory(b)) - Number(isMemory(a)));
}

// ---- ranking -------------------------------------------------------------------------------------

type CmpFunc = (p1: Pod, p2: Pod) => number;

/** true before false. */
function cmpBool(a: boolean, b: boolean): number {
  return a === b ? 0 : a ? -1 : 1;
}

function toNumber(q: ResourceQuantity | undefined): number {
  return q ? approximateValue(q) : 0;
}

function podRequest(pod: Pod, resource: string): number {
  return toNumber(podRequests(pod).get(resource));
}

function orderedBy(...cmps: CmpFunc[]): (pods: Pod[]) => void {
  return (pods) =>
    pods.sort((p1, p2) => {
      for (const c of cmps) {
        const r = c(p1, p2);
        if (r !== 0) return r;
      }
      return 0;
    });
}

/** Lower priority first. */
function priority(p1: Pod, p2: Pod): number {
  const a = p1.spec.priority ?? 0;
  const b = p2.spec.priority ?? 0;
  return a === b ? 0 : a > b ? 1 : -1;
}

/** Pods without stats come first, as upstream ranks them. */
function withStats(stats: StatsFunc, f: (s1: PodStats, s2: PodStats) => number): CmpFunc {
  return (p1, p2) => {
    const s1 = stats(p1);
    const s2 = stats(p2);
    if (!s1 || !s2) return cmpBool(!s1, !s2);
    return f(s1, s2);
  };
}

export type FsStatsType = 'root' | 'logs' | 'localVolumeSource';

/** Upstream localVolumeNames: hostPath and local ephemeral volumes. */
function localVolumeNames(pod: Pod): string[] {
  return (pod.spec.volumes ?? [])
    .filter((v: Volume) => v['hostPath'] !== undefined || isLocalEphemeralVolume(v))
    .map((v) => v.name);
}

/** Upstream podDiskUsage: bytes and inodes of the chosen parts of the pod's storage. */
export function podDiskUsage(
  stats: PodStats,
  pod: Pod,
  measure: readonly FsStatsType[],
): { bytes: number; inodes: number } {
  let bytes = 0;
  let inodes = 0;
  for (const c of stats.containers) {
    if (measure.includes('root')) {
      bytes += c.rootfs?.usedBytes ?? 0;
      inodes += c.rootfs?.inodesUsed ?? 0;
    }
    if (measure.includes('logs')) {
      bytes += c.logs?.usedBytes ?? 0;
      inodes += c.logs?.inodesUsed ?? 0;
    }
  }
  if (measure.includes('localVolumeSource')) {
    for (const name of localVolumeNames(pod)) {
      const v = stats.volume?.find((x) => x.name === name);
      bytes += v?.usedBytes ?? 0;
      inodes += v?.inodesUsed ?? 0;
    }
  }
  return { bytes, inodes };
}

export type RankFunc = (pods: Pod[], stats: StatsFunc) => void;

/** Upstream rankMemoryPressure: exceeds requests, then priority, then usage above requests. */
export const rankMemoryPressure: RankFunc = (pods, stats) => {
  const usage = (s: PodStats) => s.memory?.workingSetBytes ?? 0;
  orderedBy(
    withStats(stats, () => 0),
    (p1, p2) => {
      const s1 = stats(p1);
      const s2 = stats(p2);
      if (!s1 || !s2) return 0;
      return cmpBool(usage(s1) > podRequest(p1, 'memory'), usage(s2) > podRequest(p2, 'memory'));
    },
    priority,
    (p1, p2) => {
      const s1 = stats(p1);
      const s2 = stats(p2);
      if (!s1 || !s2) return 0;
      const a = usage(s1) - podRequest(p1, 'memory');
      const b = usage(s2) - podRequest(p2, 'memory');
      return a === b ? 0 : b > a ? 1 : -1;
    },
  )(pods);
};

/** Upstream rankPIDPressure: priority, then the most processes. */
export const rankPIDPressure: RankFunc = (pods, stats) => {
  orderedBy(
    priority,
    withStats(
      stats,
      (s1, s2) => (s2.process_stats?.process_count ?? 0) - (s1.process_stats?.process_count ?? 0),
    ),
  )(pods);
};

/** Upstream rankDiskPressureFunc: exceeds requests, then priority, then usage above requests. */
export function rankDiskPressureFunc(
  measure: readonly FsStatsType[],
  resource: 'ephemeral-storage' | 'inodes',
): RankFunc {
  return (pods, stats) => {
    const used = (p: Pod, s: PodStats) => {
      const u = podDiskUsage(s, p, measure);
      return resource === 'inodes' ? u.inodes : u.bytes;
    };
    orderedBy(
      withStats(stats, () => 0),
      (p1, p2) => {
        const s1 = stats(p1);
        const s2 = stats(p2);
        if (!s1 || !s2) return 0;
        return cmpBool(used(p1, s1) > podRequest(p1, resource), used(p2, s2) > podRequest(p2, resource));
      },
      priority,
      (p1, p2) => {
        const s1 = stats(p1);
        const s2 = stats(p2);
        if (!s1 || !s2) return 0;
        // Upstream subtracts the ephemeral-storage request for either resource.
        const a = used(p1, s1) - podRequest(p1, 'ephemeral-storage');
        const b = used(p2, s2) - podRequest(p2, 'ephemeral-storage');
        return a === b ? 0 : b > a ? 1 : -1;
      },
    )(pods);
  };
}

/** Upstream buildSignalToRankFunc. */
export function buildSignalToRankFunc(withImageFs: boolean): Map<Signal, RankFunc> {
  const m = new Map<Signal, RankFunc>([
    ['memory.available', rankMemoryPressure],
    ['allocatableMemory.available', rankMemoryPressure],
    ['pid.available', rankPIDPressure],
  ]);
  if (withImageFs) {
    m.set('nodefs.available', rankDiskPressureFunc(['logs', 'localVolumeSource'], 'ephemeral-storage'));
    m.set('nodefs.inodesFree', rankDiskPressureFunc(['logs', 'localVolumeSource'], 'inodes'));
    m.set('imagefs.available', rankDiskPressureFunc(['root'], 'ephemeral-storage'));
    m.set('imagefs.inodesFree', rankDiskPressureFunc(['root'], 'inodes'));
  } else {
    const all: FsStatsType[] = ['root', 'logs', 'localVolumeSource'];
    m.set('nodefs.available', rankDiskPressureFunc(all, 'ephemeral-storage'));
    m.set('nodefs.inodesFree', rankDiskPressureFunc(all, 'inodes'));
    m.set('imagefs.available', rankDiskPressureFunc(all, 'ephemeral-storage'));
    m.set('imagefs.inodesFree', rankDiskPressureFunc(all, 'inodes'));
  }
  m.set('containerfs.available', m.get(withImageFs ? 'imagefs.available' : 'nodefs.available') as RankFunc);
  m.set(
    'containerfs.inodesFree',
    m.get(withImageFs ? 'imagefs.inodesFree' : 'nodefs.inodesFree') as RankFunc,
  );
  return m;
}

// ---- messages ------------------------------------------------------------------------------------

function binarySI(n: number): string {
  return formatQuantity(quantityOf(Math.trunc(n), 'BinarySI'));
}

/** A container's request as upstream prints it (Quantity.String()); "0" when absent. */
function requestOf(pod: Pod, containerName: string, resource: string): { text: string; value: number } {
  const c = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find(
    (x) => x.name === containerName,
  );
  const raw = c?.resources?.requests?.[resource];
  if (raw === undefined) return { text: '0', value: 0 };
  const q = parseQuantity(raw);
  return { text: formatQuantity(q), value: Number(valueOf(q)) };
}

/**
 * Upstream evictionMessage: "The node was low on resource: memory. Threshold quantity: 100Mi,
 * available: 94224Ki. Container app was using 2Gi, request is 0, has larger consumption of memory. "
 */
export function evictionMessage(
  resource: string,
  pod: Pod,
  stats: StatsFunc,
  thresholds: readonly Threshold[],
  observations: SignalObservations,
): string {
  let message = `The node was low on resource: ${resource}. `;
  for (const t of thresholds) {
    if (SIGNAL_TO_RESOURCE[t.signal] !== resource) continue;
    const observed = observations.get(t.signal);
    if (!observed) continue;
    const available =
      resource === 'inodes' || resource === 'pids'
        ? formatQuantity(quantityOf(observed.available, 'DecimalSI'))
        : binarySI(observed.available);
    message += `Threshold quantity: ${formatThresholdQuantity(t.value, observed.capacity)}, available: ${available}. `;
    break;
  }
  const podStats = stats(pod);
  if (!podStats) return message;
  const names = new Set([...pod.spec.containers, ...(pod.spec.initContainers ?? [])].map((c) => c.name));
  for (const cs of podStats.containers) {
    if (!names.has(cs.name)) continue;
    let usage: number | undefined;
    if (resource === 'ephemeral-storage') {
      if (cs.rootfs?.usedBytes !== undefined && cs.logs?.usedBytes !== undefined)
        usage = cs.rootfs.usedBytes + cs.logs.usedBytes;
    } else if (resource === 'memory') {
      usage = cs.memory?.workingSetBytes;
    }
    const request = requestOf(pod, cs.name, resource);
    if (usage !== undefined && usage > request.value)
      message += `Container ${cs.name} was using ${binarySI(usage)}, request is ${request.text}, has larger consumption of ${resource}. `;
  }
  return message;
}

export function emptyDirMessage(volumeName: string, sizeLimit: string): string {
  return `Usage of EmptyDir volume ${JSON.stringify(volumeName)} exceeds the limit ${JSON.stringify(sizeLimit)}. `;
}

export function podEphemeralStorageMessage(limit: string): string {
  return `Pod ephemeral local storage usage exceeds the total limit of containers ${limit}. `;
}

export function containerEphemeralStorageMessage(container: string, limit: string): string {
  return `Container ${container} exceeded its local ephemeral storage limit ${JSON.stringify(limit)}. `;
}

export function nodeConditionMessage(conditions: readonly NodeConditionType[]): string {
  return `The node had condition: [${conditions.join(' ')}]. `;
}
