import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { adminClient, podManifest, type Client } from './client.js';

describe('test API server: deletion', () => {
  let server: TestApiServer;
  let api: Client;
  const clock = new FakeClock(Date.parse('2024-05-01T10:00:00Z'));

  before(async () => {
    server = await startTestApiServer({ nodeName: 'node-d', clock });
    api = adminClient(server);
  });
  after(() => server.stop());

  it('marks a pod on a node for graceful deletion and removes it when deleted again with grace 0 and its UID', async () => {
    const created = await api.post('/api/v1/namespaces/default/pods', podManifest('graceful', 'node-d'));
    const uid = created.body.metadata.uid;
    const w = await api.watch(
      `/api/v1/namespaces/default/pods?watch=1&resourceVersion=${created.body.metadata.resourceVersion}`,
    );

    const first = await api.delete('/api/v1/namespaces/default/pods/graceful');
    assert.equal(first.status, 200);
    assert.equal(first.body.kind, 'Pod');
    assert.equal(first.body.metadata.deletionTimestamp, '2024-05-01T10:00:30Z');
    assert.equal(first.body.metadata.deletionGracePeriodSeconds, 30);
    assert.equal(first.body.metadata.generation, 2);
    assert.ok((await api.get('/api/v1/namespaces/default/pods/graceful')).status === 200);

    // Asking again with a longer grace period changes nothing.
    const again = await api.delete('/api/v1/namespaces/default/pods/graceful', { gracePeriodSeconds: 60 });
    assert.equal(again.body.metadata.resourceVersion, first.body.metadata.resourceVersion);

    const final = await api.delete('/api/v1/namespaces/default/pods/graceful', {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      gracePeriodSeconds: 0,
      preconditions: { uid },
    });
    assert.equal(final.status, 200);
    assert.equal(final.body.metadata.deletionGracePeriodSeconds, 0);
    assert.equal((await api.get('/api/v1/namespaces/default/pods/graceful')).status, 404);

    const events = [await w.next(), await w.next(), await w.next()];
    assert.deepEqual(
      events.map((e) => [e.type, e.object.metadata.deletionGracePeriodSeconds]),
      [
        ['MODIFIED', 30],
        ['MODIFIED', 0],
        ['DELETED', 0],
      ],
    );
    // Shortening the grace period moves the deletion timestamp back to now + 0.
    assert.equal(events[1]!.object.metadata.deletionTimestamp, '2024-05-01T10:00:00Z');
    w.close();
  });

  it('deletes a pod that is on no node at once', async () => {
    await api.post('/api/v1/namespaces/default/pods', podManifest('unbound'));
    const res = await api.delete('/api/v1/namespaces/default/pods/unbound');
    assert.equal(res.status, 200);
    assert.equal(res.body.metadata.deletionGracePeriodSeconds, 0);
    assert.equal((await api.get('/api/v1/namespaces/default/pods/unbound')).status, 404);
  });

  it('refuses a delete whose UID precondition does not match with 409 Conflict naming the Kind', async () => {
    const created = await api.post('/api/v1/namespaces/default/pods', podManifest('precond', 'node-d'));
    const res = await api.delete('/api/v1/namespaces/default/pods/precond', {
      gracePeriodSeconds: 0,
      preconditions: { uid: 'not-the-uid' },
    });
    assert.equal(res.status, 409);
    assert.deepEqual(res.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `Operation cannot be fulfilled on Pod "precond": the UID in the precondition (not-the-uid) does not match the UID in record (${created.body.metadata.uid}). The object might have been deleted and then recreated`,
      reason: 'Conflict',
      details: { name: 'precond', kind: 'Pod' },
      code: 409,
    });
    assert.equal(
      (await api.get('/api/v1/namespaces/default/pods/precond')).body.metadata.deletionTimestamp,
      undefined,
    );
    const stale = await api.delete('/api/v1/namespaces/default/pods/precond', {
      preconditions: { resourceVersion: '1' },
    });
    assert.equal(stale.status, 409);
    assert.match(stale.body.message, /the ResourceVersion in the precondition \(1\) does not match/);
  });

  it('takes gracePeriodSeconds from the query too, and deletes a finished pod at once', async () => {
    await api.post('/api/v1/namespaces/default/pods', podManifest('query-grace', 'node-d'));
    const res = await api.delete('/api/v1/namespaces/default/pods/query-grace?gracePeriodSeconds=5');
    assert.equal(res.body.metadata.deletionGracePeriodSeconds, 5);

    const done = await api.post('/api/v1/namespaces/default/pods', podManifest('finished', 'node-d'));
    await api.put('/api/v1/namespaces/default/pods/finished/status', {
      ...done.body,
      status: { ...done.body.status, phase: 'Succeeded' },
    });
    await api.delete('/api/v1/namespaces/default/pods/finished');
    assert.equal((await api.get('/api/v1/namespaces/default/pods/finished')).status, 404);
  });

  it('answers the delete of a config map with a Success status', async () => {
    const created = await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'bye' } });
    const res = await api.delete('/api/v1/namespaces/default/configmaps/bye');
    assert.deepEqual(res.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name: 'bye', kind: 'configmaps', uid: created.body.metadata.uid },
    });
    const lease = await api.post('/apis/coordination.k8s.io/v1/namespaces/default/leases', {
      metadata: { name: 'bye' },
    });
    const gone = await api.delete('/apis/coordination.k8s.io/v1/namespaces/default/leases/bye');
    assert.deepEqual(gone.body.details, {
      name: 'bye',
      group: 'coordination.k8s.io',
      kind: 'leases',
      uid: lease.body.metadata.uid,
    });
  });

  it('keeps an object with finalizers until an update removes the last one', async () => {
    const created = await api.post('/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'held', finalizers: ['example.com/hold'] },
    });
    const res = await api.delete('/api/v1/namespaces/default/configmaps/held');
    assert.equal(res.body.kind, 'ConfigMap');
    assert.ok(res.body.metadata.deletionTimestamp);
    const released = await api.patch(
      '/api/v1/namespaces/default/configmaps/held',
      'application/merge-patch+json',
      {
        metadata: { finalizers: null },
      },
    );
    assert.equal(released.status, 200);
    assert.ok(Number(released.body.metadata.resourceVersion) > Number(created.body.metadata.resourceVersion));
    assert.equal((await api.get('/api/v1/namespaces/default/configmaps/held')).status, 404);
  });

  it('terminates a namespace: its objects are deleted, bound pods wait for their kubelet', async () => {
    await api.post('/api/v1/namespaces', { metadata: { name: 'doomed' } });
    await api.post('/api/v1/namespaces/doomed/pods', podManifest('bound', 'node-d'));
    const res = await api.delete('/api/v1/namespaces/doomed');
    assert.equal(res.body.status.phase, 'Terminating');
    const create = await api.post('/api/v1/namespaces/doomed/configmaps', { metadata: { name: 'late' } });
    assert.equal(create.status, 403);
    assert.equal(
      create.body.message,
      'configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated',
    );
    assert.equal((await api.get('/api/v1/namespaces/doomed/serviceaccounts/default')).status, 404);
    assert.ok((await api.get('/api/v1/namespaces/doomed/pods/bound')).body.metadata.deletionTimestamp);
    await api.delete('/api/v1/namespaces/doomed/pods/bound', { gracePeriodSeconds: 0 });
    assert.equal((await api.get('/api/v1/namespaces/doomed')).status, 404);
  });
});
