/**
 * Cases replayed from upstream's policy_static_test.go (v1.28.7), each named by its upstream
 * description: the same machine state, assignments, pod and topology hint in, the same assignments,
 * machine state, hints or error out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Container, Pod } from '../../../../src/api/core-v1.js';
import {
  MemoryManagerState,
  type MemoryTable,
  type NUMANodeMap,
} from '../../../../src/cm/memorymanager/memory-state.js';
import { StaticPolicy, type SystemReservedMemory } from '../../../../src/cm/memorymanager/policy-static.js';
import type {
  TopologyAffinityStore,
  TopologyHint,
} from '../../../../src/cm/topologymanager/topology-hint.js';

const MB = 1024 ** 2;
const GB = 1024 * MB;
const HP1G = 'hugepages-1Gi';
const HP2M = 'hugepages-2Mi';

const t = (allocatable: number, free: number, total: number, systemReserved = 0): MemoryTable => ({
  total,
  systemReserved,
  allocatable,
  reserved: allocatable - free,
  free,
});

function node(cells: number[], assignments: number, tables: Record<string, MemoryTable>) {
  return { numberOfAssignments: assignments, memoryMap: new Map(Object.entries(tables)), cells };
}

function container(name: string, memory: string, hugepages: Record<string, string> = {}): Container {
  const list = { cpu: '1000Mi', memory, ...hugepages };
  return { name, image: 'i', resources: { requests: list, limits: list } };
}

function pod(uid: string, containers: Container[], initContainers: Container[] = []): Pod {
  return { metadata: { name: uid, namespace: 'default', uid }, spec: { containers, initContainers } };
}

const guaranteed = (uid: string, name: string) => pod(uid, [container(name, '1Gi', { [HP1G]: '1Gi' })]);

function store(hint: TopologyHint): TopologyAffinityStore {
  return { getAffinity: () => hint, getPolicyName: () => 'fake' };
}

function reservedOn(...nodes: number[]): SystemReservedMemory {
  return new Map(nodes.map((id) => [id, new Map([['memory', 512 * MB]])]));
}

function setup(machine: NUMANodeMap, hint: TopologyHint, reserved: SystemReservedMemory) {
  const s = new MemoryManagerState();
  s.setMachineState(machine);
  return { s, p: new StaticPolicy([], reserved, store(hint)) };
}

/** Four nodes of 1Gi memory (512Mi reserved) and 1Gi of 1Gi pages, nothing used. */
const fourFreeNodes = (): NUMANodeMap =>
  new Map(
    [0, 1, 2, 3].map((id) => [
      id,
      node([id], 0, { memory: t(512 * MB, 512 * MB, GB, 512 * MB), [HP1G]: t(GB, GB, GB) }),
    ]),
  );

test('TestStaticPolicyNew: should fail, when machine does not have reserved memory for the system workloads', () => {
  assert.throws(
    () => new StaticPolicy([], new Map(), store({ numaNodeAffinity: null, preferred: false })),
    /^KubeletError: \[memorymanager\] you should specify the system reserved memory$/,
  );
});

test('TestStaticPolicyAllocate: should do nothing for non-guaranteed pods', () => {
  const { s, p } = setup(fourFreeNodes(), { numaNodeAffinity: null, preferred: false }, reservedOn(0));
  const burstable = pod('pod1', [{ name: 'c', image: 'i', resources: { requests: { memory: '1Gi' } } }]);
  p.allocate(s, burstable, burstable.spec.containers[0]!);
  assert.equal(s.getMemoryAssignments().size, 0);
  assert.deepEqual(s.getMachineState(), fourFreeNodes());
});

test('TestStaticPolicyAllocate: should succeed to allocate memory from multiple NUMA nodes', () => {
  const { s, p } = setup(
    fourFreeNodes(),
    { numaNodeAffinity: null, preferred: true },
    reservedOn(0, 1, 2, 3),
  );
  const p1 = guaranteed('pod1', 'container1');
  p.allocate(s, p1, p1.spec.containers[0]!);
  assert.deepEqual(s.getMemoryBlocks('pod1', 'container1'), [
    { numaAffinity: [0, 1], type: 'memory', size: GB },
    { numaAffinity: [0, 1], type: HP1G, size: GB },
  ]);
  const want = fourFreeNodes();
  want.set(0, node([0, 1], 2, { memory: t(512 * MB, 0, GB, 512 * MB), [HP1G]: t(GB, 0, GB) }));
  want.set(1, node([0, 1], 2, { memory: t(512 * MB, 0, GB, 512 * MB), [HP1G]: t(GB, GB, GB) }));
  assert.deepEqual(s.getMachineState(), want);
});

