/**
 * The Static memory manager policy (upstream: memorymanager/policy_static.go, v1.28): each container
 * of a Guaranteed pod gets its memory and huge pages from a set of NUMA nodes, the smallest set that
 * can hold them, booked in the machine state so no other container is promised the same bytes. Nodes
 * used together by one allocation form a group (their `cells`) and are from then on only used as
 * that group. An init container's memory goes back to its pod's next containers, which never run
 * alongside it.
 */
import type { Container, Pod } from '../../api/core-v1.js';
import { getPodQOS } from '../../api/qos.js';
import { parseQuantity } from '../../api/quantity.js';
import { KubeletError } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import type { TopologyAffinityStore, TopologyHint } from '../topologymanager/topology-hint.js';
import type { MemoryBlock, MemoryManagerState, MemoryTable, NUMANodeMap } from './memory-state.js';
import { findBestHint, isHintInGroup, maskKey, sameNodes } from './numa-masks.js';
import { calculateHints, type ReusableMemory } from './static-hints.js';
import { hugePageResourceName, isHugePageResourceName, type NUMANodeMemory } from './numa-memory.js';

const log = logger('memorymanager');

export const POLICY_STATIC = 'Static';
export const POLICY_NONE = 'None';

/** NUMA node → resource name → bytes kept for the system (from reservedMemory). */
export type SystemReservedMemory = Map<number, Map<string, number>>;

/** Hints keyed by resource; undefined is upstream's nil map (no preference). */
export type MemoryHints = Map<string, TopologyHint[]> | undefined;

export function memoryError(message: string): KubeletError {
  return new KubeletError('MEMORY_ALLOCATION_FAILED', message);
}

/** What the manager asks of a policy (upstream: memorymanager.Policy). */
export interface MemoryPolicy {
  readonly name: string;
  start(s: MemoryManagerState): void;
  allocate(s: MemoryManagerState, pod: Pod, container: Container): void;
  removeContainer(s: MemoryManagerState, podUID: string, containerName: string): void;
  getTopologyHints(s: MemoryManagerState, pod: Pod, container: Container): MemoryHints;
  getPodTopologyHints(s: MemoryManagerState, pod: Pod): MemoryHints;
  getAllocatableMemory(s: MemoryManagerState): MemoryBlock[];
}

/** The None policy: memory is not managed (upstream: policy_none.go). */
export const nonePolicy: MemoryPolicy = {
  name: POLICY_NONE,
  start: () => undefined,
  allocate: () => undefined,
  removeContainer: () => undefined,
  getTopologyHints: () => undefined,
  getPodTopologyHints: () => undefined,
  getAllocatableMemory: () => [],
};

