import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Container, Pod } from '../../../../src/api/core-v1.js';
import { NUMAInfo } from '../../../../src/cm/topologymanager/numa-info.js';
import {
  BestEffortPolicy,
  NonePolicy,
  RestrictedPolicy,
  SingleNumaNodePolicy,
} from '../../../../src/cm/topologymanager/policies.js';
import type { Policy } from '../../../../src/cm/topologymanager/hint-merger.js';
import { parseTopologyPolicyOptions } from '../../../../src/cm/topologymanager/policy-options.js';
import type {
  HintProvider,
  TopologyHint,
  TopologyHints,
} from '../../../../src/cm/topologymanager/topology-hint.js';
import {
  createTopologyManager,
  TopologyManager,
  type AdmitResult,
} from '../../../../src/cm/topologymanager/topology-manager.js';

const h = (nodes: number[] | null, preferred: boolean): TopologyHint => ({
  numaNodeAffinity: nodes,
  preferred,
});
const TWO_NODES = new NUMAInfo([0, 1]);

function pod(uid: string, init: string[], containers: string[]): Pod {
  const c = (name: string): Container => ({ name, image: 'i' });
  return {
    metadata: { name: uid, namespace: 'default', uid },
    spec: { initContainers: init.map(c), containers: containers.map(c) },
  };
}

/** A provider that answers fixed hints and records what it was asked, in one shared log. */
class RecordingProvider implements HintProvider {
  constructor(
    private readonly name: string,
    private readonly calls: string[],
    private readonly hints: TopologyHints,
    private readonly allocateWith: (c: Container) => void | Promise<void> = () => undefined,
  ) {}
  getTopologyHints(_pod: Pod, c: Container): TopologyHints {
    this.calls.push(`${this.name}.hints(${c.name})`);
    return this.hints;
  }
  getPodTopologyHints(): TopologyHints {
    this.calls.push(`${this.name}.podHints`);
    return this.hints;
  }
  allocate(_pod: Pod, c: Container): void | Promise<void> {
    this.calls.push(`${this.name}.allocate(${c.name})`);
    return this.allocateWith(c);
  }
}

function managerWith(policy: Policy, scope: string, providers: HintProvider[]): TopologyManager {
  const m = new TopologyManager(policy, scope, [0, 1]);
  for (const p of providers) m.addHintProvider(p);
  return m;
}

test('admit decides as upstream under both scopes (TestAdmit)', () => {
  const be = new BestEffortPolicy(TWO_NODES);
  const restricted = new RestrictedPolicy(TWO_NODES);
  const single = new SingleNumaNodePolicy(TWO_NODES);
  const preferred = new Map([['resource', [h([0], true), h([0, 1], false)]]]);
  const twoPreferred = new Map([['resource', [h([0], true), h([1], true), h([0, 1], false)]]]);
  const nonePreferred = new Map([['resource', [h([0, 1], false)]]]);
  const rows: [string, Policy, TopologyHints[], boolean][] = [
    ['none, no hints', new NonePolicy(), [], true],
    ['single-numa-node, no hints', single, [undefined], true],
    ['restricted, no hints', restricted, [undefined], true],
    ['best-effort, preferred', be, [preferred], true],
    ['best-effort, more than one preferred', be, [twoPreferred], true],
    ['best-effort, none preferred', be, [nonePreferred], true],
    ['restricted, preferred', restricted, [preferred], true],
    ['restricted, more than one preferred', restricted, [twoPreferred], true],
    ['restricted, none preferred', restricted, [nonePreferred], false],
  ];
  for (const [name, policy, hints, expected] of rows) {
    for (const scope of ['container', 'pod']) {
      const providers = hints.map((x, i) => new RecordingProvider(`p${i}`, [], x));
      const result = managerWith(policy, scope, providers).admit(pod('u', [], ['c']), []) as AdmitResult;
      assert.equal(result.admit, expected, `${name} (${scope})`);
      if (!result.admit) {
        assert.equal(result.reason, 'TopologyAffinityError');
        assert.equal(result.message, 'Resources cannot be allocated with Topology locality');
      }
    }
  }
});

test('container scope: hints and allocation per container, init containers first, providers in order', () => {
  const calls: string[] = [];
  const cpu = new RecordingProvider('cpu', calls, new Map([['cpu', [h([1], true), h([0, 1], false)]]]));
  const dev = new RecordingProvider('dev', calls, undefined);
  const m = managerWith(new BestEffortPolicy(TWO_NODES), 'container', [cpu, dev]);
  assert.deepEqual(m.admit(pod('u', ['i'], ['a']), []), { admit: true });
  assert.deepEqual(calls, [
    'cpu.hints(i)',
    'dev.hints(i)',
    'cpu.allocate(i)',
    'dev.allocate(i)',
    'cpu.hints(a)',
    'dev.hints(a)',
    'cpu.allocate(a)',
    'dev.allocate(a)',
  ]);
  assert.deepEqual(m.getAffinity('u', 'a'), h([1], true));
  assert.deepEqual(m.getAffinity('u', 'i'), h([1], true));
  assert.deepEqual(m.getAffinity('other', 'a'), h(null, false));
  assert.equal(m.getPolicyName(), 'best-effort');
});

