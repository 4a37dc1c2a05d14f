import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { RuntimeClassManager } from '../../../src/runtimeclass/runtime-class-manager.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { waitFor } from '../../helpers/wait.js';

describe('RuntimeClassManager against the test API server', () => {
  let server: TestApiServer;
  let client: RestClient;
  const stop = new AbortController();

  before(async () => {
    server = await startTestApiServer({ nodeName: 'node-rc', plainHttp: true });
    client = new RestClient({ config: { server: server.url, token: server.adminToken }, qps: -1 });
  });

  after(async () => {
    stop.abort();
    client.close();
    await server.stop();
  });

  test('resolves handlers from the watched classes, follows changes, and names a missing class as the lister does', async () => {
    server.store.create('runtimeclasses', { metadata: { name: 'kata' }, handler: 'kata-qemu' });
    const m = new RuntimeClassManager(client);
    assert.throws(() => m.lookupRuntimeHandler('kata'), /not yet synced/);
    const running = m.run(stop.signal);
    await waitFor('the first list', () => m.status().synced || undefined, 10_000, 20);
    assert.equal(m.lookupRuntimeHandler(undefined), '');
    assert.equal(m.lookupRuntimeHandler(''), '');
    assert.equal(m.lookupRuntimeHandler('kata'), 'kata-qemu');
    assert.throws(
      () => m.lookupRuntimeHandler('gvisor'),
      /^Error: runtimeclass\.node\.k8s\.io "gvisor" not found$/,
    );

    server.store.create('runtimeclasses', { metadata: { name: 'gvisor' }, handler: 'runsc' });
    await waitFor(
      'gvisor through the watch',
      () => {
        try {
          return m.lookupRuntimeHandler('gvisor');
        } catch {
          return undefined;
        }
      },
      10_000,
      20,
    );
    server.store.delete('runtimeclasses', 'kata');
    await waitFor(
      'kata deleted through the watch',
      () => {
        try {
          m.lookupRuntimeHandler('kata');
          return undefined;
        } catch {
          return true;
        }
      },
      10_000,
      20,
    );
    stop.abort();
    await running;
  });
});
