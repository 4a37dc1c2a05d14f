/**
 * Operations on NUMA affinities kept as sorted lists of node IDs, with the meaning upstream's
 * bitmask package gives them (topologymanager/bitmask): "narrower" is fewer nodes, and between
 * affinities of one size the one whose bitmask is the smaller number wins.
 */
import type { NUMAAffinity } from './topology-hint.js';

/** The sorted, distinct affinity of ids. */
export function affinityOf(...ids: number[]): NUMAAffinity {
  return [...new Set(ids)].sort((a, b) => a - b);
}

/** The nodes in first and in every one of others (upstream: bitmask.And). */
export function andAffinities(first: NUMAAffinity, others: readonly NUMAAffinity[]): NUMAAffinity {
  return first.filter((id) => others.every((o) => o.includes(id)));
}

export function isEqualAffinity(a: NUMAAffinity, b: NUMAAffinity): boolean {
  return a.length === b.length && a.every((id, i) => b[i] === id);
}

/** Both null, or the same nodes (upstream: TopologyHint.IsEqual on the masks). */
export function isEqualOrBothNull(a: NUMAAffinity | null, b: NUMAAffinity | null): boolean {
  if (a === null || b === null) return a === b;
  return isEqualAffinity(a, b);
}

/** Whether a's bitmask is the smaller number: the highest node in one but not the other decides. */
export function isLessThan(a: NUMAAffinity, b: NUMAAffinity): boolean {
  for (let i = 1; i <= Math.max(a.length, b.length); i++) {
    const x = a[a.length - i];
    const y = b[b.length - i];
    if (x === y) continue;
    if (x === undefined) return true;
    if (y === undefined) return false;
    return x < y;
  }
  return false;
}

/** Fewer nodes, or as many and the smaller bitmask (upstream: IsNarrowerThan). */
export function isNarrowerThan(a: NUMAAffinity, b: NUMAAffinity): boolean {
  if (a.length === b.length) return isLessThan(a, b);
  return a.length < b.length;
}

/**
 * Every non-empty subset of ids, smallest first, each size in lexicographic order of the list
 * (upstream: bitmask.IterateBitMasks, whose order decides which of equal hints comes first).
 */
export function iterateAffinities(ids: readonly number[], callback: (affinity: NUMAAffinity) => void): void {
  const sorted = affinityOf(...ids);
  const walk = (start: number, accum: number[], size: number): void => {
    if (accum.length === size) {
      callback(affinityOf(...accum));
      return;
    }
    for (let i = start; i < sorted.length; i++) walk(i + 1, [...accum, sorted[i] as number], size);
  };
  for (let size = 1; size <= sorted.length; size++) walk(0, [], size);
}

/** Upstream's bitmask String(): the mask in binary, at least two digits, for logs. */
export function affinityString(a: NUMAAffinity | null): string {
  if (a === null) return '<nil>';
  let value = 0n;
  for (const id of a) value |= 1n << BigInt(id);
  const bits = value.toString(2);
  for (let shift = 62; shift > 0; shift -= 2)
    if (value > 1n << BigInt(shift)) return bits.padStart(shift + 2, '0');
  return bits.padStart(2, '0');
}
