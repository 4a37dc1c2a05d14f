/**
 * The HTTP/2 client connection against node:http2's server (nghttp2: an independent HTTP/2 and HPACK
 * implementation that Huffman-codes and indexes what it sends), and against a raw socket for what a
 * well-behaved server never sends.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { Duplex } from 'node:stream';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { Http2ClientConnection, Http2ErrorCode } from '../../../../src/lib/http2/client-connection.js';
import type { Http2StreamError, StreamHandler } from '../../../../src/lib/http2/stream-handler.js';
import type { HeaderFields } from '../../../../src/lib/http2/hpack.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'h2-client-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let serial = 0;

interface Answer {
  headers: HeaderFields[];
  body: Buffer;
  error?: Http2StreamError;
}

/** A POST's pseudo-headers. */
function postTo(requestPath: string): [string, string][] {
  return [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', requestPath],
    [':authority', 'localhost'],
  ];
}

/** A handler that calls heard() for whatever comes. */
function listener(heard: () => void): StreamHandler {
  return { onHeaders: heard, onData: heard, onEnd: heard, onError: heard };
}

/** Sends one request and collects what comes back, until the stream ends or fails. */
function exchange(
  conn: Http2ClientConnection,
  requestPath: string,
  body: Buffer = Buffer.alloc(0),
  extra: [string, string][] = [],
): Promise<Answer> {
  return new Promise((resolve) => {
    const headers: HeaderFields[] = [];
    const chunks: Buffer[] = [];
    const handler: StreamHandler = {
      onHeaders: (fields) => headers.push(fields),
      onData: (chunk) => chunks.push(Buffer.from(chunk)),
      onEnd: () => resolve({ headers, body: Buffer.concat(chunks) }),
      onError: (error) => resolve({ headers, body: Buffer.concat(chunks), error }),
    };
    conn.request([...postTo(requestPath), ...extra], body, handler);
  });
}