const podRef = (pod: Pod): string => `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;

/** The container's memory and huge page requests in bytes (upstream: getRequestedResources). */
export function requestedResources(container: Container): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, q] of Object.entries(container.resources?.requests ?? {})) {
    if (name !== 'memory' && !isHugePageResourceName(name)) continue;
    const nano = parseQuantity(q).nano;
    // Quantity.AsInt64 fails for a fraction of a byte or a value past int64.
    if (nano % 1_000_000_000n !== 0n || nano / 1_000_000_000n > BigInt(Number.MAX_SAFE_INTEGER))
      throw memoryError('[memorymanager] failed to represent quantity as int64');
    out.set(name, Number(nano / 1_000_000_000n));
  }
  return out;
}

/** The most any init container asks for, or the sum of the app containers, per resource (upstream). */
export function podRequestedResources(pod: Pod): Map<string, number> {
  const byInit = new Map<string, number>();
  for (const c of pod.spec.initContainers ?? [])
    for (const [name, size] of requestedResources(c)) byInit.set(name, Math.max(byInit.get(name) ?? 0, size));
  const byApp = new Map<string, number>();
  for (const c of pod.spec.containers)
    for (const [name, size] of requestedResources(c)) byApp.set(name, (byApp.get(name) ?? 0) + size);
  for (const [name, size] of byApp) byApp.set(name, Math.max(size, byInit.get(name) ?? 0));
  return byApp;
}

/** A resource's table on a node; undefined when the node has none of it (upstream would dereference nil). */
function table(machine: NUMANodeMap, nodeID: number, resource: string): MemoryTable | undefined {
  return machine.get(nodeID)?.memoryMap?.get(resource) ?? undefined;
}

function isAffinitySatisfyRequest(
  machine: NUMANodeMap,
  mask: readonly number[],
  requested: ReadonlyMap<string, number>,
): boolean {
  for (const [name, size] of requested) {
    const free = mask.reduce((sum, id) => sum + (table(machine, id, name)?.free ?? 0), 0);
    if (free < size) return false;
  }
  return true;
}

export class StaticPolicy implements MemoryPolicy {
  readonly name = POLICY_STATIC;
  /** podUID → mask → resource → bytes its init containers held, reusable by its next containers. */
  private readonly reusable: ReusableMemory = new Map();

  constructor(
    private readonly machine: readonly NUMANodeMemory[],
    private readonly systemReserved: SystemReservedMemory,
    private readonly affinity: TopologyAffinityStore,
  ) {
    let total = 0;
    for (const node of systemReserved.values()) total += node.get('memory') ?? 0;
    if (total <= 0) throw memoryError('[memorymanager] you should specify the system reserved memory');
  }

  start(s: MemoryManagerState): void {
    try {
      this.validateState(s);
    } catch (err) {
      log.error('Invalid state, please drain node and remove policy state file', { err: String(err) });
      throw err;
    }
  }

  allocate(s: MemoryManagerState, pod: Pod, container: Container): void {
    if (getPodQOS(pod) !== 'Guaranteed') return;
    const uid = pod.metadata.uid ?? '';
    log.info('Allocate', { pod: podRef(pod), containerName: container.name });
    const existing = s.getMemoryBlocks(uid, container.name);
    if (existing) {
      this.updatePodReusableMemory(pod, container, existing);
      log.info('Container already present in state, skipping', {
        pod: podRef(pod),
        containerName: container.name,
      });
      return;
    }
    const hint = this.affinity.getAffinity(uid, container.name);
    log.info('Got topology affinity', { pod: podRef(pod), podUID: uid, containerName: container.name, hint });
    const requested = requestedResources(container);
    const machine = s.getMachineState();
    let best = hint;
    // No affinity from the topology manager: the narrowest one this policy would have offered.
    if (hint.numaNodeAffinity === null) {
      const defaultHint = this.defaultHint(machine, pod, requested);
      if (!defaultHint.preferred && best.preferred)
        throw memoryError('[memorymanager] failed to find the default preferred hint');
      best = defaultHint;
    }
    // The merged hint may be narrower than what the request needs (restricted): widen it.
    if (!isAffinitySatisfyRequest(machine, best.numaNodeAffinity ?? [], requested)) {
      const extended = this.extendHint(machine, pod, requested, best.numaNodeAffinity ?? []);
      if (!extended.preferred && best.preferred)
        throw memoryError('[memorymanager] failed to find the extended preferred hint');
      best = extended;
    }
    const mask = [...(best.numaNodeAffinity ?? [])].sort((a, b) => a - b);
    const blocks: MemoryBlock[] = [];
    for (const [name, size] of requested) {
      blocks.push({ numaAffinity: mask, type: name, size });
      const reusable = this.podReusableMemory(uid, mask, name);
      this.updateMachineState(machine, mask, name, reusable >= size ? 0 : size - reusable);
    }
    this.updatePodReusableMemory(pod, container, blocks);
    s.setMachineState(machine);
    s.setMemoryBlocks(uid, container.name, blocks);
    // So that the blocks of a pod add up to what it holds, its init containers' blocks shrink by what
    // this container reused of them.
    this.updateInitContainersMemoryBlocks(s, pod, container, blocks);
  }

  /** Books size bytes of resource on the mask's nodes, filling each before the next. */
  private updateMachineState(machine: NUMANodeMap, mask: number[], resource: string, size: number): void {
    let left = size;
    for (const id of mask) {
      const node = machine.get(id);
      if (!node) continue;
      node.numberOfAssignments++;
      node.cells = [...mask];
      if (left === 0) continue;
      const t = node.memoryMap?.get(resource);
      if (!t || t.free <= 0) continue;
      const take = Math.min(t.free, left);
      t.reserved += take;
      t.free -= take;
      left -= take;
    }
  }

  removeContainer(s: MemoryManagerState, podUID: string, containerName: string): void {
    const blocks = s.getMemoryBlocks(podUID, containerName);
    if (!blocks) return;
    log.info('RemoveContainer', { podUID, containerName });
    s.delete(podUID, containerName);
    const machine = s.getMachineState();
    for (const b of blocks) {
      let released = b.size;
      for (const id of b.numaAffinity ?? []) {
        const node = machine.get(id);
        if (!node) continue;
        node.numberOfAssignments--;
        // A node with nothing left on it leaves its group.
        if (node.numberOfAssignments === 0) node.cells = [id];
        if (released === 0) continue;
        const t = node.memoryMap?.get(b.type);
        if (!t || t.reserved === 0) continue;
        const give = Math.min(t.reserved, released);
        t.free += give;
        t.reserved -= give;
        released -= give;
      }
    }
    s.setMachineState(machine);
  }

  getTopologyHints(s: MemoryManagerState, pod: Pod, container: Container): MemoryHints {
    if (getPodQOS(pod) !== 'Guaranteed') return undefined;
    let requested: Map<string, number>;
    try {
      requested = requestedResources(container);
    } catch (err) {
      log.error('Failed to get container requested resources', {
        pod: podRef(pod),
        containerName: container.name,
        err: String(err),
      });
      return undefined;
    }
    // Memory already given (after a restart, say): the same hints again.
    const blocks = s.getMemoryBlocks(pod.metadata.uid ?? '', container.name);
    if (blocks) return regenerateHints(pod, container, blocks, requested);
    return calculateHints(s.getMachineState(), pod.metadata.uid ?? '', requested, this.reusable);
  }

  getPodTopologyHints(s: MemoryManagerState, pod: Pod): MemoryHints {
    if (getPodQOS(pod) !== 'Guaranteed') return undefined;
    let requested: Map<string, number>;
    try {
      requested = podRequestedResources(pod);
    } catch (err) {
      log.error('Failed to get pod requested resources', { pod: podRef(pod), err: String(err) });
      return undefined;
    }
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
      const blocks = s.getMemoryBlocks(pod.metadata.uid ?? '', c.name);
      if (blocks) return regenerateHints(pod, c, blocks, requested);
    }
    return calculateHints(s.getMachineState(), pod.metadata.uid ?? '', requested, this.reusable);
  }

  /** One block per node and resource the node has allocatable memory of (upstream: GetAllocatableMemory). */
  getAllocatableMemory(s: MemoryManagerState): MemoryBlock[] {
    const out: MemoryBlock[] = [];
    const machine = s.getMachineState();
    for (const id of [...machine.keys()].sort((a, b) => a - b)) {
      const map = machine.get(id)?.memoryMap;
      for (const [type, t] of [...(map ?? [])].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        if (t.allocatable !== 0) out.push({ numaAffinity: [id], type, size: t.allocatable });
    }
    return out;
  }

  private defaultHint(machine: NUMANodeMap, pod: Pod, requested: Map<string, number>): TopologyHint {
    const hints = calculateHints(machine, pod.metadata.uid ?? '', requested, this.reusable);
    const memoryHints = hints.get('memory') ?? [];
    if (hints.size < 1 || memoryHints.length < 1)
      throw memoryError(
        '[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available',
      );
    // Every memory type gets the same hints: those of regular memory decide.
    return findBestHint(memoryHints);
  }

  /** The narrowest offered hint that holds mask (upstream: extendTopologyManagerHint). */
  private extendHint(
    machine: NUMANodeMap,
    pod: Pod,
    requested: Map<string, number>,
    mask: readonly number[],
  ): TopologyHint {
    const hints = calculateHints(machine, pod.metadata.uid ?? '', requested, this.reusable);
    const filtered = (hints.get('memory') ?? []).filter((h) => isHintInGroup(mask, h.numaNodeAffinity ?? []));
    if (filtered.length < 1)
      throw memoryError('[memorymanager] failed to find NUMA nodes to extend the current topology hint');
    return findBestHint(filtered);
  }

  private podReusableMemory(podUID: string, mask: readonly number[] | null, resource: string): number {
    return this.reusable.get(podUID)?.get(maskKey(mask))?.get(resource) ?? 0;
  }

  private updatePodReusableMemory(pod: Pod, container: Container, blocks: readonly MemoryBlock[]): void {
    const uid = pod.metadata.uid ?? '';
    // Only the pod being admitted can reuse anything: the others' entries go.
    for (const other of [...this.reusable.keys()]) if (other !== uid) this.reusable.delete(other);
    if (isInitContainer(pod, container)) {
      let byMask = this.reusable.get(uid);
      if (!byMask) this.reusable.set(uid, (byMask = new Map()));
      for (const b of blocks) {
        const key = maskKey(b.numaAffinity);
        let byType = byMask.get(key);
        if (!byType) byMask.set(key, (byType = new Map()));
        if (b.size > (byType.get(b.type) ?? 0)) byType.set(b.type, b.size);
      }
      return;
    }
    for (const b of blocks) {
      const reusable = this.podReusableMemory(uid, b.numaAffinity, b.type);
      if (reusable === 0) continue;
      const byType = this.reusable.get(uid)?.get(maskKey(b.numaAffinity));
      byType?.set(b.type, b.size >= reusable ? 0 : reusable - b.size);
    }
  }

  private updateInitContainersMemoryBlocks(
    s: MemoryManagerState,
    pod: Pod,
    container: Container,
    containerBlocks: readonly MemoryBlock[],
  ): void {
    const uid = pod.metadata.uid ?? '';
    for (const cb of containerBlocks) {
      let left = cb.size;
      for (const init of pod.spec.initContainers ?? []) {
        if (init.name === container.name || left === 0) break;
        const initBlocks = s.getMemoryBlocks(uid, init.name);
        if (!initBlocks || initBlocks.length === 0) continue;
        for (const ib of initBlocks) {
          if (ib.size === 0 || ib.type !== cb.type || !sameNodes(ib.numaAffinity, cb.numaAffinity)) continue;
          const take = Math.min(ib.size, left);
          ib.size -= take;
          left -= take;
        }
        s.setMemoryBlocks(uid, init.name, initBlocks);
      }
    }
  }

  /** Each node's tables before any allocation: its memory and pools less what is reserved for the system. */
  defaultMachineState(): NUMANodeMap {
    const out: NUMANodeMap = new Map();
    for (const node of this.machine) {
      const memoryMap = new Map<string, MemoryTable>();
      let hugePagesBytes = 0;
      for (const pool of node.hugePages) {
        const name = hugePageResourceName(pool.pageSizeKiB);
        const total = pool.numPages * pool.pageSizeKiB * 1024;
        const reserved = this.reservedOf(node.id, name, total);
        memoryMap.set(name, tableOf(total, reserved, total - reserved));
        hugePagesBytes += total;
      }
      const reserved = this.reservedOf(node.id, 'memory', node.memoryBytes - hugePagesBytes);
      // Memory held by huge page pools cannot be given as regular memory.
      memoryMap.set(
        'memory',
        tableOf(node.memoryBytes, reserved, node.memoryBytes - reserved - hugePagesBytes),
      );
      out.set(node.id, { numberOfAssignments: 0, memoryMap, cells: [node.id] });
    }
    return out;
  }

  /** Upstream subtracts in uint64 and would wrap around; a reservation past what the node has is refused. */
  private reservedOf(nodeID: number, resource: string, available: number): number {
    const reserved = this.systemReserved.get(nodeID)?.get(resource) ?? 0;
    if (reserved > available)
      throw memoryError(
        `[memorymanager] the reserved memory ${reserved} of type "${resource}" on NUMA node ${nodeID} is more than the ${available} it has`,
      );
    return reserved;
  }

  private validateState(s: MemoryManagerState): void {
    const machine = s.getMachineState();
    const assignments = s.getMemoryAssignments();
    if (machine.size === 0) {
      if (assignments.size !== 0)
        throw memoryError('[memorymanager] machine state can not be empty when it has memory assignments');
      s.setMachineState(this.defaultMachineState());
      return;
    }
    // Replays every assignment on a fresh machine state: it must come out as the one stored, or the
    // machine or the reservations changed since it was written.
    const expected = this.defaultMachineState();
    for (const [podUID, containers] of assignments)
      for (const [containerName, blocks] of containers)
        for (const b of blocks) {
          let left = b.size;
          for (const id of b.numaAffinity ?? []) {
            const node = expected.get(id);
            if (!node)
              throw memoryError(
                `[memorymanager] (pod: ${podUID}, container: ${containerName}) the memory assignment uses the NUMA that does not exist`,
              );
            node.numberOfAssignments++;
            node.cells = [...(b.numaAffinity ?? [])];
            const t = node.memoryMap?.get(b.type);
            if (!t)
              throw memoryError(
                `[memorymanager] (pod: ${podUID}, container: ${containerName}) the memory assignment uses memory resource that does not exist`,
              );
            if (left === 0 || t.free <= 0) continue;
            const take = Math.min(t.free, left);
            t.reserved += take;
            t.free -= take;
            left -= take;
          }
        }
    if (!areMachineStatesEqual(machine, expected))
      throw memoryError('[memorymanager] the expected machine state is different from the real one');
  }
}

function tableOf(total: number, systemReserved: number, allocatable: number): MemoryTable {
  return { total, systemReserved, allocatable, reserved: 0, free: allocatable };
}

function isInitContainer(pod: Pod, container: Container): boolean {
  return (pod.spec.initContainers ?? []).some((c) => c.name === container.name);
}

/** The hints of memory already given: its nodes, preferred (upstream: regenerateHints). */
function regenerateHints(
  pod: Pod,
  container: Container,
  blocks: readonly MemoryBlock[],
  requested: ReadonlyMap<string, number>,
): MemoryHints {
  const hints = new Map<string, TopologyHint[]>([...requested.keys()].map((k) => [k, []]));
  if (blocks.length !== requested.size) {
    log.error('The number of requested resources by the container differs from the number of memory blocks', {
      containerName: container.name,
    });
    return undefined;
  }
  for (const b of blocks) {
    const want = requested.get(b.type);
    if (want === undefined) {
      log.error('Container requested resources do not have resource of this type', {
        containerName: container.name,
        type: b.type,
      });
      return undefined;
    }
    if (b.size !== want) {
      log.error('Memory already allocated with different numbers than requested', {
        podUID: pod.metadata.uid,
        type: b.type,
        containerName: container.name,
        requestedResource: want,
        allocatedSize: b.size,
      });
      return undefined;
    }
    log.info('Regenerating TopologyHints, resource was already allocated to pod', {
      resourceName: b.type,
      pod: podRef(pod),
      containerName: container.name,
    });
    hints.get(b.type)!.push({
      numaNodeAffinity: [...(b.numaAffinity ?? [])].sort((x, y) => x - y),
      preferred: true,
    });
  }
  return hints;
}

function areMachineStatesEqual(a: NUMANodeMap, b: NUMANodeMap): boolean {
  if (a.size !== b.size) return false;
  for (const [id, s1] of a) {
    const s2 = b.get(id);
    if (!s2 || s1.numberOfAssignments !== s2.numberOfAssignments) return false;
    if (!sameNodes(s1.cells, s2.cells)) return false;
    const m1 = s1.memoryMap ?? new Map<string, MemoryTable>();
    const m2 = s2.memoryMap ?? new Map<string, MemoryTable>();
    if (m1.size !== m2.size) return false;
    for (const [name, t1] of m1) {
      const t2 = m2.get(name);
      if (!t2) return false;
      const keys = ['total', 'systemReserved', 'allocatable', 'reserved', 'free'] as const;
      if (keys.some((k) => t1[k] !== t2[k])) {
        log.error('Memory states for the NUMA node and resource are different', { node: id, resource: name });
        return false;
      }
    }
  }
  return true;
}
