/**
 * The memory manager's state (upstream: memorymanager/state): the machine state (for each NUMA node,
 * each memory type's totals and how much is free, and which nodes it is grouped with) and each
 * container's memory blocks. Sizes are bytes, kept as numbers: exact up to 8 PiB, far above a node.
 * Getters hand out copies and setters take copies, as upstream's in-memory state does, so the policy
 * can change what it read and decide whether to store it.
 */

/** One memory type on one NUMA node (upstream: MemoryTable; JSON names as the checkpoint's). */
export interface MemoryTable {
  total: number;
  systemReserved: number;
  allocatable: number;
  reserved: number;
  free: number;
}

export interface NUMANodeState {
  /** Blocks placed on this node; a container with memory and huge pages counts twice. */
  numberOfAssignments: number;
  /** Resource name (memory, hugepages-2Mi) → its table; null is Go's nil map (only from a file). */
  memoryMap: Map<string, MemoryTable> | null;
  /** This node and those it is grouped with by a multi-node allocation; null is Go's nil slice. */
  cells: number[] | null;
}

/** NUMA node ID → its state. */
export type NUMANodeMap = Map<number, NUMANodeState>;

/** An amount of one memory type on a set of NUMA nodes (upstream: state.Block). */
export interface MemoryBlock {
  /** null is Go's nil slice (only from a file). */
  numaAffinity: number[] | null;
  type: string;
  size: number;
}

/** podUID → container name → its blocks. */
export type ContainerMemoryAssignments = Map<string, Map<string, MemoryBlock[]>>;

export function cloneNUMANodeMap(m: NUMANodeMap): NUMANodeMap {
  const out: NUMANodeMap = new Map();
  for (const [id, s] of m)
    out.set(id, {
      numberOfAssignments: s.numberOfAssignments,
      memoryMap: s.memoryMap && new Map([...s.memoryMap].map(([k, t]) => [k, { ...t }])),
      cells: s.cells && [...s.cells],
    });
  return out;
}

function cloneBlocks(blocks: readonly MemoryBlock[]): MemoryBlock[] {
  return blocks.map((b) => ({ ...b, numaAffinity: b.numaAffinity && [...b.numaAffinity] }));
}

export function cloneAssignments(a: ContainerMemoryAssignments): ContainerMemoryAssignments {
  return new Map(
    [...a].map(([uid, m]) => [uid, new Map([...m].map(([name, blocks]) => [name, cloneBlocks(blocks)]))]),
  );
}

export class MemoryManagerState {
  private machineState: NUMANodeMap = new Map();
  private assignments: ContainerMemoryAssignments = new Map();
  /** Counts the changes, so the manager writes the checkpoint only when there is something new. */
  generation = 0;

  getMachineState(): NUMANodeMap {
    return cloneNUMANodeMap(this.machineState);
  }

  setMachineState(m: NUMANodeMap): void {
    this.machineState = cloneNUMANodeMap(m);
    this.generation++;
  }

  /** undefined when the container has no blocks (upstream's nil). */
  getMemoryBlocks(podUID: string, containerName: string): MemoryBlock[] | undefined {
    const blocks = this.assignments.get(podUID)?.get(containerName);
    return blocks && cloneBlocks(blocks);
  }

  setMemoryBlocks(podUID: string, containerName: string, blocks: readonly MemoryBlock[]): void {
    let pod = this.assignments.get(podUID);
    if (!pod) this.assignments.set(podUID, (pod = new Map()));
    pod.set(containerName, cloneBlocks(blocks));
    this.generation++;
  }

  getMemoryAssignments(): ContainerMemoryAssignments {
    return cloneAssignments(this.assignments);
  }

  setMemoryAssignments(a: ContainerMemoryAssignments): void {
    this.assignments = cloneAssignments(a);
    this.generation++;
  }

  delete(podUID: string, containerName: string): void {
    const pod = this.assignments.get(podUID);
    if (!pod) return;
    pod.delete(containerName);
    if (pod.size === 0) this.assignments.delete(podUID);
    this.generation++;
  }
}
