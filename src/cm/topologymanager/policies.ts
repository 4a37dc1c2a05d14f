/**
 * The topology manager's policies (upstream: topologymanager/policy_*.go). `none` merges nothing and
 * admits everything; `best-effort` merges and admits whatever it gets; `restricted` admits only a
 * preferred hint; `single-numa-node` merges only the hints of one NUMA node (or of none at all) and
 * admits only a preferred one.
 */
import { HintMerger, filterProvidersHints, type Policy } from './hint-merger.js';
import { isEqualAffinity } from './numa-affinity.js';
import type { NUMAInfo } from './numa-info.js';
import type { TopologyPolicyOptions } from './policy-options.js';
import type { TopologyHint, TopologyHints } from './topology-hint.js';

export const POLICY_NONE = 'none';
export const POLICY_BEST_EFFORT = 'best-effort';
export const POLICY_RESTRICTED = 'restricted';
export const POLICY_SINGLE_NUMA_NODE = 'single-numa-node';

export const TOPOLOGY_POLICIES: readonly string[] = [
  POLICY_NONE,
  POLICY_BEST_EFFORT,
  POLICY_RESTRICTED,
  POLICY_SINGLE_NUMA_NODE,
];

export class NonePolicy implements Policy {
  readonly name = POLICY_NONE;
  merge(): { hint: TopologyHint; admit: boolean } {
    return { hint: { numaNodeAffinity: null, preferred: false }, admit: true };
  }
}

export class BestEffortPolicy implements Policy {
  readonly name: string = POLICY_BEST_EFFORT;

  constructor(
    protected readonly numaInfo: NUMAInfo,
    protected readonly opts: TopologyPolicyOptions = { preferClosestNUMA: false },
  ) {}

  canAdmitPodResult(_hint: TopologyHint): boolean {
    return true;
  }

  merge(providersHints: readonly TopologyHints[]): { hint: TopologyHint; admit: boolean } {
    const filtered = filterProvidersHints(providersHints);
    const hint = new HintMerger(this.numaInfo, filtered, this.opts.preferClosestNUMA).merge();
    return { hint, admit: this.canAdmitPodResult(hint) };
  }
}

export class RestrictedPolicy extends BestEffortPolicy {
  override readonly name: string = POLICY_RESTRICTED;

  override canAdmitPodResult(hint: TopologyHint): boolean {
    return hint.preferred;
  }
}

/** Keeps, of each resource's hints, the preferred ones on one NUMA node or on none (upstream: filterSingleNumaHints). */
export function filterSingleNumaHints(all: readonly (readonly TopologyHint[])[]): TopologyHint[][] {
  return all.map((hints) =>
    hints.filter((h) => h.preferred && (h.numaNodeAffinity === null || h.numaNodeAffinity.length === 1)),
  );
}

export class SingleNumaNodePolicy implements Policy {
  readonly name = POLICY_SINGLE_NUMA_NODE;

  constructor(private readonly numaInfo: NUMAInfo) {}

  canAdmitPodResult(hint: TopologyHint): boolean {
    return hint.preferred;
  }

  merge(providersHints: readonly TopologyHints[]): { hint: TopologyHint; admit: boolean } {
    const filtered = filterSingleNumaHints(filterProvidersHints(providersHints));
    // prefer-closest-numa-nodes never applies: every candidate is a single node.
    let hint = new HintMerger(this.numaInfo, filtered, false).merge();
    // Every node means no preference at all, which single-numa-node reports as no affinity.
    if (
      hint.numaNodeAffinity !== null &&
      isEqualAffinity(hint.numaNodeAffinity, this.numaInfo.defaultAffinity())
    )
      hint = { numaNodeAffinity: null, preferred: hint.preferred };
    return { hint, admit: this.canAdmitPodResult(hint) };
  }
}
