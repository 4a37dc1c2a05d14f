/**
 * Http2Connection against a node:http2 server on a unix socket: what a stream's handler hears, once
 * and in order, for an answer, a cut connection, a cancel, the client's close and the server's GOAWAY.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, test } from 'node:test';
import { Http2Connection } from '../../../src/cri/http2-connection.js';
import type { Http2StreamError, StreamHandler } from '../../../src/lib/http2/stream-handler.js';
import { sleep, waitFor } from '../../helpers/wait.js';

const WINDOW_BYTES = 1024 * 1024;
const REQUEST: [string, string][] = [
  [':method', 'POST'],
  [':scheme', 'http'],
  [':path', '/pkg.Service/Method'],
  [':authority', 'localhost'],
  ['content-type', 'application/grpc'],
  ['te', 'trailers'],
  ['x-extra', 'yes'],
];

interface Heard {
  events: string[];
  data: Buffer[];
  errors: Http2StreamError[];
  handler: StreamHandler;
}

function recorder(): Heard {
  const heard: Heard = { events: [], data: [], errors: [], handler: undefined! };
  heard.handler = {
    onHeaders: (fields, endStream) =>
      heard.events.push(
        `headers ${fields.get(':status') ?? fields.get('grpc-status')}${endStream ? ' end' : ''}`,
      ),
    onData: (chunk) => {
      heard.events.push('data');
      heard.data.push(chunk);
    },
    onEnd: () => heard.events.push('end'),
    onError: (err) => {
      heard.events.push('error');
      heard.errors.push(err);
    },
  };
  return heard;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(
  onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, body: Buffer) => void,
): Promise<{ socket: string; resets: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'h2conn-'));
  const socket = join(dir, 'server.sock');
  const resets: number[] = [];
  const h2 = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  h2.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    stream.on('close', () => resets.push(stream.rstCode));
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => onStream(stream, headers, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => h2.listen(socket, resolve));
  cleanups.push(async () => {
    for (const s of sessions) s.destroy();
    await new Promise((resolve) => h2.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  return { socket, resets };
}

function connect(socket: string): Http2Connection {
  const connection = new Http2Connection(socket, { windowBytes: WINDOW_BYTES });
  cleanups.push(() => connection.close());
  return connection;
}

test('an answer reaches the handler in order, headers to trailers, and ends once', async () => {
  let seen: { headers: http2.IncomingHttpHeaders; body: Buffer } | undefined;
  const { socket } = await server((stream, headers, body) => {
    seen = { headers, body };
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(Buffer.from('answer'));
  });
  const connection = connect(socket);
  const heard = recorder();
  connection.request(REQUEST, Buffer.from('question'), heard.handler);
  await waitFor('the end', () => heard.events.includes('end') || heard.errors.length > 0, 5000, 5);
  assert.deepEqual(heard.events, ['headers 200', 'data', 'headers 0 end', 'end']);
  assert.equal(Buffer.concat(heard.data).toString(), 'answer');
  assert.equal(seen?.body.toString(), 'question');
  assert.equal(seen?.headers[':path'], '/pkg.Service/Method');
  assert.equal(seen?.headers['x-extra'], 'yes');
  assert.equal(connection.acceptsStreams, true);
});

test('a connection cut mid-answer is an error, never an end', async () => {
  const { socket } = await server((stream) => {
    stream.respond({ ':status': 200 });
    stream.write(Buffer.from('half'));
    setTimeout(() => stream.session?.destroy(), 20);
  });
  const connection = connect(socket);
  let closed = false;
  connection.onClose = () => (closed = true);
  const heard = recorder();
  connection.request(REQUEST, Buffer.alloc(0), heard.handler);
  await waitFor('the stream over', () => heard.events.some((e) => e === 'error' || e === 'end'), 5000, 5);
  await sleep(50);
  assert.deepEqual(heard.events, ['headers 200', 'data', 'error']);
  assert.match(heard.errors[0]!.message, /^connection (closed|error)/);
  await waitFor('onClose', () => closed, 5000, 5);
  assert.equal(connection.acceptsStreams, false);
});

test('a reset from the server fails its stream alone with the code', async () => {
  let n = 0;
  const { socket } = await server((stream) => {
    if (++n === 1) {
      stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      return;
    }
    stream.respond({ ':status': 200, 'grpc-status': '0' }, { endStream: true });
  });
  const connection = connect(socket);
  const first = recorder();
  connection.request(REQUEST, Buffer.alloc(0), first.handler);
  await waitFor('the reset', () => first.errors.length > 0, 5000, 5);
  assert.equal(first.errors[0]!.code, http2.constants.NGHTTP2_INTERNAL_ERROR);
  assert.match(first.errors[0]!.message, /stream reset by the server \(code 2\)/);
  const second = recorder();
  connection.request(REQUEST, Buffer.alloc(0), second.handler);
  await waitFor('the second answer', () => second.events.includes('end'), 5000, 5);
  assert.deepEqual(second.events, ['headers 200 end', 'end']);
});

test('cancel resets the stream with CANCEL and the handler hears nothing more', async () => {
  const { socket, resets } = await server((stream) => {
    stream.respond({ ':status': 200 });
    const timer = setInterval(() => stream.write(Buffer.from('more')), 5);
    stream.on('close', () => clearInterval(timer));
  });
  const connection = connect(socket);
  const heard = recorder();
  const id = connection.request(REQUEST, Buffer.alloc(0), heard.handler);
  await waitFor('some data', () => heard.data.length > 0, 5000, 5);
  connection.cancel(id);
  const after = heard.events.length;
  await waitFor('the reset at the server', () => resets.length === 1, 5000, 5);
  await sleep(50);
  assert.deepEqual(resets, [http2.constants.NGHTTP2_CANCEL]);
  assert.equal(heard.events.length, after);
  assert.equal(connection.acceptsStreams, true);
});

test('close fails each open stream once, and the connection reports it is closed', async () => {
  const { socket, resets } = await server((stream) => stream.respond({ ':status': 200 }));
  const connection = connect(socket);
  let closes = 0;
  connection.onClose = () => closes++;
  const heard = recorder();
  connection.request(REQUEST, Buffer.alloc(0), heard.handler);
  await waitFor('the headers', () => heard.events.length > 0, 5000, 5);
  connection.close();
  await waitFor('the session closed', () => closes > 0, 5000, 5);
  await sleep(50);
  assert.deepEqual(heard.events, ['headers 200', 'error']);
  assert.equal(heard.errors[0]!.message, 'connection closed by the client');
  assert.equal(closes, 1);
  assert.equal(connection.acceptsStreams, false);
  await waitFor('the reset at the server', () => resets.length === 1, 5000, 5);
  assert.deepEqual(resets, [http2.constants.NGHTTP2_CANCEL]);
});

test("after the server's GOAWAY the connection takes no new stream; the open one finishes", async () => {
  let open: http2.ServerHttp2Stream | undefined;
  const { socket } = await server((stream) => {
    open = stream;
    stream.respond({ ':status': 200 });
    stream.session?.goaway(http2.constants.NGHTTP2_NO_ERROR, stream.id);
  });
  const connection = connect(socket);
  let closed = false;
  connection.onClose = () => (closed = true);
  const heard = recorder();
  connection.request(REQUEST, Buffer.alloc(0), heard.handler);
  await waitFor('GOAWAY', () => closed, 5000, 5);
  assert.equal(connection.acceptsStreams, false);
  open!.end(Buffer.from('last'));
  await waitFor('the end', () => heard.events.includes('end') || heard.errors.length > 0, 5000, 5);
  assert.deepEqual(heard.events, ['headers 200', 'data', 'end']);
});

test('a socket that is not there fails the stream with the connect error', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'h2conn-none-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const connection = connect(join(dir, 'missing.sock'));
  const heard = recorder();
  connection.request(REQUEST, Buffer.alloc(0), heard.handler);
  await waitFor('the error', () => heard.errors.length > 0, 5000, 5);
  assert.deepEqual(heard.events, ['error']);
  assert.match(heard.errors[0]!.message, /^connection error: connect ENOENT/);
  assert.equal(connection.acceptsStreams, false);
});
