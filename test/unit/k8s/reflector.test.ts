import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { Reflector } from '../../../src/k8s/reflector.js';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { waitFor } from '../../helpers/wait.js';
import { captureLog, printed } from './capture-log.js';

const NODE = 'node-r';

function podObject(name: string, nodeName: string | undefined = NODE): Record<string, unknown> {
  return {
    metadata: { name, namespace: 'default' },
    spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'app', image: 'busybox:1.36' }] },
  };
}

interface Recorded {
  events: string[];
  syncs: string[][];
}

function podReflector(client: RestClient, rec: Recorded, extra: { minWatchTimeoutSeconds?: number } = {}) {
  const log = captureLog();
  const reflector = new Reflector<Pod>({
    client,
    ref: { resource: 'pods' },
    fieldSelector: `spec.nodeName=${NODE}`,
    log,
    initialBackoffMs: 50,
    maxBackoffMs: 400,
    ...extra,
    handlers: {
      onAdd: (p) => rec.events.push(`add ${p.metadata.name}`),
      onUpdate: (_o, p) => rec.events.push(`update ${p.metadata.name}`),
      onDelete: (p) => rec.events.push(`delete ${p.metadata.name}`),
      onSync: (all) => rec.syncs.push(all.map((p) => p.metadata.name ?? '').sort()),
    },
  });
  return { reflector, log };
}