test('pod scope: the pod hints once and every container gets that affinity', () => {
  const calls: string[] = [];
  const cpu = new RecordingProvider('cpu', calls, new Map([['cpu', [h([0], true), h([1], true)]]]));
  const m = managerWith(new SingleNumaNodePolicy(TWO_NODES), 'pod', [cpu]);
  assert.deepEqual(m.admit(pod('u', ['i'], ['a', 'b']), []), { admit: true });
  assert.deepEqual(calls, ['cpu.podHints', 'cpu.allocate(i)', 'cpu.allocate(a)', 'cpu.allocate(b)']);
  for (const c of ['i', 'a', 'b']) assert.deepEqual(m.getAffinity('u', c), h([0], true));
});

test('a refused pod allocates nothing; under none nothing is merged and everything allocated', () => {
  const calls: string[] = [];
  const cpu = new RecordingProvider('cpu', calls, new Map([['cpu', [h([0, 1], true)]]]));
  const refused = managerWith(new SingleNumaNodePolicy(TWO_NODES), 'container', [cpu]);
  assert.equal((refused.admit(pod('u', [], ['a']), []) as AdmitResult).admit, false);
  assert.deepEqual(calls, ['cpu.hints(a)']);
  calls.length = 0;
  const none = managerWith(new NonePolicy(), 'none', [cpu]);
  assert.deepEqual(none.admit(pod('u', ['i'], ['a']), []), { admit: true });
  assert.deepEqual(calls, ['cpu.allocate(i)', 'cpu.allocate(a)']);
});

test("a provider's allocate error refuses the pod with its reason, else UnexpectedAdmissionError; the next providers are not asked", () => {
  const calls: string[] = [];
  const withReason = Object.assign(new Error('SMT Alignment Error: nope'), { reason: 'SMTAlignmentError' });
  const first = new RecordingProvider('cpu', calls, undefined, () => {
    throw withReason;
  });
  const second = new RecordingProvider('dev', calls, undefined);
  assert.deepEqual(managerWith(new NonePolicy(), 'none', [first, second]).admit(pod('u', [], ['a']), []), {
    admit: false,
    reason: 'SMTAlignmentError',
    message: 'SMT Alignment Error: nope',
  });
  assert.deepEqual(calls, ['cpu.allocate(a)']);
  const plain = new RecordingProvider('cpu', [], undefined, () => {
    throw new Error('not enough cpus available to satisfy request');
  });
  assert.deepEqual(
    managerWith(new BestEffortPolicy(TWO_NODES), 'pod', [plain]).admit(pod('u', [], ['a']), []),
    {
      admit: false,
      reason: 'UnexpectedAdmissionError',
      message: 'Allocate failed due to not enough cpus available to satisfy request, which is unexpected',
    },
  );
});

test('admission goes on after a provider that answers later, and its rejection refuses the pod', async () => {
  const calls: string[] = [];
  const cpu = new RecordingProvider('cpu', calls, undefined);
  const dev = new RecordingProvider('dev', calls, undefined, (c) =>
    c.name === 'b' ? Promise.reject(new Error('rpc error: plugin gone')) : Promise.resolve(),
  );
  const m = managerWith(new BestEffortPolicy(TWO_NODES), 'container', [cpu, dev]);
  const ok = m.admit(pod('u', [], ['a']), []);
  assert.ok(ok instanceof Promise);
  assert.deepEqual(await ok, { admit: true });
  calls.length = 0;
  const refused = await m.admit(pod('v', [], ['a', 'b', 'c']), []);
  assert.deepEqual(refused, {
    admit: false,
    reason: 'UnexpectedAdmissionError',
    message: 'Allocate failed due to rpc error: plugin gone, which is unexpected',
  });
  // Nothing is asked of anyone after the refusal.
  assert.deepEqual(calls, [
    'cpu.hints(a)',
    'dev.hints(a)',
    'cpu.allocate(a)',
    'dev.allocate(a)',
    'cpu.hints(b)',
    'dev.hints(b)',
    'cpu.allocate(b)',
    'dev.allocate(b)',
  ]);
});

test('affinities of pods no longer active are forgotten at the next admission', () => {
  const cpu = new RecordingProvider('cpu', [], new Map([['cpu', [h([1], true)]]]));
  const m = managerWith(new BestEffortPolicy(TWO_NODES), 'container', [cpu]);
  const a = pod('a', [], ['c']);
  m.admit(a, []);
  m.admit(pod('b', [], ['c']), [a]);
  assert.deepEqual(m.getAffinity('a', 'c'), h([1], true));
  m.admit(pod('c', [], ['c']), []);
  assert.deepEqual(m.getAffinity('a', 'c'), h(null, false));
  assert.deepEqual(m.getAffinity('b', 'c'), h(null, false));
});

