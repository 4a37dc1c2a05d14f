import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HintMerger, maxOfMinAffinityCounts } from '../../../../src/cm/topologymanager/hint-merger.js';
import { NUMAInfo } from '../../../../src/cm/topologymanager/numa-info.js';
import {
  BestEffortPolicy,
  filterSingleNumaHints,
  NonePolicy,
  RestrictedPolicy,
  SingleNumaNodePolicy,
} from '../../../../src/cm/topologymanager/policies.js';
import type { Policy } from '../../../../src/cm/topologymanager/hint-merger.js';
import type { TopologyHint, TopologyHints } from '../../../../src/cm/topologymanager/topology-hint.js';
import {
  BEST_EFFORT_CASES,
  BEST_EFFORT_CLOSEST_NUMA_CASES,
  BEST_EFFORT_NO_POLICIES_CASES,
  COMMON_CASES,
  SINGLE_NUMA_NODE_CASES,
  type CaseHint,
  type CaseProvider,
  type MergeCase,
} from './upstream-merge-cases.js';

const h = (nodes: number[] | null, preferred: boolean): TopologyHint => ({
  numaNodeAffinity: nodes,
  preferred,
});

const TWO_NODES = new NUMAInfo(
  [0, 1],
  new Map([
    [0, [10, 11]],
    [1, [11, 10]],
  ]),
);
const FOUR_NODES = new NUMAInfo(
  [0, 1, 2, 3],
  new Map([
    [0, [10, 11, 12, 12]],
    [1, [11, 10, 12, 12]],
    [2, [12, 12, 10, 11]],
    [3, [12, 12, 11, 10]],
  ]),
);
const EIGHT_NODES = new NUMAInfo(
  [0, 1, 2, 3, 4, 5, 6, 7],
  new Map([
    [0, [10, 11, 12, 12, 30, 30, 30, 30]],
    [1, [11, 10, 12, 12, 30, 30, 30, 30]],
    [2, [12, 12, 10, 11, 30, 30, 30, 30]],
    [3, [12, 12, 11, 10, 30, 30, 30, 30]],
    [4, [30, 30, 30, 30, 10, 11, 12, 12]],
    [5, [30, 30, 30, 30, 11, 10, 12, 12]],
    [6, [30, 30, 30, 30, 12, 12, 10, 11]],
    [7, [30, 30, 30, 30, 12, 12, 13, 10]],
  ]),
);

function hintOf([nodes, preferred]: CaseHint, all: readonly number[]): TopologyHint {
  return { numaNodeAffinity: nodes === 'ALL' ? [...all] : nodes, preferred };
}

/**
 * A provider of the tables as the contract carries it. Upstream's nil list for a resource ("no
 * preference") has no form of its own in TopologyHints: it is the one hint upstream turns it into
 * before merging, anywhere and preferred.
 */
function providerHints(p: CaseProvider, all: readonly number[]): TopologyHints {
  if (p === undefined) return undefined;
  return new Map(
    Object.entries(p).map(([resource, hints]) => [
      resource,
      hints === null ? [h(null, true)] : hints.map((x) => hintOf(x, all)),
    ]),
  );
}

function replay(policy: Policy, numaInfo: NUMAInfo, cases: MergeCase[]): void {
  assert.ok(cases.length > 0);
  for (const tc of cases) {
    const { hint } = policy.merge(tc.hp.map((p) => providerHints(p, numaInfo.nodes)));
    assert.deepEqual(hint, hintOf(tc.expected, numaInfo.nodes), tc.name);
  }
}

test('best-effort merges as upstream (TestPolicyBestEffortMerge, ...MergeClosestNUMA)', () => {
  replay(new BestEffortPolicy(FOUR_NODES), FOUR_NODES, [
    ...COMMON_CASES,
    ...BEST_EFFORT_CASES,
    ...BEST_EFFORT_NO_POLICIES_CASES,
  ]);
  replay(new BestEffortPolicy(EIGHT_NODES, { preferClosestNUMA: true }), EIGHT_NODES, [
    ...COMMON_CASES,
    ...BEST_EFFORT_CASES,
    ...BEST_EFFORT_CLOSEST_NUMA_CASES,
  ]);
});