async function h2Server(
  onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void,
  settings: http2.Settings = {},
): Promise<{
  socketPath: string;
  server: http2.Http2Server;
  sessions: Set<http2.ServerHttp2Session>;
  close: () => Promise<void>;
}> {
  const socketPath = path.join(dir, `s${serial++}.sock`);
  const server = http2.createServer({ settings });
  server.on('stream', (stream, headers) => {
    // A stream this test resets or refuses reports it as an error on the server's side too.
    stream.on('error', () => undefined);
    onStream(stream, headers);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => sessions.add(s));
  return {
    socketPath,
    server,
    sessions,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sessions) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A plain socket server, for what a well-behaved HTTP/2 server never sends. */
async function rawServer(
  onData: (socket: net.Socket, chunk: Buffer) => void,
): Promise<{ socketPath: string; close: () => Promise<void> }> {
  const socketPath = path.join(dir, `raw${serial++}.sock`);
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => onData(socket, chunk));
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return { socketPath, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function connect(socketPath: string, windowBytes = 16 * 1024 * 1024): Http2ClientConnection {
  return new Http2ClientConnection(net.connect(socketPath), { windowBytes });
}

/** One frame as a server writes it. */
function rawFrame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}

test('an answer read in pieces cut anywhere, frames and their headers included, reads as one read does', () => {
  const body = Buffer.alloc(16_384 * 2 + 100);
  for (let i = 0; i < body.length; i++) body[i] = (i * 7) & 0xff;
  const fromServer = Buffer.concat([
    rawFrame(0x4, 0, 0, Buffer.alloc(0)),
    rawFrame(0x1, 0x4, 1, Buffer.from([0x88])),
    rawFrame(0x0, 0, 1, body.subarray(0, 16_384)),
    rawFrame(0x0, 0, 1, body.subarray(16_384, 32_768)),
    rawFrame(0x0, 0x1, 1, body.subarray(32_768)),
  ]);
  const answerIn = (reads: Buffer[]): { body: Buffer; status: string | undefined; ends: number } => {
    // A socket whose reads are the test's: what the connection writes goes nowhere.
    const socket = new Duplex({ read: () => undefined, write: (_c, _e, done) => done() });
    const conn = new Http2ClientConnection(socket as unknown as net.Socket, { windowBytes: 65_535 });
    const chunks: Buffer[] = [];
    let status: string | undefined;
    let ends = 0;
    conn.request(postTo('/x'), Buffer.alloc(0), {
      onHeaders: (fields) => (status = fields.get(':status')),
      onData: (chunk) => chunks.push(Buffer.from(chunk)),
      onEnd: () => ends++,
      onError: (error) => assert.fail(error.message),
    });
    for (const read of reads) socket.emit('data', read);
    conn.close();
    return { body: Buffer.concat(chunks), status, ends };
  };
  const whole = { body, status: '200', ends: 1 };
  assert.deepEqual(answerIn([fromServer]), whole);
  // Two reads, cut at every octet of the first frames and around each DATA frame's header.
  const cuts = [
    ...Array(40).keys(),
    ...[19, 16_412, 32_805].flatMap((f) => [...Array(12).keys()].map((k) => f + k)),
  ];
  for (const cut of cuts.filter((c) => c > 0 && c < fromServer.length)) {
    assert.deepEqual(
      answerIn([fromServer.subarray(0, cut), fromServer.subarray(cut)]),
      whole,
      `cut at ${cut}`,
    );
  }
  // Three reads, the middle one inside a frame's header; and reads of 5 octets each.
  assert.deepEqual(
    answerIn([
      fromServer.subarray(0, 16_400),
      fromServer.subarray(16_400, 16_415),
      fromServer.subarray(16_415),
    ]),
    whole,
  );
  const small: Buffer[] = [];
  for (let at = 0; at < fromServer.length; at += 5) small.push(fromServer.subarray(at, at + 5));
  assert.deepEqual(answerIn(small), whole);
});

/** The frames in what the connection wrote, as type:flags:stream, in order. */
function framesIn(bytes: Buffer): string[] {
  const frames: string[] = [];
  for (let at = 0; at < bytes.length; at += 9 + bytes.readUIntBE(at, 3)) {
    frames.push(`${bytes[at + 3]}:${bytes[at + 4]}:${bytes.readUInt32BE(at + 5)}`);
  }
  return frames;
}

/** A connection over a socket whose reads are the test's and whose writes it keeps, one entry per write. */
function recordingConnection(): { conn: Http2ClientConnection; socket: Duplex; writes: Buffer[] } {
  const writes: Buffer[] = [];
  const socket = new Duplex({
    read: () => undefined,
    write: (chunk: Buffer, _e, done) => {
      writes.push(Buffer.from(chunk));
      done();
    },
  });
  const conn = new Http2ClientConnection(socket as unknown as net.Socket, { windowBytes: 65_535 });
  return { conn, socket, writes };
}

const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 5));
const silent: StreamHandler = listener(() => undefined);

test('frames written in one turn of the event loop go out in one write, in order, whichever callback wrote them', async () => {
  const { conn, socket, writes } = recordingConnection();
  try {
    await nextTurn();
    assert.equal(writes.length, 1, 'the preface, SETTINGS and WINDOW_UPDATE in one write');
    // Two callbacks of one turn (the check phase's) send a request each.
    setImmediate(() => conn.request(postTo('/a'), Buffer.from('a'), silent));
    setImmediate(() => conn.request(postTo('/b'), Buffer.from('b'), silent));
    await nextTurn();
    assert.equal(writes.length, 2);
    assert.deepEqual(framesIn(writes[1]!), ['1:4:1', '0:1:1', '1:4:3', '0:1:3']);
    // A read that brings a PING and the end of stream 1's answer: the PING's ACK, and the request
    // that the answer's promise continuation sends, go out together.
    const answered = new Promise<void>((resolve) => {
      conn.request(postTo('/c'), Buffer.alloc(0), { ...silent, onEnd: resolve });
    });
    const next = answered.then(() => conn.request(postTo('/d'), Buffer.from('d'), silent));
    await nextTurn();
    assert.equal(writes.length, 3);
    const ping = Buffer.from('01234567');
    socket.emit(
      'data',
      Buffer.concat([rawFrame(0x6, 0, 0, ping), rawFrame(0x1, 0x5, 5, Buffer.from([0x88]))]),
    );
    assert.equal(await next, 7);
    await nextTurn();
    assert.equal(writes.length, 4);
    assert.deepEqual(framesIn(writes[3]!), ['6:1:0', '1:4:7', '0:1:7']);
    assert.deepEqual(writes[3]!.subarray(9, 17), ping);
  } finally {
    conn.close();
  }
});

