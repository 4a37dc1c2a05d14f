/**
 * Upstream's StatsProvider and summary provider in one: the node, its pods and their containers
 * as /stats/summary serves them and the eviction manager reads them.
 *
 * Containers come from CRI (ListContainers, ListContainerStats), pods from their sandboxes
 * (ListPodSandbox); containerd 1.6 does not answer ListPodSandboxStats, so pod CPU and memory come
 * from the pod cgroup when there is one, else the sum of the pod's containers (upstream's
 * addPodCPUMemoryStats does the same). The node comes from the root cgroup and /proc, its
 * filesystems from statfs of rootDir, the image filesystem CRI names (ImageFsInfo) and the pod log
 * folder. Volume usage comes from the FsResourceAnalyzer's cache, never walked here.
 */
import { setMaxListeners } from 'node:events';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Pod } from '../api/core-v1.js';
import type {
  Container,
  ContainerStats as CriContainerStats,
  ImageService,
  PodSandbox,
  RuntimeService,
} from '../cri/types.js';
import type { Clock } from '../lib/clock.js';
import { childAbortController } from '../lib/deadline.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { CgroupSample, CgroupStatsReader } from './cgroup-stats.js';
import { CpuUsageCache } from './cpu-usage-cache.js';
import { diskUsage, fsInfo, type FsInfo } from './fs-info.js';
import type { FsResourceAnalyzer } from './fs-resource-analyzer.js';
import {
  bootTimeMs,
  procStatCpuNanoSeconds,
  readMemInfo,
  readNetDev,
  readProcessCounts,
} from './node-host-stats.js';
import {
  type ContainerStats,
  type CPUStats,
  type FsStats,
  type InterfaceStats,
  type MemoryStats,
  type NetworkStats,
  type NodeStats,
  type PodStats,
  type Summary,
} from './summary-types.js';

const log = logger('stats');

/** cAdvisor's and upstream's default interface: the one a pod's or node's top-level network figures are for. */
const DEFAULT_NETWORK_INTERFACE = 'eth0';

const POD_UID_LABEL = 'io.kubernetes.pod.uid';
const POD_NAME_LABEL = 'io.kubernetes.pod.name';
const POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';

export interface StatsProviderOptions {
  runtime: RuntimeService;
  images: ImageService;
  clock: Clock;
  nodeName: string;
  rootDir: string;
  podLogsDir: string;
  runtimeRequestTimeoutMs: number;
  /** The pods this node runs, to find each pod's volumes. */
  pods: () => readonly Pod[];
  fsResourceAnalyzer: FsResourceAnalyzer;
  /** Absent when the cgroup file systems cannot be read: pods then sum their containers. */
  cgroups?: CgroupStatsReader;
  /** The pod's cgroup, relative to each hierarchy's root; undefined without per-pod cgroups. */
  podCgroupPath?: (pod: Pod) => string | undefined;
  /** The cgroup all pods run under (kubepods), reported as the "pods" system container; known once the container manager started. */
  podsCgroupPath?: () => string | undefined;
}

/** What one pass read from the runtime, shared by the pod and node figures. */
interface RuntimeSnapshot {
  sandboxes: PodSandbox[];
  containers: Container[];
  stats: Map<string, CriContainerStats>;
  rootFs?: FsInfo;
  imageFs?: FsStats;
}

export class StatsProvider {
  private readonly cpuCache = new CpuUsageCache();
  /** Sandbox id → its first process, for the pod's network namespace; a sandbox keeps its pid for life. */
  private readonly sandboxPids = new Map<string, number | null>();

  constructor(private readonly opts: StatsProviderOptions) {}

  /** /stats/summary: the node and every pod with containers. */
  async getSummary(signal?: AbortSignal): Promise<Summary> {
    const snapshot = await this.runtimeSnapshot(true, signal);
    const [node, pods] = await Promise.all([
      this.nodeStats(snapshot, false),
      this.listPodStats(snapshot, false, signal),
    ]);
    return { node, pods };
  }