describe('k8s Reflector against the test API server', () => {
  let server: TestApiServer;
  let client: RestClient;
  const stops: AbortController[] = [];

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE, bookmarkIntervalMs: 200, plainHttp: true });
    client = new RestClient({ config: { server: server.url, token: server.adminToken }, qps: -1 });
  });
  afterEach(() => {
    for (const s of stops.splice(0)) s.abort();
    for (const p of server.store.list('pods').items)
      server.store.delete('pods', p.metadata.name!, p.metadata.namespace, { gracePeriodSeconds: 0 });
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  function start(r: Reflector<Pod>): Promise<void> {
    const stop = new AbortController();
    stops.push(stop);
    return r.run(stop.signal);
  }

  it('lists, then watches from the list with bookmarks; the field selector keeps other nodes out', async () => {
    server.store.create('pods', podObject('before'));
    server.store.create('pods', podObject('elsewhere', 'other-node'));
    const rec: Recorded = { events: [], syncs: [] };
    const { reflector } = podReflector(client, rec);
    const running = start(reflector);
    await waitFor('first sync', () => reflector.hasSynced(), 5000, 20);
    assert.deepEqual(rec.syncs, [['before']]);

    server.store.create('pods', podObject('after'));
    server.store.patch('pods', 'after', 'default', 'merge', { metadata: { labels: { x: 'y' } } });
    server.store.create('pods', podObject('unbound', ''));
    server.store.bindPod('unbound', 'default', NODE);
    server.store.delete('pods', 'before', 'default', { gracePeriodSeconds: 0 });
    await waitFor('watch events', () => rec.events.includes('delete before'), 5000, 20);
    // The test server marks the pod deleted (MODIFIED) before it removes it, even with grace 0.
    const seen = rec.events.filter((e) => e !== 'update before');
    assert.deepEqual(seen, ['add before', 'add after', 'update after', 'add unbound', 'delete before']);
    assert.deepEqual(
      reflector
        .list()
        .map((p) => p.metadata.name)
        .sort(),
      ['after', 'unbound'],
    );
    assert.equal(reflector.get('default', 'after')?.metadata.labels?.x, 'y');

    // Changes elsewhere move the cluster's version on; bookmarks bring ours along without events.
    const cm = server.store.create('configmaps', { metadata: { name: 'cm', namespace: 'default' } });
    await waitFor(
      'a bookmark',
      () => reflector.lastSyncResourceVersion === cm.metadata.resourceVersion,
      5000,
      20,
    );
    const watches = server.requests.filter((r) => r.verb === 'watch' && r.resource === 'pods');
    assert.ok(watches.length >= 1);
    const q = new URLSearchParams(watches[0]!.query);
    assert.equal(q.get('allowWatchBookmarks'), 'true');
    assert.equal(q.get('fieldSelector'), `spec.nodeName=${NODE}`);
    assert.ok(Number(q.get('timeoutSeconds')) >= 300 && Number(q.get('timeoutSeconds')) < 600);
    const lists = server.requests.filter((r) => r.verb === 'list' && r.resource === 'pods');
    assert.equal(new URLSearchParams(lists[0]!.query).get('resourceVersion'), '0');
    assert.equal(rec.syncs.length, 1, 'no relist while the watch lasts');
    stops.pop()!.abort();
    await running;
    assert.equal(reflector.status().state, 'STOPPED');
  });

  it('reopens a watch the server ended, from where it was', async () => {
    const rec: Recorded = { events: [], syncs: [] };
    const { reflector } = podReflector(client, rec, { minWatchTimeoutSeconds: 1 });
    void start(reflector);
    await waitFor('sync', () => reflector.hasSynced(), 5000, 20);
    const firstWatches = server.requests.filter((r) => r.verb === 'watch').length;
    await waitFor(
      'a second watch',
      () => server.requests.filter((r) => r.verb === 'watch').length > firstWatches,
      5000,
      50,
    );
    server.store.create('pods', podObject('late'));
    await waitFor('the event on the new watch', () => rec.events.includes('add late'), 5000, 20);
    assert.equal(rec.syncs.length, 1);
  });

  it('rides out an outage: one warning, one recovery line, resumes without a relist when it can', async () => {
    const rec: Recorded = { events: [], syncs: [] };
    const { reflector, log } = podReflector(client, rec);
    void start(reflector);
    await waitFor('sync', () => reflector.hasSynced(), 5000, 20);
    await server.pause();
    server.store.create('pods', podObject('during'));
    // Long enough for several failed attempts.
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(reflector.status().lastError !== undefined, true);
    await server.resume();
    await waitFor('the pod made during the outage', () => rec.events.includes('add during'), 10_000, 20);
    assert.equal(rec.syncs.length, 1, 'the watch resumed from its resourceVersion');
    const attempts = log.lines.filter((l) => /Failed to (watch|list)/.test(l.msg)).length;
    assert.ok(attempts >= 3, `expected several attempts, saw ${attempts}`);
    const shown = printed(log).map((l) => l.level + ' ' + l.msg);
    assert.equal(shown.filter((l) => l.startsWith('warn')).length, 1, shown.join('\n'));
    assert.equal(shown.filter((l) => /reconnected/.test(l)).length, 1, shown.join('\n'));
  });

  it('relists on 410 Gone after the history it watched from was compacted', async () => {
    const rec: Recorded = { events: [], syncs: [] };
    server.store.create('pods', podObject('kept'));
    const { reflector } = podReflector(client, rec);
    void start(reflector);
    await waitFor('sync', () => reflector.hasSynced(), 5000, 20);
    await server.pause();
    server.store.create('pods', podObject('new-one'));
    server.store.delete('pods', 'kept', 'default', { gracePeriodSeconds: 0 });
    server.compact();
    await server.resume();
    await waitFor('a relist', () => rec.syncs.length === 2, 10_000, 20);
    assert.deepEqual(rec.syncs[1], ['new-one']);
    assert.deepEqual(rec.events, ['add kept', 'delete kept', 'add new-one']);
  });
});

describe('k8s Reflector: HTTP 410 on a watch', () => {
  let server: http.Server;
  let url: string;
  let lists = 0;
  let watches = 0;

  before(async () => {
    server = http.createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      if (u.searchParams.get('watch') === 'true') {
        watches++;
        if (watches === 1) {
          res.writeHead(410, { 'Content-Type': 'application/json' });
          res.end(
            JSON.stringify({
              kind: 'Status',
              status: 'Failure',
              reason: 'Expired',
              code: 410,
              message: 'too old',
            }),
          );
          return;
        }
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.write(
          JSON.stringify({
            type: 'ADDED',
            object: { metadata: { name: 'w', namespace: 'd', resourceVersion: '12' } },
          }) + '\n',
        );
        return; // stays open
      }
      lists++;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: String(10 + lists) }, items: [] }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('relists and watches again', async () => {
    const client = new RestClient({ config: { server: url }, qps: -1 });
    const rec: Recorded = { events: [], syncs: [] };
    const { reflector } = podReflector(client, rec);
    const stop = new AbortController();
    const running = reflector.run(stop.signal);
    await waitFor('the watched pod', () => rec.events.includes('add w'), 5000, 20);
    assert.equal(lists, 2);
    assert.equal(reflector.lastSyncResourceVersion, '12');
    stop.abort();
    await running;
    client.close();
  });
});