test('frames that wait for the turn to end go out, then the GOAWAY, when the connection closes', () => {
  const { conn, writes } = recordingConnection();
  conn.request(postTo('/a'), Buffer.from('a'), silent);
  conn.close();
  assert.equal(writes.length, 1);
  assert.deepEqual(framesIn(writes[0]!.subarray(24)), ['4:0:0', '1:4:1', '0:1:1', '7:0:0']);
});

test('a request gets its headers, body and trailers; header blocks are decoded in order across streams', async () => {
  const s = await h2Server((stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'x-path': String(headers[':path']) },
        { waitForTrailers: true },
      );
      stream.on('wantTrailers', () =>
        stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': 'caf%C3%A9 is fine' }),
      );
      stream.end(Buffer.concat([Buffer.from('echo:'), ...chunks]));
    });
  });
  const conn = connect(s.socketPath);
  try {
    // Several at once and then more: the server's dynamic table fills and is used.
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(
        [0, 1, 2, 3].map((i) => exchange(conn, `/svc/M${i}`, Buffer.from(`hello ${round}.${i}`))),
      );
      answers.forEach((a, i) => {
        assert.equal(a.error, undefined);
        assert.equal(a.headers.length, 2);
        assert.equal(a.headers[0]!.get(':status'), '200');
        assert.equal(a.headers[0]!.get('content-type'), 'application/grpc');
        assert.equal(a.headers[0]!.get('x-path'), `/svc/M${i}`);
        assert.equal(a.headers[1]!.get('grpc-status'), '0');
        assert.equal(a.headers[1]!.get('grpc-message'), 'caf%C3%A9 is fine');
        assert.equal(a.body.toString(), `echo:hello ${round}.${i}`);
      });
    }
    // Every byte a header value may hold survives nghttp2's Huffman coding.
    const value = Array.from({ length: 256 }, (_, b) => b)
      .filter((b) => b === 0x09 || (b >= 0x20 && b !== 0x7f))
      .map((b) => String.fromCharCode(b))
      .join('');
    const echoed = await new Promise<string | undefined>((resolve) => {
      s.server.removeAllListeners('stream');
      s.server.on('stream', (stream) => {
        stream.respond({ ':status': 200, 'x-bytes': value }, { endStream: true });
      });
      const handler: StreamHandler = {
        onHeaders: (f) => resolve(f.get('x-bytes')),
        onData: () => undefined,
        onEnd: () => undefined,
        onError: () => resolve(undefined),
      };
      conn.request(
        [
          [':method', 'GET'],
          [':scheme', 'http'],
          [':path', '/'],
          [':authority', 'x'],
        ],
        Buffer.alloc(0),
        handler,
      );
    });
    assert.equal(echoed, value);
  } finally {
    conn.close();
    await s.close();
  }
});

test('flow control both ways: a 1 MiB request against a 64 KiB window, a 20 MiB answer against ours', async () => {
  const s = await h2Server((stream) => {
    let received = 0;
    stream.on('data', (c: Buffer) => (received += c.length));
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'x-received': String(received) });
      // The answer outgrows the client's 1 MiB windows many times over.
      stream.end(Buffer.alloc(20 * 1024 * 1024, 7));
    });
  });
  const conn = connect(s.socketPath, 1024 * 1024);
  try {
    const a = await exchange(conn, '/big', Buffer.alloc(1024 * 1024, 1));
    assert.equal(a.error, undefined);
    assert.equal(a.headers[0]!.get('x-received'), String(1024 * 1024));
    assert.equal(a.body.length, 20 * 1024 * 1024);
    assert.ok(a.body.every((b) => b === 7));
  } finally {
    conn.close();
    await s.close();
  }
});

