/**
 * The unary gRPC server against grpc-js's client (an independent gRPC implementation), and against
 * node:http2's client for what grpc-js never sends (another content-type, a compressed message).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type * as grpc from '@grpc/grpc-js';
import {
  DEFAULT_MAX_RECEIVE_MESSAGE_BYTES,
  GrpcUnaryServer,
  unaryMethod,
  type GrpcUnaryServerOptions,
  type UnaryMethodHandler,
} from '../../../../src/lib/grpc-server/grpc-unary-server.js';
import { shutdownGrpcServer } from '../../../../src/lib/grpc-shutdown.js';
import { GrpcStatus, grpcCallError } from '../../../../src/lib/grpc-status.js';
import { grpcUnaryCall, unixSocketClient, type MessageCodec } from '../../../helpers/grpc-unary-call.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'grpc-server-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let serial = 0;

/** A method on test.Echo whose messages are UTF-8 text. */
function textMethod(name: string, handler: (text: string) => string | Promise<string>): UnaryMethodHandler {
  return unaryMethod(
    {
      path: `/test.Echo/${name}`,
      requestDeserialize: (bytes) => bytes.toString('utf8'),
      responseSerialize: (text: string) => Buffer.from(text, 'utf8'),
    },
    handler,
  );
}

const echo = textMethod('Say', (text) => `echo: ${text}`);

async function serve(
  methods: UnaryMethodHandler[],
  opts: Partial<GrpcUnaryServerOptions> = {},
): Promise<GrpcUnaryServer> {
  return GrpcUnaryServer.listen({ socketPath: path.join(dir, `s${serial++}.sock`), methods, ...opts });
}

/** A grpc-js client, closed and the server shut down after the test. */
function clientOf(server: GrpcUnaryServer, t: { after(fn: () => Promise<void>): void }): grpc.Client {
  const client = unixSocketClient(server.socketPath);
  t.after(async () => {
    client.close();
    await shutdownGrpcServer(server, 100);
  });
  return client;
}

/** UTF-8 text as a message. */
const text: MessageCodec<string> = {
  encode: (s) => ({ finish: () => Buffer.from(s, 'utf8') }),
  decode: (bytes) => Buffer.from(bytes).toString('utf8'),
};

function call(client: grpc.Client, method: string, body: string, timeoutMs = 5000): Promise<string> {
  return grpcUnaryCall(client, method, { request: text, response: text }, body, timeoutMs);
}

/** Asserts that the call fails with that status and details. */
async function callFails(
  client: grpc.Client,
  method: string,
  body: string,
  code: number,
  details: string | RegExp,
  timeoutMs?: number,
): Promise<void> {
  await assert.rejects(call(client, method, body, timeoutMs), (err: grpc.ServiceError) => {
    assert.equal(err.code, code, `${err.code} ${err.details}`);
    if (typeof details === 'string') assert.equal(err.details, details);
    else assert.match(err.details, details);
    return true;
  });
}

interface RawAnswer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** One request over node:http2's client, for what a gRPC client would not send. */
async function rawRequest(
  server: GrpcUnaryServer,
  headers: http2.OutgoingHttpHeaders,
  body: Buffer,
): Promise<RawAnswer> {
  const session = http2.connect('http://localhost', {
    createConnection: () => net.connect(server.socketPath),
  });
  try {
    return await new Promise<RawAnswer>((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': '/test.Echo/Say', ...headers });
      let answerHeaders: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      req.on('response', (h) => (answerHeaders = h));
      req.on('trailers', (h) => (trailers = h));
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve({ headers: answerHeaders, trailers, body: Buffer.concat(chunks) }));
      req.on('error', reject);
      req.end(body);
    });
  } finally {
    session.close();
  }
}

