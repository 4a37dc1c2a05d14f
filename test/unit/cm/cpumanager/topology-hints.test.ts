import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Container, Pod } from '../../../../src/api/core-v1.js';
import { CPUSet } from '../../../../src/cm/cpumanager/cpu-set.js';
import { CPUManagerState } from '../../../../src/cm/cpumanager/cpu-state.js';
import { StaticPolicy, podGuaranteedCPUs } from '../../../../src/cm/cpumanager/policy-static.js';
import { discoverTopology } from '../../../../src/cm/cpumanager/topology.js';
import { isNarrowerThan } from '../../../../src/cm/topologymanager/numa-affinity.js';
import type { TopologyHint } from '../../../../src/cm/topologymanager/topology-hint.js';
import { makeFakeSysfs, type FakeCore } from './fake-sysfs.js';

/**
 * Upstream's returnMachineInfo (cpumanager/topology_hints_test.go): 2 sockets, each its own NUMA
 * node, 3 cores of 2 threads each; NUMA 0 holds CPUs 0-2 and 6-8, NUMA 1 holds 3-5 and 9-11.
 */
const MACHINE: FakeCore[] = [
  { threads: [0, 6], socket: 0, numa: 0 },
  { threads: [1, 7], socket: 0, numa: 0 },
  { threads: [2, 8], socket: 0, numa: 0 },
  { threads: [3, 9], socket: 1, numa: 1 },
  { threads: [4, 10], socket: 1, numa: 1 },
  { threads: [5, 11], socket: 1, numa: 1 },
];

const h = (nodes: number[], preferred: boolean): TopologyHint => ({ numaNodeAffinity: nodes, preferred });

function guaranteed(name: string, cpu: string): Container {
  const resources = { cpu, memory: '1Gi' };
  return { name, image: 'i', resources: { requests: resources, limits: resources } };
}

function pod(containers: Container[], init: Container[] = []): Pod {
  return {
    metadata: { name: 'fakePod', namespace: 'default', uid: 'fakePod' },
    spec: { containers, initContainers: init },
  };
}

/** Upstream's order for comparing: preferred first, then narrowest. */
function sorted(hints: readonly TopologyHint[] | undefined): TopologyHint[] {
  const less = (a: TopologyHint, b: TopologyHint): boolean =>
    a.preferred !== b.preferred
      ? a.preferred
      : isNarrowerThan(a.numaNodeAffinity ?? [], b.numaNodeAffinity ?? []);
  return [...(hints ?? [])].sort((a, b) => (less(a, b) ? -1 : less(b, a) ? 1 : 0));
}

async function withPolicy(run: (policy: StaticPolicy) => void | Promise<void>): Promise<void> {
  const sysfs = await makeFakeSysfs(MACHINE);
  try {
    const topology = await discoverTopology(sysfs.root);
    assert.equal(topology.numNUMANodes, 2);
    assert.equal(topology.numSockets, 2);
    assert.equal(topology.cpusPerCore(), 2);
    await run(new StaticPolicy(topology, 0, CPUSet.EMPTY));
  } finally {
    await sysfs.remove();
  }
}

const FREE = CPUSet.of(2, 3, 4, 5, 6, 7, 8, 9, 10, 11);

/** Upstream's returnTestCases: [name, cpus requested, default cpuset, assigned cpus, expected hints]. */
const CASES: [string, string, CPUSet, CPUSet | undefined, TopologyHint[]][] = [
  [
    'Request 2 CPUs, 4 available on NUMA 0, 6 available on NUMA 1',
    '2',
    FREE,
    undefined,
    [h([0], true), h([1], true), h([0, 1], false)],
  ],
  [
    'Request 5 CPUs, 4 available on NUMA 0, 6 available on NUMA 1',
    '5',
    FREE,
    undefined,
    [h([1], true), h([0, 1], false)],
  ],
  ['Request 7 CPUs, 4 available on NUMA 0, 6 available on NUMA 1', '7', FREE, undefined, [h([0, 1], true)]],
  ['Request 11 CPUs, 4 available on NUMA 0, 6 available on NUMA 1', '11', FREE, undefined, []],
  [
    'Request 2 CPUs, 1 available on NUMA 0, 1 available on NUMA 1',
    '2',
    CPUSet.of(0, 3),
    undefined,
    [h([0, 1], false)],
  ],
  ['Request more CPUs than available', '5', CPUSet.of(0, 1, 2, 3), undefined, []],
  [
    'Regenerate Single-Node NUMA Hints if already allocated 1/2',
    '2',
    CPUSet.EMPTY,
    CPUSet.of(0, 6),
    [h([0], true), h([0, 1], false)],
  ],
  [
    'Regenerate Single-Node NUMA Hints if already allocated 2/2',
    '2',
    CPUSet.EMPTY,
    CPUSet.of(3, 9),
    [h([1], true), h([0, 1], false)],
  ],
  [
    'Regenerate Cross-NUMA Hints if already allocated',
    '11',
    CPUSet.EMPTY,
    CPUSet.parse('0-10'),
    [h([0, 1], true)],
  ],
  ['Requested less than already allocated', '2', CPUSet.EMPTY, CPUSet.of(0, 6, 3, 9), []],
  ['Requested more than already allocated', '11', CPUSet.EMPTY, CPUSet.of(0, 6, 3, 9), []],
];

