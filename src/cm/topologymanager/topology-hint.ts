/**
 * The contract between the topology manager and the resource managers that offer it hints (upstream:
 * topologymanager.HintProvider and TopologyHint). A NUMA affinity is kept as the sorted list of NUMA
 * node IDs, where upstream keeps a bitmask: nodes have at most 64 NUMA nodes, and a list reads plainly.
 */
import type { Container, Pod } from '../../api/core-v1.js';

/** Sorted, distinct NUMA node IDs. */
export type NUMAAffinity = readonly number[];

export interface TopologyHint {
  /** null: the provider does not care where this resource lives (upstream's nil mask). */
  readonly numaNodeAffinity: NUMAAffinity | null;
  readonly preferred: boolean;
}

/**
 * Hints keyed by resource name. An absent map (undefined) means "no preference"; a resource with an
 * empty list means "no NUMA placement can satisfy it" (upstream's distinction between nil and empty).
 */
export type TopologyHints = ReadonlyMap<string, readonly TopologyHint[]> | undefined;

export interface HintProvider {
  /** Hints for one container (scope `container`). */
  getTopologyHints(pod: Pod, container: Container): TopologyHints;
  /** Hints for the whole pod (scope `pod`). */
  getPodTopologyHints(pod: Pod): TopologyHints;
  /**
   * Allocates the container's resources once the topology manager has chosen its affinity (read
   * through the Store below). Throws the provider's admission error when it cannot.
   */
  allocate(pod: Pod, container: Container): void | Promise<void>;
}

/** What a provider asks the topology manager for at allocation (upstream: topologymanager.Store). */
export interface TopologyAffinityStore {
  getAffinity(podUID: string, containerName: string): TopologyHint;
  getPolicyName(): string;
}