function lengthPrefixed(message: Buffer, flag = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flag;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

test('a unary call answers with its message, over a grpc-js client', async (t) => {
  const server = await serve([echo]);
  const client = clientOf(server, t);
  assert.equal(await call(client, '/test.Echo/Say', 'hi'), 'echo: hi');
  assert.equal(await call(client, '/test.Echo/Say', ''), 'echo: ');
});

test('the answer is a message and trailers, as a gRPC server sends them', async (t) => {
  const server = await serve([echo]);
  t.after(() => shutdownGrpcServer(server, 100));
  const answer = await rawRequest(
    server,
    { 'content-type': 'application/grpc+proto', te: 'trailers' },
    lengthPrefixed(Buffer.from('x')),
  );
  assert.equal(answer.headers[':status'], 200);
  assert.equal(answer.headers['content-type'], 'application/grpc');
  assert.deepEqual(answer.body, lengthPrefixed(Buffer.from('echo: x')));
  assert.equal(answer.trailers['grpc-status'], '0');
});

test('an unknown service or method is UNIMPLEMENTED, worded as grpc-go', async (t) => {
  const server = await serve([echo]);
  const client = clientOf(server, t);
  await callFails(client, '/test.Other/Say', 'x', GrpcStatus.UNIMPLEMENTED, 'unknown service test.Other');
  await callFails(
    client,
    '/test.Echo/Shout',
    'x',
    GrpcStatus.UNIMPLEMENTED,
    'unknown method Shout for service test.Echo',
  );
  // The connection is still good after refused calls.
  assert.equal(await call(client, '/test.Echo/Say', 'again'), 'echo: again');
});

test("a handler's error: its numeric code, else UNKNOWN with its message", async (t) => {
  const server = await serve([
    textMethod('Status', () => {
      throw grpcCallError(GrpcStatus.NOT_FOUND, 'no such thing');
    }),
    textMethod('ServiceError', () => {
      throw Object.assign(new Error('5 NOT_FOUND: ignored'), {
        code: GrpcStatus.FAILED_PRECONDITION,
        details: 'not yet',
      });
    }),
    textMethod('Plain', async () => {
      await Promise.resolve();
      throw new Error('it broke: 100% ünicode\nand a line');
    }),
    textMethod('SystemError', () => {
      throw Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
    }),
  ]);
  const client = clientOf(server, t);
  await callFails(client, '/test.Echo/Status', '', GrpcStatus.NOT_FOUND, 'no such thing');
  await callFails(client, '/test.Echo/ServiceError', '', GrpcStatus.FAILED_PRECONDITION, 'not yet');
  await callFails(client, '/test.Echo/Plain', '', GrpcStatus.UNKNOWN, 'it broke: 100% ünicode\nand a line');
  await callFails(client, '/test.Echo/SystemError', '', GrpcStatus.UNKNOWN, 'ENOENT: no such file');
});

test('a message that cannot be decoded is INTERNAL', async (t) => {
  const server = await serve([
    unaryMethod(
      {
        path: '/test.Echo/Strict',
        requestDeserialize: (bytes) => {
          if (bytes.length === 0) throw new Error('empty');
          return bytes;
        },
        responseSerialize: (b: Buffer) => b,
      },
      (b) => b,
    ),
  ]);
  const client = clientOf(server, t);
  await callFails(
    client,
    '/test.Echo/Strict',
    '',
    GrpcStatus.INTERNAL,
    'grpc: error unmarshalling request: empty',
  );
});

test('a request larger than the bound is RESOURCE_EXHAUSTED, 4 MiB by default as grpc-go', async (t) => {
  assert.equal(DEFAULT_MAX_RECEIVE_MESSAGE_BYTES, 4 * 1024 * 1024);
  let calls = 0;
  const server = await serve(
    [
      textMethod('Say', (text) => {
        calls++;
        return `${text.length}`;
      }),
    ],
    { maxReceiveMessageBytes: 1024 },
  );
  const client = clientOf(server, t);
  assert.equal(await call(client, '/test.Echo/Say', 'x'.repeat(1024)), '1024');
  await callFails(
    client,
    '/test.Echo/Say',
    'x'.repeat(200_000),
    GrpcStatus.RESOURCE_EXHAUSTED,
    'grpc: received message larger than max (200000 vs. 1024)',
  );
  assert.equal(calls, 1);
  assert.equal(await call(client, '/test.Echo/Say', 'after'), '5');
});

test('the default bound: a message just over 4 MiB is refused', async (t) => {
  const server = await serve([echo]);
  const client = clientOf(server, t);
  const size = DEFAULT_MAX_RECEIVE_MESSAGE_BYTES + 1;
  await callFails(
    client,
    '/test.Echo/Say',
    'x'.repeat(size),
    GrpcStatus.RESOURCE_EXHAUSTED,
    `grpc: received message larger than max (${size} vs. ${size - 1})`,
  );
});

test('a content-type other than application/grpc is refused with HTTP 415, as grpc-go', async (t) => {
  const server = await serve([echo]);
  t.after(() => shutdownGrpcServer(server, 100));
  const answer = await rawRequest(server, { 'content-type': 'application/json' }, Buffer.from('{}'));
  assert.equal(answer.headers[':status'], 415);
  assert.equal(answer.headers['grpc-status'], String(GrpcStatus.INVALID_ARGUMENT));
  assert.equal(answer.headers['grpc-message'], 'invalid gRPC request content-type "application/json"');
});

test('a compressed message is refused: INTERNAL without an encoding, UNIMPLEMENTED with one', async (t) => {
  const server = await serve([echo]);
  t.after(() => shutdownGrpcServer(server, 100));
  const compressed = lengthPrefixed(Buffer.from('x'), 1);
  const bare = await rawRequest(server, { 'content-type': 'application/grpc' }, compressed);
  assert.equal(bare.headers['grpc-status'], String(GrpcStatus.INTERNAL));
  const gzip = await rawRequest(
    server,
    { 'content-type': 'application/grpc', 'grpc-encoding': 'gzip' },
    compressed,
  );
  assert.equal(gzip.headers['grpc-status'], String(GrpcStatus.UNIMPLEMENTED));
  assert.equal(gzip.headers['grpc-message'], 'grpc: Decompressor is not installed for grpc-encoding "gzip"');
});

test('a request without a whole message is INTERNAL', async (t) => {
  const server = await serve([echo]);
  t.after(() => shutdownGrpcServer(server, 100));
  const none = await rawRequest(server, { 'content-type': 'application/grpc' }, Buffer.alloc(0));
  assert.equal(none.headers['grpc-status'], String(GrpcStatus.INTERNAL));
  const cut = await rawRequest(
    server,
    { 'content-type': 'application/grpc' },
    lengthPrefixed(Buffer.from('abc')).subarray(0, 6),
  );
  assert.equal(cut.headers['grpc-status'], String(GrpcStatus.INTERNAL));
  assert.equal(cut.headers['grpc-message'], 'unexpected EOF');
});

test('many calls at once on one connection are served together', async (t) => {
  const count = 20;
  let arrived = 0;
  let allArrived!: () => void;
  const barrier = new Promise<void>((resolve) => (allArrived = resolve));
  const server = await serve([
    echo,
    textMethod('Wait', async (text) => {
      if (++arrived === count) allArrived();
      // Each answer waits for every call to be in: the calls must be in flight together.
      await barrier;
      return text;
    }),
  ]);
  let sessions = 0;
  const client = clientOf(server, t);
  await call(client, '/test.Echo/Say', 'connect');
  server.http2Server!.on('session', () => sessions++);
  const texts = Array.from({ length: count }, (_, i) => `call ${i}`);
  assert.deepEqual(await Promise.all(texts.map((text) => call(client, '/test.Echo/Wait', text))), texts);
  assert.equal(sessions, 0, 'no new connection was made');
});

test('a call its client gave up on does not disturb the server', async (t) => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const server = await serve([
    echo,
    textMethod('Slow', async () => {
      await held;
      return 'late';
    }),
  ]);
  const client = clientOf(server, t);
  await callFails(client, '/test.Echo/Slow', '', GrpcStatus.DEADLINE_EXCEEDED, /Deadline exceeded/, 50);
  release();
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(await call(client, '/test.Echo/Say', 'still here'), 'echo: still here');
});

