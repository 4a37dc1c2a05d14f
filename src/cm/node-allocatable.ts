/**
 * The limits of the node allocatable cgroup (`kubepods`), upstream's node_container_manager_linux.go:
 * the machine's capacity (cpu, memory, huge pages, and the kernel's task limit as `pid`), less
 * systemReserved and kubeReserved when enforceNodeAllocatable has 'pods'. Eviction thresholds are
 * not taken off: they are the eviction manager's to keep, not the cgroup's.
 */
import os from 'node:os';
import path from 'node:path';
import type { Quantity } from '../api/core-v1.js';
import { addQuantity, milliValueOf, parseQuantity, valueOf, type ResourceQuantity } from '../api/quantity.js';
import { milliCPUToShares } from '../kuberuntime/container-resources.js';
import type { CgroupFs } from './cgroup-fs.js';
import { hugePageLimits, type ResourceConfig } from './resource-config.js';
import type { ResourceSums } from '../api/pod-resources.js';

export const DEFAULT_HUGE_PAGES_DIR = '/sys/kernel/mm/hugepages';
const PROC_PID_MAX = '/proc/sys/kernel/pid_max';
const PROC_THREADS_MAX = '/proc/sys/kernel/threads-max';

/** What the machine has, in the units the cgroup files take. */
export interface NodeCapacity {
  cpuMilli: number;
  memoryBytes: bigint;
  /** The kernel's system-wide task limit (upstream's `pid` resource); undefined when unreadable. */
  pids?: number;
  /** Page size in bytes → bytes in the pool. */
  hugePagesBytes: Map<number, bigint>;
}

/** The huge page pools (`hugepages-2048kB/nr_hugepages`) as page size → bytes. */
export async function readHugePages(
  fs: CgroupFs,
  dir = DEFAULT_HUGE_PAGES_DIR,
): Promise<Map<number, bigint>> {
  const out = new Map<number, bigint>();
  let entries;
  try {
    entries = await fs.readdir(dir);
  } catch {
    return out; // a kernel without huge pages
  }
  for (const e of entries) {
    const m = /^hugepages-(\d+)kB$/.exec(e.name);
    if (!m) continue;
    const sizeBytes = Number(m[1]) * 1024;
    let pages = 0n;
    try {
      pages = BigInt((await fs.readFile(path.join(dir, e.name, 'nr_hugepages'))).trim());
    } catch {
      // an unreadable pool counts as empty; its size still gets a hugetlb limit
    }
    out.set(sizeBytes, pages * BigInt(sizeBytes));
  }
  return out;
}

/** min(pid_max, threads-max), as upstream's pidlimit.Stats. */
async function readTaskLimit(fs: CgroupFs): Promise<number | undefined> {
  let limit: number | undefined;
  for (const file of [PROC_PID_MAX, PROC_THREADS_MAX]) {
    try {
      const v = Number.parseInt((await fs.readFile(file)).trim(), 10);
      if (Number.isInteger(v) && (limit === undefined || v < limit)) limit = v;
    } catch {
      // left out, as upstream leaves out a file it cannot read
    }
  }
  return limit;
}

export async function readNodeCapacity(
  fs: CgroupFs,
  hugePagesDir = DEFAULT_HUGE_PAGES_DIR,
): Promise<NodeCapacity> {
  return {
    cpuMilli: os.cpus().length * 1000,
    memoryBytes: BigInt(os.totalmem()),
    pids: await readTaskLimit(fs),
    hugePagesBytes: await readHugePages(fs, hugePagesDir),
  };
}

export interface NodeAllocatableOptions {
  /** enforceNodeAllocatable has 'pods': take the reservations off; else kubepods gets the whole capacity. */
  enforcePods: boolean;
  systemReserved?: Readonly<Record<string, Quantity>>;
  kubeReserved?: Readonly<Record<string, Quantity>>;
}

function reservedSums(...lists: (Readonly<Record<string, Quantity>> | undefined)[]): ResourceSums {
  const out: ResourceSums = new Map();
  for (const list of lists) {
    for (const [name, q] of Object.entries(list ?? {})) {
      const v = parseQuantity(q);
      const have = out.get(name);
      out.set(name, have ? addQuantity(have, v) : v);
    }
  }
  return out;
}

/** What the kubepods cgroup gets (upstream: getCgroupConfig of the absolute node allocatable). */
export function nodeAllocatableResourceConfig(
  capacity: NodeCapacity,
  opts: NodeAllocatableOptions,
): ResourceConfig {
  const reserved: ResourceSums = opts.enforcePods
    ? reservedSums(opts.systemReserved, opts.kubeReserved)
    : new Map();
  const minus = (have: bigint, name: string, inUnits: (q: ResourceQuantity) => bigint): bigint => {
    const r = reserved.get(name);
    const v = r ? have - inUnits(r) : have;
    // Negative allocatable makes no sense; upstream clamps it to 0 too.
    return v < 0n ? 0n : v;
  };
  const cpuMilli = minus(BigInt(capacity.cpuMilli), 'cpu', milliValueOf);
  const config: ResourceConfig = {
    cpuShares: milliCPUToShares(Number(cpuMilli)),
    memoryBytes: minus(capacity.memoryBytes, 'memory', valueOf),
  };
  if (capacity.pids !== undefined) config.pidsLimit = Number(minus(BigInt(capacity.pids), 'pid', valueOf));
  // Reservations name pools as the API does (hugepages-2Mi): match them to the pools by page size.
  const reservedPages = hugePageLimits(reserved);
  config.hugePageLimits = new Map();
  for (const [size, bytes] of capacity.hugePagesBytes) {
    const left = bytes - (reservedPages.get(size) ?? 0n);
    config.hugePageLimits.set(size, left < 0n ? 0n : left);
  }
  return config;
}

/**
 * What a reservation's own cgroup gets when enforceNodeAllocatable names it (upstream: getCgroupConfig
 * of systemReserved or kubeReserved): only the resources the reservation lists, so a cgroup such as
 * system.slice keeps its other limits.
 */
export function reservedResourceConfig(reserved: Readonly<Record<string, Quantity>>): ResourceConfig {
  const sums = reservedSums(reserved);
  const config: ResourceConfig = {};
  const memory = sums.get('memory');
  if (memory) config.memoryBytes = valueOf(memory);
  const cpu = sums.get('cpu');
  if (cpu) config.cpuShares = milliCPUToShares(Number(milliValueOf(cpu)));
  const pids = sums.get('pid');
  if (pids) config.pidsLimit = Number(valueOf(pids));
  const pages = hugePageLimits(sums);
  if (pages.size > 0) config.hugePageLimits = pages;
  return config;
}