async function fakeNodes(ids: number[], distances?: (id: number) => string): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'fake-numa-'));
  for (const id of ids) {
    const dir = path.join(root, 'devices/system/node', `node${id}`);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'cpulist'), `${id}\n`);
    if (distances) await writeFile(path.join(dir, 'distance'), `${distances(id)}\n`);
  }
  return root;
}

test('createTopologyManager refuses what upstream refuses at start (TestNewManager, TestManagerScope)', async () => {
  const two = await fakeNodes([0, 1]);
  const nine = await fakeNodes([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  const base = { scopeName: 'container', policyOptions: {}, sysfsRoot: two };
  try {
    for (const name of ['none', 'best-effort', 'restricted', 'single-numa-node']) {
      const m = await createTopologyManager({ ...base, policyName: name });
      assert.equal(m.getPolicyName(), name);
    }
    assert.deepEqual((await createTopologyManager({ ...base, policyName: 'restricted' })).numaNodes, [0, 1]);
    assert.equal((await createTopologyManager({ ...base, policyName: 'none' })).scopeName, 'none');
    assert.equal(
      (await createTopologyManager({ ...base, policyName: 'best-effort', scopeName: 'pod' })).scopeName,
      'pod',
    );
    const refusals: [Partial<typeof base> & { policyName: string }, RegExp][] = [
      [{ policyName: 'unknown' }, /unknown policy: "unknown"/],
      [{ policyName: 'best-effort', scopeName: 'unknown' }, /unknown scope: "unknown"/],
      [
        { policyName: 'restricted', policyOptions: { 'unknown-option': 'true' } } as never,
        /unknown Topology Manager Policy option: "unknown-option"/,
      ],
      // Upstream parses the options before it looks at the policy: none refuses a bad one too.
      [
        { policyName: 'none', policyOptions: { 'unknown-option': 'true' } } as never,
        /unknown Topology Manager Policy option: "unknown-option"/,
      ],
      [{ policyName: 'best-effort', sysfsRoot: nine }, /unsupported on machines with more than 8 NUMA Nodes/],
      [
        { policyName: 'best-effort', policyOptions: { 'prefer-closest-numa-nodes': 'true' } } as never,
        /cannot discover NUMA topology: error getting NUMA distances/,
      ],
      [
        { policyName: 'best-effort', policyOptions: { 'max-allowable-numa-nodes': '16' } } as never,
        /"max-allowable-numa-nodes" is not supported by tskubelet/,
      ],
    ];
    for (const [cfg, message] of refusals)
      await assert.rejects(createTopologyManager({ ...base, ...cfg }), { code: 'INVALID_CONFIG', message });
    // Under none nothing is read: a machine with nine nodes starts.
    assert.ok(await createTopologyManager({ ...base, policyName: 'none', sysfsRoot: nine }));
  } finally {
    await rm(two, { recursive: true, force: true });
    await rm(nine, { recursive: true, force: true });
  }
});

test('prefer-closest-numa-nodes reads the distances and picks the closest pair', async () => {
  const rows = ['10 11 20 20', '11 10 20 20', '20 20 10 11', '20 20 11 10'];
  const root = await fakeNodes([0, 1, 2, 3], (id) => rows[id] ?? '');
  try {
    const m = await createTopologyManager({
      policyName: 'best-effort',
      scopeName: 'container',
      policyOptions: { 'prefer-closest-numa-nodes': 'true' },
      sysfsRoot: root,
    });
    // Two providers agree on {0,2} or {2,3}: narrowest alone would take {0,2} (the smaller mask).
    const hints = new Map([['cpu', [h([0, 2], true), h([2, 3], true)]]]);
    m.addHintProvider(new RecordingProvider('cpu', [], hints));
    m.admit(pod('u', [], ['c']), []);
    assert.deepEqual(m.getAffinity('u', 'c'), h([2, 3], true));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('policy options as upstream parses them (TestNewTopologyManagerOptions)', () => {
  const on = (): boolean => true;
  const off = (gate: string): boolean => gate !== 'TopologyManagerPolicyBetaOptions';
  assert.deepEqual(parseTopologyPolicyOptions({ 'prefer-closest-numa-nodes': 'true' }, on), {
    preferClosestNUMA: true,
  });
  assert.deepEqual(parseTopologyPolicyOptions({}, off), { preferClosestNUMA: false });
  assert.throws(() => parseTopologyPolicyOptions({ 'prefer-closest-numa-nodes': 'true' }, off), {
    message:
      /Topology Manager Policy Beta-level Options not enabled, but option "prefer-closest-numa-nodes" provided/,
  });
  assert.throws(() => parseTopologyPolicyOptions({ 'prefer-closest-numa-nodes': 'not a boolean' }, on), {
    message: /bad value for option "prefer-closest-numa-nodes"/,
  });
  assert.throws(
    () =>
      parseTopologyPolicyOptions(
        { 'prefer-closest-numa-nodes': 'true' },
        (g) => g !== 'TopologyManagerPolicyOptions',
      ),
    {
      message: /require feature gates "TopologyManagerPolicyOptions" enabled/,
    },
  );
});