test('past the server concurrency limit requests wait for a stream to end, and all are answered', async () => {
  let open = 0;
  let most = 0;
  const s = await h2Server(
    (stream) => {
      open++;
      most = Math.max(most, open);
      stream.resume();
      stream.on('end', () =>
        setTimeout(() => {
          open--;
          stream.respond({ ':status': 200 }, { endStream: true });
        }, 20),
      );
    },
    { maxConcurrentStreams: 2 },
  );
  const conn = connect(s.socketPath);
  try {
    // Let the server's SETTINGS arrive first.
    await exchange(conn, '/warm');
    const answers = await Promise.all(Array.from({ length: 7 }, (_, i) => exchange(conn, `/q${i}`)));
    assert.ok(answers.every((a) => a.error === undefined && a.headers[0]!.get(':status') === '200'));
    assert.ok(most <= 2, `${most} streams were open at once`);
  } finally {
    conn.close();
    await s.close();
  }
});

test('a reset stream fails alone; cancel() resets ours; the connection keeps serving', async () => {
  let cancelledCode: number | undefined;
  const s = await h2Server((stream, headers) => {
    stream.resume();
    if (headers[':path'] === '/reset') stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    else if (headers[':path'] === '/hang') stream.on('close', () => (cancelledCode = stream.rstCode));
    else stream.respond({ ':status': 200 }, { endStream: true });
  });
  const conn = connect(s.socketPath);
  try {
    const reset = await exchange(conn, '/reset');
    assert.ok(reset.error);
    assert.equal(reset.error.code, Http2ErrorCode.REFUSED_STREAM);
    let heard = false;
    const id = conn.request(
      postTo('/hang'),
      Buffer.alloc(0),
      listener(() => (heard = true)),
    );
    await new Promise((r) => setTimeout(r, 50));
    conn.cancel(id);
    const ok = await exchange(conn, '/ok');
    assert.equal(ok.headers[0]!.get(':status'), '200');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(cancelledCode, http2.constants.NGHTTP2_CANCEL);
    assert.equal(heard, false);
    assert.equal(conn.activeStreams, 0);
  } finally {
    conn.close();
    await s.close();
  }
});

test('PING is answered; after GOAWAY streams in flight finish, new ones are refused, then it closes', async () => {
  let release: (() => void) | undefined;
  const s = await h2Server((stream) => {
    stream.resume();
    release = () => stream.respond({ ':status': 200 }, { endStream: true });
  });
  const conn = connect(s.socketPath);
  let closed = false;
  conn.onClose = () => (closed = true);
  try {
    const inFlight = exchange(conn, '/slow');
    const session = await new Promise<http2.ServerHttp2Session>((resolve) => {
      const check = () => (release ? resolve([...s.sessions][0]!) : setTimeout(check, 5));
      check();
    });
    const rtt = await new Promise<number>((resolve, reject) =>
      session.ping((err, duration) => (err ? reject(err) : resolve(duration))),
    );
    assert.ok(rtt >= 0);
    session.goaway(http2.constants.NGHTTP2_NO_ERROR, 1);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(conn.acceptsStreams, false);
    const refused = await exchange(conn, '/late');
    assert.equal(refused.error?.code, Http2ErrorCode.REFUSED_STREAM);
    release!();
    const answer = await inFlight;
    assert.equal(answer.error, undefined);
    assert.equal(answer.headers[0]!.get(':status'), '200');
    assert.equal(closed, true);
  } finally {
    conn.close();
    await s.close();
  }
});

test('a server that breaks the protocol fails every stream and the connection, with a GOAWAY', async () => {
  let fromClient = Buffer.alloc(0);
  let sent = false;
  const server = await rawServer((socket, c) => {
    fromClient = Buffer.concat([fromClient, c]);
    // After the client's request: a frame larger than the 16 KiB it allows.
    if (fromClient.length > 60 && !sent) {
      sent = true;
      const header = Buffer.alloc(9);
      header.writeUIntBE(20_000, 0, 3);
      header[3] = 0x0;
      header.writeUInt32BE(1, 5);
      socket.write(Buffer.concat([header, Buffer.alloc(20_000)]));
    }
  });
  const conn = new Http2ClientConnection(net.connect(server.socketPath), { windowBytes: 65_535 });
  let closedWith: Http2StreamError | undefined;
  conn.onClose = (e) => (closedWith = e);
  try {
    const a = await exchange(conn, '/x', Buffer.from('body'));
    assert.equal(a.error?.code, Http2ErrorCode.FRAME_SIZE_ERROR);
    assert.match(a.error!.message, /protocol error/);
    assert.equal(closedWith?.code, Http2ErrorCode.FRAME_SIZE_ERROR);
    assert.equal(conn.acceptsStreams, false);
    // The client's GOAWAY (type 7) with FRAME_SIZE_ERROR went out before it closed.
    await new Promise((r) => setTimeout(r, 50));
    const goAway = fromClient.indexOf(Buffer.from([0x00, 0x00, 0x08, 0x07]));
    assert.ok(goAway > 0, 'no GOAWAY frame was sent');
    assert.equal(fromClient.readUInt32BE(goAway + 9 + 4), Http2ErrorCode.FRAME_SIZE_ERROR);
    // A request on it now fails at once.
    const late = await exchange(conn, '/y');
    assert.ok(late.error);
  } finally {
    conn.close();
    await server.close();
  }
});