test('restricted merges as best-effort does (TestPolicyRestrictedMerge, ...MergeClosestNUMA)', () => {
  replay(new RestrictedPolicy(FOUR_NODES), FOUR_NODES, [
    ...COMMON_CASES,
    ...BEST_EFFORT_CASES,
    ...BEST_EFFORT_NO_POLICIES_CASES,
  ]);
  replay(new RestrictedPolicy(EIGHT_NODES, { preferClosestNUMA: true }), EIGHT_NODES, [
    ...COMMON_CASES,
    ...BEST_EFFORT_CASES,
    ...BEST_EFFORT_CLOSEST_NUMA_CASES,
  ]);
});

test('single-numa-node merges only single-node hints (TestPolicySingleNumaNodeMerge)', () => {
  replay(new SingleNumaNodePolicy(FOUR_NODES), FOUR_NODES, [...COMMON_CASES, ...SINGLE_NUMA_NODE_CASES]);
});

test('which merged hints each policy admits (the canAdmitPodResult tables)', () => {
  for (const preferred of [false, true]) {
    assert.equal(new BestEffortPolicy(TWO_NODES).canAdmitPodResult(h(null, preferred)), true);
    assert.equal(new RestrictedPolicy(TWO_NODES).canAdmitPodResult(h(null, preferred)), preferred);
    assert.equal(new SingleNumaNodePolicy(TWO_NODES).canAdmitPodResult(h(null, preferred)), preferred);
  }
  assert.equal(new RestrictedPolicy(TWO_NODES).name, 'restricted');
  // What merge returns carries the verdict: a hint that is not preferred is refused by restricted.
  const noCommonNode: TopologyHints[] = [new Map([['a', [h([0], true)]]]), new Map([['b', [h([1], true)]]])];
  assert.deepEqual(new BestEffortPolicy(TWO_NODES).merge(noCommonNode), {
    hint: h([0, 1], false),
    admit: true,
  });
  assert.deepEqual(new RestrictedPolicy(TWO_NODES).merge(noCommonNode), {
    hint: h([0, 1], false),
    admit: false,
  });
  assert.deepEqual(new SingleNumaNodePolicy(TWO_NODES).merge(noCommonNode), {
    hint: h(null, false),
    admit: false,
  });
});

test('none merges nothing and admits everything (TestPolicyNoneMerge)', () => {
  const none = new NonePolicy();
  assert.equal(none.name, 'none');
  for (const hints of [
    [],
    [new Map([['resource', [h([0, 1], true)]]])],
    [new Map([['r', [h([0, 1], false)]]])],
  ])
    assert.deepEqual(none.merge(), { hint: h(null, false), admit: true }, JSON.stringify(hints));
});

test('filterSingleNumaHints keeps preferred hints on one node or none (TestPolicySingleNumaNodeFilterHints)', () => {
  assert.deepEqual(filterSingleNumaHints([]), []);
  assert.deepEqual(filterSingleNumaHints([[h(null, false)], [h(null, true)]]), [[], [h(null, true)]]);
  assert.deepEqual(
    filterSingleNumaHints([
      [h([0], true), h(null, false)],
      [h([1], true), h(null, true)],
    ]),
    [[h([0], true)], [h([1], true), h(null, true)]],
  );
  assert.deepEqual(filterSingleNumaHints([[h([1], true), h([0], true), h(null, false)], []]), [
    [h([1], true), h([0], true)],
    [],
  ]);
  assert.deepEqual(
    filterSingleNumaHints([
      [h([0], true), h([1], true), h([1, 2], false), h([0, 1, 2], false), h(null, false)],
      [h([1, 2], false), h([0, 1, 2], false), h([0, 2], false), h([3], false)],
      [h([1, 2], false), h([0, 1, 2], false), h([0, 2], false)],
    ]),
    [[h([0], true), h([1], true)], [], []],
  );
});

