import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { adminClient, podManifest, type Client, type WatchStream } from './client.js';

const BOOKMARK_INTERVAL_MS = 60_000;

describe('test API server: watch', () => {
  let server: TestApiServer;
  let api: Client;
  const clock = new FakeClock();
  const open: WatchStream[] = [];

  before(async () => {
    server = await startTestApiServer({
      nodeName: 'node-w',
      clock,
      bookmarkIntervalMs: BOOKMARK_INTERVAL_MS,
    });
    api = adminClient(server);
  });
  after(async () => {
    for (const w of open) w.close();
    await server.stop();
  });

  async function watch(path: string): Promise<WatchStream> {
    const w = await api.watch(path);
    open.push(w);
    return w;
  }

  it('replays what followed a resourceVersion, in order, then streams live events', async () => {
    const a = await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'w-a' } });
    const from = a.body.metadata.resourceVersion;
    await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'w-b' } });
    await api.put('/api/v1/namespaces/default/configmaps/w-a', { ...a.body, data: { k: 'v' } });

    const w = await watch(`/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${from}`);
    assert.equal(w.status, 200);
    assert.equal(w.headers['content-type'], 'application/json');
    assert.equal(w.headers['transfer-encoding'], 'chunked');
    const e1 = await w.next();
    assert.deepEqual([e1.type, e1.object.metadata.name], ['ADDED', 'w-b']);
    assert.equal(e1.object.kind, 'ConfigMap');
    const e2 = await w.next();
    assert.deepEqual([e2.type, e2.object.metadata.name, e2.object.data], ['MODIFIED', 'w-a', { k: 'v' }]);

    await api.delete('/api/v1/namespaces/default/configmaps/w-b');
    const e3 = await w.next();
    assert.deepEqual([e3.type, e3.object.metadata.name], ['DELETED', 'w-b']);
    assert.equal(e3.object.metadata.resourceVersion, server.store.resourceVersion);
  });

  it('starts with the current state as ADDED events when no resourceVersion is given', async () => {
    await api.post('/api/v1/namespaces/kube-public/configmaps', { metadata: { name: 'w-now' } });
    const w = await watch('/api/v1/namespaces/kube-public/configmaps?watch=true');
    const names = [(await w.next()).object.metadata.name, (await w.next()).object.metadata.name];
    assert.deepEqual(names.sort(), ['kube-root-ca.crt', 'w-now']);
  });

  it('turns a change into ADDED or DELETED when the object enters or leaves a field selection', async () => {
    const pod = await api.post('/api/v1/namespaces/default/pods', podManifest('w-bind'));
    const rv = pod.body.metadata.resourceVersion;
    const w = await watch(`/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dnode-w&resourceVersion=${rv}`);
    const bind = await api.post('/api/v1/namespaces/default/pods/w-bind/binding', {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'w-bind' },
      target: { apiVersion: 'v1', kind: 'Node', name: 'node-w' },
    });
    assert.equal(bind.status, 201);
    const added = await w.next();
    assert.equal(added.type, 'ADDED');
    assert.equal(added.object.spec.nodeName, 'node-w');
    assert.ok(added.object.status.conditions.some((c: { type: string }) => c.type === 'PodScheduled'));

    // Deleting a bound pod only marks it: a MODIFIED that stays in the selection.
    await api.delete('/api/v1/namespaces/default/pods/w-bind');
    const marked = await w.next();
    assert.equal(marked.type, 'MODIFIED');
    assert.ok(marked.object.metadata.deletionTimestamp);
  });

  it('sends DELETED with the last content and the new resourceVersion when an object leaves a label selection', async () => {
    const cm = await api.post('/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'w-label', labels: { team: 'red' } },
      data: { v: '1' },
    });
    const w = await watch(
      `/api/v1/namespaces/default/configmaps?watch=1&labelSelector=team%3Dred&resourceVersion=${cm.body.metadata.resourceVersion}`,
    );
    const moved = await api.put('/api/v1/namespaces/default/configmaps/w-label', {
      ...cm.body,
      metadata: { ...cm.body.metadata, labels: { team: 'blue' } },
      data: { v: '2' },
    });
    const gone = await w.next();
    assert.equal(gone.type, 'DELETED');
    assert.deepEqual(gone.object.metadata.labels, { team: 'red' });
    assert.deepEqual(gone.object.data, { v: '1' });
    assert.equal(gone.object.metadata.resourceVersion, moved.body.metadata.resourceVersion);
  });

  it('sends a BOOKMARK per interval only to watches that allow them', async () => {
    const before = server.store.resourceVersion;
    const withMarks = await watch(`/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=${before}`);
    const without = await watch(`/api/v1/nodes?watch=1&resourceVersion=${before}`);
    await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'w-moves-rv' } });
    clock.advance(BOOKMARK_INTERVAL_MS);
    const mark = await withMarks.next();
    assert.equal(mark.type, 'BOOKMARK');
    assert.deepEqual(mark.object, {
      kind: 'Node',
      apiVersion: 'v1',
      metadata: { resourceVersion: server.store.resourceVersion },
    });
    clock.advance(BOOKMARK_INTERVAL_MS);
    assert.equal((await withMarks.next()).type, 'BOOKMARK');
    await assert.rejects(without.next(200), /no watch event/);
  });

  it('ends the initial events with a marked BOOKMARK for sendInitialEvents=true', async () => {
    server.store.create('nodes', { metadata: { name: 'w-node' } });
    const w = await watch(
      '/api/v1/nodes?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
    );
    const added = await w.next();
    assert.deepEqual([added.type, added.object.metadata.name], ['ADDED', 'w-node']);
    const end = await w.next();
    assert.equal(end.type, 'BOOKMARK');
    assert.deepEqual(end.object.metadata.annotations, { 'k8s.io/initial-events-end': 'true' });

    // With a resourceVersion as well, the state is sent once, not replayed from that version too.
    const fromOld = await watch(
      '/api/v1/nodes?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=1',
    );
    assert.deepEqual([(await fromOld.next()).type, (await fromOld.next()).type], ['ADDED', 'BOOKMARK']);
    await assert.rejects(fromOld.next(200), /no watch event/);
  });

  it('answers a watch from a compacted resourceVersion with a 410 Expired ERROR event on a 200 stream', async () => {
    const old = server.store.resourceVersion;
    await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'w-after' } });
    server.compact();
    const current = server.store.resourceVersion;
    const w = await watch(`/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${old}`);
    assert.equal(w.status, 200);
    const e = await w.next();
    assert.equal(e.type, 'ERROR');
    assert.deepEqual(e.object, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `too old resource version: ${old} (${current})`,
      reason: 'Expired',
      code: 410,
    });
    await w.waitEnd();

    // From the compaction point on, watching works again.
    const fresh = await watch(`/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${current}`);
    await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'w-fresh' } });
    assert.equal((await fresh.next()).object.metadata.name, 'w-fresh');
  });

  it('ends a watch after timeoutSeconds', async () => {
    const w = await watch(
      `/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=30&resourceVersion=${server.store.resourceVersion}`,
    );
    clock.advance(29_000);
    await assert.rejects(w.waitEnd(100), /still open/);
    clock.advance(1_000);
    await w.waitEnd();
  });

  it('answers a resourceVersion from the future with a 504 ERROR event', async () => {
    const ahead = Number(server.store.resourceVersion) + 100;
    const w = await watch(`/api/v1/pods?watch=1&resourceVersion=${ahead}`);
    const e = await w.next();
    assert.equal(e.type, 'ERROR');
    assert.equal(e.object.code, 504);
    assert.equal(e.object.details.causes[0].reason, 'ResourceVersionTooLarge');
  });
});
