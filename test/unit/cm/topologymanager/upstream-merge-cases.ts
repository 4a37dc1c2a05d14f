/**
 * Upstream's tables for the policies' merge (pkg/kubelet/cm/topologymanager/policy_test.go, v1.28.7),
 * written as data: a hint is [NUMA nodes, preferred]; 'ALL' is every node of the machine under test;
 * null nodes is upstream's nil mask. A provider is undefined (upstream's nil map) or its hints by
 * resource, where null is upstream's nil list ("no preference for this resource").
 */
export type CaseHint = [number[] | 'ALL' | null, boolean];
export type CaseProvider = Record<string, CaseHint[] | null> | undefined;
export interface MergeCase {
  name: string;
  hp: CaseProvider[];
  expected: CaseHint;
}

export const COMMON_CASES: MergeCase[] = [
  {
    name: 'Two providers, 1 hint each, same mask, both preferred 1/2',
    hp: [{ resource1: [[[0], true]] }, { resource2: [[[0], true]] }],
    expected: [[0], true],
  },
  {
    name: 'Two providers, 1 hint each, same mask, both preferred 2/2',
    hp: [{ resource1: [[[1], true]] }, { resource2: [[[1], true]] }],
    expected: [[1], true],
  },
  {
    name: 'Two providers, 1 no hints, 1 single hint preferred 1/2',
    hp: [undefined, { resource: [[[0], true]] }],
    expected: [[0], true],
  },
  {
    name: 'Two providers, 1 no hints, 1 single hint preferred 2/2',
    hp: [undefined, { resource: [[[1], true]] }],
    expected: [[1], true],
  },
  {
    name: 'Two providers, 1 with 2 hints, 1 with single hint matching 1/2',
    hp: [
      {
        resource1: [
          [[0], true],
          [[1], true],
        ],
      },
      { resource2: [[[0], true]] },
    ],
    expected: [[0], true],
  },
  {
    name: 'Two providers, 1 with 2 hints, 1 with single hint matching 2/2',
    hp: [
      {
        resource1: [
          [[0], true],
          [[1], true],
        ],
      },
      { resource2: [[[1], true]] },
    ],
    expected: [[1], true],
  },
  {
    name: 'Two providers, both with 2 hints, matching narrower preferred hint from both',
    hp: [
      {
        resource1: [
          [[0], true],
          [[1], true],
        ],
      },
      {
        resource2: [
          [[0], true],
          [[0, 1], false],
        ],
      },
    ],
    expected: [[0], true],
  },
  {
    name: 'Ensure less narrow preferred hints are chosen over narrower non-preferred hints',
    hp: [
      {
        resource1: [
          [[1], true],
          [[0, 1], false],
        ],
      },
      {
        resource2: [
          [[0], true],
          [[1], true],
          [[0, 1], false],
        ],
      },
    ],
    expected: [[1], true],
  },
  {
    name: 'Multiple resources, same provider',
    hp: [
      {
        resource1: [
          [[1], true],
          [[0, 1], false],
        ],
        resource2: [
          [[0], true],
          [[1], true],
          [[0, 1], false],
        ],
      },
    ],
    expected: [[1], true],
  },
];

export const BEST_EFFORT_CASES: MergeCase[] = [
  {
    name: 'Two providers, 2 hints each, same mask (some with different bits), same preferred',
    hp: [
      {
        resource1: [
          [[0, 1], true],
          [[0, 2], true],
        ],
      },
      {
        resource2: [
          [[0, 1], true],
          [[0, 2], true],
        ],
      },
    ],
    expected: [[0, 1], true],
  },
  { name: 'TopologyHint not set', hp: [], expected: ['ALL', true] },
  { name: 'HintProvider returns empty non-nil map[string][]TopologyHint', hp: [{}], expected: ['ALL', true] },
  {
    name: 'HintProvider returns -nil map[string][]TopologyHint from provider',
    hp: [{ resource: null }],
    expected: ['ALL', true],
  },
  {
    name: 'HintProvider returns empty non-nil map[string][]TopologyHint from provider',
    hp: [{ resource: [] }],
    expected: ['ALL', false],
  },
  {
    name: 'Single TopologyHint with Preferred as true and NUMANodeAffinity as nil',
    hp: [{ resource: [[null, true]] }],
    expected: ['ALL', true],
  },
  {
    name: 'Single TopologyHint with Preferred as false and NUMANodeAffinity as nil',
    hp: [{ resource: [[null, false]] }],
    expected: ['ALL', false],
  },
  {
    name: 'Two providers, 1 hint each, no common mask',
    hp: [{ resource1: [[[0], true]] }, { resource2: [[[1], true]] }],
    expected: ['ALL', false],
  },
  {
    name: 'Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2',
    hp: [{ resource1: [[[0], true]] }, { resource2: [[[0], false]] }],
    expected: [[0], false],
  },
  {
    name: 'Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2',
    hp: [{ resource1: [[[1], true]] }, { resource2: [[[1], false]] }],
    expected: [[1], false],
  },
  {
    name: 'Two providers, 1 hint each, 1 wider mask, both preferred 1/2',
    hp: [{ resource1: [[[0], true]] }, { resource2: [[[0, 1], true]] }],
    expected: [[0], false],
  },
  {
    name: 'Two providers, 1 with 2 hints, 1 with single non-preferred hint matching',
    hp: [
      {
        resource1: [
          [[0], true],
          [[1], true],
        ],
      },
      { resource2: [[[0, 1], false]] },
    ],
    expected: [[0], false],
  },
  {
    name: 'Two providers, 1 hint each, 1 wider mask, both preferred 2/2',
    hp: [{ resource1: [[[1], true]] }, { resource2: [[[0, 1], true]] }],
    expected: [[1], false],
  },
  {
    name: 'bestNonPreferredAffinityCount (1)',
    hp: [
      {
        resource1: [
          [[0, 1, 2, 3], false],
          [[0, 1], false],
        ],
      },
      { resource2: [[[0, 1], false]] },
    ],
    expected: [[0, 1], false],
  },
  {
    name: 'bestNonPreferredAffinityCount (2)',
    hp: [
      {
        resource1: [
          [[0, 1, 2, 3], false],
          [[0, 1], false],
        ],
      },
      { resource2: [[[0, 3], false]] },
    ],
    expected: [[0, 3], false],
  },
  {
    name: 'bestNonPreferredAffinityCount (3)',
    hp: [
      {
        resource1: [
          [[0, 1, 2, 3], false],
          [[0, 1], false],
        ],
      },
      { resource2: [[[1, 2], false]] },
    ],
    expected: [[1, 2], false],
  },
  {
    name: 'bestNonPreferredAffinityCount (4)',
    hp: [
      {
        resource1: [
          [[0, 1, 2, 3], false],
          [[0, 1], false],
        ],
      },
      { resource2: [[[2, 3], false]] },
    ],
    expected: [[2, 3], false],
  },
];