test('a socket that cannot connect fails the stream with the reason', async () => {
  const conn = connect(path.join(dir, 'nothing-here.sock'));
  const a = await exchange(conn, '/x');
  assert.match(a.error!.message, /ENOENT/);
  assert.equal(conn.acceptsStreams, false);
});

test('after GOAWAY, cancelling the last stream closes the connection', async () => {
  let opened = false;
  const s = await h2Server((stream) => {
    stream.resume();
    opened = true;
  });
  const conn = connect(s.socketPath);
  let closed = false;
  conn.onClose = () => (closed = true);
  try {
    const id = conn.request(
      postTo('/hang'),
      Buffer.alloc(0),
      listener(() => undefined),
    );
    while (!opened) await new Promise((r) => setTimeout(r, 5));
    [...s.sessions][0]!.goaway(http2.constants.NGHTTP2_NO_ERROR, id);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(conn.acceptsStreams, false);
    assert.equal(closed, false);
    conn.cancel(id);
    assert.equal(closed, true);
  } finally {
    conn.close();
    await s.close();
  }
});

test('when the connection fails, each stream hears once, even if a handler closes or cancels', async () => {
  // Two requests' worth of frames, then the server goes.
  let got = 0;
  const server = await rawServer((socket, c) => {
    got += c.length;
    if (got > 80) socket.destroy();
  });
  const conn = new Http2ClientConnection(net.connect(server.socketPath), { windowBytes: 65_535 });
  const heard: string[] = [];
  let second = 0;
  const handler = (name: string, onError: () => void): StreamHandler => ({
    onHeaders: () => heard.push(`${name} headers`),
    onData: () => heard.push(`${name} data`),
    onEnd: () => heard.push(`${name} end`),
    onError: () => {
      heard.push(`${name} error`);
      onError();
    },
  });
  try {
    const fields = postTo('/x');
    let third = 0;
    // The first to hear cancels the third and closes the connection: the third must then hear
    // nothing, and no one twice.
    conn.request(
      fields,
      Buffer.from('one'),
      handler('first', () => {
        conn.cancel(third);
        conn.close();
      }),
    );
    second = conn.request(
      fields,
      Buffer.from('two'),
      handler('second', () => undefined),
    );
    third = conn.request(
      fields,
      Buffer.from('three'),
      handler('third', () => undefined),
    );
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(second > 0);
    assert.deepEqual(heard, ['first error', 'second error']);
  } finally {
    conn.close();
    await server.close();
  }
});

test('header blocks over one frame go out and come in as HEADERS then CONTINUATION frames', async () => {
  // 40 KiB of metadata each way: more than two frames of the 16 KiB both ends allow.
  const big = 'v'.repeat(40 * 1024);
  const s = await h2Server(
    (stream, headers) => {
      stream.respond({
        ':status': 200,
        'x-echo-length': String(String(headers['x-big']).length),
        'x-big': big,
      });
      stream.end('ok');
    },
    { maxHeaderListSize: 1024 * 1024 },
  );
  const conn = connect(s.socketPath);
  try {
    const a = await exchange(conn, '/big', Buffer.alloc(0), [['x-big', big]]);
    assert.equal(a.error, undefined);
    assert.equal(a.headers[0]?.get('x-echo-length'), String(big.length));
    assert.equal(a.headers[0]?.get('x-big'), big);
    assert.equal(a.body.toString(), 'ok');
    // The decoder's state carried across the split block: the next answer reads right too.
    const b = await exchange(conn, '/big', Buffer.alloc(0), [['x-big', 'small']]);
    assert.equal(b.headers[0]?.get('x-echo-length'), '5');
  } finally {
    conn.close();
    await s.close();
  }
});