  /** /stats/summary?only_cpu_and_memory=true and /metrics/resource: no filesystems, no network. */
  async getCPUAndMemorySummary(signal?: AbortSignal): Promise<Summary> {
    const snapshot = await this.runtimeSnapshot(false, signal);
    const [node, pods] = await Promise.all([
      this.nodeStats(snapshot, true),
      this.listPodStats(snapshot, true, signal),
    ]);
    return { node, pods };
  }

  private call(signal?: AbortSignal) {
    return { timeoutMs: this.opts.runtimeRequestTimeoutMs, signal };
  }

  private async runtimeSnapshot(withFs: boolean, signal?: AbortSignal): Promise<RuntimeSnapshot> {
    const now = this.opts.clock.now();
    const [sandboxes, containers, stats, rootFs, imageFs] = await Promise.all([
      this.opts.runtime.listPodSandbox({}, this.call(signal)),
      this.opts.runtime.listContainers({}, this.call(signal)),
      this.opts.runtime.listContainerStats({}, this.call(signal)),
      withFs ? fsInfo(this.opts.rootDir, now).catch(() => undefined) : undefined,
      withFs ? this.imageFsStats(signal) : undefined,
    ]);
    return {
      sandboxes: removeTerminatedPods(sandboxes),
      containers: removeTerminatedContainers(containers),
      stats: new Map(stats.map((s) => [s.attributes.id, s])),
      rootFs,
      imageFs,
    };
  }

  /** The image filesystem: size and free space from statfs of the folder CRI names, usage from CRI. */
  async imageFsStats(signal?: AbortSignal): Promise<FsStats | undefined> {
    try {
      const usages = await this.opts.images.imageFsInfo(this.call(signal));
      const usage = usages[0];
      if (!usage) return undefined;
      const mountpoint = usage.fsId?.mountpoint;
      const info = mountpoint
        ? await fsInfo(mountpoint, this.opts.clock.now()).catch(() => undefined)
        : undefined;
      return {
        ...(info ? fsStatsOf(info) : {}),
        time: usage.timestamp / 1e6 || this.opts.clock.now(),
        usedBytes: usage.usedBytes?.value,
        inodesUsed: usage.inodesUsed?.value,
      };
    } catch (err) {
      log.v(2, 'Unable to read the image filesystem stats', { err: errorMessage(err) });
      return undefined;
    }
  }

  /** Whether the runtime keeps images on another filesystem than rootDir's (upstream HasDedicatedImageFs). */
  async hasDedicatedImageFs(signal?: AbortSignal): Promise<boolean> {
    const usages = await this.opts.images.imageFsInfo(this.call(signal));
    const mountpoint = usages[0]?.fsId?.mountpoint;
    if (!mountpoint) return false;
    const [image, root] = await Promise.all([stat(mountpoint), stat(this.opts.rootDir)]);
    return image.dev !== root.dev;
  }

  /** The node's root filesystem (the one rootDir is on). */
  async rootFsStats(): Promise<FsStats | undefined> {
    const info = await fsInfo(this.opts.rootDir, this.opts.clock.now()).catch(() => undefined);
    return info ? fsStatsOf(info) : undefined;
  }