test('node:http2 is not loaded until the first connection', async (t) => {
  const server = await serve([echo]);
  assert.equal(server.http2Server, undefined);
  const client = clientOf(server, t);
  assert.equal(server.http2Server, undefined, 'a client that has not called yet has not connected');
  await call(client, '/test.Echo/Say', 'x');
  assert.ok(server.http2Server);
});

test('in a process of its own, node:http2 is loaded by the first connection, which loses no byte', async () => {
  // The client's preface and SETTINGS go out with the connect; the server's SETTINGS ACK shows that
  // its session read them from the first byte.
  const socketPath = path.join(dir, `s${serial++}.sock`);
  const script = `
    import net from 'node:net';
    import { GrpcUnaryServer } from ${JSON.stringify(path.resolve('src/lib/grpc-server/grpc-unary-server.ts'))};
    const loaded = () => process.moduleLoadList.includes('NativeModule http2');
    const server = await GrpcUnaryServer.listen({ socketPath: ${JSON.stringify(socketPath)}, methods: [] });
    const before = loaded();
    const socket = net.connect(${JSON.stringify(socketPath)});
    socket.write(Buffer.from('PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n'));
    socket.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]));
    let received = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      const frames = [];
      for (let at = 0; at + 9 <= received.length; at += 9 + received.readUIntBE(at, 3))
        frames.push({ type: received[at + 3], flags: received[at + 4] });
      if (!frames.some((f) => f.type === 4 && f.flags === 1)) return;
      console.log(JSON.stringify({ before, after: loaded(), settingsAcked: true }));
      socket.destroy();
      server.forceShutdown();
    });
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 10_000,
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 0);
  assert.deepEqual(JSON.parse(out), { before: false, after: true, settingsAcked: true });
});

test('a graceful shutdown lets a call in flight finish, then removes the socket file', async () => {
  let entered!: () => void;
  const inHandler = new Promise<void>((resolve) => (entered = resolve));
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const server = await serve([
    textMethod('Slow', async (text) => {
      entered();
      await held;
      return `done ${text}`;
    }),
  ]);
  const socketPath = server.socketPath;
  const client = unixSocketClient(socketPath);
  try {
    const inFlight = call(client, '/test.Echo/Slow', 'a');
    await inHandler;
    let stopped = false;
    const stopping = shutdownGrpcServer(server, 5000).then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(stopped, false, 'the shutdown waits for the call');
    assert.equal(existsSync(socketPath), false, 'no new connection is taken');
    release();
    assert.equal(await inFlight, 'done a');
    await stopping;
  } finally {
    client.close();
  }
});

test('a shutdown forces the connections down after its grace period', async () => {
  const server = await serve([textMethod('Never', () => new Promise<string>(() => {}))]);
  const client = unixSocketClient(server.socketPath);
  try {
    const inFlight = call(client, '/test.Echo/Never', '');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    await shutdownGrpcServer(server, 100);
    assert.ok(Date.now() - started < 1000);
    await assert.rejects(inFlight, (err: grpc.ServiceError) => err.code !== GrpcStatus.OK);
  } finally {
    client.close();
  }
});

test('listening on a path that exists fails', async () => {
  const server = await serve([echo]);
  try {
    await assert.rejects(
      GrpcUnaryServer.listen({ socketPath: server.socketPath, methods: [] }),
      /EADDRINUSE/,
    );
  } finally {
    await shutdownGrpcServer(server, 100);
  }
});
