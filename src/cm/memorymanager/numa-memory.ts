/**
 * Each NUMA node's memory and huge page pools, read from sysfs as cAdvisor reads them for upstream's
 * memory manager (MachineInfo.Topology: `node<N>/meminfo`'s MemTotal and
 * `node<N>/hugepages/hugepages-<size>kB/nr_hugepages`). The root is injectable so tests run on a
 * fake tree. A pool with no pages is listed all the same, as cAdvisor lists it.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { formatQuantity, quantityOf } from '../../api/quantity.js';
import { KubeletError } from '../../lib/errors.js';

export interface HugePagePool {
  pageSizeKiB: number;
  numPages: number;
}

export interface NUMANodeMemory {
  id: number;
  /** MemTotal of the node, bytes. */
  memoryBytes: number;
  hugePages: HugePagePool[];
}

/** `hugepages-2Mi` for 2048 KiB pages (upstream: HugePageResourceName of the page size). */
export function hugePageResourceName(pageSizeKiB: number): string {
  return `hugepages-${formatQuantity(quantityOf(pageSizeKiB * 1024, 'BinarySI'))}`;
}

export function isHugePageResourceName(name: string): boolean {
  return name.startsWith('hugepages-');
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

async function readPools(nodeDir: string): Promise<HugePagePool[]> {
  const dir = path.join(nodeDir, 'hugepages');
  const pools: HugePagePool[] = [];
  for (const name of (await listDir(dir)).sort()) {
    const m = /^hugepages-(\d+)kB$/.exec(name);
    if (!m) continue;
    const text = (await readFile(path.join(dir, name, 'nr_hugepages'), 'utf8')).trim();
    const numPages = Number(text);
    if (!Number.isSafeInteger(numPages) || numPages < 0)
      throw new KubeletError(
        'INVALID_CONFIG',
        `${path.join(dir, name, 'nr_hugepages')}: not a page count: ${text}`,
      );
    pools.push({ pageSizeKiB: Number(m[1]), numPages });
  }
  return pools;
}

/** The NUMA nodes under sysfsRoot (normally /sys), by ID; throws when the kernel reports none. */
export async function readNUMANodeMemory(sysfsRoot = '/sys'): Promise<NUMANodeMemory[]> {
  const base = path.join(sysfsRoot, 'devices/system/node');
  const ids = (await listDir(base))
    .map((name) => /^node(\d+)$/.exec(name)?.[1])
    .filter((id): id is string => id !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
  if (ids.length === 0)
    throw new KubeletError(
      'INVALID_CONFIG',
      `[memorymanager] no NUMA nodes under ${base}: the Static policy needs the kernel's NUMA topology`,
    );
  const nodes: NUMANodeMemory[] = [];
  for (const id of ids) {
    const nodeDir = path.join(base, `node${id}`);
    const meminfo = await readFile(path.join(nodeDir, 'meminfo'), 'utf8');
    // The kernel writes kB meaning KiB, as in /proc/meminfo.
    const m = /MemTotal:\s*(\d+) kB/.exec(meminfo);
    if (!m) throw new KubeletError('INVALID_CONFIG', `${path.join(nodeDir, 'meminfo')}: no MemTotal line`);
    nodes.push({ id, memoryBytes: Number(m[1]) * 1024, hugePages: await readPools(nodeDir) });
  }
  return nodes;
}
