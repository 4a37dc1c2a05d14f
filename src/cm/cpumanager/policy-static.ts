/**
 * The static CPU manager policy (upstream: cpumanager/policy_static.go). Containers of Guaranteed
 * pods with an integer CPU request get CPUs of their own, taken out of the shared pool; every other
 * container runs on the shared pool. Reserved CPUs stay in the shared pool and are never handed out
 * exclusively. An init container's CPUs go back to its pod's next containers (they never run at once).
 */
import type { Container, Pod } from '../../api/core-v1.js';
import { getPodQOS } from '../../api/qos.js';
import { milliValueOf, parseQuantity, valueOf } from '../../api/quantity.js';
import { KubeletError } from '../../lib/errors.js';
import { iterateAffinities } from '../topologymanager/numa-affinity.js';
import type {
  NUMAAffinity,
  TopologyAffinityStore,
  TopologyHint,
  TopologyHints,
} from '../topologymanager/topology-hint.js';
import { takeByTopologyNUMAPacked } from './cpu-assignment.js';
import { takeByTopologyNUMADistributed } from './cpu-assignment-distributed.js';
import { CPUSet } from './cpu-set.js';
import type { CPUManagerState } from './cpu-state.js';
import {
  parseStaticPolicyOptions,
  validateStaticPolicyOptions,
  type PolicyOptionsContext,
  type StaticPolicyOptions,
} from './policy-options.js';
import type { CPUTopology } from './topology.js';

export const POLICY_STATIC = 'static';
export const POLICY_NONE = 'none';

/** Admission's failure reason for SMTAlignmentError (upstream's ErrorSMTAlignment). */
export const SMT_ALIGNMENT_ERROR = 'SMTAlignmentError';

/** Where the policy reads the affinity the topology manager chose; without one, none is chosen. */
const NO_AFFINITY_STORE: Pick<TopologyAffinityStore, 'getAffinity'> = {
  getAffinity: () => ({ numaNodeAffinity: null, preferred: false }),
};

/** full-pcpus-only cannot give the container whole physical cores. */
export class SMTAlignmentError extends KubeletError {
  constructor(
    readonly requestedCPUs: number,
    readonly cpusPerCore: number,
    readonly availablePhysicalCPUs = 0,
  ) {
    super(
      'CPU_ALLOCATION_FAILED',
      availablePhysicalCPUs > 0
        ? `SMT Alignment Error: not enough free physical CPUs: available physical CPUs = ${availablePhysicalCPUs}, requested CPUs = ${requestedCPUs}, CPUs per core = ${cpusPerCore}`
        : `SMT Alignment Error: requested ${requestedCPUs} cpus not multiple cpus per core = ${cpusPerCore}`,
    );
    this.name = 'SMTAlignmentError';
  }

  /** The admission failure reason, as upstream's Type(). */
  get reason(): string {
    return SMT_ALIGNMENT_ERROR;
  }
}

export class StaticPolicy {
  readonly reservedCPUs: CPUSet;
  /** Every thread of each core that holds a reserved CPU: off limits under full-pcpus-only. */
  readonly reservedPhysicalCPUs: CPUSet;
  readonly options: StaticPolicyOptions;
  /** podUID → CPUs its init containers held, reusable by its next containers. */
  private readonly cpusToReuse = new Map<string, CPUSet>();

  /**
   * reservedCPUs, when not empty, is the reservation (reservedSystemCPUs); otherwise numReservedCPUs
   * are taken by topology, lowest cores first.
   */
  constructor(
    readonly topology: CPUTopology,
    numReservedCPUs: number,
    reservedCPUs: CPUSet,
    options: Readonly<Record<string, string>> = {},
    context: PolicyOptionsContext = {},
    private readonly affinity: Pick<TopologyAffinityStore, 'getAffinity'> = NO_AFFINITY_STORE,
  ) {
    this.options = parseStaticPolicyOptions(options, context);
    validateStaticPolicyOptions(this.options, topology, context);
    const all = topology.details.cpus();
    let reserved = reservedCPUs;
    if (reserved.isEmpty()) {
      try {
        reserved = this.takeByTopology(all, numReservedCPUs);
      } catch {
        reserved = CPUSet.EMPTY;
      }
    }
    if (reserved.size !== numReservedCPUs)
      throw new KubeletError(
        'INVALID_CONFIG',
        `[cpumanager] unable to reserve the required amount of CPUs (size of ${reserved.toString()} did not equal ${numReservedCPUs})`,
      );
    this.reservedCPUs = reserved;
    this.reservedPhysicalCPUs = topology.details.cpusInCores(
      ...reserved.list().map((c) => topology.coreIdOf(c)),
    );
  }