test('TestStaticPolicyAllocate: should fail when no NUMA affinity was provided under the topology manager hint and calculation of the default hint failed', () => {
  const machine: NUMANodeMap = new Map([
    [0, node([0], 2, { memory: t(1536 * MB, 512 * MB, 2 * GB, 512 * MB), [HP1G]: t(GB, 0, GB) })],
  ]);
  const { s, p } = setup(machine, { numaNodeAffinity: null, preferred: false }, reservedOn(0));
  s.setMemoryBlocks('pod1', 'container1', [
    { numaAffinity: [0], type: 'memory', size: GB },
    { numaAffinity: [0], type: HP1G, size: GB },
  ]);
  const p2 = guaranteed('pod2', 'container2');
  assert.throws(
    () => p.allocate(s, p2, p2.spec.containers[0]!),
    /^KubeletError: \[memorymanager\] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available$/,
  );
});

test('TestStaticPolicyAllocate: should fail when no NUMA affinity was provided under the topology manager preferred hint and default hint has preferred false', () => {
  const machine: NUMANodeMap = new Map([
    [0, node([0], 1, { memory: t(GB, 512 * MB, 2 * GB, 512 * MB), [HP1G]: t(GB, GB, GB) })],
    [1, node([1], 0, { memory: t(512 * MB, 512 * MB, GB, 512 * MB), [HP1G]: t(GB, GB, GB) })],
    [2, node([2], 0, { memory: t(512 * MB, 512 * MB, GB, 512 * MB), [HP1G]: t(GB, GB, GB) })],
  ]);
  const { s, p } = setup(machine, { numaNodeAffinity: null, preferred: true }, reservedOn(0, 1, 2));
  s.setMemoryBlocks('pod1', 'container1', [{ numaAffinity: [0], type: 'memory', size: 512 * MB }]);
  const p2 = guaranteed('pod2', 'container2');
  assert.throws(
    () => p.allocate(s, p2, p2.spec.containers[0]!),
    /^KubeletError: \[memorymanager\] failed to find the default preferred hint$/,
  );
});

test('TestStaticPolicyAllocateWithInitContainers: should re-use init containers memory, init containers requests 1Gi and 2Gi, apps containers 3Gi and 4Gi', () => {
  const machine: NUMANodeMap = new Map([
    [
      0,
      node([0], 0, { memory: t(7680 * MB, 7680 * MB, 8 * GB, 512 * MB), [HP1G]: t(8 * GB, 8 * GB, 8 * GB) }),
    ],
  ]);
  const { s, p } = setup(machine, { numaNodeAffinity: null, preferred: false }, reservedOn(0));
  const size = (n: number) => container(`c${n}`, `${n}Gi`, { [HP1G]: `${n}Gi` });
  const p1 = pod(
    'pod1',
    [
      { ...size(3), name: 'container1' },
      { ...size(4), name: 'container2' },
    ],
    [
      { ...size(1), name: 'initContainer1' },
      { ...size(2), name: 'initContainer2' },
    ],
  );
  for (const c of [...p1.spec.initContainers!, ...p1.spec.containers]) p.allocate(s, p1, c);
  const blocks = (n: number) => [
    { numaAffinity: [0], type: 'memory', size: n * GB },
    { numaAffinity: [0], type: HP1G, size: n * GB },
  ];
  assert.deepEqual(s.getMemoryBlocks('pod1', 'initContainer1'), blocks(0));
  assert.deepEqual(s.getMemoryBlocks('pod1', 'initContainer2'), blocks(0));
  assert.deepEqual(s.getMemoryBlocks('pod1', 'container1'), blocks(3));
  assert.deepEqual(s.getMemoryBlocks('pod1', 'container2'), blocks(4));
  assert.deepEqual(
    s.getMachineState(),
    new Map([
      [0, node([0], 8, { memory: t(7680 * MB, 512 * MB, 8 * GB, 512 * MB), [HP1G]: t(8 * GB, GB, 8 * GB) })],
    ]),
  );
});

test('TestStaticPolicyRemoveContainer: should delete the cross NUMA container assignment and update the machine state', () => {
  const { s, p } = setup(
    fourFreeNodes(),
    { numaNodeAffinity: null, preferred: true },
    reservedOn(0, 1, 2, 3),
  );
  const p1 = guaranteed('pod1', 'container1');
  p.allocate(s, p1, p1.spec.containers[0]!);
  p.removeContainer(s, 'pod1', 'container1');
  assert.equal(s.getMemoryAssignments().size, 0);
  assert.deepEqual(s.getMachineState(), fourFreeNodes());
  // Idempotent: nothing to remove the second time.
  p.removeContainer(s, 'pod1', 'container1');
  assert.deepEqual(s.getMachineState(), fourFreeNodes());
});