  private async nodeStats(snapshot: RuntimeSnapshot, onlyCpuAndMemory: boolean): Promise<NodeStats> {
    const now = this.opts.clock.now();
    const [root, memInfo, boot] = await Promise.all([
      this.opts.cgroups?.read('/', now).catch(() => undefined),
      readMemInfo(),
      bootTimeMs(),
    ]);
    const cpuNs = root?.cpuUsageNanoSeconds ?? (await procStatCpuNanoSeconds());
    const cpu: CPUStats | undefined =
      cpuNs === undefined
        ? undefined
        : {
            time: now,
            usageCoreNanoSeconds: cpuNs,
            usageNanoCores: this.cpuCache.update('node:/', now, cpuNs),
          };
    // The working set of the root cgroup; where it cannot be read, /proc/meminfo's equivalent.
    let memory: MemoryStats | undefined;
    if (root?.memoryWorkingSetBytes !== undefined) memory = memoryStatsOf(root, now);
    else if (memInfo) {
      const usage = memInfo.totalBytes - memInfo.freeBytes;
      memory = {
        time: now,
        usageBytes: usage,
        workingSetBytes: Math.max(0, usage - memInfo.inactiveFileBytes),
      };
    }
    // Upstream: available = machine capacity − working set.
    if (memory && memInfo && memory.workingSetBytes !== undefined)
      memory.availableBytes = Math.max(0, memInfo.totalBytes - memory.workingSetBytes);
    const node: NodeStats = {
      nodeName: this.opts.nodeName,
      startTime: boot ?? now,
      cpu,
      memory,
    };
    const podsCgroupPath = this.opts.podsCgroupPath?.();
    if (this.opts.cgroups && podsCgroupPath) {
      const pods = await this.opts.cgroups.read(podsCgroupPath, now).catch(() => undefined);
      if (pods) {
        node.systemContainers = [
          {
            name: 'pods',
            startTime: node.startTime,
            cpu: this.cpuStatsOf('cgroup:pods', pods),
            memory: memoryStatsOf(pods, now, memInfo?.totalBytes),
          },
        ];
      }
    }
    if (onlyCpuAndMemory) return node;
    const [ifaces, procs] = await Promise.all([readNetDev(), readProcessCounts()]);
    node.network = ifaces ? networkStatsOf(ifaces, now) : undefined;
    node.fs = snapshot.rootFs ? fsStatsOf(snapshot.rootFs) : undefined;
    node.runtime = snapshot.imageFs
      ? { imageFs: snapshot.imageFs, containerFs: snapshot.imageFs }
      : undefined;
    node.rlimit = { time: now, maxpid: procs.maxPid, curproc: procs.current };
    return node;
  }

  private cpuStatsOf(id: string, sample: CgroupSample): CPUStats | undefined {
    if (sample.cpuUsageNanoSeconds === undefined) return undefined;
    return {
      time: sample.timeMs,
      usageCoreNanoSeconds: sample.cpuUsageNanoSeconds,
      usageNanoCores: this.cpuCache.update(id, sample.timeMs, sample.cpuUsageNanoSeconds),
    };
  }

  private async listPodStats(
    snapshot: RuntimeSnapshot,
    onlyCpuAndMemory: boolean,
    signal?: AbortSignal,
  ): Promise<PodStats[]> {
    const podsByUid = new Map(this.opts.pods().map((p) => [p.metadata.uid ?? '', p]));
    const sandboxById = new Map(snapshot.sandboxes.map((s) => [s.id, s]));
    const byPod = new Map<string, { sandbox: PodSandbox; containers: Container[] }>();
    for (const c of snapshot.containers) {
      const sandbox = sandboxById.get(c.podSandboxId);
      if (!sandbox) continue;
      const entry = byPod.get(sandbox.id) ?? { sandbox, containers: [] };
      entry.containers.push(c);
      byPod.set(sandbox.id, entry);
    }
    const liveIds = new Set<string>(['node:/', 'cgroup:pods']);
    // A pass reads every new sandbox's status at once, each call listening on one signal: past ten new
    // pods Node would warn of a listener leak, though each call lets go of its own. They listen on the
    // pass's own signal, so that the caller's (the eviction manager's lives as long as the kubelet)
    // keeps Node's check.
    const pass = childAbortController(signal);
    setMaxListeners(0, pass.controller.signal);
    let out: PodStats[];
    try {
      out = await Promise.all(
        [...byPod.values()].map(({ sandbox, containers }) => {
          liveIds.add(sandbox.id);
          for (const c of containers) liveIds.add(c.id);
          return this.podStats(
            snapshot,
            sandbox,
            containers,
            podsByUid.get(sandbox.metadata.uid),
            onlyCpuAndMemory,
            signal && pass.controller.signal,
          );
        }),
      );
    } finally {
      pass.dispose();
    }
    this.cpuCache.retain(liveIds);
    for (const id of this.sandboxPids.keys()) if (!sandboxById.has(id)) this.sandboxPids.delete(id);
    return out;
  }

