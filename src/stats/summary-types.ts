/**
 * The kubelet's summary API (`stats.k8s.io/v1alpha1` as served on /stats/summary), with upstream's
 * JSON field names: metrics-server, `kubectl top` and the eviction manager all read these shapes.
 * Times are held as ms since the epoch (metrics keep their precision) and written as metav1.Time
 * writes them, RFC 3339 with whole seconds, by summaryJson.
 */

/** ms since the epoch; JSON: RFC 3339, whole seconds. */
export type StatsTime = number;

export interface Summary {
  node: NodeStats;
  pods: PodStats[];
}

export interface NodeStats {
  nodeName: string;
  systemContainers?: ContainerStats[];
  startTime: StatsTime;
  cpu?: CPUStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  fs?: FsStats;
  runtime?: RuntimeStats;
  rlimit?: RlimitStats;
}

export interface RuntimeStats {
  imageFs?: FsStats;
  containerFs?: FsStats;
}

export interface RlimitStats {
  time: StatsTime;
  /** The largest PID the kernel hands out (kernel.pid_max). */
  maxpid?: number;
  /** Processes (threads) on the node now. */
  curproc?: number;
}

export interface PodReference {
  name: string;
  namespace: string;
  uid: string;
}

export interface PodStats {
  podRef: PodReference;
  startTime: StatsTime;
  containers: ContainerStats[];
  cpu?: CPUStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  volume?: VolumeStats[];
  'ephemeral-storage'?: FsStats;
  process_stats?: ProcessStats;
}

export interface ProcessStats {
  process_count?: number;
}

export interface ContainerStats {
  name: string;
  startTime: StatsTime;
  cpu?: CPUStats;
  memory?: MemoryStats;
  rootfs?: FsStats;
  logs?: FsStats;
}

export interface CPUStats {
  time: StatsTime;
  /** Average usage over the last sampling window, in nanocores. */
  usageNanoCores?: number;
  /** Cumulative CPU time since the container (or node) started. */
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats {
  time: StatsTime;
  availableBytes?: number;
  usageBytes?: number;
  /** Usage minus inactive file pages: what the kernel cannot reclaim easily, and what eviction counts. */
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface InterfaceStats {
  name: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

export interface NetworkStats extends InterfaceStats {
  time: StatsTime;
  interfaces?: InterfaceStats[];
}

export interface FsStats {
  time: StatsTime;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface VolumeStats extends FsStats {
  name: string;
  pvcRef?: { name: string; namespace: string };
}

/** metav1.Time's JSON: RFC 3339 in UTC, whole seconds. */
export function formatStatsTime(ms: StatsTime): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The summary as /stats/summary serves it. */
export function summaryJson(summary: Summary): string {
  return JSON.stringify(summary, (key, value: unknown) =>
    (key === 'time' || key === 'startTime') && typeof value === 'number' ? formatStatsTime(value) : value,
  );
}
