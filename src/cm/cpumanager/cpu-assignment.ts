/**
 * Choosing CPUs for an exclusive request so it sits on as few NUMA nodes, sockets and cores as
 * possible (upstream: cpumanager/cpu_assignment.go takeByTopologyNUMAPacked): whole NUMA nodes or
 * sockets first (whichever level is bigger), then the other level, then whole cores, then single
 * threads; at each level the emptiest-remaining unit first, so partly used units fill up before
 * fresh ones are broken into.
 */
import { KubeletError } from '../../lib/errors.js';
import { CPUSet } from './cpu-set.js';
import type { CPUDetails, CPUTopology } from './topology.js';

export const NOT_ENOUGH_CPUS = 'not enough cpus available to satisfy request';

export class CPUAccumulator {
  /** The CPUs still available, with their places. */
  details: CPUDetails;
  result = CPUSet.EMPTY;
  needed: number;
  /** More sockets than NUMA nodes (or as many): NUMA nodes are the smaller unit, sockets hold them. */
  private readonly numaFirst: boolean;

  constructor(
    private readonly topo: CPUTopology,
    available: CPUSet,
    numCPUs: number,
  ) {
    this.details = topo.details.keepOnly(available);
    this.needed = numCPUs;
    this.numaFirst = topo.numSockets >= topo.numNUMANodes;
  }

  /** Fewest available CPUs first, then lowest id (upstream's acc.sort). */
  private sortBy(ids: number[], cpusIn: (id: number) => CPUSet): number[] {
    const size = new Map(ids.map((id) => [id, cpusIn(id).size]));
    return ids.sort((a, b) => (size.get(a) ?? 0) - (size.get(b) ?? 0) || a - b);
  }

  sortedNUMANodes(): number[] {
    const d = this.details;
    if (this.numaFirst) return this.sortBy(d.numaNodes().list(), (n) => d.cpusInNUMANodes(n));
    return this.sortedSockets().flatMap((s) =>
      this.sortBy(d.numaNodesInSockets(s).list(), (n) => d.cpusInNUMANodes(n)),
    );
  }

  sortedSockets(): number[] {
    const d = this.details;
    if (!this.numaFirst) return this.sortBy(d.sockets().list(), (s) => d.cpusInSockets(s));
    return this.sortedNUMANodes().flatMap((n) =>
      this.sortBy(d.socketsInNUMANodes(n).list(), (s) => d.cpusInSockets(s)),
    );
  }

  private sortedCores(): number[] {
    const d = this.details;
    if (this.numaFirst)
      return this.sortedSockets().flatMap((s) =>
        this.sortBy(d.coresInSockets(s).list(), (c) => d.cpusInCores(c)),
      );
    return this.sortedNUMANodes().flatMap((n) =>
      this.sortBy(d.coresInNUMANodes(n).list(), (c) => d.cpusInCores(c)),
    );
  }

  private sortedCPUs(): number[] {
    return this.sortedCores().flatMap((c) => this.details.cpusInCores(c).list());
  }

  take(cpus: CPUSet): void {
    this.result = this.result.union(cpus);
    this.details = this.details.keepOnly(this.details.cpus().difference(this.result));
    this.needed -= cpus.size;
  }

  takeFullNUMANodes(): void {
    for (const numa of this.sortedNUMANodes()) {
      const all = this.topo.details.cpusInNUMANodes(numa);
      if (this.details.cpusInNUMANodes(numa).size !== all.size || this.needed < all.size) continue;
      this.take(all);
    }
  }

  takeFullSockets(): void {
    for (const socket of this.sortedSockets()) {
      const all = this.topo.details.cpusInSockets(socket);
      if (this.details.cpusInSockets(socket).size !== this.topo.cpusPerSocket() || this.needed < all.size)
        continue;
      this.take(all);
    }
  }

  takeFullCores(): void {
    for (const core of this.sortedCores()) {
      const all = this.topo.details.cpusInCores(core);
      if (this.details.cpusInCores(core).size !== this.topo.cpusPerCore() || this.needed < all.size) continue;
      this.take(all);
    }
  }

  takeRemainingCPUs(): void {
    for (const cpu of this.sortedCPUs()) {
      this.take(CPUSet.of(cpu));
      if (this.isSatisfied()) return;
    }
  }

  isSatisfied(): boolean {
    return this.needed < 1;
  }

  isFailed(): boolean {
    return this.needed > this.details.cpus().size;
  }

  takeFirstLevel(): void {
    if (this.numaFirst) this.takeFullNUMANodes();
    else this.takeFullSockets();
  }

  takeSecondLevel(): void {
    if (this.numaFirst) this.takeFullSockets();
    else this.takeFullNUMANodes();
  }
}

/** numCPUs of available, packed by topology; throws NOT_ENOUGH_CPUS when available is too small. */
export function takeByTopologyNUMAPacked(topo: CPUTopology, available: CPUSet, numCPUs: number): CPUSet {
  const acc = new CPUAccumulator(topo, available, numCPUs);
  if (acc.isSatisfied()) return acc.result;
  if (acc.isFailed()) throw new KubeletError('CPU_ALLOCATION_FAILED', NOT_ENOUGH_CPUS);
  const steps = [
    (): void => acc.takeFirstLevel(),
    (): void => acc.takeSecondLevel(),
    (): void => acc.takeFullCores(),
    (): void => acc.takeRemainingCPUs(),
  ];
  for (const step of steps) {
    step();
    if (acc.isSatisfied()) return acc.result;
  }
  throw new KubeletError('CPU_ALLOCATION_FAILED', 'failed to allocate cpus');
}