  private async podStats(
    snapshot: RuntimeSnapshot,
    sandbox: PodSandbox,
    containers: Container[],
    pod: Pod | undefined,
    onlyCpuAndMemory: boolean,
    signal?: AbortSignal,
  ): Promise<PodStats> {
    const now = this.opts.clock.now();
    const meta = sandbox.metadata;
    const ps: PodStats = {
      podRef: {
        name: meta.name || (sandbox.labels[POD_NAME_LABEL] ?? ''),
        namespace: meta.namespace || (sandbox.labels[POD_NAMESPACE_LABEL] ?? ''),
        uid: meta.uid || (sandbox.labels[POD_UID_LABEL] ?? ''),
      },
      startTime: sandbox.createdAt / 1e6,
      containers: [],
    };
    const podLogDir = path.join(
      this.opts.podLogsDir,
      `${ps.podRef.namespace}_${ps.podRef.name}_${ps.podRef.uid}`,
    );
    for (const c of containers) {
      const s = snapshot.stats.get(c.id);
      const cs: ContainerStats = {
        name: c.metadata.name,
        startTime: c.createdAt / 1e6,
      };
      if (s?.cpu) {
        const usage = s.cpu.usageCoreNanoSeconds?.value;
        const tMs = s.cpu.timestamp / 1e6 || now;
        cs.cpu = {
          time: tMs,
          usageCoreNanoSeconds: usage,
          usageNanoCores:
            s.cpu.usageNanoCores?.value ??
            (usage === undefined ? undefined : this.cpuCache.update(c.id, tMs, usage)),
        };
      }
      if (s?.memory) {
        cs.memory = {
          time: s.memory.timestamp / 1e6 || now,
          availableBytes: s.memory.availableBytes?.value,
          usageBytes: s.memory.usageBytes?.value,
          workingSetBytes: s.memory.workingSetBytes?.value,
          rssBytes: s.memory.rssBytes?.value,
          pageFaults: s.memory.pageFaults?.value,
          majorPageFaults: s.memory.majorPageFaults?.value,
        };
      }
      if (!onlyCpuAndMemory) {
        const imageFs = snapshot.imageFs;
        if (s?.writableLayer) {
          cs.rootfs = {
            ...(imageFs ? withoutUsage(imageFs) : {}),
            time: s.writableLayer.timestamp / 1e6 || now,
            usedBytes: s.writableLayer.usedBytes?.value,
            inodesUsed: s.writableLayer.inodesUsed?.value,
          };
        }
        const logs = await diskUsage(path.join(podLogDir, c.metadata.name)).catch(() => undefined);
        if (logs) {
          cs.logs = {
            ...(snapshot.rootFs ? withoutUsage(fsStatsOf(snapshot.rootFs)) : {}),
            time: now,
            usedBytes: logs.usedBytes,
            inodesUsed: logs.inodesUsed,
          };
        }
      }
      ps.containers.push(cs);
    }
    const cgroupPath = pod && this.opts.podCgroupPath?.(pod);
    const podCgroup =
      cgroupPath && this.opts.cgroups
        ? await this.opts.cgroups.read(cgroupPath, now).catch(() => undefined)
        : undefined;
    if (podCgroup) {
      ps.cpu = this.cpuStatsOf(sandbox.id, podCgroup);
      ps.memory = memoryStatsOf(podCgroup, now);
      if (podCgroup.pids !== undefined) ps.process_stats = { process_count: podCgroup.pids };
    } else {
      sumContainerCpuMemory(ps, now);
    }
    if (onlyCpuAndMemory) return ps;
    const net = await this.podNetwork(sandbox, signal);
    if (net) ps.network = networkStatsOf(net, now);
    const volumes = pod ? this.opts.fsResourceAnalyzer.getPodVolumeStats(pod) : undefined;
    if (volumes && volumes.ephemeral.length + volumes.persistent.length > 0)
      ps.volume = [...volumes.ephemeral, ...volumes.persistent];
    if (snapshot.rootFs) {
      const etcHosts = await diskUsage(
        path.join(this.opts.rootDir, 'pods', ps.podRef.uid, 'etc-hosts'),
      ).catch(() => undefined);
      ps['ephemeral-storage'] = calcEphemeralStorage(
        ps.containers,
        volumes?.ephemeral ?? [],
        snapshot.rootFs,
        etcHosts,
      );
    }
    return ps;
  }

