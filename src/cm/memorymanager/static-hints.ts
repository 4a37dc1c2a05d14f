/**
 * The Static policy's topology hints (upstream: staticPolicy.calculateHints): every set of NUMA nodes
 * whose allocatable memory could hold the request and whose free memory holds it now, given the
 * groups earlier multi-node allocations formed; preferred are the sets as small as the smallest that
 * could hold it at all.
 */
import type { TopologyHint } from '../topologymanager/topology-hint.js';
import type { NUMANodeMap } from './memory-state.js';
import { iterateMasks, maskKey, sameNodes } from './numa-masks.js';

/** podUID → mask key → resource → bytes its init containers held that its next containers may reuse. */
export type ReusableMemory = Map<string, Map<string, Map<string, number>>>;

/** Whether the nodes of mask may take a new allocation, given the groups already formed. */
function fitsGroups(machine: NUMANodeMap, mask: readonly number[]): boolean {
  const single = mask.length === 1;
  // A node grouped with others cannot take a single-node allocation.
  if (single && (machine.get(mask[0]!)?.cells?.length ?? 0) > 1) return false;
  if (single) return true;
  for (const id of mask) {
    const node = machine.get(id);
    if (!node || node.numberOfAssignments <= 0) continue;
    // A node used on its own, or in another group, cannot join this one.
    if ((node.cells?.length ?? 0) === 1) return false;
    if (!sameNodes(node.cells, mask)) return false;
  }
  return true;
}

export function calculateHints(
  machine: NUMANodeMap,
  podUID: string,
  requested: ReadonlyMap<string, number>,
  reusable: ReusableMemory,
): Map<string, TopologyHint[]> {
  const nodes = [...machine.keys()].sort((a, b) => a - b);
  let minAffinitySize = nodes.length;
  const hints = new Map<string, TopologyHint[]>();
  iterateMasks(nodes, (mask) => {
    const sum = (resource: string, field: 'free' | 'allocatable'): number =>
      mask.reduce((acc, id) => acc + (machine.get(id)?.memoryMap?.get(resource)?.[field] ?? 0), 0);
    for (const [name, size] of requested) if (sum(name, 'allocatable') < size) return;
    minAffinitySize = Math.min(minAffinitySize, mask.length);
    if (!fitsGroups(machine, mask)) return;
    for (const [name, size] of requested) {
      const reuse = reusable.get(podUID)?.get(maskKey(mask))?.get(name) ?? 0;
      if (sum(name, 'free') + reuse < size) return;
    }
    for (const name of requested.keys()) {
      let list = hints.get(name);
      if (!list) hints.set(name, (list = []));
      list.push({ numaNodeAffinity: mask, preferred: false });
    }
  });
  for (const list of hints.values())
    for (let i = 0; i < list.length; i++)
      list[i] = { ...list[i]!, preferred: list[i]!.numaNodeAffinity!.length === minAffinitySize };
  return hints;
}
