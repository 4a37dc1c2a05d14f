/**
 * The memory manager (upstream: memorymanager/memory_manager.go). Under the Static policy it books
 * the memory and huge pages of Guaranteed pods' containers on NUMA nodes at admission, offers the
 * topology manager its hints, tells container creation which nodes to use (`cpuset.mems`), frees
 * what pods no longer active held, and keeps its state in `<root-dir>/memory_manager_state`. Under
 * None it manages nothing but still keeps the file, as upstream does, so a node cannot switch policy
 * without it being removed first.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Container, Pod } from '../../api/core-v1.js';
import type { ResourceQuantity } from '../../api/quantity.js';
import { errorMessage, KubeletError } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import type {
  HintProvider,
  TopologyAffinityStore,
  TopologyHint,
  TopologyHints,
} from '../topologymanager/topology-hint.js';
import {
  MEMORY_MANAGER_CHECKPOINT,
  readMemoryManagerCheckpoint,
  writeMemoryManagerCheckpoint,
  type MemoryManagerCheckpoint,
} from './checkpoint.js';
import { MemoryManagerState, type MemoryBlock } from './memory-state.js';
import { readNUMANodeMemory } from './numa-memory.js';
import { nonePolicy, POLICY_NONE, POLICY_STATIC, StaticPolicy, type MemoryPolicy } from './policy-static.js';
import { systemReservedMemory, type MemoryReservation } from './reserved-memory.js';

const log = logger('memorymanager');

export interface MemoryManagerConfig {
  /** memoryManagerPolicy: `None` or `Static`. */
  policyName: string;
  reservedMemory: readonly MemoryReservation[];
  /**
   * What node allocatable keeps back per resource: systemReserved + kubeReserved + the hard eviction
   * threshold (upstream: GetNodeAllocatableReservation). Read only under Static.
   */
  nodeAllocatableReservation: () => Promise<Readonly<Record<string, ResourceQuantity>>>;
  rootDir: string;
  /** Where sysfs is (tests give a fake tree); /sys by default. */
  sysfsRoot?: string;
  /** The topology manager's chosen affinities; absent, every container's is "anywhere". */
  affinity?: TopologyAffinityStore;
}

export type ActivePods = () => readonly Pod[];

/** Without a topology manager every affinity is upstream's empty hint: the policy picks the nodes. */
const ANYWHERE: TopologyAffinityStore = {
  getAffinity: (): TopologyHint => ({ numaNodeAffinity: null, preferred: false }),
  getPolicyName: () => 'none',
};

/** Throws, as upstream refuses to start, for an unknown policy, a bad reservation or a bad state file. */
export async function createMemoryManager(config: MemoryManagerConfig): Promise<MemoryManager> {
  let policy: MemoryPolicy;
  if (config.policyName === POLICY_NONE) policy = nonePolicy;
  else if (config.policyName === POLICY_STATIC) {
    const machine = await readNUMANodeMemory(config.sysfsRoot);
    const reserved = systemReservedMemory(
      machine.map((n) => n.id),
      await config.nodeAllocatableReservation(),
      config.reservedMemory,
    );
    policy = new StaticPolicy(machine, reserved, config.affinity ?? ANYWHERE);
  } else throw new KubeletError('INVALID_CONFIG', `unknown policy: "${config.policyName}"`);
  const manager = new MemoryManager(config.rootDir, policy);
  await manager.restoreState();
  return manager;
}

export class MemoryManager implements HintProvider {
  private readonly state = new MemoryManagerState();
  private activePods: ActivePods | undefined;
  /** The pod being admitted: not active yet, its state must not be taken for stale. */
  private pendingAdmissionPod: Pod | undefined;
  private allocatableMemory: MemoryBlock[] = [];
  private writes: Promise<void> = Promise.resolve();
  /** The state's generation the last queued write will store. */
  private storedGeneration = -1;

  constructor(
    private readonly rootDir: string,
    readonly policy: MemoryPolicy,
  ) {}

  get policyName(): string {
    return this.policy.name;
  }

  /** Reads the checkpoint (refusing another policy's or a corrupt one), checks it, writes it back. */
  async restoreState(): Promise<void> {
    const file = path.join(this.rootDir, MEMORY_MANAGER_CHECKPOINT);
    const refuse = (why: string): KubeletError =>
      new KubeletError(
        'MEMORY_ALLOCATION_FAILED',
        `could not restore state from checkpoint: ${why}, please drain this node and delete the memory manager checkpoint file "${file}" before restarting Kubelet`,
      );
    let cp: MemoryManagerCheckpoint | undefined;
    // Upstream's checkpoint manager makes its folder (the root dir) on first use.
    await mkdir(this.rootDir, { recursive: true, mode: 0o755 });
    try {
      cp = await readMemoryManagerCheckpoint(this.rootDir);
    } catch (err) {
      throw refuse(errorMessage(err));
    }
    if (cp) {
      if (cp.policyName !== this.policy.name)
        throw refuse(
          `[memorymanager] configured policy "${this.policy.name}" differs from state checkpoint policy "${cp.policyName}"`,
        );
      this.state.setMachineState(cp.machineState ?? new Map());
      this.state.setMemoryAssignments(cp.entries ?? new Map());
      log.v(2, 'State checkpoint: restored state from checkpoint');
    }
    this.policy.start(this.state);
    this.allocatableMemory = this.policy.getAllocatableMemory(this.state);
    await this.storeState();
  }