export const BEST_EFFORT_NO_POLICIES_CASES: MergeCase[] = [
  {
    name: 'bestNonPreferredAffinityCount (5)',
    hp: [
      {
        resource1: [
          [[0, 1, 2, 3], false],
          [[0, 1], false],
        ],
      },
      {
        resource2: [
          [[1, 2], false],
          [[2, 3], false],
        ],
      },
    ],
    expected: [[1, 2], false],
  },
  {
    name: 'bestNonPreferredAffinityCount (6)',
    hp: [
      {
        resource1: [
          [[0, 1, 2, 3], false],
          [[0, 1], false],
        ],
      },
      {
        resource2: [
          [[1, 2, 3], false],
          [[1, 2], false],
          [[1, 3], false],
          [[2, 3], false],
        ],
      },
    ],
    expected: [[1, 2], false],
  },
];

export const BEST_EFFORT_CLOSEST_NUMA_CASES: MergeCase[] = [
  {
    name: 'Two providers, 2 hints each, same mask (some with different bits), same preferred',
    hp: [
      {
        resource1: [
          [[0, 4], true],
          [[0, 2], true],
        ],
      },
      {
        resource2: [
          [[0, 4], true],
          [[0, 2], true],
        ],
      },
    ],
    expected: [[0, 2], true],
  },
  {
    name: 'Two providers, 2 hints each, different mask',
    hp: [
      {
        resource1: [
          [[4], true],
          [[0, 2], true],
        ],
      },
      {
        resource2: [
          [[4], true],
          [[0, 2], true],
        ],
      },
    ],
    expected: [[4], true],
  },
  {
    name: 'bestNonPreferredAffinityCount (5)',
    hp: [
      {
        resource1: [
          [[0, 1, 2, 3], false],
          [[0, 1], false],
        ],
      },
      {
        resource2: [
          [[1, 2], false],
          [[2, 3], false],
        ],
      },
    ],
    expected: [[2, 3], false],
  },
  {
    name: 'bestNonPreferredAffinityCount (6)',
    hp: [
      {
        resource1: [
          [[0, 1, 2, 3], false],
          [[0, 1], false],
        ],
      },
      {
        resource2: [
          [[1, 2, 3], false],
          [[1, 2], false],
          [[1, 3], false],
          [[2, 3], false],
        ],
      },
    ],
    expected: [[2, 3], false],
  },
];

export const SINGLE_NUMA_NODE_CASES: MergeCase[] = [
  { name: 'TopologyHint not set', hp: [], expected: [null, true] },
  { name: 'HintProvider returns empty non-nil map[string][]TopologyHint', hp: [{}], expected: [null, true] },
  {
    name: 'HintProvider returns -nil map[string][]TopologyHint from provider',
    hp: [{ resource: null }],
    expected: [null, true],
  },
  {
    name: 'HintProvider returns empty non-nil map[string][]TopologyHint from provider',
    hp: [{ resource: [] }],
    expected: [null, false],
  },
  {
    name: 'Single TopologyHint with Preferred as true and NUMANodeAffinity as nil',
    hp: [{ resource: [[null, true]] }],
    expected: [null, true],
  },
  {
    name: 'Single TopologyHint with Preferred as false and NUMANodeAffinity as nil',
    hp: [{ resource: [[null, false]] }],
    expected: [null, false],
  },
  {
    name: 'Two providers, 1 hint each, no common mask',
    hp: [{ resource1: [[[0], true]] }, { resource2: [[[1], true]] }],
    expected: [null, false],
  },
  {
    name: 'Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2',
    hp: [{ resource1: [[[0], true]] }, { resource2: [[[0], false]] }],
    expected: [null, false],
  },
  {
    name: 'Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2',
    hp: [{ resource1: [[[1], true]] }, { resource2: [[[1], false]] }],
    expected: [null, false],
  },
  {
    name: 'Two providers, 1 with 2 hints, 1 with single non-preferred hint matching',
    hp: [
      {
        resource1: [
          [[0], true],
          [[1], true],
        ],
      },
      { resource2: [[[0, 1], false]] },
    ],
    expected: [null, false],
  },
  {
    name: 'Single NUMA hint generation',
    hp: [
      {
        resource1: [[[0, 1], true]],
        resource2: [
          [[0], true],
          [[1], true],
          [[0, 1], false],
        ],
      },
    ],
    expected: [null, false],
  },
  {
    name: 'One no-preference provider',
    hp: [
      {
        resource1: [
          [[0], true],
          [[1], true],
          [[0, 1], false],
        ],
      },
      undefined,
    ],
    expected: [[0], true],
  },
];
