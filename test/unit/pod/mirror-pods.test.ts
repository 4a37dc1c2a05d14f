/**
 * MirrorPods over FakeMirrorClient: the registry the sync loop fills from the API source, and the
 * reconcile a static pod's sync runs (create, replace an outdated or deleted mirror pod, wait for the
 * node), and housekeeping's orphaned mirror pods.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { podFullName, type Pod } from '../../../src/api/core-v1.js';
import type { Node } from '../../../src/api/node.js';
import { mirrorPodFor } from '../../../src/pod/mirror-client.js';
import { FakeMirrorClient } from '../../../src/pod/mirror-client.fake.js';
import { MirrorPods } from '../../../src/pod/mirror-pods.js';
import { captureLog } from '../k8s/capture-log.js';

const NODE = 'node-a';

function staticPod(name: string, hash: string): Pod {
  return {
    metadata: {
      name: `${name}-${NODE}`,
      namespace: 'default',
      uid: hash,
      annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': hash },
    },
    spec: { nodeName: NODE, containers: [{ name: 'main', image: 'busybox' }] },
  };
}

/** A mirror pod as the API source hands it over: the server's UID, config.source api. */
function apiMirror(s: Pod, uid: string, extra: Partial<Pod['metadata']> = {}): Pod {
  const m = mirrorPodFor(s, NODE, 'node-uid');
  m.metadata.uid = uid;
  m.metadata.annotations = { ...m.metadata.annotations, 'kubernetes.io/config.source': 'api' };
  Object.assign(m.metadata, extra);
  return m;
}

function setup(nodeOverride?: Node | null) {
  const client = new FakeMirrorClient(NODE, 'node-uid');
  const log = captureLog();
  const node: { value: Node | undefined } = {
    value:
      nodeOverride === null ? undefined : (nodeOverride ?? { metadata: { name: NODE, uid: 'node-uid' } }),
  };
  const mirrors = new MirrorPods({ client, getNode: () => node.value, log });
  return { client, log, node, mirrors };
}

describe('the registry', () => {
  test('apply registers mirror pods by full name and UID and says which static pods to sync', () => {
    const { mirrors } = setup();
    const s = staticPod('web', 'h1');
    const m = apiMirror(s, 'm1');
    assert.deepEqual(mirrors.apply('ADD', [m]), [podFullName(s)]);
    assert.equal(mirrors.mirrorOf(s), m);
    assert.equal(mirrors.getByUid('m1'), m);
    // Status echoes change nothing the static pod cares about.
    assert.deepEqual(mirrors.apply('RECONCILE', [m]), []);
    const deleting = apiMirror(s, 'm1', { deletionTimestamp: '2024-01-01T00:00:00Z' });
    assert.deepEqual(mirrors.apply('DELETE', [deleting]), [podFullName(s)]);
    assert.equal(mirrors.mirrorOf(s)?.metadata.deletionTimestamp, '2024-01-01T00:00:00Z');
    assert.deepEqual(mirrors.apply('REMOVE', [m]), [podFullName(s)]);
    assert.equal(mirrors.mirrorOf(s), undefined);
    assert.equal(mirrors.size, 0);
  });

  test('a replacement that arrives before the old copy leaves keeps the name', () => {
    const { mirrors } = setup();
    const s = staticPod('web', 'h1');
    mirrors.apply('ADD', [apiMirror(s, 'old')]);
    mirrors.apply('ADD', [apiMirror(s, 'new')]);
    mirrors.apply('REMOVE', [apiMirror(s, 'old')]);
    assert.equal(mirrors.mirrorOf(s)?.metadata.uid, 'new');
    assert.deepEqual(
      mirrors.list().map((p) => p.metadata.uid),
      ['new'],
    );
  });
});

