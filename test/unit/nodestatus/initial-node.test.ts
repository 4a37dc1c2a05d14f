import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setLogSink } from '../../../src/lib/log.js';
import {
  ensureRequiredLabels,
  initialNodeObject,
  reconcileExistingNode,
  type InitialNodeParams,
} from '../../../src/nodestatus/initial-node.js';
import type { Node } from '../../../src/api/node.js';

setLogSink(() => undefined);

function params(overrides: Partial<InitialNodeParams> = {}): InitialNodeParams {
  return {
    nodeName: 'n1',
    hostname: 'n1',
    operatingSystem: 'linux',
    architecture: 'amd64',
    nodeLabels: {},
    registerWithTaints: [],
    registerSchedulable: true,
    enableControllerAttachDetach: true,
    providerID: '',
    ...overrides,
  };
}

describe('initialNode', () => {
  it('labels the node with hostname, os and arch (stable and beta) and asks for controller attach/detach', () => {
    assert.deepEqual(initialNodeObject(params()), {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'n1',
        labels: {
          'kubernetes.io/hostname': 'n1',
          'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': 'amd64',
          'beta.kubernetes.io/os': 'linux',
          'beta.kubernetes.io/arch': 'amd64',
        },
        annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
      },
      spec: {},
    });
  });

  it('adds --node-labels over the defaults, --register-with-taints, and no not-ready taint of its own', () => {
    const node = initialNodeObject(
      params({
        nodeLabels: { 'node-role.kubernetes.io/worker': '', 'kubernetes.io/hostname': 'custom' },
        registerWithTaints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
        enableControllerAttachDetach: false,
        providerID: 'kind://docker/n1',
      }),
    );
    assert.equal(node.metadata.labels?.['node-role.kubernetes.io/worker'], '');
    assert.equal(node.metadata.labels?.['kubernetes.io/hostname'], 'custom');
    assert.deepEqual(node.spec, {
      taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
      providerID: 'kind://docker/n1',
    });
    assert.equal(node.metadata.annotations, undefined);
  });

  it('registers a cordoned node with the unschedulable taint', () => {
    const node = initialNodeObject(params({ registerSchedulable: false }));
    assert.deepEqual(node.spec, {
      unschedulable: true,
      taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }],
    });
  });
});

describe('reconciling an existing node', () => {
  function existing(): Node {
    return {
      metadata: {
        name: 'n1',
        labels: { 'kubernetes.io/hostname': 'old', 'kubernetes.io/os': 'linux', mine: 'x' },
        annotations: { other: 'y' },
      },
      spec: { taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] },
      status: {
        capacity: { cpu: '2', 'hugepages-1Gi': '0', 'hugepages-16Mi': '0' },
        allocatable: { cpu: '2', 'hugepages-1Gi': '0', 'hugepages-16Mi': '0' },
      },
    };
  }

  it('puts back the labels and the annotation the kubelet owns, and leaves taints and other labels', () => {
    const initial = initialNodeObject(params({ registerWithTaints: [{ key: 't', effect: 'NoExecute' }] }));
    initial.status = {
      capacity: { 'hugepages-2Mi': '0', 'hugepages-1Gi': '0' },
      allocatable: { 'hugepages-2Mi': '0', 'hugepages-1Gi': '0' },
    };
    const node = existing();
    assert.equal(reconcileExistingNode(initial, node), true);
    assert.deepEqual(node.metadata.labels, {
      'kubernetes.io/hostname': 'n1',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'beta.kubernetes.io/os': 'linux',
      'beta.kubernetes.io/arch': 'amd64',
      mine: 'x',
    });
    assert.deepEqual(node.metadata.annotations, {
      other: 'y',
      'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
    });
    assert.deepEqual(node.spec, existing().spec);
    assert.deepEqual(node.status?.capacity, { cpu: '2', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0' });
    assert.deepEqual(node.status?.allocatable, { cpu: '2', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0' });
  });

  it('needs no update when the node already matches, and drops the annotation when attach/detach is off', () => {
    const initial = initialNodeObject(params());
    const node = structuredClone(initial);
    node.status = {};
    assert.equal(reconcileExistingNode(initial, node), false);
    const off = initialNodeObject(params({ enableControllerAttachDetach: false }));
    assert.equal(reconcileExistingNode(off, node), true);
    assert.deepEqual(node.metadata.annotations, {});
  });

  it('restores changed os and arch labels on every update', () => {
    const node: Node = { metadata: { name: 'n1', labels: { 'kubernetes.io/os': 'windows' } } };
    assert.equal(ensureRequiredLabels(node, 'linux', 'amd64'), true);
    assert.deepEqual(node.metadata.labels, { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' });
    assert.equal(ensureRequiredLabels(node, 'linux', 'amd64'), false);
  });
});
