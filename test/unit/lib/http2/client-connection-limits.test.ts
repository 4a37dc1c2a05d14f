/**
 * The HTTP/2 client connection against a raw socket that sends what a well-behaved server never does,
 * or does not read at all: the limits that keep a broken runtime from growing the kubelet's memory or
 * open sockets, and the flow-control rules RFC 9113 §6.9 makes connection errors.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { Http2ClientConnection, Http2ErrorCode } from '../../../../src/lib/http2/client-connection.js';
import type { Http2StreamError, StreamHandler } from '../../../../src/lib/http2/stream-handler.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'h2-limits-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let serial = 0;

const POST: [string, string][] = [
  [':method', 'POST'],
  [':scheme', 'http'],
  [':path', '/x'],
  [':authority', 'localhost'],
];

function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}

function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value, 0);
  return b;
}

/** A raw socket server: onConnection gets each accepted socket. */
async function rawServer(
  onConnection: (socket: net.Socket) => void,
): Promise<{ socketPath: string; close: () => Promise<void> }> {
  const socketPath = path.join(dir, `raw${serial++}.sock`);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A server that sends `script` once the client's first bytes (preface, SETTINGS, a request) are in. */
function scripted(script: Buffer): (socket: net.Socket) => void {
  return (socket) => {
    socket.once('data', () => socket.write(script));
    socket.resume();
  };
}

/** A request whose handler resolves with the stream's error (or undefined when it ended well), within 5 s. */
function requestOutcome(conn: Http2ClientConnection): Promise<Http2StreamError | undefined> {
  return new Promise((resolve) => {
    setTimeout(() => resolve(new Error('no outcome within 5 s')), 5000).unref();
    const handler: StreamHandler = {
      onHeaders: () => undefined,
      onData: () => undefined,
      onEnd: () => resolve(undefined),
      onError: (error) => resolve(error),
    };
    conn.request(POST, Buffer.alloc(0), handler);
  });
}

test('a SETTINGS_INITIAL_WINDOW_SIZE that takes an open stream window past 2^31-1 is a FLOW_CONTROL_ERROR', async () => {
  const settings = Buffer.alloc(6);
  settings.writeUInt16BE(0x4, 0);
  settings.writeUInt32BE(65_536, 2);
  const server = await rawServer(
    scripted(
      Buffer.concat([
        // Stream 1's send window to exactly 2^31-1, which is allowed...
        frame(0x8, 0, 1, u32(2 ** 31 - 1 - 65_535)),
        // ...then one more octet for every stream (§6.9.2).
        frame(0x4, 0, 0, settings),
      ]),
    ),
  );
  const conn = new Http2ClientConnection(net.connect(server.socketPath), { windowBytes: 65_535 });
  try {
    const error = await requestOutcome(conn);
    assert.equal(error?.code, Http2ErrorCode.FLOW_CONTROL_ERROR);
    assert.equal(conn.acceptsStreams, false);
  } finally {
    conn.close();
    await server.close();
  }
});

test('a header block cut into thousands of tiny CONTINUATION frames fails the connection', async () => {
  // A block of 1-octet frames: each kept as a Buffer of its own would cost about 100 octets of heap
  // per octet sent, under the 16 MiB limit on the block's octets.
  const pieces = [frame(0x1, 0, 1, Buffer.from([0x88]))];
  for (let i = 0; i < 100_000; i++) pieces.push(frame(0x9, 0, 1, Buffer.from([0x88])));
  const server = await rawServer(scripted(Buffer.concat(pieces)));
  const conn = new Http2ClientConnection(net.connect(server.socketPath), { windowBytes: 65_535 });
  try {
    const error = await requestOutcome(conn);
    assert.equal(error?.code, Http2ErrorCode.PROTOCOL_ERROR);
    assert.match(error!.message, /CONTINUATION frames/);
  } finally {
    conn.close();
    await server.close();
  }
});

test('a closed connection whose server does not read its last bytes still lets go of the socket', async () => {
  // The server never reads: the client's requests (large header blocks) stay in its write buffer.
  const server = await rawServer((socket) => socket.pause());
  const socket = net.connect(server.socketPath);
  const conn = new Http2ClientConnection(socket, { windowBytes: 65_535 });
  const big: [string, string][] = [...POST, ['x-big', 'v'.repeat(16_000)]];
  const quiet: StreamHandler = {
    onHeaders: () => undefined,
    onData: () => undefined,
    onEnd: () => undefined,
    onError: () => undefined,
  };
  try {
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    for (let i = 0; i < 200 && socket.writableLength < 1024 * 1024; i++) {
      conn.request(big, Buffer.alloc(0), quiet);
      await new Promise((r) => setImmediate(r));
    }
    assert.ok(socket.writableLength > 0, 'the server read everything');
    conn.close();
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const bound = new Promise<string>((resolve) => setTimeout(() => resolve('timeout'), 5000).unref());
    assert.notEqual(await Promise.race([closed.then(() => 'closed'), bound]), 'timeout');
    assert.equal(socket.destroyed, true);
  } finally {
    socket.destroy();
    await server.close();
  }
});

test('a server that stops reading fails the connection once its unsent requests pass a bound', async () => {
  const server = await rawServer((socket) => socket.pause());
  const socket = net.connect(server.socketPath);
  const conn = new Http2ClientConnection(socket, { windowBytes: 65_535 });
  let closedWith: Http2StreamError | undefined;
  conn.onClose = (e) => (closedWith = e);
  const errors: Http2StreamError[] = [];
  const counting: StreamHandler = {
    onHeaders: () => undefined,
    onData: () => undefined,
    onEnd: () => undefined,
    onError: (e) => errors.push(e),
  };
  const big: [string, string][] = [...POST, ['x-big', 'v'.repeat(16_000)]];
  try {
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    let sent = 0;
    // 2000 requests of 16 KB: 32 MB, far past the kernel's buffer and the bound.
    for (; sent < 2000 && conn.acceptsStreams; sent++) {
      conn.request(big, Buffer.alloc(0), counting);
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(
      conn.acceptsStreams,
      false,
      `${sent} requests buffered, ${socket.writableLength} octets unsent`,
    );
    assert.match(closedWith!.message, /has not read/);
    await new Promise((r) => setImmediate(r));
    // Every stream it took heard once; the memory goes with the socket.
    assert.equal(errors.length, sent);
  } finally {
    conn.close();
    socket.destroy();
    await server.close();
  }
});

test('the last stream ID (2^31-1) is used once, then the connection takes no more and closes when it ends', async () => {
  const last = 2 ** 31 - 1;
  // :status 200 (static index 8), ending the stream, on the last ID.
  const server = await rawServer(scripted(frame(0x1, 0x1 | 0x4, last, Buffer.from([0x88]))));
  const conn = new Http2ClientConnection(net.connect(server.socketPath), { windowBytes: 65_535 });
  let closed = false;
  conn.onClose = () => (closed = true);
  // Months of calls at once: the IDs are one call short of running out.
  (conn as unknown as { nextStreamId: number }).nextStreamId = last;
  try {
    const outcome = requestOutcome(conn);
    assert.equal(conn.acceptsStreams, false);
    assert.equal(await outcome, undefined);
    assert.equal(closed, true);
    const refused = await requestOutcome(conn);
    assert.ok(refused, 'a request past the last ID was taken');
  } finally {
    conn.close();
    await server.close();
  }
});

test('a connection out of stream IDs closes when its last waiting request is cancelled', async () => {
  const last = 2 ** 31 - 1;
  const noStreams = Buffer.alloc(6);
  noStreams.writeUInt16BE(0x3, 0); // SETTINGS_MAX_CONCURRENT_STREAMS 0: every later request waits
  const server = await rawServer(
    scripted(
      Buffer.concat([frame(0x4, 0, 0, noStreams), frame(0x1, 0x1 | 0x4, last - 2, Buffer.from([0x88]))]),
    ),
  );
  const conn = new Http2ClientConnection(net.connect(server.socketPath), { windowBytes: 65_535 });
  let closed = false;
  conn.onClose = () => (closed = true);
  (conn as unknown as { nextStreamId: number }).nextStreamId = last - 2;
  try {
    assert.equal(await requestOutcome(conn), undefined);
    const id = conn.request(POST, Buffer.alloc(0), {
      onHeaders: () => undefined,
      onData: () => undefined,
      onEnd: () => undefined,
      onError: () => undefined,
    });
    assert.equal(id, last);
    assert.equal(conn.acceptsStreams, false);
    assert.equal(closed, false);
    conn.cancel(id);
    assert.equal(closed, true, 'the connection stayed open with nothing left to carry');
  } finally {
    conn.close();
    await server.close();
  }
});

test('a server that floods PINGs and reads none of the answers fails the connection once they pass the bound', async () => {
  // 6 MiB of PINGs, each answered with a PING ACK of the same size that the server never reads: the
  // answers would wait in the client's write buffer for as long as the connection lasts.
  const ping = frame(0x6, 0, 0, Buffer.alloc(8));
  const flood = Buffer.concat(Array.from({ length: Math.ceil((6 * 1024 * 1024) / ping.length) }, () => ping));
  const server = await rawServer((socket) => {
    socket.pause();
    socket.write(flood);
  });
  const socket = net.connect(server.socketPath);
  const conn = new Http2ClientConnection(socket, { windowBytes: 65_535 });
  try {
    // A stream that stays open: the client has no reason of its own to write.
    const outcome = requestOutcome(conn);
    const closed = new Promise<Error | undefined>((resolve) => (conn.onClose = resolve));
    const bound = new Promise<string>((resolve) => setTimeout(() => resolve('timeout'), 5000).unref());
    const error = await Promise.race([closed, bound]);
    assert.notEqual(error, 'timeout', `the connection kept ${socket.writableLength} octets unsent`);
    assert.match(String((error as Error | undefined)?.message), /not read/);
    assert.ok((await outcome) instanceof Error);
  } finally {
    conn.close();
    socket.destroy();
    await server.close();
  }
});