describe('reconcile (syncPod)', () => {
  test('no mirror pod: one is created', async () => {
    const { client, mirrors } = setup();
    const s = staticPod('web', 'h1');
    await mirrors.reconcile(s);
    const created = client.pods.get(podFullName(s));
    assert.equal(created?.metadata.annotations?.['kubernetes.io/config.mirror'], 'h1');
    assert.deepEqual(client.deletes, []);
  });

  test('the mirror pod of this version is left alone', async () => {
    const { client, mirrors } = setup();
    const s = staticPod('web', 'h1');
    mirrors.apply('ADD', [apiMirror(s, 'm1')]);
    await mirrors.reconcile(s);
    assert.equal(client.createCounts.size, 0);
    assert.deepEqual(client.deletes, []);
  });

  test('an outdated mirror pod (the manifest changed) is deleted by UID and replaced', async () => {
    const { client, mirrors } = setup();
    const old = staticPod('web', 'h1');
    await mirrors.reconcile(old);
    const oldMirror = client.pods.get(podFullName(old))!;
    mirrors.apply('ADD', [oldMirror]);
    const edited = staticPod('web', 'h2');
    await mirrors.reconcile(edited);
    assert.deepEqual(client.deletes, [{ fullName: podFullName(edited), uid: oldMirror.metadata.uid }]);
    const replacement = client.pods.get(podFullName(edited));
    assert.equal(replacement?.metadata.annotations?.['kubernetes.io/config.mirror'], 'h2');
    assert.notEqual(replacement?.metadata.uid, oldMirror.metadata.uid);
  });

  test('a mirror pod being deleted gracefully is deleted at once and recreated', async () => {
    const { client, mirrors } = setup();
    const s = staticPod('web', 'h1');
    await mirrors.reconcile(s);
    const m = client.pods.get(podFullName(s))!;
    mirrors.apply('DELETE', [
      { ...m, metadata: { ...m.metadata, deletionTimestamp: '2024-01-01T00:00:30Z' } },
    ]);
    await mirrors.reconcile(s);
    assert.deepEqual(client.deletes, [{ fullName: podFullName(s), uid: m.metadata.uid }]);
    assert.equal(client.createCounts.get(podFullName(s)), 2);
    assert.ok(client.hasPod(podFullName(s)));
  });

  test('a delete that did not happen (another copy, or the API away) creates nothing', async () => {
    const { client, mirrors } = setup();
    const s = staticPod('web', 'h2');
    mirrors.apply('ADD', [apiMirror(staticPod('web', 'h1'), 'gone-already')]);
    await mirrors.reconcile(s);
    assert.equal(client.deletes.length, 1);
    assert.equal(client.createCounts.size, 0);
  });

  test('no node yet, or the node being deleted: no mirror pod', async () => {
    const s = staticPod('web', 'h1');
    const none = setup(null);
    await none.mirrors.reconcile(s);
    assert.equal(none.client.createCounts.size, 0);
    const deleting = setup({
      metadata: { name: NODE, uid: 'node-uid', deletionTimestamp: '2024-01-01T00:00:00Z' },
    });
    await deleting.mirrors.reconcile(s);
    assert.equal(deleting.client.createCounts.size, 0);
    // Once the node is there, the next sync makes it.
    none.node.value = { metadata: { name: NODE, uid: 'node-uid' } };
    await none.mirrors.reconcile(s);
    assert.ok(none.client.hasPod(podFullName(s)));
  });

  test('a failed create is logged, never thrown; pods from the API have no mirror', async () => {
    const { client, log, mirrors } = setup();
    client.failing = true;
    await mirrors.reconcile(staticPod('web', 'h1'));
    assert.ok(log.lines.some((l) => l.level === 'error' && l.msg === 'Failed creating a mirror pod for'));
    client.failing = false;
    const apiPod = staticPod('api', 'x');
    apiPod.metadata.annotations!['kubernetes.io/config.source'] = 'api';
    await mirrors.reconcile(apiPod);
    assert.equal(client.hasPod(podFullName(apiPod)), false);
  });
});

describe('deleteOrphaned (housekeeping)', () => {
  test('mirror pods without a static pod go, once their static pod has finished terminating', async () => {
    const { client, mirrors } = setup();
    const kept = staticPod('kept', 'h1');
    const removed = staticPod('removed', 'h2');
    const terminating = staticPod('terminating', 'h3');
    for (const s of [kept, removed, terminating]) {
      await mirrors.reconcile(s);
      mirrors.apply('ADD', [client.pods.get(podFullName(s))!]);
    }
    const staticPods = new Map([[podFullName(kept), kept]]);
    await mirrors.deleteOrphaned(
      (fullName) => staticPods.get(fullName),
      (fullName) => fullName === podFullName(terminating),
    );
    assert.deepEqual(client.deletes, [{ fullName: podFullName(removed), uid: undefined }]);
    assert.equal(client.hasPod(podFullName(kept)), true);
    assert.equal(client.hasPod(podFullName(terminating)), true);
  });

  test('an API pod of the same full name does not count as the static pod', async () => {
    const { client, mirrors } = setup();
    const s = staticPod('web', 'h1');
    await mirrors.reconcile(s);
    mirrors.apply('ADD', [client.pods.get(podFullName(s))!]);
    const apiPod = {
      ...s,
      metadata: { ...s.metadata, annotations: { 'kubernetes.io/config.source': 'api' } },
    };
    await mirrors.deleteOrphaned(
      () => apiPod,
      () => false,
    );
    assert.equal(client.hasPod(podFullName(s)), false);
  });
});