  get name(): string {
    return POLICY_STATIC;
  }

  /** Checks state read back from the checkpoint, or starts an empty one with every CPU shared. */
  start(s: CPUManagerState): void {
    const assignments = s.getCPUAssignments();
    const shared = s.getDefaultCPUSet();
    const all = this.topology.details.cpus();
    const fail = (why: string): never => {
      throw new KubeletError(
        'CPU_ALLOCATION_FAILED',
        `static policy invalid state, please drain node and remove policy state file: ${why}`,
      );
    };
    if (shared.isEmpty()) {
      if (assignments.size !== 0) fail('default cpuset cannot be empty');
      s.setDefaultCPUSet(all);
      return;
    }
    if (!this.reservedCPUs.isSubsetOf(shared))
      fail(
        `not all reserved cpus: "${this.reservedCPUs.toString()}" are present in defaultCpuSet: "${shared.toString()}"`,
      );
    let known = shared;
    for (const [pod, containers] of assignments) {
      for (const [container, cpus] of containers) {
        if (!shared.intersection(cpus).isEmpty())
          fail(
            `pod: ${pod}, container: ${container} cpuset: "${cpus.toString()}" overlaps with default cpuset "${shared.toString()}"`,
          );
        known = known.union(cpus);
      }
    }
    if (!known.equals(all))
      fail(
        `current set of available CPUs "${all.toString()}" doesn't match with CPUs in state "${known.toString()}"`,
      );
  }

  /** The CPUs that can ever be exclusive: all but the reserved ones. */
  getAllocatableCPUs(): CPUSet {
    return this.topology.details.cpus().difference(this.reservedCPUs);
  }

  getAvailableCPUs(s: CPUManagerState): CPUSet {
    return s.getDefaultCPUSet().difference(this.reservedCPUs);
  }

  getAvailablePhysicalCPUs(s: CPUManagerState): CPUSet {
    return s.getDefaultCPUSet().difference(this.reservedPhysicalCPUs);
  }

  /**
   * Gives the container its exclusive CPUs when it qualifies; throws when they cannot be had.
   * numaAffinity is the topology manager's hint for it (NUMA node ids), when there is one.
   */
  allocate(s: CPUManagerState, pod: Pod, container: Container, numaAffinity?: readonly number[]): void {
    const numCPUs = guaranteedCPUs(pod, container);
    if (numCPUs === 0) return;
    const uid = pod.metadata.uid ?? '';
    if (this.options.fullPhysicalCPUsOnly) {
      const perCore = this.topology.cpusPerCore();
      if (numCPUs % perCore !== 0) throw new SMTAlignmentError(numCPUs, perCore);
      const availablePhysical = this.getAvailablePhysicalCPUs(s).size;
      if (numCPUs > availablePhysical) throw new SMTAlignmentError(numCPUs, perCore, availablePhysical);
    }
    const existing = s.getCPUSet(uid, container.name);
    if (existing) {
      this.updateCPUsToReuse(pod, container, existing);
      return;
    }
    const cpus = this.allocateCPUs(
      s,
      numCPUs,
      numaAffinity ?? this.affinity.getAffinity(uid, container.name).numaNodeAffinity,
      this.cpusToReuse.get(uid) ?? CPUSet.EMPTY,
    );
    s.setCPUSet(uid, container.name, cpus);
    this.updateCPUsToReuse(pod, container, cpus);
  }