test('CPU topology hints per container and per pod, on a fake sysfs (upstream TestGetTopologyHints, TestGetPodTopologyHints)', async () => {
  await withPolicy((policy) => {
    for (const [name, cpu, free, assigned, expected] of CASES) {
      const p = pod([guaranteed('fakeContainer', cpu)]);
      const s = new CPUManagerState();
      s.setDefaultCPUSet(free);
      if (assigned) s.setCPUSet('fakePod', 'fakeContainer', assigned);
      const c = p.spec.containers[0] as Container;
      assert.deepEqual(sorted(policy.getTopologyHints(s, p, c)?.get('cpu')), sorted(expected), name);
      assert.deepEqual(
        sorted(policy.getPodTopologyHints(s, p)?.get('cpu')),
        sorted(expected),
        `${name} (pod)`,
      );
    }
  });
});

test('no exclusive CPUs, no hints: a container that is not Guaranteed or not integer has no preference', async () => {
  await withPolicy((policy) => {
    const s = new CPUManagerState();
    s.setDefaultCPUSet(FREE);
    const fractional = pod([guaranteed('c', '1500m')]);
    assert.equal(
      policy.getTopologyHints(s, fractional, fractional.spec.containers[0] as Container),
      undefined,
    );
    assert.equal(policy.getPodTopologyHints(s, fractional), undefined);
  });
});

test('podGuaranteedCPUs: the app containers summed, or the largest init container (upstream TestPodGuaranteedCPUs)', () => {
  const rows: [string[], string[], number][] = [
    [['0'], ['0'], 0],
    [['2'], ['2'], 2],
    [['5'], ['5'], 5],
    [['2'], ['5'], 5],
    [['5'], ['2'], 5],
    [['2', '4'], ['2', '4'], 6],
  ];
  for (const [init, apps, expected] of rows) {
    const p = pod(
      apps.map((cpu, i) => guaranteed(`app${i}`, cpu)),
      init.map((cpu, i) => guaranteed(`init${i}`, cpu)),
    );
    assert.equal(podGuaranteedCPUs(p), expected, JSON.stringify({ init, apps }));
  }
});

test('allocation takes the CPUs of the chosen NUMA node first, then any (upstream allocateCPUs)', async () => {
  const sysfs = await makeFakeSysfs(MACHINE);
  try {
    const topology = await discoverTopology(sysfs.root);
    let affinity: number[] | null = [1];
    const store = { getAffinity: () => ({ numaNodeAffinity: affinity, preferred: true }) };
    const policy = new StaticPolicy(topology, 0, CPUSet.EMPTY, {}, {}, store);
    const s = new CPUManagerState();
    policy.start(s);
    const two = pod([guaranteed('a', '2')]);
    policy.allocate(s, two, two.spec.containers[0] as Container);
    assert.equal(s.getCPUSet('fakePod', 'a')?.toString(), '3,9', 'a whole core of NUMA node 1');
    // Eight CPUs asked with affinity to node 1, which has four left: those four, then four of node 0.
    const eight = pod([guaranteed('b', '8')]);
    policy.allocate(s, eight, eight.spec.containers[0] as Container);
    const b = s.getCPUSet('fakePod', 'b') ?? CPUSet.EMPTY;
    assert.equal(b.intersection(topology.details.cpusInNUMANodes(1)).toString(), '4-5,10-11');
    assert.equal(b.size, 8);
    // Without an affinity the packed order starts on node 0.
    affinity = null;
    const s2 = new CPUManagerState();
    policy.start(s2);
    policy.allocate(s2, two, two.spec.containers[0] as Container);
    assert.equal(s2.getCPUSet('fakePod', 'a')?.toString(), '0,6');
  } finally {
    await sysfs.remove();
  }
});
