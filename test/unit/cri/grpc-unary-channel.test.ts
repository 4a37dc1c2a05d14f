/**
 * GrpcUnaryChannel over the project's own HTTP/2 connection (its default), against a node:http2 gRPC
 * server on a unix socket: what a call hears when the server answers, resets it, goes away mid-call
 * or loses the socket, when the deadline passes, and that the next call dials afresh and succeeds.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, test } from 'node:test';
import { GrpcUnaryChannel, type UnaryMethod } from '../../../src/cri/grpc-unary-channel.js';
import { GrpcStatus, type GrpcCallError } from '../../../src/lib/grpc-status.js';
import { waitFor } from '../../helpers/wait.js';

const ECHO: UnaryMethod<string, string> = {
  path: '/test.Echo/Say',
  requestSerialize: (text) => Buffer.from(text),
  responseDeserialize: (bytes) => bytes.toString(),
};

type Behaviour = 'answer' | 'reset' | 'refuse' | 'goaway' | 'cut' | 'silent';

interface Server {
  socket: string;
  /** What the server does with the next request; 'answer' echoes it back. */
  next: Behaviour;
  /** What it does with the one after (then 'answer' again). */
  then?: Behaviour;
  sessions: number;
  /** The requests the server saw, in order. */
  requests: string[];
  /** Their header fields, in the same order. */
  headers: http2.IncomingHttpHeaders[];
  /** The RST_STREAM codes of the streams that closed, in order (0 for a clean end). */
  closes: number[];
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function grpcServer(): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'unary-channel-'));
  const server: Server = {
    socket: join(dir, 'grpc.sock'),
    next: 'answer',
    sessions: 0,
    closes: [],
    requests: [],
    headers: [],
  };
  const h2 = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  // The raw sockets: node:http2 will not let its session's socket be destroyed through the session.
  const sockets: Socket[] = [];
  h2.on('connection', (socket: Socket) => sockets.push(socket));
  h2.on('session', (s) => {
    server.sessions++;
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
    s.on('error', () => undefined);
  });
  h2.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    stream.on('close', () => server.closes.push(stream.rstCode));
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const behaviour = server.next;
      server.next = server.then ?? 'answer';
      server.then = undefined;
      server.requests.push(Buffer.concat(chunks).subarray(5).toString());
      server.headers.push(headers);
      const session = stream.session!;
      if (behaviour === 'reset') stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      else if (behaviour === 'refuse') stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      // A GOAWAY whose last stream is below this one: the server never took it.
      else if (behaviour === 'goaway') session.goaway(http2.constants.NGHTTP2_NO_ERROR, stream.id! - 2);
      else if (behaviour === 'cut') for (const socket of sockets) socket.destroy();
      else if (behaviour === 'answer') {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(Buffer.concat(chunks));
      }
    });
  });
  await new Promise<void>((resolve) => h2.listen(server.socket, resolve));
  cleanups.push(async () => {
    for (const s of sessions) s.destroy();
    await new Promise((resolve) => h2.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  return server;
}

function channel(server: Server): GrpcUnaryChannel {
  const c = new GrpcUnaryChannel(server.socket, { maxReceiveMessageBytes: 1024 * 1024 });
  cleanups.push(() => c.close());
  return c;
}

async function callError(p: Promise<unknown>): Promise<GrpcCallError> {
  try {
    await p;
  } catch (err) {
    return err as GrpcCallError;
  }
  assert.fail('the call succeeded');
}

test('a call is answered over one connection, however many calls follow', async () => {
  const server = await grpcServer();
  const c = channel(server);
  // The request's frame is what the server echoes, so the answer's message is the request's bytes.
  assert.equal(await c.call(ECHO, 'hello', 5000), 'hello');
  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => c.call(ECHO, `n${i}`, 5000)));
  assert.deepEqual(
    answers,
    Array.from({ length: 50 }, (_, i) => `n${i}`),
  );
  assert.equal(server.sessions, 1);
});

test('each call says its own deadline and metadata, however the calls before it were made', async () => {
  const server = await grpcServer();
  const c = channel(server);
  // A method whose frame is made whole (as grpcMethods' are) and one framed by the channel.
  const framed: UnaryMethod<string, string> = {
    ...ECHO,
    requestFrame: (text) => Buffer.concat([Buffer.from([0, 0, 0, 0, text.length]), Buffer.from(text)]),
  };
  const calls: [UnaryMethod<string, string>, number, [string, string][]][] = [
    [ECHO, 5000, []],
    [framed, 5000, []],
    [ECHO, 7000, []],
    [ECHO, 5000, [['containerd-namespace', 'k8s.io']]],
    [ECHO, 5000, []],
  ];
  for (const [i, [method, timeoutMs, metadata]] of calls.entries()) {
    assert.equal(await c.call(method, `m${i}`, timeoutMs, undefined, metadata), `m${i}`);
  }
  assert.deepEqual(
    server.headers.map((h) => [h[':path'], h['grpc-timeout'], h['containerd-namespace']]),
    [
      ['/test.Echo/Say', '5000m', undefined],
      ['/test.Echo/Say', '5000m', undefined],
      ['/test.Echo/Say', '7000m', undefined],
      ['/test.Echo/Say', '5000m', 'k8s.io'],
      ['/test.Echo/Say', '5000m', undefined],
    ],
  );
});