  /**
   * numCPUs out of the shared pool and reusable: as many as can be from the NUMA nodes of affinity
   * (when the topology manager chose some), the rest from anywhere (upstream: allocateCPUs).
   */
  private allocateCPUs(
    s: CPUManagerState,
    numCPUs: number,
    affinity: NUMAAffinity | null,
    reusable: CPUSet,
  ): CPUSet {
    const allocatable = this.getAvailableCPUs(s).union(reusable);
    let result = CPUSet.EMPTY;
    if (affinity !== null) {
      const aligned = this.getAlignedCPUs(affinity, allocatable);
      result = this.takeByTopology(aligned, Math.min(numCPUs, aligned.size));
    }
    result = result.union(this.takeByTopology(allocatable.difference(result), numCPUs - result.size));
    s.setDefaultCPUSet(s.getDefaultCPUSet().difference(result));
    return result;
  }

  /** The container's CPU hints for the topology manager (upstream: GetTopologyHints); undefined when it needs no exclusive CPUs. */
  getTopologyHints(s: CPUManagerState, pod: Pod, container: Container): TopologyHints {
    const requested = guaranteedCPUs(pod, container);
    if (requested === 0) return undefined;
    const uid = pod.metadata.uid ?? '';
    const allocated = s.getCPUSet(uid, container.name);
    if (allocated) {
      // A container admitted before (a kubelet restart) keeps its CPUs: its hints are where they are.
      if (allocated.size !== requested) return new Map([['cpu', []]]);
      return new Map([['cpu', this.generateCPUTopologyHints(allocated, CPUSet.EMPTY, requested)]]);
    }
    const reusable = this.cpusToReuse.get(uid) ?? CPUSet.EMPTY;
    return new Map([['cpu', this.generateCPUTopologyHints(this.getAvailableCPUs(s), reusable, requested)]]);
  }

