import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { adminClient, podManifest, type Client } from './client.js';

describe('test API server: create, get, list, update', () => {
  let server: TestApiServer;
  let api: Client;

  before(async () => {
    server = await startTestApiServer({ nodeName: 'node-a' });
    api = adminClient(server);
  });
  after(() => server.stop());

  it('sets uid, creationTimestamp and a resourceVersion from one counter shared by all resources', async () => {
    const cm = await api.post('/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'rv-1' },
      data: { a: '1' },
    });
    assert.equal(cm.status, 201);
    const pod = await api.post('/api/v1/namespaces/default/pods', podManifest('rv-pod', 'node-a'));
    assert.equal(pod.status, 201);
    assert.match(cm.body.metadata.uid, /^[0-9a-f-]{36}$/);
    assert.match(cm.body.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(typeof cm.body.metadata.resourceVersion, 'string');
    assert.equal(Number(pod.body.metadata.resourceVersion), Number(cm.body.metadata.resourceVersion) + 1);
    assert.equal(pod.body.kind, 'Pod');
    assert.equal(pod.body.apiVersion, 'v1');
    assert.equal(server.store.resourceVersion, pod.body.metadata.resourceVersion);
  });

  it('drops the status a client sends with a new pod and applies the defaults', async () => {
    const res = await api.post('/api/v1/namespaces/default/pods', {
      ...podManifest('defaults', 'node-a'),
      status: { phase: 'Running' },
    });
    assert.equal(res.status, 201);
    assert.deepEqual(res.body.status, { phase: 'Pending', qosClass: 'BestEffort' });
    const spec = res.body.spec;
    assert.equal(spec.restartPolicy, 'Always');
    assert.equal(spec.terminationGracePeriodSeconds, 30);
    assert.equal(spec.serviceAccountName, 'default');
    assert.equal(spec.containers[0].imagePullPolicy, 'IfNotPresent');
    assert.ok(spec.volumes.some((v: { name: string }) => v.name.startsWith('kube-api-access-')));
  });

  it('generates a name from generateName', async () => {
    const res = await api.post('/api/v1/namespaces/default/configmaps', {
      metadata: { generateName: 'gen-' },
    });
    assert.equal(res.status, 201);
    assert.match(res.body.metadata.name, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    assert.equal(res.body.metadata.generateName, 'gen-');
  });

  it('answers a second create with 409 AlreadyExists, as the real server words it', async () => {
    await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'twice' } });
    const res = await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'twice' } });
    assert.equal(res.status, 409);
    assert.deepEqual(res.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'configmaps "twice" already exists',
      reason: 'AlreadyExists',
      details: { name: 'twice', kind: 'configmaps' },
      code: 409,
    });
  });

  it('answers a missing object with 404 NotFound, naming the group for non-core resources', async () => {
    const pod = await api.get('/api/v1/namespaces/default/pods/nope');
    assert.equal(pod.status, 404);
    assert.deepEqual(pod.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'pods "nope" not found',
      reason: 'NotFound',
      details: { name: 'nope', kind: 'pods' },
      code: 404,
    });
    const lease = await api.get('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/nope');
    assert.equal(lease.body.message, 'leases.coordination.k8s.io "nope" not found');
    assert.deepEqual(lease.body.details, { name: 'nope', group: 'coordination.k8s.io', kind: 'leases' });
  });

  it('refuses to create in a namespace that does not exist', async () => {
    const res = await api.post('/api/v1/namespaces/ghost/configmaps', { metadata: { name: 'x' } });
    assert.equal(res.status, 404);
    assert.equal(res.body.message, 'namespaces "ghost" not found');
  });

  it('answers an update with a stale resourceVersion with 409 Conflict', async () => {
    const created = await api.post('/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'cas' },
      data: { v: '1' },
    });
    const first = await api.put('/api/v1/namespaces/default/configmaps/cas', {
      ...created.body,
      data: { v: '2' },
    });
    assert.equal(first.status, 200);
    assert.ok(Number(first.body.metadata.resourceVersion) > Number(created.body.metadata.resourceVersion));
    const stale = await api.put('/api/v1/namespaces/default/configmaps/cas', {
      ...created.body,
      data: { v: '3' },
    });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.reason, 'Conflict');
    assert.equal(
      stale.body.message,
      'Operation cannot be fulfilled on configmaps "cas": the object has been modified; please apply your changes to the latest version and try again',
    );
    assert.deepEqual(stale.body.details, { name: 'cas', kind: 'configmaps' });
  });

  it('writes nothing for an update that changes nothing', async () => {
    const created = await api.post('/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'same' },
      data: { v: '1' },
    });
    const again = await api.put('/api/v1/namespaces/default/configmaps/same', created.body);
    assert.equal(again.status, 200);
    assert.equal(again.body.metadata.resourceVersion, created.body.metadata.resourceVersion);
  });

  it('keeps status on a pod PUT and spec on a pods/status PUT', async () => {
    const created = await api.post('/api/v1/namespaces/default/pods', podManifest('split', 'node-a'));
    const withStatus = structuredClone(created.body);
    withStatus.status = { phase: 'Running', qosClass: 'BestEffort' };
    withStatus.metadata.labels = { touched: 'yes' };
    const put = await api.put('/api/v1/namespaces/default/pods/split', withStatus);
    assert.equal(put.body.status.phase, 'Pending');
    assert.equal(put.body.metadata.labels.touched, 'yes');

    const statusUpdate = structuredClone(put.body);
    statusUpdate.status.phase = 'Running';
    statusUpdate.spec.activeDeadlineSeconds = 5;
    const status = await api.put('/api/v1/namespaces/default/pods/split/status', statusUpdate);
    assert.equal(status.status, 200);
    assert.equal(status.body.status.phase, 'Running');
    assert.equal(status.body.spec.activeDeadlineSeconds, undefined);
  });

  it('requires a resourceVersion to update a lease, as leases allow no unconditional update', async () => {
    const path = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';
    const created = await api.post(path, { metadata: { name: 'l1' }, spec: { holderIdentity: 'a' } });
    const body = structuredClone(created.body);
    delete body.metadata.resourceVersion;
    const res = await api.put(`${path}/l1`, body);
    assert.equal(res.status, 422);
    assert.equal(
      res.body.message,
      'Lease.coordination.k8s.io "l1" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
    );
  });

  it('lists with label and field selectors, without kind on the items, at the current resourceVersion', async () => {
    await api.post(
      '/api/v1/namespaces/kube-system/pods',
      podManifest('sel-1', 'node-a', { labels: { app: 'x', tier: 'a' } }),
    );
    await api.post(
      '/api/v1/namespaces/default/pods',
      podManifest('sel-2', 'node-b', { labels: { app: 'x', tier: 'b' } }),
    );
    await api.post(
      '/api/v1/namespaces/default/pods',
      podManifest('sel-3', undefined, { labels: { app: 'y' } }),
    );

    const byNode = await api.get('/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-b');
    assert.equal(byNode.status, 200);
    assert.equal(byNode.body.kind, 'PodList');
    assert.equal(byNode.body.metadata.resourceVersion, server.store.resourceVersion);
    assert.deepEqual(
      byNode.body.items.map((p: { metadata: { name: string } }) => p.metadata.name),
      ['sel-2'],
    );
    assert.equal(byNode.body.items[0].kind, undefined);

    const labelled = await api.get('/api/v1/pods?labelSelector=' + encodeURIComponent('app in (x),tier!=b'));
    assert.deepEqual(
      labelled.body.items.map((p: { metadata: { name: string } }) => p.metadata.name),
      ['sel-1'],
    );
    const unscheduled = await api.get(
      '/api/v1/pods?fieldSelector=' + encodeURIComponent('spec.nodeName=,metadata.name=sel-3'),
    );
    assert.deepEqual(
      unscheduled.body.items.map((p: { metadata: { name: string } }) => p.metadata.name),
      ['sel-3'],
    );
    const inNs = await api.get('/api/v1/pods?fieldSelector=metadata.namespace%3Dkube-system');
    assert.ok(
      inNs.body.items.every(
        (p: { metadata: { namespace: string } }) => p.metadata.namespace === 'kube-system',
      ),
    );
    assert.ok(inNs.body.items.length >= 1);

    const bad = await api.get('/api/v1/pods?fieldSelector=spec.bogus%3D1');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.message, 'field label not supported: spec.bogus');
  });

  it('pages a list with limit and continue', async () => {
    for (const n of ['p-a', 'p-b', 'p-c']) {
      await api.post('/api/v1/namespaces/kube-public/configmaps', { metadata: { name: n } });
    }
    const first = await api.get('/api/v1/namespaces/kube-public/configmaps?limit=2');
    assert.equal(first.body.items.length, 2);
    assert.ok(first.body.metadata.continue);
    assert.equal(first.body.metadata.remainingItemCount, 2);
    const second = await api.get(
      `/api/v1/namespaces/kube-public/configmaps?limit=2&continue=${encodeURIComponent(first.body.metadata.continue)}`,
    );
    const names = [...first.body.items, ...second.body.items].map(
      (c: { metadata: { name: string } }) => c.metadata.name,
    );
    assert.deepEqual(names, ['kube-root-ca.crt', 'p-a', 'p-b', 'p-c']);
    assert.equal(second.body.metadata.continue, undefined);
    assert.equal(second.body.metadata.resourceVersion, first.body.metadata.resourceVersion);
  });

  it('gives direct store access with the same rules', () => {
    const created = server.store.create('configmaps', { metadata: { name: 'direct', namespace: 'default' } });
    assert.equal(server.store.get('configmaps', 'direct', 'default').metadata.uid, created.metadata.uid);
    assert.throws(
      () => server.store.create('configmaps', { metadata: { name: 'direct', namespace: 'default' } }),
      (err: { code?: number; reason?: string }) => err.code === 409 && err.reason === 'AlreadyExists',
    );
    const list = server.store.list('configmaps', {
      namespace: 'default',
      fieldSelector: 'metadata.name=direct',
    });
    assert.equal(list.items.length, 1);
  });
});
