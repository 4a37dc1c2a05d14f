/** A fake /sys with the CPU topology files discoverTopology reads, in a temporary folder. */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CPUSet } from '../../../../src/cm/cpumanager/cpu-set.js';
import { CPUDetails, CPUTopology, type CPUInfo } from '../../../../src/cm/cpumanager/topology.js';

export interface FakeCore {
  threads: number[];
  socket: number;
  numa: number;
}

/** Writes the sysfs files for cores; returns the root and a remover. */
export async function makeFakeSysfs(
  cores: FakeCore[],
): Promise<{ root: string; remove: () => Promise<void> }> {
  const root = await mkdtemp(path.join(tmpdir(), 'fake-sysfs-'));
  const cpuDir = path.join(root, 'devices/system/cpu');
  const all = CPUSet.from(cores.flatMap((c) => c.threads));
  await mkdir(cpuDir, { recursive: true });
  await writeFile(path.join(cpuDir, 'online'), `${all.toString()}\n`);
  const numaCPUs = new Map<number, number[]>();
  for (const core of cores) {
    for (const cpu of core.threads) {
      const topo = path.join(cpuDir, `cpu${cpu}`, 'topology');
      await mkdir(topo, { recursive: true });
      await writeFile(path.join(topo, 'thread_siblings_list'), `${CPUSet.from(core.threads).toString()}\n`);
      await writeFile(path.join(topo, 'physical_package_id'), `${core.socket}\n`);
    }
    numaCPUs.set(core.numa, [...(numaCPUs.get(core.numa) ?? []), ...core.threads]);
  }
  for (const [numa, cpus] of numaCPUs) {
    const dir = path.join(root, 'devices/system/node', `node${numa}`);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'cpulist'), `${CPUSet.from(cpus).toString()}\n`);
  }
  return { root, remove: () => rm(root, { recursive: true, force: true }) };
}

/**
 * Upstream's topoDualSocketHT: 12 CPUs, 2 sockets (each its own NUMA node), 3 cores per socket,
 * 2 threads per core; socket 0 holds the even CPUs, with siblings 0/6, 2/8, 4/10.
 */
export const DUAL_SOCKET_HT: FakeCore[] = [
  { threads: [0, 6], socket: 0, numa: 0 },
  { threads: [2, 8], socket: 0, numa: 0 },
  { threads: [4, 10], socket: 0, numa: 0 },
  { threads: [1, 7], socket: 1, numa: 1 },
  { threads: [3, 9], socket: 1, numa: 1 },
  { threads: [5, 11], socket: 1, numa: 1 },
];

/** Upstream's topoSingleSocketHT: 8 CPUs, one socket, 4 cores with siblings 0/4, 1/5, 2/6, 3/7. */
export const SINGLE_SOCKET_HT: FakeCore[] = [0, 1, 2, 3].map((c) => ({
  threads: [c, c + 4],
  socket: 0,
  numa: 0,
}));

/** The topology discoverTopology should find for cores, built directly. */
export function topologyOf(cores: FakeCore[]): CPUTopology {
  const byCPU = new Map<number, CPUInfo>();
  for (const core of cores)
    for (const cpu of core.threads)
      byCPU.set(cpu, { coreId: Math.min(...core.threads), socketId: core.socket, numaNodeId: core.numa });
  return new CPUTopology(new CPUDetails(byCPU));
}

/**
 * Upstream's topoDualSocketMultiNumaPerSocketHT (a dual Xeon Gold 6230): 80 CPUs, 2 sockets of 2 NUMA
 * nodes each, 40 cores; CPU i and i+40 are siblings, NUMA node i/10 (socket 0: nodes 0 and 1).
 */
export const DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT: FakeCore[] = Array.from({ length: 40 }, (_, i) => ({
  threads: [i, i + 40],
  socket: i < 20 ? 0 : 1,
  numa: Math.floor(i / 10),
}));

/**
 * Upstream's topoDualSocketMultiNumaPerSocketHTLarge (an AMD EPYC 7763 pair): 256 CPUs, 2 sockets of
 * 4 NUMA nodes each, 128 cores; CPU i and i+128 are siblings, NUMA node (i mod 128)/16.
 */
export const DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT_LARGE: FakeCore[] = Array.from({ length: 128 }, (_, i) => ({
  threads: [i, i + 128],
  socket: i < 64 ? 0 : 1,
  numa: Math.floor(i / 16),
}));

/** Upstream's fakeTopoMultiSocketDualSocketPerNumaHT: the same 80 CPUs with 4 sockets in 2 NUMA nodes. */
export const MULTI_SOCKET_DUAL_SOCKET_PER_NUMA_HT: FakeCore[] = Array.from({ length: 40 }, (_, i) => ({
  threads: [i, i + 40],
  socket: Math.floor(i / 10),
  numa: Math.floor(i / 20),
}));