  /** The whole pod's CPU hints (upstream: GetPodTopologyHints). */
  getPodTopologyHints(s: CPUManagerState, pod: Pod): TopologyHints {
    const requested = podGuaranteedCPUs(pod);
    if (requested === 0) return undefined;
    const uid = pod.metadata.uid ?? '';
    let assigned = CPUSet.EMPTY;
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
      const allocated = s.getCPUSet(uid, c.name);
      if (!allocated) continue;
      if (allocated.size !== guaranteedCPUs(pod, c)) return new Map([['cpu', []]]);
      assigned = assigned.union(allocated);
    }
    if (assigned.size === requested)
      return new Map([['cpu', this.generateCPUTopologyHints(assigned, CPUSet.EMPTY, requested)]]);
    const reusable = (this.cpusToReuse.get(uid) ?? CPUSet.EMPTY).union(assigned);
    return new Map([['cpu', this.generateCPUTopologyHints(this.getAvailableCPUs(s), reusable, requested)]]);
  }

  /**
   * One hint per set of NUMA nodes that holds every reusable CPU and, with the available ones, at
   * least request CPUs; preferred when no smaller set of nodes has request CPUs on this machine
   * (upstream: generateCPUTopologyHints).
   */
  generateCPUTopologyHints(available: CPUSet, reusable: CPUSet, request: number): TopologyHint[] {
    const details = this.topology.details;
    const nodes = details.numaNodes().list();
    let minAffinitySize = nodes.length;
    const found: NUMAAffinity[] = [];
    iterateAffinities(nodes, (affinity) => {
      if (details.cpusInNUMANodes(...affinity).size >= request && affinity.length < minAffinitySize)
        minAffinitySize = affinity.length;
      const inMask = (cpu: number): boolean => affinity.includes(details.byCPU.get(cpu)?.numaNodeId ?? -1);
      if (!reusable.list().every(inMask)) return;
      const matching = reusable.size + available.list().filter(inMask).length;
      if (matching >= request) found.push(affinity);
    });
    return found.map((affinity) => ({
      numaNodeAffinity: affinity,
      // align-by-socket also prefers a hint on no more sockets than the request needs.
      preferred:
        (this.options.alignBySocket && this.isHintSocketAligned(affinity, minAffinitySize)) ||
        affinity.length === minAffinitySize,
    }));
  }

  /** Returns the container's CPUs to the shared pool, unless a sibling (a reusing container) holds them. */
  removeContainer(s: CPUManagerState, podUID: string, containerName: string): void {
    const toRelease = s.getCPUSet(podUID, containerName);
    if (!toRelease) return;
    let inUse = CPUSet.EMPTY;
    for (const [name, cpus] of s.getCPUAssignments().get(podUID) ?? [])
      if (name !== containerName) inUse = inUse.union(cpus);
    s.delete(podUID, containerName);
    s.setDefaultCPUSet(s.getDefaultCPUSet().union(toRelease.difference(inUse)));
  }

  private takeByTopology(available: CPUSet, numCPUs: number): CPUSet {
    if (this.options.distributeCPUsAcrossNUMA) {
      // full-pcpus-only spreads whole cores.
      const groupSize = this.options.fullPhysicalCPUsOnly ? this.topology.cpusPerCore() : 1;
      return takeByTopologyNUMADistributed(this.topology, available, numCPUs, groupSize);
    }
    return takeByTopologyNUMAPacked(this.topology, available, numCPUs);
  }

  /**
   * The allocatable CPUs the NUMA affinity covers; with align-by-socket, those of the sockets its
   * NUMA nodes are on (upstream's getAlignedCPUs).
   */
  getAlignedCPUs(numaAffinity: readonly number[], allocatable: CPUSet): CPUSet {
    const d = this.topology.details;
    if (this.options.alignBySocket)
      return allocatable.intersection(d.cpusInSockets(...d.socketsInNUMANodes(...numaAffinity).list()));
    return allocatable.intersection(d.cpusInNUMANodes(...numaAffinity));
  }

  /**
   * Whether a hint's NUMA nodes span no more sockets than the fewest that could hold the request
   * (minAffinitySize NUMA nodes): align-by-socket prefers such hints (upstream's isHintSocketAligned).
   */
  isHintSocketAligned(numaNodes: readonly number[], minAffinitySize: number): boolean {
    const perSocket = Math.trunc(this.topology.numNUMANodes / this.topology.numSockets);
    if (perSocket === 0) return false;
    const minSockets = Math.trunc((minAffinitySize + perSocket - 1) / perSocket);
    return this.topology.details.socketsInNUMANodes(...numaNodes).size === minSockets;
  }

  private updateCPUsToReuse(pod: Pod, container: Container, cpus: CPUSet): void {
    const uid = pod.metadata.uid ?? '';
    for (const other of [...this.cpusToReuse.keys()]) if (other !== uid) this.cpusToReuse.delete(other);
    const reusable = this.cpusToReuse.get(uid) ?? CPUSet.EMPTY;
    const isInit = (pod.spec.initContainers ?? []).some((c) => c.name === container.name);
    this.cpusToReuse.set(uid, isInit ? reusable.union(cpus) : reusable.difference(cpus));
  }
}

/**
 * The exclusive CPUs the pod needs at once: its app containers' sum, or its largest init container's
 * when that is more (upstream: podGuaranteedCPUs).
 */
export function podGuaranteedCPUs(pod: Pod): number {
  const byInit = Math.max(0, ...(pod.spec.initContainers ?? []).map((c) => guaranteedCPUs(pod, c)));
  const byApps = pod.spec.containers.reduce((sum, c) => sum + guaranteedCPUs(pod, c), 0);
  return Math.max(byInit, byApps);
}

/** The container's exclusive CPU count: its integer CPU request in a Guaranteed pod, else 0. */
export function guaranteedCPUs(pod: Pod, container: Container): number {
  if (getPodQOS(pod) !== 'Guaranteed') return 0;
  const request = container.resources?.requests?.cpu;
  if (request === undefined) return 0;
  const q = parseQuantity(request);
  const value = valueOf(q);
  if (value * 1000n !== milliValueOf(q)) return 0;
  return Number(value);
}