test('maxOfMinAffinityCounts (TestMaxOfMinAffinityCounts)', () => {
  const cases: [TopologyHint[][], number][] = [
    [[], 0],
    [[[h([], true)]], 0],
    [[[h([0], true)]], 1],
    [[[h([0, 1], true)]], 2],
    [[[h([0, 1], true), h([0, 1, 2], true)]], 2],
    [[[h([0, 1], true), h([0, 1, 2], true)], [h([0, 1, 2], true)]], 3],
    [
      [
        [h([0, 1], true), h([0, 1, 2], true)],
        [h([0, 1, 2], true), h([0, 1, 2, 3], true)],
      ],
      3,
    ],
  ];
  for (const [hints, expected] of cases) assert.equal(maxOfMinAffinityCounts(hints), expected);
});

test('HintMerger.compare picks current or candidate as upstream (TestCompareHintsNarrowest)', () => {
  type Row = [string, number, TopologyHint | undefined, TopologyHint, 'current' | 'candidate'];
  const rows: Row[] = [
    ['candidate count 0 (1)', -1, undefined, h([], false), 'current'],
    ['candidate count 0 (2)', -1, h([], true), h([], false), 'current'],
    ['current nil (1)', -1, undefined, h([0], true), 'candidate'],
    ['current nil (2)', -1, undefined, h([0], false), 'candidate'],
    ['!current.Preferred && candidate.Preferred', -1, h([0], false), h([0], true), 'candidate'],
    ['current.Preferred && !candidate.Preferred', -1, h([0], true), h([0], false), 'current'],
    ['both preferred (1)', -1, h([0], true), h([0], true), 'current'],
    ['both preferred (2)', -1, h([0, 1], true), h([0], true), 'candidate'],
    ['both preferred (3)', -1, h([0], true), h([0, 1], true), 'current'],
    ['neither (1.1)', 1, h([0, 1], false), h([0, 1], false), 'current'],
    ['neither (1.2)', 1, h([1, 2], false), h([0, 1], false), 'candidate'],
    ['neither (1.3)', 1, h([0, 1], false), h([1, 2], false), 'current'],
    ['neither (2.1)', 2, h([0, 1], false), h([0], false), 'current'],
    ['neither (2.2)', 2, h([0, 1], false), h([0, 1], false), 'current'],
    ['neither (2.3)', 2, h([1, 2], false), h([0, 1], false), 'candidate'],
    ['neither (2.4)', 2, h([0, 1], false), h([1, 2], false), 'current'],
    ['neither (3a)', 2, h([0], false), h([0, 1, 2], false), 'current'],
    ['neither (3b)', 2, h([0], false), h([0, 1], false), 'candidate'],
    ['neither (3ca.1)', 3, h([0], false), h([0, 1], false), 'candidate'],
    ['neither (3ca.2)', 3, h([0], false), h([1, 2], false), 'candidate'],
    ['neither (3ca.3)', 4, h([0, 1], false), h([1, 2, 3], false), 'candidate'],
    ['neither (3cb)', 4, h([1, 2, 3], false), h([0, 1], false), 'current'],
    ['neither (3cc.1)', 4, h([0, 1, 2], false), h([0, 1, 2], false), 'current'],
    ['neither (3cc.2)', 4, h([0, 1, 2], false), h([1, 2, 3], false), 'current'],
    ['neither (3cc.3)', 4, h([1, 2, 3], false), h([0, 1, 2], false), 'candidate'],
  ];
  for (const [name, best, current, candidate, expected] of rows) {
    const merger = new HintMerger(new NUMAInfo([]), [], false);
    merger.bestNonPreferredAffinityCount = best;
    const c = current as { numaNodeAffinity: number[]; preferred: boolean } | undefined;
    const d = candidate as { numaNodeAffinity: number[]; preferred: boolean };
    const result = merger.compare(c, d);
    assert.ok(result === c || result === d, name);
    assert.equal(result, expected === 'current' ? c : d, name);
  }
});
