import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { adminClient, Client } from './client.js';

describe('test API server: outages', () => {
  let server: TestApiServer;
  let api: Client;

  before(async () => {
    server = await startTestApiServer({ plainHttp: true });
    api = adminClient(server);
  });
  after(() => server.stop());

  it('serves plain HTTP with bearer tokens when asked to', async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(server.caPem, undefined);
    assert.equal((await api.get('/api/v1/namespaces/default')).status, 200);
    assert.equal((await new Client(server).get('/api/v1/pods')).status, 403);
  });

  it('cuts open watches and refuses connections while paused, then listens on the same port again', async () => {
    const port = server.port;
    const start = server.store.resourceVersion;
    const w = await api.watch(`/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${start}`);

    await server.pause();
    assert.equal(server.paused, true);
    await w.waitEnd();
    await assert.rejects(api.get('/healthz'), (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED');

    // The cluster goes on changing while this client cannot see it.
    server.store.create('configmaps', { metadata: { name: 'during-outage', namespace: 'default' } });

    await server.resume();
    assert.equal(server.port, port);
    assert.equal((await api.get('/healthz')).text, 'ok');
    const resumed = await api.watch(`/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${start}`);
    const e = await resumed.next();
    assert.deepEqual([e.type, e.object.metadata.name], ['ADDED', 'during-outage']);
    resumed.close();
  });
});
