/**
 * How the providers' hints become one (upstream: topologymanager/policy.go). Every combination of
 * one hint per resource is tried (the cross-product); a combination's affinity is the nodes all its
 * hints share, and it is preferred only when every hint in it is preferred and they all name the same
 * nodes. The best combination is preferred over not, then narrowest; among non-preferred ones, those
 * as wide as the widest resource's narrowest hint win (a wider one cannot be needed, a narrower one
 * cannot be satisfied).
 */
import { andAffinities, isEqualAffinity, isNarrowerThan } from './numa-affinity.js';
import type { NUMAInfo } from './numa-info.js';
import type { NUMAAffinity, TopologyHint, TopologyHints } from './topology-hint.js';

export interface Policy {
  readonly name: string;
  /** The best hint for the providers' hints, and whether the pod may be admitted with it. */
  merge(providersHints: readonly TopologyHints[]): { hint: TopologyHint; admit: boolean };
}

/** A hint whose affinity is known (every merged hint has one). */
interface MergedHint {
  readonly numaNodeAffinity: NUMAAffinity;
  readonly preferred: boolean;
}

const NO_PREFERENCE: TopologyHint = { numaNodeAffinity: null, preferred: true };
const NO_POSSIBLE_AFFINITY: TopologyHint = { numaNodeAffinity: null, preferred: false };

/**
 * One list of hints per resource (upstream: filterProvidersHints): a provider without hints, or a
 * resource it has no preference for, counts as "anywhere, preferred"; a resource with no possible
 * hint as "anywhere, not preferred".
 */
export function filterProvidersHints(providersHints: readonly TopologyHints[]): TopologyHint[][] {
  const out: TopologyHint[][] = [];
  for (const hints of providersHints) {
    if (hints === undefined || hints.size === 0) {
      out.push([NO_PREFERENCE]);
      continue;
    }
    for (const resourceHints of hints.values())
      out.push(resourceHints.length === 0 ? [NO_POSSIBLE_AFFINITY] : [...resourceHints]);
  }
  return out;
}

/** The combination's hint (upstream: mergePermutation). */
export function mergePermutation(
  defaultAffinity: NUMAAffinity,
  permutation: readonly TopologyHint[],
): MergedHint {
  let preferred = true;
  const affinities: NUMAAffinity[] = [];
  for (const hint of permutation) {
    if (hint.numaNodeAffinity !== null) {
      affinities.push(hint.numaNodeAffinity);
      if (!isEqualAffinity(hint.numaNodeAffinity, affinities[0] as NUMAAffinity)) preferred = false;
    }
    if (!hint.preferred) preferred = false;
  }
  return { numaNodeAffinity: andAffinities(defaultAffinity, affinities), preferred };
}

/** Calls back with each combination of one hint per list, in order (upstream: iterateAllProviderTopologyHints). */
export function iterateAllProviderTopologyHints(
  all: readonly (readonly TopologyHint[])[],
  callback: (permutation: TopologyHint[]) => void,
): void {
  const walk = (i: number, accum: TopologyHint[]): void => {
    const list = all[i];
    if (list === undefined) {
      callback(accum);
      return;
    }
    for (const hint of list) walk(i + 1, [...accum, hint]);
  };
  walk(0, []);
}

function narrowestHint(hints: readonly TopologyHint[]): NUMAAffinity | undefined {
  let narrowest: NUMAAffinity | undefined;
  for (const h of hints) {
    if (h.numaNodeAffinity === null) continue;
    if (narrowest === undefined || isNarrowerThan(h.numaNodeAffinity, narrowest))
      narrowest = h.numaNodeAffinity;
  }
  return narrowest;
}

/** The largest, over resources, of each resource's narrowest hint's size (upstream: maxOfMinAffinityCounts). */
export function maxOfMinAffinityCounts(filteredHints: readonly (readonly TopologyHint[])[]): number {
  let max = 0;
  for (const hints of filteredHints) max = Math.max(max, narrowestHint(hints)?.length ?? 0);
  return max;
}

export class HintMerger {
  bestNonPreferredAffinityCount: number;

  constructor(
    private readonly numaInfo: NUMAInfo,
    private readonly hints: readonly (readonly TopologyHint[])[],
    /** prefer-closest-numa-nodes: among equally wide affinities, the closest nodes rather than the lowest. */
    private readonly preferClosest: boolean,
  ) {
    this.bestNonPreferredAffinityCount = maxOfMinAffinityCounts(hints);
  }

  private compareAffinities<H extends MergedHint>(current: H, candidate: H): H {
    if (isEqualAffinity(candidate.numaNodeAffinity, current.numaNodeAffinity)) return current;
    const best = this.preferClosest
      ? this.numaInfo.closest(current.numaNodeAffinity, candidate.numaNodeAffinity)
      : this.numaInfo.narrowest(current.numaNodeAffinity, candidate.numaNodeAffinity);
    return isEqualAffinity(best, current.numaNodeAffinity) ? current : candidate;
  }

  /** Which of current and candidate is better (upstream: HintMerger.compare); returns one of the two. */
  compare<H extends MergedHint>(current: H | undefined, candidate: H): H | undefined {
    const best = this.bestNonPreferredAffinityCount;
    const candidateCount = candidate.numaNodeAffinity.length;
    if (candidateCount === 0) return current;
    if (current === undefined) return candidate;
    if (current.preferred !== candidate.preferred) return current.preferred ? current : candidate;
    if (current.preferred) return this.compareAffinities(current, candidate);
    const currentCount = current.numaNodeAffinity.length;
    // Neither is preferred: aim for exactly `best` nodes.
    if (currentCount > best) return this.compareAffinities(current, candidate);
    if (currentCount === best)
      return candidateCount === best ? this.compareAffinities(current, candidate) : current;
    if (candidateCount > best) return current;
    if (candidateCount === best) return candidate;
    if (candidateCount !== currentCount) return candidateCount > currentCount ? candidate : current;
    return this.compareAffinities(current, candidate);
  }

  merge(): TopologyHint {
    const defaultAffinity = this.numaInfo.defaultAffinity();
    let best: MergedHint | undefined;
    iterateAllProviderTopologyHints(this.hints, (permutation) => {
      best = this.compare(best, mergePermutation(defaultAffinity, permutation));
    });
    return best ?? { numaNodeAffinity: defaultAffinity, preferred: false };
  }
}
