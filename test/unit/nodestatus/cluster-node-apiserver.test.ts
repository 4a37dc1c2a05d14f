/**
 * ClusterNode against the test API server over HTTPS, with the product's REST client and the node's
 * own credentials: registration, the status patch on the wire, the Lease, and an outage. Real time,
 * with intervals shortened so the test takes seconds.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { realClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { ClusterNode } from '../../../src/nodestatus/cluster-node.js';
import type { Lease, Node } from '../../../src/api/node.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { waitFor } from '../../helpers/wait.js';
import { FakeCri, fakeMachineHost, fakeNetworkHost, nodeStatusConfig, nodeStatusFlags } from './fixtures.js';

const logLines: string[] = [];
setLogSink((line) => {
  logLines.push(line);
  if (process.env.SHOW_LOGS) process.stderr.write(line + '\n');
});

const NODE = 'node-cn';

describe('ClusterNode against the test API server', () => {
  let server: TestApiServer;
  let dir: string;
  let client: RestClient;
  let node: ClusterNode | undefined;
  const events: string[] = [];

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE });
    dir = await mkdtemp(path.join(os.tmpdir(), 'tskubelet-nodestatus-'));
    const kubeconfig = path.join(dir, 'kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser);
    // Heartbeats go unthrottled, as upstream's heartbeat client.
    client = await RestClient.fromKubeconfig(kubeconfig, { qps: -1 });
  });

  after(async () => {
    client.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  afterEach(async () => {
    await node?.stop();
    node = undefined;
  });

  function start(cri = new FakeCri()): ClusterNode {
    node = new ClusterNode({
      nodeName: NODE,
      config: nodeStatusConfig({
        nodeStatusUpdateFrequencyMs: 200,
        nodeStatusReportFrequencyMs: 1500,
        nodeLeaseDurationSeconds: 1,
        registerWithTaints: [{ key: 'example.com/dedicated', value: 'tests', effect: 'NoSchedule' }],
      }),
      flags: nodeStatusFlags({ nodeLabels: { 'node-role.kubernetes.io/worker': '' } }),
      client,
      clock: realClock,
      kubeletVersion: 'v1.30.0+tskubelet.0.1.0',
      runtimeService: cri,
      imageService: cri,
      runtimeName: 'containerd',
      plegHealth: () => ({ healthy: true }),
      recorder: {
        eventFor: (ref, type, reason, message) =>
          events.push(`${ref.kind}/${ref.name} ${type} ${reason} ${message}`),
      },
      requestTimeoutMs: 2000,
      machineHost: fakeMachineHost(),
      networkHost: fakeNetworkHost(),
    });
    node.start();
    return node;
  }

  const getNode = () => server.store.tryGet('nodes', NODE) as Node | undefined;
  const getLease = () => server.store.tryGet('leases', NODE, 'kube-node-lease') as Lease | undefined;

  it('registers the node, reports it Ready with a strategic merge patch, and holds its Lease', async () => {
    start();
    const ready = await waitFor(
      'the node to be Ready',
      () =>
        getNode()?.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True') && getNode(),
      10_000,
      50,
    );
    assert.equal(ready.metadata.labels?.['kubernetes.io/hostname'], NODE);
    assert.equal(ready.metadata.labels?.['node-role.kubernetes.io/worker'], '');
    assert.deepEqual(ready.spec?.taints, [
      { key: 'example.com/dedicated', value: 'tests', effect: 'NoSchedule' },
    ]);
    assert.equal(ready.status?.nodeInfo?.containerRuntimeVersion, 'containerd://1.6.20~ds1');
    assert.deepEqual(ready.status?.addresses?.[0], { type: 'InternalIP', address: '192.0.2.2' });
    assert.equal(ready.status?.capacity?.memory, '24684092Ki');
    assert.equal(events[0], `Node/${NODE} Normal Starting Starting kubelet.`);

    const creates = server.requests.filter((r) => r.method === 'POST' && r.resource === 'nodes');
    assert.deepEqual(
      creates.map((r) => [r.user, r.code]),
      [[server.nodeUser, 201]],
    );
    await waitFor(
      'a status patch',
      () => server.requests.some((r) => r.method === 'PATCH' && r.subresource === 'status'),
      5000,
      50,
    );
    const patch = server.requests.find((r) => r.method === 'PATCH' && r.subresource === 'status')!;
    assert.equal(patch.path, `/api/v1/nodes/${NODE}/status`);
    assert.equal(patch.contentType, 'application/strategic-merge-patch+json');
    assert.equal(patch.code, 200);

    await waitFor('the Lease', getLease, 5000, 50);
    // Created at once (maybe before the Node, without an owner); a renewal adds the owner reference.
    const lease = await waitFor(
      'the Lease with its owner',
      () => (getLease()?.metadata.ownerReferences ? getLease() : undefined),
      5000,
      50,
    );
    assert.equal(lease.spec?.holderIdentity, NODE);
    assert.equal(lease.spec?.leaseDurationSeconds, 1);
    assert.deepEqual(lease.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: NODE, uid: getNode()?.metadata.uid },
    ]);
    const first = lease.spec?.renewTime ?? '';
    assert.match(first, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    await waitFor('a renewal', () => (getLease()?.spec?.renewTime ?? '') > first, 3000, 50);

    // Between reports only changes are patched: with nothing changing, few patches in a second.
    const patchesBefore = server.requests.filter((r) => r.method === 'PATCH').length;
    await new Promise((r) => setTimeout(r, 1000));
    const patchesAfter = server.requests.filter((r) => r.method === 'PATCH').length;
    assert.ok(patchesAfter - patchesBefore <= 1, `${patchesAfter - patchesBefore} patches in a quiet second`);
  });

  it('recovers from an outage: the Lease is renewed and the status reported once the server is back', async () => {
    const cri = new FakeCri();
    start(cri);
    await waitFor('the Lease', getLease, 10_000, 50);
    await server.pause();
    cri.images = [];
    await new Promise((r) => setTimeout(r, 1500));
    const stale = getLease()?.spec?.renewTime ?? '';
    await server.resume();
    await waitFor(
      'a renewal after the outage',
      () => (getLease()?.spec?.renewTime ?? '') > stale,
      10_000,
      50,
    );
    await waitFor(
      'the changed status after the outage',
      () => getNode()?.status?.images === undefined,
      10_000,
      50,
    );
    assert.ok(
      logLines.some(
        (l) => l.includes('Failed to update lease') || l.includes('Failed to ensure lease exists'),
      ),
    );
  });

  it('adopts the node a previous run registered', async () => {
    assert.ok(getNode(), 'left by the previous tests');
    const before = server.requests.length;
    start();
    await waitFor('registration', () => node?.nodeStatus.registrationCompleted, 10_000, 50);
    const creates = server.requests
      .slice(before)
      .filter((r) => r.method === 'POST' && r.resource === 'nodes');
    assert.deepEqual(
      creates.map((r) => r.code),
      [409],
    );
    assert.ok(logLines.some((l) => l.includes('Node was previously registered')));
  });
});
