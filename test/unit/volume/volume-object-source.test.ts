/**
 * The volume plugins' API reads against the in-process test API server: configMaps and secrets
 * with their cache, claims and volumes, and TokenRequest bound to a pod, as the node's own user.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { ApiVolumeObjectSource, standaloneObjectSource } from '../../../src/volume/volume-object-source.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { waitFor } from '../../helpers/wait.js';

const NODE = 'node-vos';
const NS = 'vos';

describe('ApiVolumeObjectSource against the test API server', () => {
  let server: TestApiServer;
  let client: RestClient;

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE, plainHttp: true });
    client = new RestClient({
      config: { server: server.url, token: server.tokenFor(server.nodeUser) },
      qps: -1,
    });
    server.store.create('namespaces', { metadata: { name: NS } });
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  const gets = (resource: string, name: string) =>
    server.requests.filter((r) => r.verb === 'get' && r.resource === resource && r.name === name).length;

  test('configMaps and secrets: found, not found, and cached for as long as the caller allows', async () => {
    const clock = new FakeClock();
    const src = new ApiVolumeObjectSource({ client, clock });
    server.store.create('configmaps', { metadata: { name: 'cfg', namespace: NS }, data: { a: 'A' } });
    server.store.create('secrets', { metadata: { name: 's', namespace: NS }, data: { k: 'dg==' } });
    assert.deepEqual((await src.getConfigMap(NS, 'cfg'))?.data, { a: 'A' });
    assert.deepEqual((await src.getSecret(NS, 's'))?.data, { k: 'dg==' });
    assert.equal(await src.getConfigMap(NS, 'nope'), undefined);

    const before = gets('configmaps', 'cfg');
    await src.getConfigMap(NS, 'cfg', { maxAgeMs: 60_000 });
    assert.equal(gets('configmaps', 'cfg'), before, 'a fresh enough copy is served from the cache');
    clock.advance(60_001);
    await src.getConfigMap(NS, 'cfg', { maxAgeMs: 60_000 });
    assert.equal(gets('configmaps', 'cfg'), before + 1);
    await src.getConfigMap(NS, 'cfg');
    assert.equal(gets('configmaps', 'cfg'), before + 2, 'no maxAge asks the server');
    // Concurrent reads of one object share one GET.
    await Promise.all([
      src.getConfigMap(NS, 'cfg'),
      src.getConfigMap(NS, 'cfg'),
      src.getConfigMap(NS, 'cfg'),
    ]);
    assert.equal(gets('configmaps', 'cfg'), before + 3);
  });

  const calls = (verb: string, resource: string) =>
    server.requests.filter((r) => r.verb === verb && r.resource === resource).length;

  test('strategy Watch: one watch per object shared by every read, changes and creations seen, no GETs', async () => {
    const src = new ApiVolumeObjectSource({ client, strategy: 'Watch' });
    try {
      server.store.create('configmaps', { metadata: { name: 'shared', namespace: NS }, data: { v: '1' } });
      const [lists, watches, getsBefore] = [
        calls('list', 'configmaps'),
        calls('watch', 'configmaps'),
        gets('configmaps', 'shared'),
      ];
      const reads = await Promise.all(Array.from({ length: 5 }, () => src.getConfigMap(NS, 'shared')));
      for (let i = 0; i < 5; i++) reads.push(await src.getConfigMap(NS, 'shared'));
      assert.deepEqual(new Set(reads.map((r) => r?.data?.v)), new Set(['1']));
      assert.equal(gets('configmaps', 'shared'), getsBefore, 'no GET');
      assert.equal(calls('list', 'configmaps'), lists + 1, 'one list of the object');
      const list = server.requests.filter((r) => r.verb === 'list' && r.resource === 'configmaps').at(-1);
      assert.equal(list?.user, server.nodeUser);

      const cm = server.store.get('configmaps', 'shared', NS);
      server.store.update('configmaps', { ...cm, data: { v: '2' } } as never);
      await waitFor(
        'the change through the watch',
        async () => ((await src.getConfigMap(NS, 'shared'))?.data?.v === '2' ? true : undefined),
        10_000,
        20,
      );
      assert.ok(calls('watch', 'configmaps') >= watches + 1);
      assert.equal(calls('list', 'configmaps'), lists + 1, 'still one list');

      // A missing object reads as missing, and appears once created.
      assert.equal(await src.getSecret(NS, 'later'), undefined);
      server.store.create('secrets', { metadata: { name: 'later', namespace: NS }, data: { k: 'dg==' } });
      await waitFor(
        'the new secret through the watch',
        async () => (await src.getSecret(NS, 'later'))?.data?.k,
        10_000,
        20,
      );
      assert.equal(gets('secrets', 'later'), 0);
    } finally {
      src.stop();
    }
    await assert.rejects(src.getConfigMap(NS, 'shared'), /stopped/);
  });

  test('strategy Get asks the server every time, whatever the caller allows', async () => {
    const src = new ApiVolumeObjectSource({ client, strategy: 'Get' });
    server.store.create('configmaps', { metadata: { name: 'each', namespace: NS }, data: { a: 'A' } });
    await src.getConfigMap(NS, 'each', { maxAgeMs: 60_000 });
    await src.getConfigMap(NS, 'each', { maxAgeMs: 60_000 });
    assert.equal(gets('configmaps', 'each'), 2);
  });

  test('claims and volumes', async () => {
    const src = new ApiVolumeObjectSource({ client });
    server.store.create('persistentvolumeclaims', {
      metadata: { name: 'c', namespace: NS },
      spec: { volumeName: 'pv' },
    });
    server.store.create('persistentvolumes', {
      metadata: { name: 'pv' },
      spec: { hostPath: { path: '/srv' } },
    });
    assert.equal((await src.getPersistentVolumeClaim(NS, 'c'))?.spec.volumeName, 'pv');
    assert.equal((await src.getPersistentVolume('pv'))?.spec.hostPath?.path, '/srv');
    assert.equal(await src.getPersistentVolumeClaim(NS, 'none'), undefined);
  });

  test("TokenRequest: a token bound to the pod; the server's refusals come back as its messages", async () => {
    const src = new ApiVolumeObjectSource({ client });
    server.store.create('pods', {
      metadata: { name: 'web', namespace: NS },
      spec: { nodeName: NODE, containers: [{ name: 'c', image: 'busybox' }] },
    });
    const pod = server.store.get('pods', 'web', NS);
    const tr = await src.createToken(NS, 'default', {
      spec: {
        audiences: ['vault'],
        expirationSeconds: 600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: pod.metadata.uid },
      },
    });
    const claims = JSON.parse(Buffer.from(tr.status?.token.split('.')[1] ?? '', 'base64url').toString()) as {
      aud: string[];
      'kubernetes.io': { pod: { name: string; uid: string } };
    };
    assert.deepEqual(claims.aud, ['vault']);
    assert.deepEqual(claims['kubernetes.io'].pod, { name: 'web', uid: pod.metadata.uid });
    assert.equal(tr.spec.expirationSeconds, 600);
    assert.ok(Date.parse(tr.status?.expirationTimestamp ?? '') > Date.now() + 590_000);
    const req = server.requests.find((r) => r.resource === 'serviceaccounts' && r.subresource === 'token');
    assert.equal(req?.user, server.nodeUser);

    await assert.rejects(
      src.createToken(NS, 'default', { spec: { expirationSeconds: 60 } }),
      /may not specify a duration less than 10 minutes/,
    );
    await assert.rejects(src.createToken(NS, 'ghost', { spec: {} }), /serviceaccounts "ghost" not found/);
  });

  test('standalone mode: nothing exists and no token can be had', async () => {
    assert.equal(await standaloneObjectSource.getConfigMap(NS, 'x'), undefined);
    assert.equal(await standaloneObjectSource.getSecret(NS, 'x'), undefined);
    await assert.rejects(
      standaloneObjectSource.createToken(NS, 'default', { spec: {} }),
      /cannot use TokenManager when kubelet is in standalone mode/,
    );
  });
});
