import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { EventStore, StoreEventRecorder } from '../../../src/events/event-store.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { NodePageFeed, type NodePageDelta } from '../../../src/nodepage/node-page-feed.js';
import { CONTENT_SECURITY_POLICY, nodePageHandler } from '../../../src/nodepage/node-page-handler.js';
import type { NodePageSnapshot, NodePageSource } from '../../../src/nodepage/node-page-model.js';
import { startLocalServer, type LocalServer } from '../../../src/server/local-server.js';

function pod(name: string, status: Pod['status'] = { phase: 'Running' }): Pod {
  return {
    metadata: {
      name,
      namespace: 'default',
      uid: `uid-${name}`,
      annotations: { 'kubernetes.io/config.source': 'file' },
    },
    spec: {
      containers: [{ name: 'app', image: 'busybox', livenessProbe: { exec: { command: ['true'] } } }],
    },
    status,
  } as Pod;
}

function fixture() {
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const events = new EventStore();
  const recorder = new StoreEventRecorder({ store: events, nodeName: 'n1', clock });
  const state = { pods: [pod('a'), pod('b')], backoffMs: 0, probeFailures: 0 };
  const source: NodePageSource = {
    nodeName: 'n1',
    kubeletVersion: 'v1.30.0',
    runtime: { name: 'containerd', version: '1.6.20' },
    startedAtMs: clock.now(),
    now: () => clock.now(),
    pods: () => state.pods,
    node: () => ({ status: { capacity: { cpu: '2', memory: '4Gi' } } }) as never,
    pleg: () => ({ healthy: true }),
    pressure: () => ({ memory: false, disk: false, pid: false }),
    probe: () =>
      state.probeFailures > 0 ? { lastResult: 'Failure', resultRun: state.probeFailures } : undefined,
    backoffDelayMs: () => state.backoffMs,
    events,
  };
  const feed = new NodePageFeed(source, { clock });
  const got: { event: string; data: unknown }[] = [];
  return {
    clock,
    events,
    recorder,
    state,
    source,
    feed,
    got,
    sink: (event: string, data: string) => got.push({ event, data: JSON.parse(data) }),
  };
}

describe('NodePageFeed', () => {
  it('sends the snapshot first, then only what changed, at most once a period', () => {
    const f = fixture();
    f.feed.subscribe(f.sink);
    assert.equal(f.got.length, 1);
    const snap = f.got[0]!.data as NodePageSnapshot;
    assert.equal(f.got[0]!.event, 'snapshot');
    assert.deepEqual(
      snap.pods.map((p) => [p.name, p.status, p.source]),
      [
        ['a', 'Running', 'file'],
        ['b', 'Running', 'file'],
      ],
    );
    assert.equal(snap.node.capacity.cpu, '2');
    assert.equal(snap.pulls.available, false);

    // Nothing changed: nothing is sent.
    f.clock.advance(1000);
    assert.equal(f.got.length, 1);

    // Two changes within one period make one push with only the changed pod.
    f.state.pods = [pod('a', { phase: 'Failed' }), pod('b')];
    f.recorder.event(f.state.pods[0]!, '', 'Warning', 'Failed', 'boom');
    f.clock.advance(500);
    assert.equal(f.got.length, 1);
    f.clock.advance(500);
    assert.equal(f.got.length, 2);
    const delta = f.got[1]!.data as NodePageDelta;
    assert.equal(f.got[1]!.event, 'delta');
    assert.deepEqual(
      delta.pods?.map((p) => p.name),
      ['a'],
    );
    assert.deepEqual(
      delta.events?.map((e) => e.reason),
      ['Failed'],
    );
    assert.equal(delta.node, undefined);

    f.state.pods = [pod('b')];
    f.clock.advance(1000);
    const removal = f.got[2]!.data as NodePageDelta;
    assert.deepEqual(removal.removed, ['uid-a']);
    assert.deepEqual(removal.order, ['uid-b']);
  });

  it('runs only while a page is open', () => {
    const f = fixture();
    const stop = f.feed.subscribe(f.sink);
    assert.equal(f.clock.pendingTimers(), 1);
    stop();
    f.clock.advance(1000);
    assert.equal(f.clock.pendingTimers(), 0);
    assert.equal(f.feed.subscribers, 0);
  });

  it('a second page gets a snapshot, the first a delta of what changed before it', () => {
    const f = fixture();
    const second: string[] = [];
    f.feed.subscribe(f.sink);
    f.state.pods = [...f.state.pods, pod('c')];
    f.feed.subscribe((event) => second.push(event));
    assert.deepEqual(second, ['snapshot']);
    assert.deepEqual(
      (f.got[1]!.data as NodePageDelta).pods?.map((p) => p.name),
      ['c'],
    );
  });

  it('shows the crash-loop back-off left and the probe failures in a row', () => {
    const f = fixture();
    const finishedAt = new Date(f.clock.now() - 4000).toISOString();
    f.state.backoffMs = 20_000;
    f.state.probeFailures = 2;
    f.state.pods = [
      pod('crash', {
        phase: 'Running',
        containerStatuses: [
          {
            name: 'app',
            ready: false,
            restartCount: 2,
            image: 'busybox',
            imageID: '',
            state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 20s' } },
            lastState: { terminated: { exitCode: 3, reason: 'Error', finishedAt } },
          },
        ],
      }),
    ];
    const snap = f.feed.snapshot();
    const p = snap.pods[0]!;
    assert.equal(p.status, 'CrashLoopBackOff');
    assert.equal(p.restarts, 2);
    assert.equal(p.backoffUntilMs, Date.parse(finishedAt) + 20_000);
    assert.deepEqual(p.containers[0]?.lastTermination, {
      exitCode: 3,
      reason: 'Error',
      finishedAtMs: Date.parse(finishedAt),
    });
    assert.deepEqual(p.containers[0]?.probes, [{ kind: 'liveness', lastResult: 'Failure', failures: 2 }]);
  });
});

