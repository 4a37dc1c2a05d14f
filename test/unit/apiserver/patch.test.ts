import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../apiserver/api-error.js';
import {
  applyPatch,
  jsonPatch,
  mergePatch,
  strategicMergePatch,
  type JsonObject,
} from '../../apiserver/patch.js';
import { resourceByName } from '../../apiserver/resources.js';

const pods = resourceByName('pods').patchSchema;
const nodes = resourceByName('nodes').patchSchema;

function cond(type: string, status: string, extra: JsonObject = {}): JsonObject {
  return { type, status, lastProbeTime: null, lastTransitionTime: '2024-01-01T00:00:00Z', ...extra };
}

function types(list: unknown): string[] {
  return (list as { type: string }[]).map((c) => c.type);
}

describe('strategic merge patch', () => {
  const pod: JsonObject = {
    metadata: { name: 'p', uid: 'u1', finalizers: ['a', 'b'] },
    status: {
      phase: 'Pending',
      conditions: [
        cond('Initialized', 'True'),
        cond('Ready', 'False', { reason: 'ContainersNotReady' }),
        cond('PodScheduled', 'True'),
      ],
      containerStatuses: [
        { name: 'one', ready: false, restartCount: 0 },
        { name: 'two', ready: false, restartCount: 0 },
      ],
    },
  };

  it('merges conditions by type, as a kubelet status patch with $setElementOrder expects', () => {
    const patch: JsonObject = {
      metadata: { uid: 'u1' },
      status: {
        '$setElementOrder/conditions': [{ type: 'Initialized' }, { type: 'Ready' }, { type: 'PodScheduled' }],
        conditions: [
          { type: 'Ready', status: 'True', reason: null, lastTransitionTime: '2024-01-01T00:01:00Z' },
        ],
        phase: 'Running',
      },
    };
    const out = strategicMergePatch(pod, patch, pods);
    const status = out.status as { phase: string; conditions: JsonObject[] };
    assert.equal(status.phase, 'Running');
    assert.deepEqual(types(status.conditions), ['Initialized', 'Ready', 'PodScheduled']);
    assert.deepEqual(status.conditions[1], {
      type: 'Ready',
      status: 'True',
      lastProbeTime: null,
      lastTransitionTime: '2024-01-01T00:01:00Z',
    });
    // The original is left alone.
    assert.equal((pod.status as { phase: string }).phase, 'Pending');
  });

  it('places a new condition where $setElementOrder puts it and keeps server-only ones in their place', () => {
    const out = strategicMergePatch(
      pod,
      {
        status: {
          '$setElementOrder/conditions': [
            { type: 'Initialized' },
            { type: 'DisruptionTarget' },
            { type: 'PodScheduled' },
          ],
          conditions: [cond('DisruptionTarget', 'True')],
        },
      },
      pods,
    );
    // Ready is not named by the order list: it stays between the items it sat between.
    assert.deepEqual(types((out.status as JsonObject).conditions), [
      'Initialized',
      'DisruptionTarget',
      'Ready',
      'PodScheduled',
    ]);
  });

  it('deletes a list element with $patch: delete', () => {
    const out = strategicMergePatch(
      pod,
      { status: { conditions: [{ $patch: 'delete', type: 'Ready' }] } },
      pods,
    );
    assert.deepEqual(types((out.status as JsonObject).conditions), ['Initialized', 'PodScheduled']);
  });

  it('replaces containerStatuses whole: the list has no merge key upstream', () => {
    const out = strategicMergePatch(
      pod,
      { status: { containerStatuses: [{ name: 'two', ready: true, restartCount: 1 }] } },
      pods,
    );
    assert.deepEqual((out.status as JsonObject).containerStatuses, [
      { name: 'two', ready: true, restartCount: 1 },
    ]);
  });

  it('merges node addresses by type unless the patch says $patch: replace, as the kubelet does', () => {
    const node: JsonObject = {
      metadata: { name: 'n' },
      status: {
        addresses: [
          { type: 'InternalIP', address: '10.0.0.1' },
          { type: 'Hostname', address: 'n' },
        ],
      },
    };
    const merged = strategicMergePatch(
      node,
      { status: { addresses: [{ type: 'InternalIP', address: '10.0.0.2' }] } },
      nodes,
    );
    assert.deepEqual((merged.status as JsonObject).addresses, [
      { type: 'InternalIP', address: '10.0.0.2' },
      { type: 'Hostname', address: 'n' },
    ]);
    const replaced = strategicMergePatch(
      node,
      {
        status: {
          addresses: [
            { type: 'InternalIP', address: '10.0.0.2' },
            { type: 'InternalIP', address: '10.0.0.3' },
            { $patch: 'replace' },
          ],
        },
      },
      nodes,
    );
    assert.deepEqual((replaced.status as JsonObject).addresses, [
      { type: 'InternalIP', address: '10.0.0.2' },
      { type: 'InternalIP', address: '10.0.0.3' },
    ]);
  });

  it('merges a list of scalars with a merge strategy, and removes from it with $deleteFromPrimitiveList', () => {
    const out = strategicMergePatch(
      pod,
      { metadata: { finalizers: ['c'], '$deleteFromPrimitiveList/finalizers': ['a'] } },
      pods,
    );
    // Upstream's mergeSortedSlice puts a patch item the server never had before the server's own.
    assert.deepEqual((out.metadata as JsonObject).finalizers, ['c', 'b']);
  });

  it('deletes a field given null, and honours $patch on maps and $retainKeys', () => {
    const base: JsonObject = {
      metadata: { name: 'p', labels: { a: '1', b: '2' } },
      spec: { volumes: [{ name: 'v', emptyDir: {} }] },
    };
    const nulled = strategicMergePatch(base, { metadata: { labels: { a: null } } }, pods);
    assert.deepEqual((nulled.metadata as JsonObject).labels, { b: '2' });
    const replaced = strategicMergePatch(base, { metadata: { labels: { $patch: 'replace', c: '3' } } }, pods);
    assert.deepEqual((replaced.metadata as JsonObject).labels, { c: '3' });
    const deleted = strategicMergePatch(base, { metadata: { labels: { $patch: 'delete' } } }, pods);
    assert.deepEqual((deleted.metadata as JsonObject).labels, {});
    const retained = strategicMergePatch(
      base,
      { spec: { volumes: [{ name: 'v', $retainKeys: ['name', 'hostPath'], hostPath: { path: '/x' } }] } },
      pods,
    );
    assert.deepEqual((retained.spec as JsonObject).volumes, [{ name: 'v', hostPath: { path: '/x' } }]);
  });

  it('refuses an unknown $patch directive with a 400', () => {
    assert.throws(
      () => strategicMergePatch(pod, { status: { $patch: 'bogus' } }, pods),
      (e: unknown) => e instanceof ApiError && e.code === 400,
    );
  });
});