test('a stream the server resets fails alone with UNAVAILABLE and its code; the connection goes on', async () => {
  const server = await grpcServer();
  const c = channel(server);
  assert.equal(await c.call(ECHO, 'first', 5000), 'first');
  server.next = 'reset';
  const err = await callError(c.call(ECHO, 'reset me', 5000));
  assert.equal(err.code, GrpcStatus.UNAVAILABLE);
  assert.match(err.details, /stream reset by the server \(code 2\)/);
  assert.equal(await c.call(ECHO, 'after', 5000), 'after');
  assert.equal(server.sessions, 1);
});

test('a call the server did not take (GOAWAY below it) is sent once more, on a new connection, as grpc-go does', async () => {
  const server = await grpcServer();
  const c = channel(server);
  assert.equal(await c.call(ECHO, 'first', 5000), 'first');
  server.next = 'goaway';
  assert.equal(await c.call(ECHO, 'refused once', 5000), 'refused once');
  assert.deepEqual(server.requests, ['first', 'refused once', 'refused once']);
  assert.equal(server.sessions, 2);
});

test('a stream refused with REFUSED_STREAM is sent once more; refused twice, the call fails with UNAVAILABLE', async () => {
  const server = await grpcServer();
  const c = channel(server);
  server.next = 'refuse';
  assert.equal(await c.call(ECHO, 'refused once', 5000), 'refused once');
  server.next = 'refuse';
  server.then = 'refuse';
  const err = await callError(c.call(ECHO, 'refused twice', 5000));
  assert.equal(err.code, GrpcStatus.UNAVAILABLE);
  assert.match(err.details, /stream reset by the server \(code 7\)/);
  assert.deepEqual(server.requests, ['refused once', 'refused once', 'refused twice', 'refused twice']);
  assert.equal(await c.call(ECHO, 'after', 5000), 'after');
  assert.equal(server.sessions, 1);
});

test('a connection lost mid-call fails the call with UNAVAILABLE; the next call reconnects', async () => {
  const server = await grpcServer();
  const c = channel(server);
  assert.equal(await c.call(ECHO, 'first', 5000), 'first');
  server.next = 'cut';
  const err = await callError(c.call(ECHO, 'cut off', 5000));
  assert.equal(err.code, GrpcStatus.UNAVAILABLE);
  assert.match(err.details, /connection (closed|error)/);
  assert.equal(await c.call(ECHO, 'back', 5000), 'back');
  assert.equal(server.sessions, 2);
});

test('a runtime that is not there fails at once with UNAVAILABLE, naming why', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'unary-channel-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const c = new GrpcUnaryChannel(join(dir, 'missing.sock'), { maxReceiveMessageBytes: 1024 });
  cleanups.push(() => c.close());
  const started = Date.now();
  const err = await callError(c.call(ECHO, 'anyone?', 60_000));
  assert.equal(err.code, GrpcStatus.UNAVAILABLE);
  assert.match(err.details, /ENOENT/);
  assert.ok(Date.now() - started < 5000);
});

test('a call past its deadline fails with DEADLINE_EXCEEDED and its stream is reset with CANCEL', async () => {
  const server = await grpcServer();
  const c = channel(server);
  server.next = 'silent';
  const started = Date.now();
  const err = await callError(c.call(ECHO, 'no answer', 200));
  const tookMs = Date.now() - started;
  assert.equal(err.code, GrpcStatus.DEADLINE_EXCEEDED);
  assert.ok(tookMs >= 190 && tookMs < 2000, `took ${tookMs} ms`);
  await waitFor(
    'the server to see the reset',
    () => server.closes.includes(http2.constants.NGHTTP2_CANCEL),
    5000,
    20,
  );
  assert.equal(await c.call(ECHO, 'still there', 5000), 'still there');
  assert.equal(server.sessions, 1);
});

test('after close() a call fails with UNAVAILABLE and no connection is made', async () => {
  const server = await grpcServer();
  const c = channel(server);
  c.close();
  const err = await callError(c.call(ECHO, 'late', 5000));
  assert.equal(err.code, GrpcStatus.UNAVAILABLE);
  assert.equal(server.sessions, 0);
});