test('TestStaticPolicyGetTopologyHints: should calculate new topology hints, when the container does not exist under assignments', () => {
  const machine: NUMANodeMap = new Map([
    [0, node([0, 1], 2, { memory: t(1536 * MB, 0, 2 * GB, 512 * MB), [HP1G]: t(GB, 0, GB) })],
    [1, node([0, 1], 2, { memory: t(1536 * MB, GB, 2 * GB, 512 * MB), [HP1G]: t(GB, 0, GB) })],
    [2, node([2], 0, { memory: t(1536 * MB, 1536 * MB, 2 * GB, 512 * MB), [HP1G]: t(GB, GB, GB) })],
    [3, node([3], 0, { memory: t(1536 * MB, 1536 * MB, 2 * GB, 512 * MB), [HP1G]: t(GB, GB, GB) })],
  ]);
  const { s, p } = setup(machine, { numaNodeAffinity: null, preferred: false }, reservedOn(0, 1, 2, 3));
  s.setMemoryBlocks('pod1', 'container1', [
    { numaAffinity: [0, 1], type: 'memory', size: 2 * GB },
    { numaAffinity: [0, 1], type: HP1G, size: 2 * GB },
  ]);
  const p2 = guaranteed('pod2', 'container2');
  const want = [
    { numaNodeAffinity: [2], preferred: true },
    { numaNodeAffinity: [3], preferred: true },
    { numaNodeAffinity: [2, 3], preferred: false },
  ];
  assert.deepEqual(
    p.getTopologyHints(s, p2, p2.spec.containers[0]!),
    new Map([
      ['memory', want],
      [HP1G, want],
    ]),
  );
  // The container already placed gets its own nodes back, preferred (upstream: regenerateHints).
  const p1 = guaranteed('pod1', 'container1');
  const again = { ...p1, spec: { containers: [container('container1', '2Gi', { [HP1G]: '2Gi' })] } };
  assert.deepEqual(
    p.getTopologyHints(s, again, again.spec.containers[0]!),
    new Map([
      ['memory', [{ numaNodeAffinity: [0, 1], preferred: true }]],
      [HP1G, [{ numaNodeAffinity: [0, 1], preferred: true }]],
    ]),
  );
  // Upstream's "should fail when existing memory assignment size is different": no hints at all.
  assert.equal(p.getTopologyHints(s, p1, p1.spec.containers[0]!), undefined);
});

test('TestStaticPolicyGetTopologyHints: should not return preferred hints with multiple NUMA nodes for the pod with resources satisfied by a single NUMA node', () => {
  const machine: NUMANodeMap = new Map([
    [0, node([0, 1], 2, { memory: t(1536 * MB, 0, 2 * GB, 512 * MB), [HP2M]: t(20 * MB, 0, 20 * MB) })],
    [
      1,
      node([0, 1], 2, { memory: t(1536 * MB, GB, 2 * GB, 512 * MB), [HP2M]: t(20 * MB, 16 * MB, 20 * MB) }),
    ],
  ]);
  const { s, p } = setup(machine, { numaNodeAffinity: null, preferred: false }, reservedOn(0, 1));
  s.setMemoryBlocks('pod1', 'container1', [
    { numaAffinity: [0, 1], type: 'memory', size: 2 * GB },
    { numaAffinity: [0, 1], type: HP2M, size: 24 * MB },
  ]);
  const p2 = pod('pod2', [container('container2', '1Gi', { [HP2M]: '16Mi' })]);
  assert.deepEqual(
    p.getTopologyHints(s, p2, p2.spec.containers[0]!),
    new Map([
      ['memory', [{ numaNodeAffinity: [0, 1], preferred: false }]],
      [HP2M, [{ numaNodeAffinity: [0, 1], preferred: false }]],
    ]),
  );
});

test('TestStaticPolicyGetTopologyHints: should not provide topology hints for non-guaranteed pods', () => {
  const { s, p } = setup(fourFreeNodes(), { numaNodeAffinity: null, preferred: false }, reservedOn(0));
  const burstable = pod('pod1', [{ name: 'c', image: 'i', resources: { requests: { memory: '1Gi' } } }]);
  assert.equal(p.getTopologyHints(s, burstable, burstable.spec.containers[0]!), undefined);
  assert.equal(p.getPodTopologyHints(s, burstable), undefined);
});

test('a topology manager hint narrower than the request is widened to the smallest group holding it', () => {
  // Restricted may merge to node 0 alone while the request needs two nodes (upstream: extendTopologyManagerHint).
  const { s, p } = setup(
    fourFreeNodes(),
    { numaNodeAffinity: [0], preferred: false },
    reservedOn(0, 1, 2, 3),
  );
  const p1 = guaranteed('pod1', 'container1');
  p.allocate(s, p1, p1.spec.containers[0]!);
  assert.deepEqual(s.getMemoryBlocks('pod1', 'container1')?.[0]?.numaAffinity, [0, 1]);
});
