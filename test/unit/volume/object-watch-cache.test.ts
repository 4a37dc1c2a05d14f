import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ListerWatcher } from '../../../src/k8s/reflector.js';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { MIN_WATCH_IDLE_MS, ObjectWatchCache } from '../../../src/volume/object-watch-cache.js';
import type { ConfigMap } from '../../../src/volume/volume-types.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';

const NS = 'owc';

/** A server that never answers: lists wait until the reflector gives up on them. */
const silent = {
  list: (_ref: unknown, o?: { signal?: AbortSignal }) =>
    new Promise((_resolve, reject) =>
      o?.signal?.addEventListener('abort', () => reject(new Error('aborted'))),
    ),
  watch: () => new Promise(() => undefined),
} as unknown as ListerWatcher;

test('a read waits for the first list at most syncTimeoutMs, then fails in upstream words', async () => {
  const clock = new FakeClock();
  const cache = new ObjectWatchCache<ConfigMap>({
    client: silent,
    resource: 'configmaps',
    clock,
    syncTimeoutMs: 5_000,
    maxIdleMs: 0,
  });
  const read = cache.get(NS, 'cfg');
  clock.advance(4_999);
  clock.advance(2);
  await assert.rejects(
    read,
    /^KubeletError: failed to sync configmaps cache: timed out waiting for the condition$/,
  );
  const aborted = new AbortController();
  const cancelled = cache.get(NS, 'cfg', aborted.signal);
  aborted.abort(new Error('pod sync cancelled'));
  await assert.rejects(cancelled, /pod sync cancelled/);
  cache.stop();
});

describe('ObjectWatchCache against the test API server', () => {
  let server: TestApiServer;
  let client: RestClient;

  before(async () => {
    server = await startTestApiServer({ nodeName: 'node-owc', plainHttp: true });
    client = new RestClient({ config: { server: server.url, token: server.adminToken }, qps: -1 });
    server.store.create('namespaces', { metadata: { name: NS } });
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  const lists = () => server.requests.filter((r) => r.verb === 'list' && r.resource === 'configmaps').length;

  test('an immutable object stops its watch once read; an idle watch stops and starts again on the next read', async () => {
    const clock = new FakeClock();
    const cache = new ObjectWatchCache<ConfigMap>({
      client,
      resource: 'configmaps',
      clock,
      syncTimeoutMs: 10_000,
      maxIdleMs: 0,
    });
    try {
      server.store.create('configmaps', {
        metadata: { name: 'fixed', namespace: NS },
        immutable: true,
        data: { a: 'A' },
      });
      server.store.create('configmaps', { metadata: { name: 'busy', namespace: NS }, data: { b: 'B' } });
      server.store.create('configmaps', { metadata: { name: 'other', namespace: NS }, data: { c: 'C' } });
      assert.equal((await cache.get(NS, 'fixed'))?.data?.a, 'A');
      assert.equal(cache.size, 0, 'an immutable object is not watched');
      assert.equal((await cache.get(NS, 'fixed'))?.data?.a, 'A', 'and still served');
      assert.equal((await cache.get(NS, 'busy'))?.data?.b, 'B');
      assert.equal(cache.size, 1);
      const listsBefore = lists();
      clock.advance(MIN_WATCH_IDLE_MS + 1);
      assert.equal((await cache.get(NS, 'other'))?.data?.c, 'C');
      assert.equal(cache.size, 1, 'the idle watch of busy stopped');
      assert.equal((await cache.get(NS, 'busy'))?.data?.b, 'B');
      assert.equal(cache.size, 2);
      assert.equal(lists(), listsBefore + 2, 'other and busy listed again');
    } finally {
      cache.stop();
    }
  });
});
