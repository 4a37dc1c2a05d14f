/**
 * CPU, memory and process counts of one cgroup, read the way cAdvisor reads them for the kubelet:
 * working set is usage minus inactive file pages (never below zero), CPU is cumulative
 * nanoseconds. Works on cgroup v1 (memory, cpuacct, pids hierarchies) and v2 (one tree).
 */
import path from 'node:path';
import { errnoCode, type CgroupFs } from '../cm/cgroup-fs.js';
import { v1MountPoints, type CgroupSubsystems } from '../cm/cgroup-subsystems.js';

export interface CgroupSample {
  /** When it was read, ms since the epoch. */
  timeMs: number;
  cpuUsageNanoSeconds?: number;
  memoryUsageBytes?: number;
  memoryWorkingSetBytes?: number;
  memoryRssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  pids?: number;
}

function statField(text: string, key: string): number | undefined {
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

export class CgroupStatsReader {
  private readonly mounts: Map<string, string>;

  constructor(
    private readonly fs: CgroupFs,
    private readonly subsystems: CgroupSubsystems,
  ) {
    this.mounts = v1MountPoints(subsystems);
  }

  /** undefined when the cgroup does not exist; a controller that cannot be read leaves its fields out. */
  async read(cgroupPath: string, nowMs: number): Promise<CgroupSample | undefined> {
    try {
      return this.subsystems.version === 'v2'
        ? await this.readV2(path.join(this.subsystems.root, cgroupPath), nowMs)
        : await this.readV1(cgroupPath, nowMs);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw err;
    }
  }

  private async optional(file: string): Promise<string | undefined> {
    try {
      return await this.fs.readFile(file);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'EACCES') return undefined;
      throw err;
    }
  }

  private async readV1(cgroupPath: string, nowMs: number): Promise<CgroupSample | undefined> {
    const memRoot = this.mounts.get('memory');
    const cpuRoot = this.mounts.get('cpuacct');
    const pidsRoot = this.mounts.get('pids');
    const [usage, stat, cpu, pids] = await Promise.all([
      memRoot ? this.optional(path.join(memRoot, cgroupPath, 'memory.usage_in_bytes')) : undefined,
      memRoot ? this.optional(path.join(memRoot, cgroupPath, 'memory.stat')) : undefined,
      cpuRoot ? this.optional(path.join(cpuRoot, cgroupPath, 'cpuacct.usage')) : undefined,
      pidsRoot ? this.optional(path.join(pidsRoot, cgroupPath, 'pids.current')) : undefined,
    ]);
    if (usage === undefined && cpu === undefined) return undefined;
    const sample: CgroupSample = { timeMs: nowMs };
    if (cpu !== undefined) sample.cpuUsageNanoSeconds = Number(cpu.trim());
    if (usage !== undefined) {
      const used = Number(usage.trim());
      const inactiveFile = stat ? (statField(stat, 'total_inactive_file') ?? 0) : 0;
      sample.memoryUsageBytes = used;
      sample.memoryWorkingSetBytes = Math.max(0, used - inactiveFile);
      if (stat) {
        sample.memoryRssBytes = statField(stat, 'total_rss');
        sample.pageFaults = statField(stat, 'total_pgfault');
        sample.majorPageFaults = statField(stat, 'total_pgmajfault');
      }
    }
    if (pids !== undefined) sample.pids = Number(pids.trim());
    return sample;
  }

  private async readV2(dir: string, nowMs: number): Promise<CgroupSample | undefined> {
    const isRoot = path.resolve(dir) === path.resolve(this.subsystems.root);
    const [current, stat, cpuStat, pids] = await Promise.all([
      // The root of a v2 tree has no memory.current: cAdvisor falls back to /proc/meminfo there.
      isRoot ? undefined : this.optional(path.join(dir, 'memory.current')),
      this.optional(path.join(dir, 'memory.stat')),
      this.optional(path.join(dir, 'cpu.stat')),
      isRoot ? undefined : this.optional(path.join(dir, 'pids.current')),
    ]);
    if (current === undefined && cpuStat === undefined && stat === undefined) return undefined;
    const sample: CgroupSample = { timeMs: nowMs };
    const usageUsec = cpuStat ? statField(cpuStat, 'usage_usec') : undefined;
    if (usageUsec !== undefined) sample.cpuUsageNanoSeconds = usageUsec * 1000;
    if (current !== undefined) {
      const used = Number(current.trim());
      const inactiveFile = stat ? (statField(stat, 'inactive_file') ?? 0) : 0;
      sample.memoryUsageBytes = used;
      sample.memoryWorkingSetBytes = Math.max(0, used - inactiveFile);
    }
    if (stat) {
      sample.memoryRssBytes = statField(stat, 'anon');
      sample.pageFaults = statField(stat, 'pgfault');
      sample.majorPageFaults = statField(stat, 'pgmajfault');
    }
    if (pids !== undefined) sample.pids = Number(pids.trim());
    return sample;
  }
}