describe('JSON merge patch (RFC 7386)', () => {
  it('replaces lists, merges maps and deletes on null', () => {
    const out = mergePatch(
      { a: { b: 1, c: 2 }, list: [1, 2], gone: true },
      { a: { c: null, d: 4 }, list: [3], gone: null },
    );
    assert.deepEqual(out, { a: { b: 1, d: 4 }, list: [3] });
  });
});

describe('JSON patch (RFC 6902)', () => {
  const doc: JsonObject = { metadata: { labels: { a: '1' } }, list: [1, 2, 3] };

  it('applies add, replace, remove, move, copy and test', () => {
    const out = jsonPatch(doc, [
      { op: 'test', path: '/metadata/labels/a', value: '1' },
      { op: 'add', path: '/metadata/labels/b~1c', value: '2' },
      { op: 'replace', path: '/list/0', value: 9 },
      { op: 'remove', path: '/list/1' },
      { op: 'add', path: '/list/-', value: 4 },
      { op: 'copy', from: '/list/0', path: '/first' },
      { op: 'move', from: '/metadata/labels/a', path: '/metadata/labels/z' },
    ]);
    assert.deepEqual(out, { metadata: { labels: { 'b/c': '2', z: '1' } }, list: [9, 3, 4], first: 9 });
  });

  it('answers a failed test or a missing path with 422, and a malformed patch with 400', () => {
    const is = (code: number) => (e: unknown) => e instanceof ApiError && e.code === code;
    assert.throws(() => jsonPatch(doc, [{ op: 'test', path: '/list/0', value: 7 }]), is(422));
    assert.throws(() => jsonPatch(doc, [{ op: 'replace', path: '/nope', value: 1 }]), is(422));
    assert.throws(() => jsonPatch(doc, [{ op: 'remove', path: '/list/9' }]), is(422));
    assert.throws(() => jsonPatch(doc, { op: 'add' }), is(400));
    assert.throws(() => applyPatch('json', doc, [{ op: 'frobnicate', path: '/a' }], {}), is(400));
  });
});
