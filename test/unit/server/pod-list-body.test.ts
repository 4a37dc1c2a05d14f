import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { PodListBody } from '../../../src/server/pod-list-body.js';

function pod(name: string): Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
    status: { phase: 'Pending' },
  };
}

test('the same pods and statuses give the same body, serialised once', () => {
  const body = new PodListBody();
  const pods = [pod('a'), pod('b')];
  const first = body.for(pods);
  assert.deepEqual(JSON.parse(first.toString()), {
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: {},
    items: pods,
  });
  // New wrapper objects around the same metadata, spec and status (as Kubelet.getPods makes them).
  assert.equal(body.for(pods.map((p) => ({ ...p }))), first);
});

test('a replaced status, a new pod or a removed one makes a new body', () => {
  const body = new PodListBody();
  const a = pod('a');
  const b = pod('b');
  const first = body.for([a, b]);
  const running = { ...a, status: { phase: 'Running' as const } };
  const second = body.for([running, b]);
  assert.notEqual(second, first);
  assert.equal(JSON.parse(second.toString()).items[0].status.phase, 'Running');
  const third = body.for([running]);
  assert.equal(JSON.parse(third.toString()).items.length, 1);
  const fourth = body.for([running, pod('c')]);
  assert.deepEqual(
    JSON.parse(fourth.toString()).items.map((p: Pod) => p.metadata.name),
    ['a', 'c'],
  );
  assert.equal(JSON.parse(body.for([]).toString()).items.length, 0);
});
