import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { microTime, NodeLeaseController } from '../../../src/nodestatus/node-lease-controller.js';
import type { Lease } from '../../../src/api/node.js';
import { settle } from './fixtures.js';
import { StoreClient } from './store-client.js';

setLogSink(() => undefined);

const START = Date.UTC(2026, 0, 1);
let controller: NodeLeaseController | undefined;

afterEach(async () => {
  await controller?.stop();
  controller = undefined;
});

function setup(opts: { node?: boolean } = {}) {
  const clock = new FakeClock(START);
  const client = StoreClient.create(clock);
  const heartbeatFailures: number[] = [];
  let uid: string | undefined;
  if (opts.node !== false) uid = client.store.create('nodes', { metadata: { name: 'n1' } }).metadata.uid;
  controller = new NodeLeaseController({
    client,
    clock,
    nodeName: 'n1',
    leaseDurationSeconds: 40,
    requestTimeoutMs: 10_000,
    random: () => 0,
    onRepeatedHeartbeatFailure: () => heartbeatFailures.push(clock.now() - START),
  });
  const run = async (ms: number, stepMs = 100) => {
    await settle();
    for (let t = 0; t < ms; t += stepMs) {
      clock.advance(Math.min(stepMs, ms - t));
      await settle();
    }
  };
  const lease = () => client.store.tryGet('leases', 'n1', 'kube-node-lease') as Lease | undefined;
  return { clock, client, controller, run, lease, uid, heartbeatFailures };
}

describe('NodeLeaseController', () => {
  it('creates kube-node-lease/<node> owned by the node, then renews it every 10 s without reading it', async () => {
    const { client, controller, run, lease, uid } = setup();
    controller.start();
    await run(0);
    const created = lease();
    assert.deepEqual(created?.spec, {
      holderIdentity: 'n1',
      leaseDurationSeconds: 40,
      renewTime: '2026-01-01T00:00:00.000000Z',
    });
    assert.deepEqual(created?.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: 'n1', uid },
    ]);
    assert.equal(client.callsOf('create', 'leases').length, 1);

    await run(30_000, 1000);
    assert.equal(lease()?.spec?.renewTime, '2026-01-01T00:00:30.000000Z');
    assert.equal(client.callsOf('update', 'leases').length, 3);
    assert.equal(
      client.callsOf('get', 'leases').length,
      1,
      'renewals write the last Lease back without a read',
    );
    assert.deepEqual(
      client.callsOf('update', 'leases').map((c) => c.atMs - START),
      [10_000, 20_000, 30_000],
    );
    assert.equal(controller.renewCount, 4);
    for (const c of client.calls) assert.equal(c.timeoutMs, 10_000);
  });

  it('creates the Lease at once without an owner when the node is not there yet, and adds the owner later', async () => {
    const { client, controller, run, lease } = setup({ node: false });
    controller.start();
    await run(0);
    assert.equal(lease()?.metadata.name, 'n1');
    assert.equal(lease()?.metadata.ownerReferences, undefined);
    const uid = client.store.create('nodes', { metadata: { name: 'n1' } }).metadata.uid;
    await run(10_000, 1000);
    assert.equal(lease()?.metadata.ownerReferences?.[0]?.uid, uid);
  });

  it('reads the Lease again after a conflict and renews it', async () => {
    const { client, controller, run, lease } = setup();
    controller.start();
    await run(0);
    // Someone else writes the Lease: our copy's resourceVersion is stale now.
    const other = lease()!;
    other.metadata.labels = { touched: 'yes' };
    client.store.update('leases', other as never);
    await run(10_000, 1000);
    const renewed = lease()!;
    assert.equal(renewed.spec?.renewTime, '2026-01-01T00:00:10.000000Z');
    assert.equal(renewed.metadata.labels?.touched, 'yes', 'renewed from the server copy');
    assert.equal(client.callsOf('update', 'leases').length, 2);
  });

  it('keeps trying through an outage with back-off from 200 ms to 7 s, and renews once the server is back', async () => {
    const { client, controller, run, lease, heartbeatFailures } = setup();
    controller.start();
    await run(0);
    client.down = true;
    await run(40_000, 100);
    // At 10 s: five updates fail at once, then reads back off: 200, 400, ... 6400, then 7000 each.
    const updates = client.callsOf('update', 'leases').map((c) => c.atMs - START);
    assert.deepEqual(updates, [10_000, 10_000, 10_000, 10_000, 10_000]);
    assert.deepEqual(heartbeatFailures, [10_000, 10_000, 10_000, 10_000]);
    const gets = client
      .callsOf('get', 'leases')
      .map((c) => c.atMs - START)
      .slice(1);
    assert.deepEqual(gets, [10_000, 10_200, 10_600, 11_400, 13_000, 16_200, 22_600, 29_600, 36_600]);

    client.down = false;
    await run(7_000, 100);
    assert.equal(lease()?.spec?.renewTime, '2026-01-01T00:00:43.600000Z');
    await run(10_000, 100);
    assert.equal(lease()?.spec?.renewTime, '2026-01-01T00:00:53.600000Z', 'back to renewing every 10 s');
  });

  it('has a Lease again soon after it was deleted', async () => {
    const { client, controller, run, lease } = setup();
    controller.start();
    await run(0);
    client.store.delete('leases', 'n1', 'kube-node-lease');
    await run(10_000, 1000);
    assert.equal(lease()?.spec?.renewTime, '2026-01-01T00:00:10.000000Z');
    assert.equal(lease()?.spec?.holderIdentity, 'n1');
    assert.equal(client.callsOf('update', 'leases').length >= 1, true);
  });

  it('writes MicroTime with six fractional digits', () => {
    assert.equal(microTime(Date.UTC(2026, 0, 1, 12, 0, 1, 234)), '2026-01-01T12:00:01.234000Z');
  });
});
