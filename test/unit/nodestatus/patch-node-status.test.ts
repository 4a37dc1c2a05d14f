import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nodeStatusHasChanged } from '../../../src/nodestatus/node-status-changed.js';
import type { JsonObject } from '../../../src/k8s/strategic-merge-patch.js';
import { preparePatchForNodeStatus } from '../../../src/nodestatus/patch-node-status.js';
import type { Node, NodeCondition } from '../../../src/api/node.js';
import { strategicMergePatch } from '../../apiserver/patch.js';
import { resourceByName } from '../../apiserver/resources.js';

function cond(
  type: string,
  status: 'True' | 'False',
  heartbeat: string,
  extra: Partial<NodeCondition> = {},
): NodeCondition {
  return {
    type,
    status,
    lastHeartbeatTime: heartbeat,
    lastTransitionTime: '2026-01-01T00:00:00Z',
    reason: 'R',
    message: 'M',
    ...extra,
  };
}

function baseNode(): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n1', uid: 'u1', resourceVersion: '5', labels: { a: '1' } },
    spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] },
    status: {
      capacity: { cpu: '2', memory: '1Gi' },
      conditions: [
        cond('MemoryPressure', 'False', '2026-01-01T00:00:00Z'),
        cond('Ready', 'False', '2026-01-01T00:00:00Z'),
      ],
      addresses: [
        { type: 'InternalIP', address: '10.0.0.1' },
        { type: 'Hostname', address: 'n1' },
      ],
      images: [{ names: ['a'], sizeBytes: 1 }],
    },
  };
}

/** Applies a patch as the (test) API server does. */
function apply(original: Node, patch: JsonObject): Node {
  return strategicMergePatch(
    JSON.parse(JSON.stringify(original)) as JsonObject,
    patch,
    resourceByName('nodes').patchSchema,
  ) as unknown as Node;
}

describe('strategic merge patch of node status', () => {
  it('sends only changed conditions, by type, with the element order', () => {
    const old = baseNode();
    const next = structuredClone(old);
    next.status!.conditions![1] = cond('Ready', 'True', '2026-01-01T00:00:10Z', {
      lastTransitionTime: '2026-01-01T00:00:10Z',
      reason: 'KubeletReady',
    });
    next.status!.conditions![0]!.lastHeartbeatTime = '2026-01-01T00:00:10Z';
    const patch = preparePatchForNodeStatus(old, next);
    assert.deepEqual(patch, {
      status: {
        conditions: [
          { type: 'MemoryPressure', lastHeartbeatTime: '2026-01-01T00:00:10Z' },
          {
            type: 'Ready',
            status: 'True',
            lastHeartbeatTime: '2026-01-01T00:00:10Z',
            lastTransitionTime: '2026-01-01T00:00:10Z',
            reason: 'KubeletReady',
          },
        ],
        '$setElementOrder/conditions': [{ type: 'MemoryPressure' }, { type: 'Ready' }],
      },
    });
    assert.deepEqual(apply(old, patch), { ...next, metadata: old.metadata });
  });

  it('replaces a changed address list whole, never touches the spec, and replaces untagged lists', () => {
    const old = baseNode();
    const next = structuredClone(old);
    next.status!.addresses = [
      { type: 'InternalIP', address: '10.0.0.2' },
      { type: 'InternalIP', address: 'fd00::2' },
      { type: 'Hostname', address: 'n1' },
    ];
    next.spec = { taints: [] };
    next.status!.images = [{ names: ['b'], sizeBytes: 2 }];
    const patch = preparePatchForNodeStatus(old, next);
    assert.deepEqual(patch, {
      status: {
        addresses: [
          { type: 'InternalIP', address: '10.0.0.2' },
          { type: 'InternalIP', address: 'fd00::2' },
          { type: 'Hostname', address: 'n1' },
          { $patch: 'replace' },
        ],
        images: [{ names: ['b'], sizeBytes: 2 }],
      },
    });
    const applied = apply(old, patch);
    assert.deepEqual(applied.status?.addresses, next.status!.addresses);
    assert.deepEqual(applied.spec, old.spec);
  });

  it('carries metadata changes, removed keys as null, and removed conditions as deletions', () => {
    const old = baseNode();
    const next = structuredClone(old);
    next.metadata.labels = { b: '2' };
    next.metadata.annotations = { x: 'y' };
    next.status!.conditions = [old.status!.conditions![1]!];
    delete next.status!.images;
    const patch = preparePatchForNodeStatus(old, next);
    assert.deepEqual(patch, {
      metadata: { labels: { b: '2', a: null }, annotations: { x: 'y' } },
      status: {
        conditions: [{ $patch: 'delete', type: 'MemoryPressure' }],
        '$setElementOrder/conditions': [{ type: 'Ready' }],
        images: null,
      },
    });
    assert.deepEqual(apply(old, patch), next);
  });

  it('is empty when nothing changed', () => {
    assert.deepEqual(preparePatchForNodeStatus(baseNode(), baseNode()), {});
  });
});

describe('nodeStatusHasChanged', () => {
  it('ignores heartbeats and the order of conditions', () => {
    const old = baseNode().status!;
    const next = structuredClone(old);
    next.conditions = [
      { ...old.conditions![1]!, lastHeartbeatTime: '2026-01-01T00:05:00Z' },
      { ...old.conditions![0]!, lastHeartbeatTime: '2026-01-01T00:05:00Z' },
    ];
    assert.equal(nodeStatusHasChanged(old, next), false);
  });

  it('sees a new reason, a new condition, a changed capacity or address', () => {
    const old = baseNode().status!;
    const reason = structuredClone(old);
    reason.conditions![1]!.message = 'other';
    assert.equal(nodeStatusHasChanged(old, reason), true);
    const added = structuredClone(old);
    added.conditions!.push(cond('PIDPressure', 'False', 'x'));
    assert.equal(nodeStatusHasChanged(old, added), true);
    const capacity = structuredClone(old);
    capacity.capacity!.cpu = '4';
    assert.equal(nodeStatusHasChanged(old, capacity), true);
    const addresses = structuredClone(old);
    addresses.addresses![0]!.address = '10.0.0.9';
    assert.equal(nodeStatusHasChanged(old, addresses), true);
  });

  it('compares quantities by value and zero values as absent, as Semantic.DeepEqual', () => {
    const old = baseNode().status!;
    const next = structuredClone(old);
    next.capacity!.memory = '1024Mi';
    next.volumesInUse = [];
    assert.equal(nodeStatusHasChanged(old, next), false);
  });
});