  /** The sandbox's interfaces, read from its first process's network namespace. */
  private async podNetwork(sandbox: PodSandbox, signal?: AbortSignal): Promise<InterfaceStats[] | undefined> {
    let pid = this.sandboxPids.get(sandbox.id);
    if (pid === undefined) {
      pid = null;
      if (sandbox.state === 'SANDBOX_READY') {
        try {
          const st = await this.opts.runtime.podSandboxStatus(sandbox.id, true, this.call(signal));
          if (st.status.linux?.namespaces?.options?.network === 'NODE') return undefined;
          const info = JSON.parse(st.info['info'] ?? '{}') as { pid?: number };
          if (typeof info.pid === 'number' && info.pid > 0) pid = info.pid;
        } catch {
          return undefined; // asked again on the next pass
        }
      }
      this.sandboxPids.set(sandbox.id, pid);
    }
    return pid ? readNetDev(`/proc/${pid}/net/dev`) : undefined;
  }
}

function fsStatsOf(info: FsInfo): FsStats {
  return {
    time: info.timeMs,
    availableBytes: info.availableBytes,
    capacityBytes: info.capacityBytes,
    usedBytes: info.usedBytes,
    inodesFree: info.inodesFree,
    inodes: info.inodes,
    inodesUsed: info.inodes - info.inodesFree,
  };
}

function withoutUsage(fs: FsStats): FsStats {
  return {
    time: fs.time,
    availableBytes: fs.availableBytes,
    capacityBytes: fs.capacityBytes,
    inodesFree: fs.inodesFree,
    inodes: fs.inodes,
  };
}

function memoryStatsOf(s: CgroupSample, now: number, capacityBytes?: number): MemoryStats | undefined {
  if (s.memoryUsageBytes === undefined) return undefined;
  const m: MemoryStats = {
    time: s.timeMs || now,
    usageBytes: s.memoryUsageBytes,
    workingSetBytes: s.memoryWorkingSetBytes,
    rssBytes: s.memoryRssBytes,
    pageFaults: s.pageFaults,
    majorPageFaults: s.majorPageFaults,
  };
  if (capacityBytes !== undefined && s.memoryWorkingSetBytes !== undefined)
    m.availableBytes = Math.max(0, capacityBytes - s.memoryWorkingSetBytes);
  return m;
}

function networkStatsOf(ifaces: InterfaceStats[], now: number): NetworkStats {
  const main = ifaces.find((i) => i.name === DEFAULT_NETWORK_INTERFACE);
  return { time: now, ...(main ?? { name: '' }), interfaces: ifaces };
}

function add(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : a + b;
}

