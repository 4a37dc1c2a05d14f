/**
 * Node-level admission against upstream's predicate admit handler: each reason with upstream's exact
 * message, the order in which failures are reported, the pods that fit left alone, and critical pods
 * admitted by preempting lower-priority ones.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Container, NodeSelectorTerm, Pod } from '../../../src/api/core-v1.js';
import { isCriticalPod, SYSTEM_CRITICAL_PRIORITY } from '../../../src/api/pod-source.js';
import {
  canAdmitPod,
  nodeAnyWay,
  preemptedPodStatus,
  type AdmitResult,
} from '../../../src/kubelet/admission.js';
import type { Node } from '../../../src/api/node.js';

const NODE_NAME = 'node-a';

function node(
  overrides: { allocatable?: Record<string, string>; labels?: Record<string, string> } = {},
): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: NODE_NAME,
      uid: 'node-uid',
      labels: overrides.labels ?? {
        'kubernetes.io/hostname': NODE_NAME,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'topology.kubernetes.io/zone': 'z1',
        'example.com/generation': '5',
      },
    },
    spec: {},
    status: {
      allocatable: overrides.allocatable ?? {
        cpu: '2',
        memory: '4Gi',
        'ephemeral-storage': '10Gi',
        pods: '10',
        'example.com/gpu': '1',
      },
    },
  };
}

let counter = 0;

function pod(
  name: string,
  opts: {
    requests?: Record<string, string>;
    limits?: Record<string, string>;
    source?: 'api' | 'file';
    priority?: number;
    extra?: Partial<Pod['spec']>;
    labels?: Record<string, string>;
    container?: Partial<Container>;
  } = {},
): Pod {
  counter++;
  const resources: Container['resources'] = {};
  if (opts.requests) resources.requests = opts.requests;
  if (opts.limits) resources.limits = opts.limits;
  return {
    metadata: {
      name,
      namespace: 'default',
      uid: `uid-${name}-${counter}`,
      annotations: { 'kubernetes.io/config.source': opts.source ?? 'api' },
      ...(opts.labels ? { labels: opts.labels } : {}),
    },
    spec: {
      nodeName: NODE_NAME,
      containers: [{ name: 'main', image: 'busybox', resources, ...opts.container }],
      ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
      ...opts.extra,
    },
  };
}

function rejected(r: AdmitResult): { reason: string; message: string } {
  assert.equal(r.admit, false, 'expected a rejection');
  if (r.admit) throw new Error('unreachable');
  return { reason: r.reason, message: r.message };
}

function admitted(r: AdmitResult): Pod[] {
  if (!r.admit) assert.fail(`expected admission, got ${r.reason}: ${r.message}`);
  return r.preempt;
}

describe('resources', () => {
  test('cpu: requested against allocatable minus what the admitted pods request', () => {
    const others = [pod('a', { requests: { cpu: '1' } }), pod('b', { requests: { cpu: '700m' } })];
    assert.deepEqual(rejected(canAdmitPod(pod('new', { requests: { cpu: '500m' } }), others, node())), {
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 500, used: 1700, capacity: 2000",
    });
    // The same pod fits when it asks for what is left.
    assert.deepEqual(admitted(canAdmitPod(pod('new', { requests: { cpu: '300m' } }), others, node())), []);
  });

  test('memory and ephemeral-storage in bytes', () => {
    const others = [pod('a', { requests: { memory: '3Gi' } })];
    assert.deepEqual(rejected(canAdmitPod(pod('new', { requests: { memory: '2Gi' } }), others, node())), {
      reason: 'OutOfmemory',
      message: `Node didn't have enough resource: memory, requested: ${2 * 2 ** 30}, used: ${3 * 2 ** 30}, capacity: ${4 * 2 ** 30}`,
    });
    assert.deepEqual(
      rejected(canAdmitPod(pod('new', { requests: { 'ephemeral-storage': '11Gi' } }), [], node())),
      {
        reason: 'OutOfephemeral-storage',
        message: `Node didn't have enough resource: ephemeral-storage, requested: ${11 * 2 ** 30}, used: 0, capacity: ${10 * 2 ** 30}`,
      },
    );
  });

  test('pods: the node allocatable pod count, the new pod counted', () => {
    const n = node({ allocatable: { cpu: '2', memory: '4Gi', pods: '2' } });
    const others = [pod('a'), pod('b')];
    assert.deepEqual(rejected(canAdmitPod(pod('new'), others, n)), {
      reason: 'OutOfpods',
      message: "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
    });
    assert.deepEqual(admitted(canAdmitPod(pod('new'), others.slice(1), n)), []);
  });

  test('the first failure is the one reported: pods before cpu before memory', () => {
    const n = node({ allocatable: { cpu: '1', memory: '1Gi', pods: '1' } });
    const r = rejected(canAdmitPod(pod('new', { requests: { cpu: '2', memory: '2Gi' } }), [pod('a')], n));
    assert.equal(r.reason, 'OutOfpods');
    const r2 = rejected(canAdmitPod(pod('new', { requests: { cpu: '2', memory: '2Gi' } }), [], n));
    assert.equal(r2.reason, 'OutOfcpu');
  });

  test('extended resources: checked when the node has them, ignored when it does not', () => {
    const others = [pod('a', { requests: { 'example.com/gpu': '1' }, limits: { 'example.com/gpu': '1' } })];
    assert.deepEqual(
      rejected(
        canAdmitPod(
          pod('new', { requests: { 'example.com/gpu': '1' }, limits: { 'example.com/gpu': '1' } }),
          others,
          node(),
        ),
      ),
      {
        reason: 'OutOfexample.com/gpu',
        message: "Node didn't have enough resource: example.com/gpu, requested: 1, used: 1, capacity: 1",
      },
    );
    assert.deepEqual(
      admitted(canAdmitPod(pod('new', { requests: { 'cluster.example/licence': '3' } }), others, node())),
      [],
    );
  });

  test('limits stand for missing requests, init containers count at their largest, overhead is added', () => {
    // 1 cpu from limits; an init container of 1500m is more than the app containers.
    const p = pod('new', { limits: { cpu: '1' } });
    p.spec.initContainers = [{ name: 'init', image: 'busybox', resources: { requests: { cpu: '1500m' } } }];
    const used = [pod('a', { requests: { cpu: '1' } })];
    assert.equal(rejected(canAdmitPod(p, used, node())).message.split(', ')[1], 'requested: 1500');
    const q = pod('new', { requests: { cpu: '900m' } });
    (q.spec as { overhead?: Record<string, string> }).overhead = { cpu: '200m' };
    assert.equal(rejected(canAdmitPod(q, used, node())).message.split(', ')[1], 'requested: 1100');
  });

  test('a pod asking for nothing fits a full node, as long as there is a pod slot', () => {
    const others = [pod('a', { requests: { cpu: '2', memory: '4Gi' } })];
    assert.deepEqual(admitted(canAdmitPod(pod('best-effort'), others, node())), []);
  });
});

describe('node affinity and selector', () => {
  const message = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector";

  test('a nodeSelector every label of which the node has', () => {
    assert.deepEqual(
      rejected(canAdmitPod(pod('new', { extra: { nodeSelector: { disktype: 'ssd' } } }), [], node())),
      { reason: 'NodeAffinity', message },
    );
    assert.deepEqual(
      admitted(
        canAdmitPod(
          pod('new', {
            extra: { nodeSelector: { 'kubernetes.io/os': 'linux', 'topology.kubernetes.io/zone': 'z1' } },
          }),
          [],
          node(),
        ),
      ),
      [],
    );
  });

  const withTerms = (terms: NodeSelectorTerm[]) =>
    pod('new', {
      extra: {
        affinity: {
          nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
        },
      },
    });
  const admits = (terms: unknown[]) => canAdmitPod(withTerms(terms as NodeSelectorTerm[]), [], node()).admit;

  test('required node affinity: terms are ORed, requirements ANDed', () => {
    const zone = (operator: string, values?: string[]) => ({
      key: 'topology.kubernetes.io/zone',
      operator,
      ...(values ? { values } : {}),
    });
    assert.equal(admits([{ matchExpressions: [zone('In', ['z1', 'z2'])] }]), true);
    assert.equal(admits([{ matchExpressions: [zone('In', ['z2'])] }]), false);
    assert.equal(admits([{ matchExpressions: [zone('NotIn', ['z2'])] }]), true);
    assert.equal(admits([{ matchExpressions: [zone('NotIn', ['z1'])] }]), false);
    assert.equal(admits([{ matchExpressions: [zone('Exists')] }]), true);
    assert.equal(admits([{ matchExpressions: [zone('DoesNotExist')] }]), false);
    assert.equal(
      admits([{ matchExpressions: [{ key: 'missing', operator: 'NotIn', values: ['x'] }] }]),
      true,
      'NotIn matches a node without the label',
    );
    assert.equal(
      admits([{ matchExpressions: [zone('In', ['z2'])] }, { matchExpressions: [zone('Exists')] }]),
      true,
    );
    assert.equal(admits([{ matchExpressions: [zone('In', ['z1']), zone('DoesNotExist')] }]), false);
  });

  test('Gt and Lt compare integers; malformed requirements and empty terms match nothing', () => {
    const gen = (operator: string, values: string[]) => ({
      matchExpressions: [{ key: 'example.com/generation', operator, values }],
    });
    assert.equal(admits([gen('Gt', ['4'])]), true);
    assert.equal(admits([gen('Gt', ['5'])]), false);
    assert.equal(admits([gen('Lt', ['6'])]), true);
    assert.equal(admits([gen('Lt', ['x'])]), false);
    assert.equal(admits([gen('Gt', ['1', '2'])]), false);
    assert.equal(admits([gen('In', [])]), false);
    assert.equal(admits([{}]), false);
    assert.equal(admits([]), false);
    // A broken term does not spoil a good one.
    assert.equal(admits([gen('In', []), gen('Gt', ['1'])]), true);
  });

  test('matchFields names the node by metadata.name', () => {
    const byName = (operator: string, values: string[]) => ({
      matchFields: [{ key: 'metadata.name', operator, values }],
    });
    assert.equal(admits([byName('In', [NODE_NAME])]), true);
    assert.equal(admits([byName('In', ['other'])]), false);
    assert.equal(admits([byName('NotIn', ['other'])]), true);
    assert.equal(admits([{ matchFields: [{ key: 'metadata.uid', operator: 'In', values: ['x'] }] }]), false);
  });
});

describe('other predicates', () => {
  test('spec.nodeName must be this node', () => {
    assert.deepEqual(rejected(canAdmitPod(pod('new', { extra: { nodeName: 'node-b' } }), [], node())), {
      reason: 'NodeName',
      message: "Predicate NodeName failed: node(s) didn't match the requested node name",
    });
  });

  test('host ports: 0.0.0.0 conflicts with any address, protocols apart', () => {
    const withPort = (name: string, hostPort: number, hostIP?: string, protocol?: 'TCP' | 'UDP') =>
      pod(name, {
        container: {
          ports: [
            { containerPort: 80, hostPort, ...(hostIP ? { hostIP } : {}), ...(protocol ? { protocol } : {}) },
          ],
        },
      });
    const others = [withPort('a', 8080, '10.0.0.1')];
    assert.deepEqual(rejected(canAdmitPod(withPort('new', 8080), others, node())), {
      reason: 'NodePorts',
      message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
    });
    assert.equal(canAdmitPod(withPort('new', 8080, '10.0.0.2'), others, node()).admit, true);
    assert.equal(canAdmitPod(withPort('new', 8080, '10.0.0.1', 'UDP'), others, node()).admit, true);
    assert.equal(canAdmitPod(withPort('new', 8081), others, node()).admit, true);
  });

  test('a NoExecute taint the pod does not tolerate; other effects are the scheduler’s', () => {
    const tainted = node();
    tainted.spec = {
      taints: [
        { key: 'dedicated', value: 'gpu', effect: 'NoExecute' },
        { key: 'maintenance', effect: 'NoSchedule' },
      ],
    };
    assert.deepEqual(rejected(canAdmitPod(pod('new'), [], tainted)), {
      reason: 'TaintToleration',
      message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    });
    const tolerating = (tolerations: Pod['spec']['tolerations']) =>
      canAdmitPod(pod('new', { extra: { tolerations } }), [], tainted).admit;
    assert.equal(
      tolerating([{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoExecute' }]),
      true,
    );
    assert.equal(tolerating([{ key: 'dedicated', value: 'gpu' }]), true, 'no effect tolerates every effect');
    assert.equal(tolerating([{ key: 'dedicated', operator: 'Exists' }]), true);
    assert.equal(tolerating([{ operator: 'Exists' }]), true, 'an empty key with Exists tolerates everything');
    assert.equal(tolerating([{ key: 'dedicated', value: 'cpu', effect: 'NoExecute' }]), false);
    assert.equal(tolerating([{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }]), false);
    // Static pods belong to the node: its taints do not apply to them.
    assert.equal(canAdmitPod(pod('static', { source: 'file' }), [], tainted).admit, true);
  });

  test('the OS label and the OS field, checked before anything else', () => {
    const p = pod('new', { labels: { 'kubernetes.io/os': 'windows' }, requests: { cpu: '64' } });
    assert.deepEqual(rejected(canAdmitPod(p, [], node())), {
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    });
    // The node's label is not trusted when it is wrong: the node is what it runs on.
    const mislabelled = node({ labels: { 'kubernetes.io/os': 'windows' } });
    assert.equal(
      canAdmitPod(pod('new', { labels: { 'kubernetes.io/os': 'linux' } }), [], mislabelled).admit,
      true,
    );
    assert.deepEqual(rejected(canAdmitPod(pod('new', { extra: { os: { name: 'windows' } } }), [], node())), {
      reason: 'PodOSNotSupported',
      message: "Failed to admit pod as the OS field doesn't match node OS",
    });
    assert.equal(canAdmitPod(pod('new', { extra: { os: { name: 'linux' } } }), [], node()).admit, true);
  });

  test('without a node nothing is admitted', () => {
    assert.deepEqual(rejected(canAdmitPod(pod('new'), [], undefined)), {
      reason: 'InvalidNodeInfo',
      message: 'Kubelet cannot get node info.',
    });
  });
});

describe('critical pods', () => {
  test('static, mirror and system-critical pods are critical', () => {
    assert.equal(isCriticalPod(pod('s', { source: 'file' })), true);
    const mirror = pod('m');
    mirror.metadata.annotations!['kubernetes.io/config.mirror'] = 'hash';
    assert.equal(isCriticalPod(mirror), true);
    assert.equal(isCriticalPod(pod('p', { priority: SYSTEM_CRITICAL_PRIORITY })), true);
    assert.equal(isCriticalPod(pod('p', { priority: SYSTEM_CRITICAL_PRIORITY - 1 })), false);
  });

  test('a static pod short of resources preempts the fewest, least guaranteed pods', () => {
    const bestEffort = pod('best-effort');
    const burstableSmall = pod('burstable-small', { requests: { cpu: '200m' } });
    const burstableBig = pod('burstable-big', { requests: { cpu: '800m' } });
    const guaranteed = pod('guaranteed', {
      requests: { cpu: '900m', memory: '1Gi' },
      limits: { cpu: '900m', memory: '1Gi' },
    });
    const others = [bestEffort, burstableSmall, burstableBig, guaranteed];
    // 1900m used of 2: a static pod of 600m needs 500m freed; the 800m pod alone does it.
    const preempt = admitted(
      canAdmitPod(pod('static', { source: 'file', requests: { cpu: '600m' } }), others, node()),
    );
    assert.deepEqual(
      preempt.map((p) => p.metadata.name),
      ['burstable-big'],
    );
    // A non-critical pod of the same size is simply refused, and nobody is disturbed.
    assert.equal(
      rejected(canAdmitPod(pod('plain', { requests: { cpu: '600m' } }), others, node())).reason,
      'OutOfcpu',
    );
  });

  test('Guaranteed pods go last: burstable ones are taken first even if more are needed', () => {
    const b1 = pod('b1', { requests: { cpu: '500m' } });
    const b2 = pod('b2', { requests: { cpu: '500m' } });
    const g = pod('g', { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } });
    const preempt = admitted(
      canAdmitPod(pod('static', { source: 'file', requests: { cpu: '1' } }), [b1, b2, g], node()),
    );
    assert.deepEqual(preempt.map((p) => p.metadata.name).sort(), ['b1', 'b2']);
  });

  test('other critical pods are never preempted; when the rest cannot make room: UnexpectedAdmissionError', () => {
    const otherStatic = pod('other-static', { source: 'file', requests: { cpu: '1500m' } });
    const important = pod('important', { priority: 1000, requests: { cpu: '400m' } });
    const critical = pod('critical', { priority: SYSTEM_CRITICAL_PRIORITY, requests: { cpu: '1' } });
    assert.deepEqual(rejected(canAdmitPod(critical, [otherStatic, important], node())), {
      reason: 'UnexpectedAdmissionError',
      message:
        'Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 500), ]',
    });
  });

  test('a critical pod is still refused for reasons other than resources', () => {
    const p = pod('static', {
      source: 'file',
      requests: { cpu: '3' },
      extra: { nodeSelector: { disktype: 'ssd' } },
    });
    assert.equal(rejected(canAdmitPod(p, [], node())).reason, 'NodeAffinity');
  });

  test('the preempted pod is Failed/Preempting with a DisruptionTarget condition', () => {
    const status = preemptedPodStatus(
      { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
      '2024-01-02T03:04:05Z',
    );
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, 'Preempting');
    assert.equal(status.message, 'Preempted in order to admit critical pod');
    assert.deepEqual(status.conditions?.[1], {
      type: 'DisruptionTarget',
      status: 'True',
      reason: 'TerminationByKubelet',
      message: 'Pod was preempted by Kubelet to accommodate a critical pod.',
      lastProbeTime: null,
      lastTransitionTime: '2024-01-02T03:04:05Z',
    });
  });
});

test('nodeAnyWay: the API copy when there is one, else the initial node', () => {
  const initial = node();
  const informer: { node?: Node } = {};
  const get = nodeAnyWay(() => informer.node, initial);
  assert.equal(get(), initial);
  informer.node = node({ labels: { disktype: 'ssd' } });
  assert.equal(get(), informer.node);
  assert.equal(nodeAnyWay(undefined, initial)(), initial);
});
