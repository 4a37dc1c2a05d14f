import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Container, Pod } from '../../../../src/api/core-v1.js';
import { CPUSet } from '../../../../src/cm/cpumanager/cpu-set.js';
import { CPUManagerState } from '../../../../src/cm/cpumanager/cpu-state.js';
import {
  SMTAlignmentError,
  StaticPolicy,
  guaranteedCPUs,
} from '../../../../src/cm/cpumanager/policy-static.js';
import {
  DUAL_SOCKET_HT,
  DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT,
  MULTI_SOCKET_DUAL_SOCKET_PER_NUMA_HT,
  SINGLE_SOCKET_HT,
  topologyOf,
} from './fake-sysfs.js';

function container(name: string, cpu: string, memory = '100Mi', limitCpu = cpu): Container {
  return { name, image: 'i', resources: { requests: { cpu, memory }, limits: { cpu: limitCpu, memory } } };
}

function pod(uid: string, containers: Container[], initContainers: Container[] = []): Pod {
  return { metadata: { name: uid, namespace: 'default', uid }, spec: { containers, initContainers } };
}

function started(policy: StaticPolicy): CPUManagerState {
  const s = new CPUManagerState();
  policy.start(s);
  return s;
}

test('reserved CPUs are taken lowest core first, and the first exclusive CPU is the reserved core sibling', () => {
  // Upstream's "GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU".
  const policy = new StaticPolicy(topologyOf(SINGLE_SOCKET_HT), 1, CPUSet.EMPTY);
  assert.equal(policy.reservedCPUs.toString(), '0');
  assert.equal(policy.reservedPhysicalCPUs.toString(), '0,4');
  const s = started(policy);
  assert.equal(s.getDefaultCPUSet().toString(), '0-7');
  const p = pod('p1', [container('c', '1')]);
  policy.allocate(s, p, p.spec.containers[0] as Container);
  assert.equal(s.getCPUSet('p1', 'c')?.toString(), '4');
  assert.equal(s.getDefaultCPUSet().toString(), '0-3,5-7');
  assert.equal(policy.getAllocatableCPUs().toString(), '1-7');
});

test('a Guaranteed container takes whole cores of one socket; the shared pool loses them', () => {
  const policy = new StaticPolicy(topologyOf(DUAL_SOCKET_HT), 2, CPUSet.EMPTY);
  assert.equal(policy.reservedCPUs.toString(), '0,6');
  const s = started(policy);
  const p = pod('p1', [container('c', '4')]);
  policy.allocate(s, p, p.spec.containers[0] as Container);
  assert.equal(s.getCPUSet('p1', 'c')?.toString(), '2,4,8,10');
  assert.equal(s.getDefaultCPUSet().toString(), '0-1,3,5-7,9,11');
  // Allocating again (a restart re-admitting the pod) keeps what it has.
  policy.allocate(s, p, p.spec.containers[0] as Container);
  assert.equal(s.getCPUSet('p1', 'c')?.toString(), '2,4,8,10');
});

test('containers that do not qualify stay on the shared pool', () => {
  const policy = new StaticPolicy(topologyOf(SINGLE_SOCKET_HT), 1, CPUSet.EMPTY);
  const s = started(policy);
  const fractional = pod('g', [container('c', '1500m')]);
  const burstable = pod('b', [container('c', '1', '100Mi', '2')]);
  const bestEffort = pod('e', [{ name: 'c', image: 'i' }]);
  for (const p of [fractional, burstable, bestEffort]) {
    assert.equal(guaranteedCPUs(p, p.spec.containers[0] as Container), 0);
    policy.allocate(s, p, p.spec.containers[0] as Container);
    assert.equal(s.getCPUSet(p.metadata.uid ?? '', 'c'), undefined);
  }
  assert.equal(s.getCPUSetOrDefault('e', 'c').toString(), '0-7');
});

test("too big a request fails with upstream's message and changes nothing", () => {
  const policy = new StaticPolicy(topologyOf(SINGLE_SOCKET_HT), 1, CPUSet.EMPTY);
  const s = started(policy);
  const p = pod('p', [container('c', '8')]);
  assert.throws(() => policy.allocate(s, p, p.spec.containers[0] as Container), {
    message: 'not enough cpus available to satisfy request',
  });
  assert.equal(s.getDefaultCPUSet().toString(), '0-7');
  assert.equal(s.getCPUAssignments().size, 0);
});