/** Upstream addPodCPUMemoryStats without a pod cgroup: the pod is the sum of its containers. */
function sumContainerCpuMemory(ps: PodStats, now: number): void {
  for (const c of ps.containers) {
    if (c.cpu) {
      ps.cpu ??= { time: now };
      ps.cpu.usageCoreNanoSeconds = add(ps.cpu.usageCoreNanoSeconds, c.cpu.usageCoreNanoSeconds);
      ps.cpu.usageNanoCores = add(ps.cpu.usageNanoCores, c.cpu.usageNanoCores);
    }
    if (c.memory) {
      ps.memory ??= { time: now };
      ps.memory.usageBytes = add(ps.memory.usageBytes, c.memory.usageBytes);
      ps.memory.workingSetBytes = add(ps.memory.workingSetBytes, c.memory.workingSetBytes);
      ps.memory.rssBytes = add(ps.memory.rssBytes, c.memory.rssBytes);
      ps.memory.pageFaults = add(ps.memory.pageFaults, c.memory.pageFaults);
      ps.memory.majorPageFaults = add(ps.memory.majorPageFaults, c.memory.majorPageFaults);
    }
  }
}

/**
 * Upstream calcEphemeralStorage: the containers' writable layers and logs, the pod's local
 * ephemeral volumes and its etc-hosts file, against the root filesystem's size.
 */
export function calcEphemeralStorage(
  containers: readonly ContainerStats[],
  ephemeralVolumes: readonly FsStats[],
  rootFs: FsInfo,
  etcHosts?: { usedBytes: number; inodesUsed: number },
): FsStats {
  const out: FsStats = {
    ...withoutUsage(fsStatsOf(rootFs)),
    usedBytes: 0,
    inodesUsed: 0,
  };
  for (const c of containers) {
    if (!c.rootfs) continue;
    out.usedBytes = add(out.usedBytes, c.rootfs.usedBytes);
    out.inodesUsed = add(out.inodesUsed, c.rootfs.inodesUsed);
    if (c.logs) {
      out.usedBytes = add(out.usedBytes, c.logs.usedBytes);
      out.inodesUsed = add(out.inodesUsed, c.logs.inodesUsed);
    }
  }
  for (const v of ephemeralVolumes) {
    out.usedBytes = add(out.usedBytes, v.usedBytes);
    out.inodesUsed = add(out.inodesUsed, v.inodesUsed);
  }
  if (etcHosts) {
    out.usedBytes = add(out.usedBytes, etcHosts.usedBytes);
    out.inodesUsed = add(out.inodesUsed, etcHosts.inodesUsed);
  }
  return out;
}

/** Upstream removeTerminatedPods: per pod UID, its ready sandboxes, else its newest one. */
export function removeTerminatedPods(sandboxes: PodSandbox[]): PodSandbox[] {
  const byUid = new Map<string, PodSandbox[]>();
  for (const s of sandboxes) {
    const uid = s.metadata.uid;
    byUid.set(uid, [...(byUid.get(uid) ?? []), s]);
  }
  const out: PodSandbox[] = [];
  for (const list of byUid.values()) {
    const ready = list.filter((s) => s.state === 'SANDBOX_READY');
    if (ready.length > 0) out.push(...ready);
    else out.push(list.reduce((a, b) => (b.createdAt > a.createdAt ? b : a)));
  }
  return out;
}

/** Upstream removeTerminatedContainers: per sandbox and name, the running ones, else the newest. */
export function removeTerminatedContainers(containers: Container[]): Container[] {
  const byKey = new Map<string, Container[]>();
  for (const c of containers) {
    const key = `${c.podSandboxId}/${c.metadata.name}`;
    byKey.set(key, [...(byKey.get(key) ?? []), c]);
  }
  const out: Container[] = [];
  for (const list of byKey.values()) {
    const running = list.filter((c) => c.state === 'CONTAINER_RUNNING');
    if (running.length > 0) out.push(...running);
    else out.push(list.reduce((a, b) => (b.createdAt > a.createdAt ? b : a)));
  }
  return out;
}

/** What the kubelet API reads: the full summary and its CPU-and-memory form. */
export interface SummaryProvider {
  getSummary(signal?: AbortSignal): Promise<Summary>;
  getCPUAndMemorySummary(signal?: AbortSignal): Promise<Summary>;
}
