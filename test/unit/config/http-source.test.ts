import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, test } from 'node:test';

import { HttpSource, type HttpSourceOptions } from '../../../src/config/http-source.js';
import type { SourceUpdate } from '../../../src/config/pod-config.js';
import { FakeClock } from '../../../src/lib/clock.js';
import type { Logger } from '../../../src/lib/log.js';
import { waitFor } from '../../helpers/wait.js';

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: nginx
    image: nginx:1.25
`;

function podList(...names: string[]): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'PodList',
    metadata: {},
    items: names.map((name) => ({
      metadata: { name },
      spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
    })),
  });
}

interface Reply {
  status?: number;
  body?: string;
  /** Never answer: the request hangs until the client gives up. */
  hang?: boolean;
}

describe('HttpSource', () => {
  let server: Server;
  let url: string;
  let reply: Reply;
  let requests: IncomingHttpHeaders[];
  let clock: FakeClock;
  let sent: SourceUpdate[];
  let logs: { level: string; msg: string; kv?: Record<string, unknown> }[];
  let source: HttpSource | undefined;

  const log: Logger = {
    info: (msg, kv) => logs.push({ level: 'info', msg, kv }),
    warn: (msg, kv) => logs.push({ level: 'warn', msg, kv }),
    error: (msg, kv) => logs.push({ level: 'error', msg, kv }),
    v: (level, msg, kv) => logs.push({ level: `v${level}`, msg, kv }),
    enabled: () => true,
  };

  beforeEach(async () => {
    reply = { body: POD };
    requests = [];
    sent = [];
    logs = [];
    clock = new FakeClock();
    server = createServer((req, res) => {
      requests.push(req.headers);
      if (reply.hang) return;
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/yaml' });
      res.end(reply.body ?? '');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
  });

  afterEach(async () => {
    source?.stop();
    source = undefined;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  function newSource(overrides: Partial<HttpSourceOptions> = {}): HttpSource {
    source = new HttpSource({
      url,
      nodeName: 'node-a',
      periodMs: 20_000,
      send: (u) => sent.push(u),
      clock,
      log,
      ...overrides,
    });
    return source;
  }

  const names = (u: SourceUpdate | undefined) => (u?.pods ?? []).map((p) => p.metadata.name);
  const warnings = () => logs.filter((l) => l.level === 'warn');

  test('a single Pod becomes a SET of one http pod', async () => {
    await newSource().poll();
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.op, 'SET');
    assert.deepEqual(names(sent[0]), ['web-node-a']);
    const pod = sent[0]!.pods[0]!;
    assert.equal(pod.metadata.annotations?.['kubernetes.io/config.source'], 'http');
    assert.equal(pod.spec.tolerations, undefined);
  });

  test('a PodList becomes a SET of its pods', async () => {
    reply = { body: podList('a', 'b') };
    await newSource().poll();
    assert.deepEqual(names(sent[0]), ['a-node-a', 'b-node-a']);
  });

  test('headers are sent, repeated names in order', async () => {
    await newSource({ headers: { 'X-Token': ['abc'], 'X-Multi': ['one', 'two'] } }).poll();
    assert.equal(requests[0]!['x-token'], 'abc');
    assert.equal(requests[0]!['x-multi'], 'one, two');
  });

  test('an unchanged body sends nothing; a changed one sends the new SET', async () => {
    const s = newSource();
    await s.poll();
    await s.poll();
    assert.equal(sent.length, 1);
    reply = { body: podList('a') };
    await s.poll();
    assert.equal(sent.length, 2);
    assert.deepEqual(names(sent[1]), ['a-node-a']);
  });

  test('failures keep the last good set, and are logged three times then at V(4)', async () => {
    const s = newSource();
    await s.poll();
    reply = { status: 500, body: 'oops' };
    for (let i = 0; i < 5; i++) await s.poll();
    assert.equal(sent.length, 1, 'no SET on failure');
    assert.equal(warnings().length, 4);
    assert.match(String(warnings()[0]!.kv?.err), /\/pods: 500 Internal Server Error/);
    assert.match(warnings()[3]!.msg, /Dropping verbosity of this message to V\(4\)/);
    assert.equal(logs.filter((l) => l.level === 'v4' && l.msg === 'Failed to read pods from URL').length, 1);

    reply = { body: podList('x') };
    await s.poll();
    assert.ok(logs.some((l) => l.msg === 'Successfully read pods from URL'));
    assert.deepEqual(names(sent[1]), ['x-node-a']);
  });

  test('an invalid body is reported once, and the last good pods keep running', async () => {
    const s = newSource();
    await s.poll();
    reply = { body: POD.replace('    image: nginx:1.25\n', '') };
    await s.poll();
    await s.poll();
    assert.equal(sent.length, 1);
    assert.equal(warnings().length, 1, 'the same bad body is not parsed or reported again');
    assert.match(
      String(warnings()[0]!.kv?.err),
      /spec\.containers\[0\]\.image: Required value; the last good pods from this URL keep running/,
    );
  });

  test('a body that is neither Pod nor PodList is refused', async () => {
    reply = { body: '{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}' };
    await newSource().poll();
    assert.equal(sent.length, 0);
    assert.match(String(warnings()[0]!.kv?.err), /expected apiVersion "v1" and kind "Pod"/);
  });

  test('an empty body empties the set (the source still counts as seen) and warns', async () => {
    const s = newSource();
    await s.poll();
    reply = { body: '' };
    await s.poll();
    assert.deepEqual(sent[1], { op: 'SET', pods: [] });
    assert.match(String(warnings()[0]!.kv?.err), /zero-length data received from/);
  });

  test('each request has a deadline on the clock', async () => {
    reply = { hang: true };
    const s = newSource({ requestTimeoutMs: 10_000 });
    const polled = s.poll();
    await waitFor('the request to arrive', () => requests.length === 1, 2000, 5);
    clock.advance(10_000);
    await polled;
    assert.equal(sent.length, 0);
    assert.match(String(warnings()[0]!.kv?.err), /deadline of 10000ms exceeded/);
  });

  test('an unreachable URL is a logged failure', async () => {
    const closed = url;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    await newSource({ url: closed }).poll();
    assert.equal(sent.length, 0);
    assert.equal(warnings().length, 1);
  });

  test('polls every periodMs after the previous poll ends', async () => {
    newSource().start();
    await waitFor('first poll', () => sent.length === 1, 2000, 5);
    reply = { body: podList('later') };
    clock.advance(19_999);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(requests.length, 1);
    clock.advance(1);
    await waitFor('second poll', () => sent.length === 2, 2000, 5);
    assert.deepEqual(names(sent[1]), ['later-node-a']);
  });

  test('stop() cancels the timer and an in-flight request', async () => {
    reply = { hang: true };
    const s = newSource();
    const polled = s.poll();
    await waitFor('the request to arrive', () => requests.length === 1, 2000, 5);
    s.stop();
    await polled;
    assert.equal(clock.pendingTimers(), 0);
    assert.equal(warnings().length, 0, 'stopping is not a failure');
  });

  test('an oversized response is refused without keeping it', async () => {
    reply = { body: 'x'.repeat(11 * 1024 * 1024) };
    await newSource().poll();
    assert.equal(sent.length, 0);
    assert.match(String(warnings()[0]!.kv?.err), /larger than the 10485760 bytes a manifest may have/);
  });
});