test('full-pcpus-only: an odd request or too few free cores is an SMTAlignmentError; an even one gets whole cores', () => {
  const policy = new StaticPolicy(topologyOf(SINGLE_SOCKET_HT), 1, CPUSet.EMPTY, {
    'full-pcpus-only': 'true',
  });
  const s = started(policy);
  const odd = pod('odd', [container('c', '1')]);
  assert.throws(
    () => policy.allocate(s, odd, odd.spec.containers[0] as Container),
    (err: unknown) =>
      err instanceof SMTAlignmentError &&
      err.reason === 'SMTAlignmentError' &&
      err.message === 'SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2',
  );
  const big = pod('big', [container('c', '8')]);
  assert.throws(() => policy.allocate(s, big, big.spec.containers[0] as Container), {
    message:
      'SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 6, requested CPUs = 8, CPUs per core = 2',
  });
  const even = pod('even', [container('c', '2')]);
  policy.allocate(s, even, even.spec.containers[0] as Container);
  assert.equal(s.getCPUSet('even', 'c')?.toString(), '1,5');
});

test("policy options: unknown ones, bad values and options behind a gate are refused in upstream's words", () => {
  const topo = topologyOf(SINGLE_SOCKET_HT);
  assert.throws(() => new StaticPolicy(topo, 1, CPUSet.EMPTY, { bogus: 'true' }), {
    message: 'unknown CPU Manager Policy option: "bogus"',
  });
  assert.throws(() => new StaticPolicy(topo, 1, CPUSet.EMPTY, { 'full-pcpus-only': 'yes' }), {
    message: 'bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax',
  });
  for (const option of ['distribute-cpus-across-numa', 'align-by-socket'])
    assert.throws(() => new StaticPolicy(topo, 1, CPUSet.EMPTY, { [option]: 'true' }), {
      message: `CPU Manager Policy Alpha-level Options not enabled, but option "${option}" provided`,
    });
  assert.throws(
    () =>
      new StaticPolicy(
        topo,
        1,
        CPUSet.EMPTY,
        { 'full-pcpus-only': 'true' },
        {
          featureGates: { CPUManagerPolicyBetaOptions: false },
        },
      ),
    { message: 'CPU Manager Policy Beta-level Options not enabled, but option "full-pcpus-only" provided' },
  );
  const both = new StaticPolicy(
    topo,
    1,
    CPUSet.EMPTY,
    { 'distribute-cpus-across-numa': 'true', 'align-by-socket': 'true', 'full-pcpus-only': 'true' },
    { featureGates: { CPUManagerPolicyAlphaOptions: true } },
  );
  assert.deepEqual(both.options, {
    fullPhysicalCPUsOnly: true,
    distributeCPUsAcrossNUMA: true,
    alignBySocket: true,
  });
});

const ALPHA = { featureGates: { CPUManagerPolicyAlphaOptions: true } };

test('distribute-cpus-across-numa spreads a request over NUMA nodes; with full-pcpus-only in whole cores', () => {
  const topo = topologyOf(DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT);
  const packed = new StaticPolicy(topo, 2, CPUSet.EMPTY);
  const spread = new StaticPolicy(topo, 2, CPUSet.EMPTY, { 'distribute-cpus-across-numa': 'true' }, ALPHA);
  const p = pod('p1', [container('c', '24')]);
  const c = p.spec.containers[0] as Container;
  const packedState = started(packed);
  packed.allocate(packedState, p, c);
  // Packed: the free NUMA node 1 whole, then 4 from node 0 (less its reserved core 0,40).
  assert.equal(packedState.getCPUSet('p1', 'c')?.toString(), '1-2,10-19,41-42,50-59');
  const spreadState = started(spread);
  spread.allocate(spreadState, p, c);
  // Spread: 12 from each of two NUMA nodes, the pair that leaves the four most even (1 and 2: node 0
  // has 2 CPUs less, reserved), as upstream's balance score picks.
  assert.equal(spreadState.getCPUSet('p1', 'c')?.toString(), '10-15,20-25,50-55,60-65');
  const cores = new StaticPolicy(
    topo,
    2,
    CPUSet.EMPTY,
    { 'distribute-cpus-across-numa': 'true', 'full-pcpus-only': 'true' },
    ALPHA,
  );
  const coresState = started(cores);
  const odd = pod('p2', [container('c', '26')]);
  cores.allocate(coresState, odd, odd.spec.containers[0] as Container);
  const got = coresState.getCPUSet('p2', 'c')!;
  assert.equal(got.size, 26);
  for (const cpu of got.list())
    assert.ok(got.has(cpu < 40 ? cpu + 40 : cpu - 40), `${cpu} without its sibling`);
});

test("align-by-socket: refused with single-numa-node and where sockets outnumber NUMA nodes, in upstream's words", () => {
  const opts = { 'align-by-socket': 'true' };
  assert.throws(
    () =>
      new StaticPolicy(topologyOf(DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT), 2, CPUSet.EMPTY, opts, {
        ...ALPHA,
        topologyManagerPolicy: 'single-numa-node',
      }),
    {
      message:
        'Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option',
    },
  );
  assert.throws(
    () => new StaticPolicy(topologyOf(MULTI_SOCKET_DUAL_SOCKET_PER_NUMA_HT), 2, CPUSet.EMPTY, opts, ALPHA),
    {
      message:
        'Align by socket is not compatible with hardware where number of sockets are more than number of NUMA',
    },
  );
});