  /** From here on, state of pods no longer active is freed (upstream: Start's activePods). */
  start(activePods: ActivePods): void {
    log.info('Starting memorymanager', { policy: this.policy.name });
    this.activePods = activePods;
  }

  async stop(): Promise<void> {
    await this.writes;
  }

  getTopologyHints(pod: Pod, container: Container): TopologyHints {
    this.pendingAdmissionPod = pod;
    this.removeStaleState();
    return this.policy.getTopologyHints(this.state, pod, container);
  }

  getPodTopologyHints(pod: Pod): TopologyHints {
    this.pendingAdmissionPod = pod;
    this.removeStaleState();
    return this.policy.getPodTopologyHints(this.state, pod);
  }

  /** Books the container's memory (Guaranteed pods only); throws the policy's error. */
  allocate(pod: Pod, container: Container): void {
    this.pendingAdmissionPod = pod;
    this.removeStaleState();
    try {
      this.policy.allocate(this.state, pod, container);
    } catch (err) {
      log.error('Allocate error', { err: errorMessage(err) });
      throw err;
    } finally {
      this.queueStore();
    }
  }

  removeContainer(podUID: string, containerName: string): void {
    this.policy.removeContainer(this.state, podUID, containerName);
    this.queueStore();
  }

  /**
   * The `cpuset.mems` a new container is created with: the NUMA nodes of its blocks, "0,1", or ''
   * for none (upstream: PreCreateContainer's GetMemoryNUMANodes). The container starts next, so
   * upstream's AddContainer step runs here too: the pod's init containers before it have finished,
   * and their memory goes back.
   */
  cpusetMemsFor(pod: Pod, container: Container): string {
    const uid = pod.metadata.uid ?? '';
    const nodes = new Set<number>();
    for (const b of this.state.getMemoryBlocks(uid, container.name) ?? [])
      for (const id of b.numaAffinity ?? []) nodes.add(id);
    let released = false;
    for (const init of pod.spec.initContainers ?? []) {
      if (init.name === container.name) break;
      if (!this.state.getMemoryBlocks(uid, init.name)) continue;
      this.policy.removeContainer(this.state, uid, init.name);
      released = true;
    }
    if (released) this.queueStore();
    if (nodes.size === 0) return '';
    const list = [...nodes].sort((a, b) => a - b);
    log.info('Memory affinity', {
      pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
      containerName: container.name,
      numaNodes: list,
    });
    return list.join(',');
  }

  /** For the pod resources API: the container's blocks (upstream: GetMemory). */
  getMemory(podUID: string, containerName: string): MemoryBlock[] {
    return this.state.getMemoryBlocks(podUID, containerName) ?? [];
  }

  /** For the pod resources API: each node's allocatable memory, as it was at start (upstream). */
  getAllocatableMemory(): MemoryBlock[] {
    return this.allocatableMemory;
  }

  /** The state as the checkpoint holds it (for tests and the node page). */
  checkpoint(): MemoryManagerCheckpoint {
    return {
      policyName: this.policy.name,
      machineState: this.state.getMachineState(),
      entries: this.state.getMemoryAssignments(),
    };
  }

  /** Frees what containers of pods no longer active hold (upstream: removeStaleState). */
  private removeStaleState(): void {
    if (!this.activePods) return;
    const assignments = this.state.getMemoryAssignments();
    // Nothing held (the None policy, or no Guaranteed pod yet): nothing can be stale, and the active
    // pods need not be listed, which each admission of a burst of pods did for all pods before it.
    if (assignments.size === 0) return;
    const pods = [...this.activePods()];
    if (this.pendingAdmissionPod) pods.push(this.pendingAdmissionPod);
    const active = new Map<string, Set<string>>();
    for (const p of pods) {
      const names = active.get(p.metadata.uid ?? '') ?? new Set<string>();
      for (const c of [...(p.spec.initContainers ?? []), ...p.spec.containers]) names.add(c.name);
      active.set(p.metadata.uid ?? '', names);
    }
    let changed = false;
    for (const [uid, containers] of assignments)
      for (const name of containers.keys()) {
        if (active.get(uid)?.has(name)) continue;
        log.info('RemoveStaleState removing state', { podUID: uid, containerName: name });
        this.policy.removeContainer(this.state, uid, name);
        changed = true;
      }
    if (changed) this.queueStore();
  }

  private storeState(): Promise<void> {
    this.storedGeneration = this.state.generation;
    return writeMemoryManagerCheckpoint(this.rootDir, this.checkpoint());
  }

  /**
   * Writes one after another, each of the state as it is when its turn comes; nothing when the state
   * has not changed (a BestEffort pod, or any pod under None, writes nothing, as upstream).
   */
  private queueStore(): void {
    if (this.state.generation === this.storedGeneration) return;
    this.storedGeneration = this.state.generation;
    this.writes = this.writes.then(() =>
      this.storeState().catch((err: unknown) =>
        log.error('Store state to checkpoint error', { err: errorMessage(err) }),
      ),
    );
  }
}
