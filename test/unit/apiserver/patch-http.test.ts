import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { adminClient, podManifest, type Client } from './client.js';

const SMP = 'application/strategic-merge-patch+json';
const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';

describe('test API server: PATCH', () => {
  let server: TestApiServer;
  let api: Client;

  before(async () => {
    server = await startTestApiServer({ nodeName: 'node-p' });
    api = adminClient(server);
  });
  after(() => server.stop());

  it('applies a kubelet-style strategic merge patch to pods/status and leaves the spec alone', async () => {
    const created = await api.post('/api/v1/namespaces/default/pods', {
      ...podManifest('smp', 'node-p'),
      spec: {
        nodeName: 'node-p',
        containers: [
          { name: 'a', image: 'busybox:1.36' },
          { name: 'b', image: 'busybox:1.36' },
        ],
      },
    });
    const uid = created.body.metadata.uid;
    const t0 = '2024-01-01T00:00:00Z';
    const first = await api.patch('/api/v1/namespaces/default/pods/smp/status', SMP, {
      metadata: { uid },
      status: {
        conditions: [
          { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: t0 },
          {
            type: 'Ready',
            status: 'False',
            lastProbeTime: null,
            lastTransitionTime: t0,
            reason: 'ContainersNotReady',
          },
        ],
        containerStatuses: [
          {
            name: 'a',
            ready: false,
            restartCount: 0,
            image: 'busybox:1.36',
            imageID: '',
            state: { waiting: { reason: 'ContainerCreating' } },
          },
          {
            name: 'b',
            ready: false,
            restartCount: 0,
            image: 'busybox:1.36',
            imageID: '',
            state: { waiting: { reason: 'ContainerCreating' } },
          },
        ],
        hostIP: '10.0.0.1',
        startTime: t0,
      },
    });
    assert.equal(first.status, 200);
    assert.equal(first.body.status.phase, 'Pending');
    assert.equal(first.body.status.qosClass, 'BestEffort');

    const second = await api.patch('/api/v1/namespaces/default/pods/smp/status', SMP, {
      metadata: { uid },
      spec: { activeDeadlineSeconds: 1 },
      status: {
        '$setElementOrder/conditions': [{ type: 'Initialized' }, { type: 'Ready' }],
        conditions: [
          { type: 'Ready', status: 'True', reason: null, lastTransitionTime: '2024-01-01T00:00:05Z' },
        ],
        containerStatuses: [
          {
            name: 'a',
            ready: true,
            restartCount: 0,
            image: 'busybox:1.36',
            imageID: 'sha256:1',
            state: { running: { startedAt: t0 } },
          },
          {
            name: 'b',
            ready: true,
            restartCount: 0,
            image: 'busybox:1.36',
            imageID: 'sha256:1',
            state: { running: { startedAt: t0 } },
          },
        ],
        phase: 'Running',
        podIP: '10.1.0.5',
        podIPs: [{ ip: '10.1.0.5' }],
      },
    });
    assert.equal(second.status, 200);
    const status = second.body.status;
    assert.equal(status.phase, 'Running');
    assert.deepEqual(
      status.conditions.map((c: { type: string; status: string; reason?: string }) => [
        c.type,
        c.status,
        c.reason,
      ]),
      [
        ['Initialized', 'True', undefined],
        ['Ready', 'True', undefined],
      ],
    );
    assert.equal(status.containerStatuses[0].state.running.startedAt, t0);
    assert.equal(status.hostIP, '10.0.0.1');
    assert.equal(second.body.spec.activeDeadlineSeconds, undefined);
    assert.ok(Number(second.body.metadata.resourceVersion) > Number(first.body.metadata.resourceVersion));
  });

  it('refuses a status patch whose metadata.uid is not the pod UID, as the kubelet relies on', async () => {
    await api.post('/api/v1/namespaces/default/pods', podManifest('uid-guard', 'node-p'));
    const res = await api.patch('/api/v1/namespaces/default/pods/uid-guard/status', SMP, {
      metadata: { uid: 'some-older-pod' },
      status: { phase: 'Running' },
    });
    assert.equal(res.status, 422);
    assert.equal(res.body.reason, 'Invalid');
    assert.equal(
      res.body.message,
      'Pod "uid-guard" is invalid: metadata.uid: Invalid value: "some-older-pod": field is immutable',
    );
  });

  it('writes nothing for a patch that changes nothing', async () => {
    const created = await api.post('/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'noop' },
      data: { a: '1' },
    });
    const res = await api.patch('/api/v1/namespaces/default/configmaps/noop', MERGE, { data: { a: '1' } });
    assert.equal(res.body.metadata.resourceVersion, created.body.metadata.resourceVersion);
  });

  it('treats a resourceVersion in a patch as a precondition', async () => {
    const created = await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'pre' } });
    await api.patch('/api/v1/namespaces/default/configmaps/pre', MERGE, { data: { a: '1' } });
    const res = await api.patch('/api/v1/namespaces/default/configmaps/pre', MERGE, {
      metadata: { resourceVersion: created.body.metadata.resourceVersion },
      data: { a: '2' },
    });
    assert.equal(res.status, 409);
    assert.equal(res.body.reason, 'Conflict');
  });

  it('patches node status with a merge patch and node addresses with $patch: replace', async () => {
    server.store.create('nodes', {
      metadata: { name: 'node-p' },
      status: {
        conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady' }],
        addresses: [
          { type: 'InternalIP', address: '10.0.0.1' },
          { type: 'Hostname', address: 'node-p' },
        ],
        capacity: { cpu: '4', pods: '110' },
      },
    });
    const merged = await api.patch('/api/v1/nodes/node-p/status', MERGE, {
      status: { capacity: { cpu: '8' } },
    });
    assert.deepEqual(merged.body.status.capacity, { cpu: '8', pods: '110' });
    assert.deepEqual(merged.body.status.allocatable, { cpu: '4', pods: '110' });

    const res = await api.patch('/api/v1/nodes/node-p/status', SMP, {
      status: {
        '$setElementOrder/conditions': [{ type: 'Ready' }],
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
        addresses: [
          { type: 'InternalIP', address: '10.0.0.9' },
          { type: 'Hostname', address: 'node-p' },
          { $patch: 'replace' },
        ],
      },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.status.conditions, [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }]);
    assert.deepEqual(res.body.status.addresses, [
      { type: 'InternalIP', address: '10.0.0.9' },
      { type: 'Hostname', address: 'node-p' },
    ]);
    // A status patch does not reach the spec; a patch of the node itself does not reach the status.
    const spec = await api.patch('/api/v1/nodes/node-p/status', MERGE, { spec: { unschedulable: true } });
    assert.equal(spec.body.spec, undefined);
    const main = await api.patch('/api/v1/nodes/node-p', MERGE, {
      status: { phase: 'Nope' },
      metadata: { labels: { a: 'b' } },
    });
    assert.equal(main.body.status.phase, undefined);
    assert.deepEqual(main.body.metadata.labels, { a: 'b' });
  });

  it('applies a JSON patch and answers a failed test op with 422', async () => {
    await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'jp' }, data: { a: '1' } });
    const ok = await api.patch('/api/v1/namespaces/default/configmaps/jp', JSON_PATCH, [
      { op: 'test', path: '/data/a', value: '1' },
      { op: 'replace', path: '/data/a', value: '2' },
    ]);
    assert.deepEqual(ok.body.data, { a: '2' });
    const failed = await api.patch('/api/v1/namespaces/default/configmaps/jp', JSON_PATCH, [
      { op: 'test', path: '/data/a', value: '1' },
    ]);
    assert.equal(failed.status, 422);
    assert.equal(failed.body.message, 'the server rejected our request due to an error in our request');
  });

  it('answers 415 for a patch type it does not take and 404 for a missing object', async () => {
    const apply = await api.patch(
      '/api/v1/namespaces/default/configmaps/jp',
      'application/apply-patch+yaml',
      'data: {}',
    );
    assert.equal(apply.status, 415);
    assert.equal(apply.body.reason, 'UnsupportedMediaType');
    const missing = await api.patch('/api/v1/namespaces/default/pods/ghost/status', SMP, { status: {} });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.message, 'pods "ghost" not found');
  });
});
