/**
 * The machine's CPU topology: every online logical CPU with its physical core, socket and NUMA node
 * (upstream: cpumanager/topology Discover, which reads cadvisor's MachineInfo; here read straight
 * from sysfs, whose root is injectable so tests run on a fake tree).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { KubeletError } from '../../lib/errors.js';
import { CPUSet } from './cpu-set.js';

export interface CPUInfo {
  /** The lowest logical CPU id among the core's threads, as upstream's getUniqueCoreID. */
  coreId: number;
  socketId: number;
  numaNodeId: number;
}

/** CPU id → its place; a view limited to some CPUs is a CPUDetails too. */
export class CPUDetails {
  constructor(readonly byCPU: ReadonlyMap<number, CPUInfo>) {}

  keepOnly(cpus: CPUSet): CPUDetails {
    return new CPUDetails(new Map([...this.byCPU].filter(([cpu]) => cpus.has(cpu))));
  }

  cpus(): CPUSet {
    return CPUSet.from(this.byCPU.keys());
  }

  /** The CPUs (or their cores, sockets, NUMA nodes) whose info passes where. */
  private collect(pick: 'cpu' | keyof CPUInfo, where: (info: CPUInfo) => boolean): CPUSet {
    const out: number[] = [];
    for (const [cpu, info] of this.byCPU) if (where(info)) out.push(pick === 'cpu' ? cpu : info[pick]);
    return CPUSet.from(out);
  }

  numaNodes(): CPUSet {
    return this.collect('numaNodeId', () => true);
  }
  sockets(): CPUSet {
    return this.collect('socketId', () => true);
  }
  cores(): CPUSet {
    return this.collect('coreId', () => true);
  }
  cpusInNUMANodes(...ids: number[]): CPUSet {
    return this.collect('cpu', (i) => ids.includes(i.numaNodeId));
  }
  cpusInSockets(...ids: number[]): CPUSet {
    return this.collect('cpu', (i) => ids.includes(i.socketId));
  }
  cpusInCores(...ids: number[]): CPUSet {
    return this.collect('cpu', (i) => ids.includes(i.coreId));
  }
  socketsInNUMANodes(...ids: number[]): CPUSet {
    return this.collect('socketId', (i) => ids.includes(i.numaNodeId));
  }
  numaNodesInSockets(...ids: number[]): CPUSet {
    return this.collect('numaNodeId', (i) => ids.includes(i.socketId));
  }
  coresInSockets(...ids: number[]): CPUSet {
    return this.collect('coreId', (i) => ids.includes(i.socketId));
  }
  coresInNUMANodes(...ids: number[]): CPUSet {
    return this.collect('coreId', (i) => ids.includes(i.numaNodeId));
  }
}

export class CPUTopology {
  readonly numCPUs: number;
  readonly numCores: number;
  readonly numSockets: number;
  readonly numNUMANodes: number;

  constructor(readonly details: CPUDetails) {
    this.numCPUs = details.byCPU.size;
    this.numCores = details.cores().size;
    this.numSockets = details.sockets().size;
    this.numNUMANodes = details.numaNodes().size;
  }

  cpusPerCore(): number {
    return this.numCores === 0 ? 0 : this.numCPUs / this.numCores;
  }

  cpusPerSocket(): number {
    return this.numSockets === 0 ? 0 : this.numCPUs / this.numSockets;
  }

  coreIdOf(cpu: number): number {
    const info = this.details.byCPU.get(cpu);
    if (!info) throw new KubeletError('CPU_ALLOCATION_FAILED', `unknown CPU: ${cpu}`);
    return info.coreId;
  }
}

async function readText(file: string): Promise<string> {
  return (await readFile(file, 'utf8')).trim();
}

/** NUMA node of each CPU, from node<N>/cpulist; a kernel without NUMA puts every CPU on node 0. */
async function numaNodeOfCPUs(sysfsRoot: string): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  const nodeDir = path.join(sysfsRoot, 'devices/system/node');
  let entries: string[];
  try {
    entries = await readdir(nodeDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw err;
  }
  for (const name of entries) {
    const m = /^node(\d+)$/.exec(name);
    if (!m) continue;
    const cpus = CPUSet.parse(await readText(path.join(nodeDir, name, 'cpulist')));
    for (const cpu of cpus.list()) out.set(cpu, Number(m[1]));
  }
  return out;
}

/** Reads the topology of the online CPUs under sysfsRoot (normally /sys). */
export async function discoverTopology(sysfsRoot = '/sys'): Promise<CPUTopology> {
  const cpuDir = path.join(sysfsRoot, 'devices/system/cpu');
  const online = CPUSet.parse(await readText(path.join(cpuDir, 'online')));
  const numaOf = await numaNodeOfCPUs(sysfsRoot);
  const byCPU = new Map<number, CPUInfo>();
  for (const cpu of online.list()) {
    const topo = path.join(cpuDir, `cpu${cpu}`, 'topology');
    const siblings = CPUSet.parse(await readText(path.join(topo, 'thread_siblings_list')));
    const socketId = Number(await readText(path.join(topo, 'physical_package_id')));
    const coreId = siblings.intersection(online).list()[0] ?? cpu;
    byCPU.set(cpu, { coreId, socketId, numaNodeId: numaOf.get(cpu) ?? 0 });
  }
  if (byCPU.size === 0) throw new KubeletError('CPU_ALLOCATION_FAILED', `no online CPUs under ${cpuDir}`);
  return new CPUTopology(new CPUDetails(byCPU));
}