describe('the node page on the /healthz listener', () => {
  let server: LocalServer;
  const f = fixture();
  const token = 'the-test-token';
  const get = (path: string, extra: Record<string, string> = {}) => {
    const headers = { authorization: `Bearer ${token}`, ...extra };
    return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
      (resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port: server.port, path, headers }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          })
          .on('error', reject);
      },
    );
  };

  before(async () => {
    f.recorder.event(f.state.pods[0]!, '', 'Normal', 'Started', 'started a');
    f.recorder.event(f.state.pods[1]!, '', 'Normal', 'Started', 'started b');
    server = await startLocalServer(
      {
        getPods: () => [],
        getRunningPods: async () => [],
        healthChecks: () => [],
        nodePage: nodePageHandler({ source: f.source, feed: f.feed, maxSubscribers: 16, maxLogFollows: 16 }),
      },
      { address: '127.0.0.1', port: 0, readOnly: false, nodePageToken: token },
    );
  });
  after(() => server.close());

  it('serves the page, its script and style with a strict CSP', async () => {
    for (const [path, type] of [
      ['/node/', 'text/html'],
      ['/node/node-page.js', 'text/javascript'],
      ['/node/node-page.css', 'text/css'],
    ] as const) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assert.match(String(res.headers['content-type']), new RegExp(`^${type}`));
      assert.equal(res.headers['content-security-policy'], CONTENT_SECURITY_POLICY);
    }
    assert.equal((await get('/node')).status, 301);
  });

  it('serves pods, one pod with its events, and events filtered by object', async () => {
    const pods = JSON.parse((await get('/node/api/pods')).body) as { kind: string; items: Pod[] };
    assert.equal(pods.kind, 'PodList');
    assert.equal(pods.items.length, 2);
    const one = JSON.parse((await get('/node/api/pods/default/a')).body) as {
      pod: Pod;
      events: { message: string }[];
    };
    assert.equal(one.pod.metadata.name, 'a');
    assert.deepEqual(
      one.events.map((e) => e.message),
      ['started a'],
    );
    assert.equal((await get('/node/api/pods/default/zzz')).status, 404);
    const events = JSON.parse((await get('/node/api/events?namespace=default&name=b')).body) as {
      items: { message: string }[];
    };
    assert.deepEqual(
      events.items.map((e) => e.message),
      ['started b'],
    );
    assert.equal((await get('/node/api/logs/default/a/app')).status, 404);
    assert.equal((await get('/node/api/nope')).status, 404);
  });

  it('refuses a request naming another host (DNS rebinding)', async () => {
    const res = await get('/node/', { Host: 'attacker.example' });
    assert.equal(res.status, 403);
    assert.equal((await get('/node/', { Host: 'localhost:1234' })).status, 200);
  });

  it('streams the snapshot as server-sent events', async () => {
    const first = await new Promise<string>((resolve, reject) => {
      const headers = { authorization: `Bearer ${token}` };
      const req = http.get(
        { host: '127.0.0.1', port: server.port, path: '/node/api/stream', headers },
        (res) => {
          assert.equal(res.headers['content-type'], 'text/event-stream');
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            text += c;
            if (text.includes('event: snapshot\ndata: ') && text.endsWith('\n\n')) {
              req.destroy();
              resolve(text);
            }
          });
        },
      );
      req.on('error', (err) => (err.message.includes('aborted') ? undefined : reject(err)));
    });
    const data = first.split('event: snapshot\ndata: ')[1]!.trim();
    assert.equal((JSON.parse(data) as NodePageSnapshot).pods.length, 2);
  });
});
