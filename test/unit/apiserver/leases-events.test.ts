import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { Client } from './client.js';

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';

describe('test API server: node leases and events', () => {
  let server: TestApiServer;
  let kubelet: Client;

  before(async () => {
    server = await startTestApiServer({ nodeName: 'node-l' });
    kubelet = new Client(server, { token: server.tokenFor(server.nodeUser) });
  });
  after(() => server.stop());

  it('creates, reads and renews a node lease, refusing a renewal from a stale read', async () => {
    const node = server.store.create('nodes', { metadata: { name: 'node-l' } });
    const created = await kubelet.post(LEASES, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: 'node-l',
        namespace: 'kube-node-lease',
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-l', uid: node.metadata.uid }],
      },
      spec: { holderIdentity: 'node-l', leaseDurationSeconds: 40, renewTime: '2024-01-01T00:00:00.000000Z' },
    });
    assert.equal(created.status, 201);
    assert.equal(created.body.kind, 'Lease');
    assert.equal(created.body.apiVersion, 'coordination.k8s.io/v1');

    const read = await kubelet.get(`${LEASES}/node-l`);
    const renewed = await kubelet.put(`${LEASES}/node-l`, {
      ...read.body,
      spec: { ...read.body.spec, renewTime: '2024-01-01T00:00:10.000000Z' },
    });
    assert.equal(renewed.status, 200);
    assert.equal(renewed.body.spec.renewTime, '2024-01-01T00:00:10.000000Z');

    const stale = await kubelet.put(`${LEASES}/node-l`, {
      ...read.body,
      spec: { ...read.body.spec, renewTime: '2024-01-01T00:00:20.000000Z' },
    });
    assert.equal(stale.status, 409);
    assert.equal(
      stale.body.message,
      'Operation cannot be fulfilled on leases.coordination.k8s.io "node-l": the object has been modified; please apply your changes to the latest version and try again',
    );
    assert.deepEqual(stale.body.details, { name: 'node-l', group: 'coordination.k8s.io', kind: 'leases' });
  });

  it('creates a lease with a PUT, as leases allow create on update', async () => {
    const res = await kubelet.put(`${LEASES}/put-made`, {
      metadata: { name: 'put-made' },
      spec: { holderIdentity: 'x' },
    });
    assert.equal(res.status, 201);
    assert.equal(res.body.metadata.namespace, 'kube-node-lease');
  });

  it('takes an event, then the recorder’s strategic merge patch that counts a repeat', async () => {
    const name = `web-0.${0x17a2b3c4d5e6f708n.toString(16)}`;
    const event = {
      metadata: { name, namespace: 'default' },
      involvedObject: {
        kind: 'Pod',
        namespace: 'default',
        name: 'web-0',
        uid: 'u-1',
        apiVersion: 'v1',
        fieldPath: 'spec.containers{app}',
      },
      reason: 'BackOff',
      message: 'Back-off restarting failed container app',
      source: { component: 'kubelet', host: 'node-l' },
      firstTimestamp: '2024-01-01T00:00:00Z',
      lastTimestamp: '2024-01-01T00:00:00Z',
      count: 1,
      type: 'Warning',
      reportingComponent: 'kubelet',
      reportingInstance: 'node-l',
    };
    const created = await kubelet.post('/api/v1/namespaces/default/events', event);
    assert.equal(created.status, 201);
    const patched = await kubelet.patch(
      `/api/v1/namespaces/default/events/${name}`,
      'application/strategic-merge-patch+json',
      {
        count: 2,
        lastTimestamp: '2024-01-01T00:00:30Z',
        message: 'Back-off restarting failed container app',
      },
    );
    assert.equal(patched.status, 200);
    assert.equal(patched.body.count, 2);
    assert.equal(patched.body.firstTimestamp, '2024-01-01T00:00:00Z');
    assert.equal(patched.body.lastTimestamp, '2024-01-01T00:00:30Z');

    const missing = await kubelet.patch(
      '/api/v1/namespaces/default/events/gone.1',
      'application/strategic-merge-patch+json',
      {
        count: 2,
      },
    );
    assert.equal(missing.status, 404);

    const byObject = await kubelet.get(
      '/api/v1/namespaces/default/events?fieldSelector=' +
        encodeURIComponent('involvedObject.name=web-0,source=kubelet,type=Warning'),
    );
    assert.deepEqual(
      byObject.body.items.map((e: { metadata: { name: string } }) => e.metadata.name),
      [name],
    );
  });
});
