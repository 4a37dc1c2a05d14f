import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { ApiServiceLister } from '../../../src/kubelet/service-lister.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { waitFor } from '../../helpers/wait.js';

describe('ApiServiceLister against the test API server', () => {
  let server: TestApiServer;
  let client: RestClient;
  const stop = new AbortController();

  before(async () => {
    server = await startTestApiServer({ nodeName: 'node-svc', plainHttp: true });
    client = new RestClient({ config: { server: server.url, token: server.adminToken }, qps: -1 });
  });

  after(async () => {
    stop.abort();
    client.close();
    await server.stop();
  });

  const names = (l: ApiServiceLister, ns: string) =>
    l
      .list(ns)
      .map((s) => `${s.metadata.name}=${s.spec?.clusterIP}`)
      .sort()
      .join(',');

  test('one list+watch of every namespace, read by namespace; unsynced until the first list', async () => {
    server.store.create('namespaces', { metadata: { name: 'shop' } });
    server.store.create('services', {
      metadata: { name: 'kubernetes', namespace: 'default' },
      spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443 }] },
    });
    server.store.create('services', {
      metadata: { name: 'db', namespace: 'shop' },
      spec: { clusterIP: '10.96.0.20', ports: [{ port: 5432 }] },
    });
    const l = new ApiServiceLister(client);
    assert.equal(l.hasSynced(), false);
    assert.deepEqual(l.list('default'), []);
    const running = l.run(stop.signal);
    await waitFor('the first list', () => l.hasSynced() || undefined, 10_000, 20);
    assert.equal(names(l, 'default'), 'kubernetes=10.96.0.1');
    assert.equal(names(l, 'shop'), 'db=10.96.0.20');
    assert.equal(names(l, 'elsewhere'), '');

    server.store.create('services', {
      metadata: { name: 'cache', namespace: 'shop' },
      spec: { clusterIP: '10.96.0.30', ports: [{ port: 6379 }] },
    });
    await waitFor(
      'a new service through the watch',
      () => (l.list('shop').length === 2 ? true : undefined),
      10_000,
      20,
    );
    assert.equal(names(l, 'shop'), 'cache=10.96.0.30,db=10.96.0.20');
    server.store.delete('services', 'db', 'shop');
    await waitFor(
      'a deleted service through the watch',
      () => (l.list('shop').length === 1 ? true : undefined),
      10_000,
      20,
    );
    assert.equal(names(l, 'shop'), 'cache=10.96.0.30');
    assert.equal(l.status().lists, 1, 'one list, then only the watch');
    stop.abort();
    await running;
  });
});
