/**
 * The device manager as a topology hint provider (upstream: devicemanager/topology_hints.go and
 * filterByAffinity): a device's NUMA nodes are the `topology.nodes` its plugin reports in
 * ListAndWatch; a resource none of whose devices report any has no NUMA preference.
 */
import { iterateAffinities } from '../topologymanager/numa-affinity.js';
import type { NUMAAffinity, TopologyHint, TopologyHints } from '../topologymanager/topology-hint.js';
import type { Device } from './generated/deviceplugin/v1beta1/deviceplugin.js';

/**
 * "No preference for this resource". Upstream answers a nil list, which the topology manager turns
 * into exactly this hint before merging; the hint contract has no nil list, so it is said directly.
 */
const NO_PREFERENCE: readonly TopologyHint[] = [{ numaNodeAffinity: null, preferred: true }];

/** What hints are computed from. */
export interface DeviceHintSource {
  /** The machine's NUMA nodes. */
  readonly numaNodes: readonly number[];
  /** The resource's devices as its plugin last listed them. */
  devicesOf(resource: string): ReadonlyMap<string, Device> | undefined;
  /** Healthy devices of the resource that nobody holds. */
  availableOf(resource: string): ReadonlySet<string>;
}

function numaNodesOf(device: Device | undefined): number[] {
  return (device?.topology?.nodes ?? []).map((n) => n.ID);
}

/** Whether any device of the resource reports NUMA nodes (upstream: deviceHasTopologyAlignment). */
export function deviceHasTopologyAlignment(devices: ReadonlyMap<string, Device> | undefined): boolean {
  return [...(devices?.values() ?? [])].some((d) => numaNodesOf(d).length > 0);
}

/**
 * One hint per set of NUMA nodes that holds every reusable device with a topology and, with the
 * available ones, at least request devices; preferred when no smaller set of nodes has request devices
 * at all (upstream: generateDeviceTopologyHints).
 */
export function generateDeviceTopologyHints(
  numaNodes: readonly number[],
  devices: ReadonlyMap<string, Device>,
  available: ReadonlySet<string>,
  reusable: ReadonlySet<string>,
  request: number,
): TopologyHint[] {
  let minAffinitySize = numaNodes.length;
  const found: NUMAAffinity[] = [];
  const anyIn = (affinity: NUMAAffinity, d: Device | undefined): boolean =>
    numaNodesOf(d).some((n) => affinity.includes(n));
  iterateAffinities(numaNodes, (affinity) => {
    const inMask = [...devices.values()].filter((d) => anyIn(affinity, d)).length;
    if (inMask >= request && affinity.length < minAffinitySize) minAffinitySize = affinity.length;
    let matching = 0;
    for (const id of reusable) {
      const d = devices.get(id);
      if (d?.topology === undefined) continue;
      if (!anyIn(affinity, d)) return;
      matching++;
    }
    for (const id of available) if (anyIn(affinity, devices.get(id))) matching++;
    if (matching >= request) found.push(affinity);
  });
  return found.map((affinity) => ({
    numaNodeAffinity: affinity,
    preferred: affinity.length === minAffinitySize,
  }));
}

/**
 * Hints for each requested resource (upstream: GetTopologyHints and GetPodTopologyHints, which differ
 * only in what counts as already allocated and reusable).
 */
export function deviceTopologyHints(
  source: DeviceHintSource,
  requests: ReadonlyMap<string, number>,
  allocatedOf: (resource: string) => ReadonlySet<string> | undefined,
  reusableOf: (resource: string) => ReadonlySet<string>,
): TopologyHints {
  const hints = new Map<string, readonly TopologyHint[]>();
  for (const [resource, requested] of requests) {
    const devices = source.devicesOf(resource);
    if (!devices || !deviceHasTopologyAlignment(devices)) {
      hints.set(resource, NO_PREFERENCE);
      continue;
    }
    const allocated = allocatedOf(resource);
    if (allocated && allocated.size > 0) {
      // Already allocated (a kubelet restart): the hints are where those devices are.
      hints.set(
        resource,
        allocated.size === requested
          ? generateDeviceTopologyHints(source.numaNodes, devices, allocated, new Set(), requested)
          : [],
      );
      continue;
    }
    const available = source.availableOf(resource);
    const reusable = reusableOf(resource);
    if (new Set([...available, ...reusable]).size < requested) {
      hints.set(resource, []);
      continue;
    }
    hints.set(
      resource,
      generateDeviceTopologyHints(source.numaNodes, devices, available, reusable, requested),
    );
  }
  return hints;
}

/**
 * The available devices split by the container's NUMA affinity (upstream: filterByAffinity): those on
 * a node of it, those only elsewhere, and those of no node. Without an affinity, or for a resource
 * whose devices report no nodes, all are of no affinity.
 */
export function filterByAffinity(
  affinity: NUMAAffinity | null,
  devices: ReadonlyMap<string, Device> | undefined,
  available: ReadonlySet<string>,
): { aligned: Set<string>; unaligned: Set<string>; noAffinity: Set<string> } {
  const out = { aligned: new Set<string>(), unaligned: new Set<string>(), noAffinity: new Set<string>() };
  if (affinity === null || !deviceHasTopologyAlignment(devices)) {
    for (const id of available) out.noAffinity.add(id);
    return out;
  }
  for (const id of available) {
    const nodes = numaNodesOf(devices?.get(id));
    if (nodes.length === 0) out.noAffinity.add(id);
    else if (nodes.some((n) => affinity.includes(n))) out.aligned.add(id);
    else out.unaligned.add(id);
  }
  return out;
}