test('align-by-socket: a NUMA affinity widens to its socket when CPUs are taken, and hints aligned to sockets are preferred', () => {
  const topo = topologyOf(DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT);
  const bySocket = new StaticPolicy(topo, 2, CPUSet.EMPTY, { 'align-by-socket': 'true' }, ALPHA);
  const byNUMA = new StaticPolicy(topo, 2, CPUSet.EMPTY);
  const all = CPUSet.parse('2-79');
  assert.equal(bySocket.getAlignedCPUs([1], all).toString(), '2-19,40-59');
  assert.equal(byNUMA.getAlignedCPUs([1], all).toString(), '10-19,50-59');
  const p = pod('p1', [container('c', '24')]);
  const c = p.spec.containers[0] as Container;
  const s1 = started(bySocket);
  bySocket.allocate(s1, p, c, [1]);
  // All 24 from socket 0 (NUMA nodes 0 and 1).
  assert.ok(s1.getCPUSet('p1', 'c')!.isSubsetOf(CPUSet.parse('0-19,40-59')));
  const s2 = started(byNUMA);
  byNUMA.allocate(s2, p, c, [1]);
  // NUMA node 1 whole (20), then 4 more packed from what is left.
  assert.ok(CPUSet.parse('10-19,50-59').isSubsetOf(s2.getCPUSet('p1', 'c')!));
  // A hint over NUMA nodes 0 and 1 spans one socket: socket-aligned when one socket is the least needed.
  assert.equal(bySocket.isHintSocketAligned([0, 1], 1), true);
  assert.equal(bySocket.isHintSocketAligned([1, 2], 1), false);
  assert.equal(bySocket.isHintSocketAligned([1, 2], 3), true);
});

test('reservedSystemCPUs is the reservation; its size must match the reserved CPU count', () => {
  const topo = topologyOf(SINGLE_SOCKET_HT);
  const policy = new StaticPolicy(topo, 2, CPUSet.parse('2-3'));
  assert.equal(policy.reservedCPUs.toString(), '2-3');
  assert.equal(policy.reservedPhysicalCPUs.toString(), '2-3,6-7');
  assert.throws(() => new StaticPolicy(topo, 2, CPUSet.of(1)), {
    message: '[cpumanager] unable to reserve the required amount of CPUs (size of 1 did not equal 2)',
  });
  assert.throws(
    () => new StaticPolicy(topo, 9, CPUSet.EMPTY),
    /unable to reserve the required amount of CPUs/,
  );
});

test("an init container's CPUs are reused by the app container, and removal returns them once", () => {
  const policy = new StaticPolicy(topologyOf(SINGLE_SOCKET_HT), 1, CPUSet.EMPTY);
  const s = started(policy);
  const p = pod('p', [container('app', '2')], [container('init', '2')]);
  policy.allocate(s, p, p.spec.initContainers?.[0] as Container);
  policy.allocate(s, p, p.spec.containers[0] as Container);
  assert.equal(s.getCPUSet('p', 'init')?.toString(), '1,5');
  assert.equal(s.getCPUSet('p', 'app')?.toString(), '1,5');
  assert.equal(s.getDefaultCPUSet().toString(), '0,2-4,6-7');
  policy.removeContainer(s, 'p', 'init');
  assert.equal(s.getDefaultCPUSet().toString(), '0,2-4,6-7', 'the app still holds them');
  policy.removeContainer(s, 'p', 'app');
  assert.equal(s.getDefaultCPUSet().toString(), '0-7');
  assert.equal(s.getCPUAssignments().size, 0);
});

test('start refuses state that does not fit this node and policy', () => {
  const policy = new StaticPolicy(topologyOf(SINGLE_SOCKET_HT), 1, CPUSet.EMPTY);
  const check = (shared: string, assigned: Record<string, string>, want: RegExp): void => {
    const s = new CPUManagerState();
    s.setDefaultCPUSet(CPUSet.parse(shared));
    for (const [c, cpus] of Object.entries(assigned)) s.setCPUSet('p', c, CPUSet.parse(cpus));
    assert.throws(() => policy.start(s), want);
  };
  check('1-7', {}, /not all reserved cpus: "0" are present in defaultCpuSet: "1-7"/);
  check('0-7', { c: '3' }, /cpuset: "3" overlaps with default cpuset "0-7"/);
  check('0-5', { c: '6' }, /current set of available CPUs "0-7" doesn't match with CPUs in state "0-6"/);
  check('', { c: '6' }, /default cpuset cannot be empty/);
  const ok = new CPUManagerState();
  ok.setDefaultCPUSet(CPUSet.parse('0-3,5-7'));
  ok.setCPUSet('p', 'c', CPUSet.of(4));
  policy.start(ok);
  assert.equal(ok.getCPUSet('p', 'c')?.toString(), '4');
});
