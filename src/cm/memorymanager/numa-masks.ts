/**
 * What upstream's topologymanager/bitmask gives the memory manager, over NUMA affinities kept as
 * sorted lists of node IDs (the hint contract's form): every combination of nodes in upstream's
 * order, "narrower than", and the best of a set of hints.
 */
import type { NUMAAffinity, TopologyHint } from '../topologymanager/topology-hint.js';

/**
 * Every non-empty subset of nodes, smallest first and, within a size, in lexicographic order of the
 * sorted IDs (upstream: bitmask.IterateBitMasks).
 */
export function iterateMasks(nodes: readonly number[], callback: (mask: number[]) => void): void {
  const sorted = [...nodes].sort((a, b) => a - b);
  const iterate = (from: number, accum: number[], size: number): void => {
    if (accum.length === size) {
      callback([...accum]);
      return;
    }
    for (let i = from; i < sorted.length; i++) iterate(i + 1, [...accum, sorted[i]!], size);
  };
  for (let size = 1; size <= sorted.length; size++) iterate(0, [], size);
}

/** Upstream's IsLessThan: the masks compared as the integers their bits make (the highest node decides). */
function isLessThan(a: NUMAAffinity, b: NUMAAffinity): boolean {
  const top = Math.max(a.at(-1) ?? -1, b.at(-1) ?? -1);
  const sa = new Set(a);
  const sb = new Set(b);
  for (let bit = top; bit >= 0; bit--) {
    if (sa.has(bit) !== sb.has(bit)) return sb.has(bit);
  }
  return false;
}

/** Upstream's IsNarrowerThan: fewer nodes, or as many and a smaller mask. */
export function isNarrowerThan(a: NUMAAffinity, b: NUMAAffinity): boolean {
  if (a.length === b.length) return isLessThan(a, b);
  return a.length < b.length;
}

export function sameNodes(a: readonly number[] | null, b: readonly number[] | null): boolean {
  const x = [...(a ?? [])].sort((p, q) => p - q);
  const y = [...(b ?? [])].sort((p, q) => p - q);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** Whether every node of hint is in group (upstream: isHintInGroup). */
export function isHintInGroup(hint: readonly number[], group: readonly number[]): boolean {
  const g = new Set(group);
  return hint.every((n) => g.has(n));
}

/** The preferred hint with the fewest nodes, else the narrowest (upstream: findBestHint). */
export function findBestHint(hints: readonly TopologyHint[]): TopologyHint {
  let best: TopologyHint = { numaNodeAffinity: null, preferred: false };
  for (const hint of hints) {
    if (best.numaNodeAffinity === null) {
      best = hint;
      continue;
    }
    if (hint.preferred && !best.preferred) {
      best = hint;
      continue;
    }
    if (
      hint.preferred === best.preferred &&
      hint.numaNodeAffinity !== null &&
      isNarrowerThan(hint.numaNodeAffinity, best.numaNodeAffinity)
    )
      best = hint;
  }
  return best;
}

/** A key for a set of nodes (upstream keys reusable memory by the mask's String()). */
export function maskKey(nodes: readonly number[] | null): string {
  return [...(nodes ?? [])].sort((a, b) => a - b).join(',');
}