test('after the server lowers SETTINGS_HEADER_TABLE_SIZE, the next header block opens with a table size update (RFC 7541 §4.2)', async () => {
  // nghttp2 refuses, with COMPRESSION_ERROR, a block after such a change that does not open with one.
  const s = await h2Server(
    (stream) => {
      stream.respond({ ':status': 200 });
      stream.end('ok');
    },
    { headerTableSize: 0 },
  );
  const conn = connect(s.socketPath);
  try {
    // The first request may leave before the server's SETTINGS come; the later ones follow them.
    for (let i = 0; i < 3; i++) {
      const bound = new Promise<Answer>((resolve) =>
        setTimeout(
          () => resolve({ headers: [], body: Buffer.alloc(0), error: new Error('no answer in 5 s') }),
          5000,
        ).unref(),
      );
      const a = await Promise.race([exchange(conn, `/n${i}`), bound]);
      assert.equal(a.error, undefined, `request ${i}: ${a.error?.message}`);
      assert.equal(a.body.toString(), 'ok');
    }
  } finally {
    conn.close();
    await s.close();
  }
});

test('health checks: a silent server fails the streams after an unanswered PING; a live one answers and the call completes', async () => {
  const healthCheck = { readIdleMs: 40, pingTimeoutMs: 60, closeWhenIdle: false };
  // Reads everything, sends nothing: a peer gone without a FIN looks like this from the client.
  const silent = await rawServer(() => undefined);
  const dead = new Http2ClientConnection(net.connect(silent.socketPath), {
    windowBytes: 65_535,
    healthCheck,
  });
  try {
    const started = Date.now();
    const a = await exchange(dead, '/never');
    assert.match(a.error?.message ?? '', /did not answer a PING within 60 ms/);
    assert.ok(Date.now() - started < 2000);
    assert.equal(dead.acceptsStreams, false);
  } finally {
    dead.close();
    await silent.close();
  }
  // With PINGs off (HTTP2_READ_IDLE_TIMEOUT_SECONDS=0) the same silence is waited out.
  const quiet = await rawServer(() => undefined);
  const waiting = new Http2ClientConnection(net.connect(quiet.socketPath), {
    windowBytes: 65_535,
    healthCheck: { ...healthCheck, ping: false },
  });
  try {
    let heard = false;
    waiting.request(
      postTo('/never'),
      Buffer.alloc(0),
      listener(() => (heard = true)),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(heard, false);
    assert.equal(waiting.acceptsStreams, true);
  } finally {
    waiting.close();
    await quiet.close();
  }
  // nghttp2 answers PINGs: a reply slower than several idle periods still comes.
  const s = await h2Server((stream) => {
    stream.on('data', () => undefined);
    stream.on('end', () =>
      setTimeout(() => {
        stream.respond({ ':status': 200 });
        stream.end('late');
      }, 400),
    );
  });
  const live = new Http2ClientConnection(net.connect(s.socketPath), { windowBytes: 65_535, healthCheck });
  try {
    const a = await exchange(live, '/slow');
    assert.equal(a.error, undefined);
    assert.equal(a.body.toString(), 'late');
  } finally {
    live.close();
    await s.close();
  }
});

test('closeWhenIdle: a connection that carried no stream for a whole check closes itself', async () => {
  const s = await h2Server((stream) => {
    stream.respond({ ':status': 200 });
    stream.end('ok');
  });
  const conn = new Http2ClientConnection(net.connect(s.socketPath), {
    windowBytes: 65_535,
    healthCheck: { readIdleMs: 50, pingTimeoutMs: 1000, closeWhenIdle: true },
  });
  try {
    const closed = new Promise<number>((resolve) => (conn.onClose = () => resolve(Date.now())));
    const a = await exchange(conn, '/one');
    assert.equal(a.error, undefined);
    const answeredAt = Date.now();
    const closedAt = await closed;
    assert.equal(conn.acceptsStreams, false);
    assert.ok(closedAt - answeredAt >= 0 && closedAt - answeredAt < 2000);
  } finally {
    conn.close();
    await s.close();
  }
});
