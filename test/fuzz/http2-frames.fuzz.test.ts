/**
 * Property-based fuzzing of the HTTP/2 client connection's frame reader, fed by a raw server over a
 * loopback socket: arbitrary frame sequences end every request exactly once (an answer or an error)
 * within a bound and never throw past the connection; each kind of protocol violation after a valid
 * start gets a GOAWAY with its code and fails the streams still open; a GOAWAY mid-stream refuses
 * the streams above its last ID and lets the others finish. And against an independent HPACK
 * encoder: a node:http2 server (nghttp2: Huffman, dynamic table, CONTINUATION) sends random header
 * lists, which reach the client's handler as sent.
 */
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net, { type AddressInfo, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { Http2ClientConnection, Http2ErrorCode } from '../../src/lib/http2/client-connection.js';
import type { Http2StreamError, StreamHandler } from '../../src/lib/http2/stream-handler.js';
import { fuzzRuns } from './fuzz-runs.js';

const SETTLE_WITHIN_MS = 2000;
const PREFACE_BYTES = 24;

// ---- a raw server --------------------------------------------------------------------------------

let server: net.Server;
let port: number;
const accepted: ((s: Socket) => void)[] = [];
before(async () => {
  server = net.createServer((s) => accepted.shift()?.(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(() => server.close());

function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Uint8Array,
  lyingLength?: number,
): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(lyingLength ?? payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId >>> 0, 5);
  return Buffer.concat([h, payload]);
}

const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
};
/** HEADERS ending the headers, with `:status: 200` (static index 8). */
const okHeaders = (id: number, endStream: boolean): Buffer =>
  frame(1, 0x4 | (endStream ? 1 : 0), id, Buffer.from([0x88]));
const data = (id: number, bytes: number, endStream: boolean): Buffer =>
  frame(0, endStream ? 1 : 0, id, Buffer.alloc(bytes, 0x61));
const goAway = (lastId: number, code: number): Buffer =>
  frame(7, 0, 0, Buffer.concat([u32(lastId), u32(code)]));

interface Outcome {
  events: string[];
  errors: Http2StreamError[];
}

interface Run {
  outcomes: Outcome[];
  /** The frames the client wrote, after its preface. */
  clientFrames: { type: number; streamId: number; payload: Buffer }[];
  uncaught: unknown[];
}

/**
 * Opens a connection with `requests` streams (IDs 1, 3, 5…), has the server write `chunks` and then
 * close, and waits until every stream has ended one way or the other (or the bound passes).
 */
async function run(requests: number, chunks: Buffer[]): Promise<Run> {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown): void => void uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  const peerP = new Promise<Socket>((resolve) => accepted.push(resolve));
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const peer = await peerP;
  const received: Buffer[] = [];
  peer.on('data', (b: Buffer) => received.push(b));
  peer.on('error', () => undefined);
  const conn = new Http2ClientConnection(socket, { windowBytes: 65_535 });
  const outcomes: Outcome[] = [];
  let settled = 0;
  let allSettled: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (allSettled = resolve));
  for (let i = 0; i < requests; i++) {
    const o: Outcome = { events: [], errors: [] };
    outcomes.push(o);
    const terminal = (): void => {
      if (++settled === requests) allSettled();
    };
    const handler: StreamHandler = {
      onHeaders: (_f, end) => void o.events.push(end ? 'headers+end' : 'headers'),
      onData: () => void o.events.push('data'),
      onEnd: () => {
        o.events.push('end');
        terminal();
      },
      onError: (e) => {
        o.events.push('error');
        o.errors.push(e);
        terminal();
      },
    };
    conn.request(
      [
        [':method', 'POST'],
        [':path', '/x'],
        [':scheme', 'http'],
        [':authority', 'local'],
      ],
      Buffer.alloc(10),
      handler,
    );
  }
  for (const c of chunks) {
    if (peer.destroyed) break;
    peer.write(c);
    await new Promise((r) => setImmediate(r));
  }
  // Give the client a moment to answer, then the server goes: nothing may be left waiting.
  await new Promise((r) => setTimeout(r, 5));
  peer.end();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([done, new Promise((r) => (timer = setTimeout(r, SETTLE_WITHIN_MS)))]);
  clearTimeout(timer);
  // The client's last frames (a GOAWAY) reach the server before it closes its end.
  await new Promise<void>((resolve) => {
    const t = setTimeout(resolve, 200);
    if (peer.readableEnded) resolve();
    else peer.once('end', () => (clearTimeout(t), resolve()));
  });
  conn.close();
  peer.destroy();
  socket.destroy();
  process.off('uncaughtException', onUncaught);
  return { outcomes, clientFrames: parseFrames(Buffer.concat(received).subarray(PREFACE_BYTES)), uncaught };
}

function parseFrames(bytes: Buffer): Run['clientFrames'] {
  const out: Run['clientFrames'] = [];
  for (let at = 0; bytes.length - at >= 9;) {
    const length = bytes.readUIntBE(at, 3);
    if (bytes.length - at < 9 + length) break;
    out.push({
      type: bytes[at + 3]!,
      streamId: bytes.readUInt32BE(at + 5),
      payload: bytes.subarray(at + 9, at + 9 + length),
    });
    at += 9 + length;
  }
  return out;
}

/** Every stream ended exactly once, as its last event, and nothing escaped the connection. */
function assertSettled(r: Run): void {
  assert.deepEqual(r.uncaught, []);
  for (const o of r.outcomes) {
    const terminals = o.events.filter((e) => e === 'end' || e === 'error');
    assert.equal(terminals.length, 1, `events ${o.events.join(',')}`);
    assert.ok(o.events.at(-1) === 'end' || o.events.at(-1) === 'error');
  }
}

function goAwayCode(r: Run): number | undefined {
  const g = r.clientFrames.find((f) => f.type === 7);
  return g && g.payload.readUInt32BE(4);
}

// ---- frames --------------------------------------------------------------------------------------

const streamId = fc.oneof(fc.constantFrom(0, 1, 3, 5, 7), fc.integer({ min: 0, max: 2 ** 32 - 1 }));
const anyFrame = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(fc.integer({ min: 0, max: 12 }), fc.nat(255), streamId, fc.uint8Array({ maxLength: 64 }))
      .map(([t, f, id, p]) => frame(t, f, id, p)),
  },
  // A length field that lies: past what comes, or past SETTINGS_MAX_FRAME_SIZE.
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.integer({ min: 0, max: 9 }),
        streamId,
        fc.uint8Array({ maxLength: 16 }),
        fc.integer({ min: 0, max: 2 ** 24 - 1 }),
      )
      .map(([t, id, p, len]) => frame(t, 0, id, p, len)),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      okHeaders(1, false),
      okHeaders(3, true),
      data(1, 5, true),
      frame(4, 0, 0, Buffer.alloc(0)),
    ),
  },
);

/** Splits bytes at arbitrary points, as a socket may deliver them. */
function chunked(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const p of [...points, bytes.length]) {
    if (p > from) out.push(bytes.subarray(from, p));
    from = p;
  }
  return out;
}

test('arbitrary frame sequences end every stream exactly once, within a bound, throwing nothing', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 3 }),
      fc.array(anyFrame, { maxLength: 12 }),
      fc.array(fc.nat(), { maxLength: 6 }),
      async (requests, frames, cuts) => {
        const r = await run(requests, chunked(Buffer.concat(frames), cuts));
        assertSettled(r);
      },
    ),
    { numRuns: Math.ceil(fuzzRuns() / 3) },
  );
});

/** A valid start: settings, then stream 1 answered and ended; streams 3 and 5 stay open. */
const validStart = [
  frame(4, 0, 0, Buffer.alloc(0)),
  okHeaders(1, false),
  data(1, 3, false),
  frame(6, 0, 0, Buffer.alloc(8)),
  data(1, 0, true),
  okHeaders(3, false),
];

const violations: [string, Buffer[], number][] = [
  [
    'a frame past SETTINGS_MAX_FRAME_SIZE',
    [frame(0, 0, 3, Buffer.alloc(16_385))],
    Http2ErrorCode.FRAME_SIZE_ERROR,
  ],
  ['CONTINUATION without HEADERS', [frame(9, 4, 3, Buffer.from([0x88]))], Http2ErrorCode.PROTOCOL_ERROR],
  [
    'HEADERS interrupted by DATA',
    [frame(1, 0, 5, Buffer.from([0x88])), data(3, 1, false)],
    Http2ErrorCode.PROTOCOL_ERROR,
  ],
  [
    'padding longer than the frame',
    [frame(0, 0x8, 3, Buffer.from([5, 1, 2]))],
    Http2ErrorCode.PROTOCOL_ERROR,
  ],
  [
    'padding on HEADERS longer than the frame',
    [frame(1, 0x8 | 0x4, 5, Buffer.from([9, 0x88]))],
    Http2ErrorCode.PROTOCOL_ERROR,
  ],
  ['a connection window past 2^31-1', [frame(8, 0, 0, u32(2 ** 31 - 1))], Http2ErrorCode.FLOW_CONTROL_ERROR],
  // RFC 9113 §6.9: an increment of 0 is a PROTOCOL_ERROR, not a flow-control one.
  ['a connection window update of 0', [frame(8, 0, 0, u32(0))], Http2ErrorCode.PROTOCOL_ERROR],
  [
    'PUSH_PROMISE with push disabled',
    [frame(5, 4, 3, Buffer.from([0, 0, 0, 2, 0x88]))],
    Http2ErrorCode.PROTOCOL_ERROR,
  ],
  ['a header block HPACK refuses', [frame(1, 4, 5, Buffer.from([0x80]))], Http2ErrorCode.COMPRESSION_ERROR],
  ['SETTINGS on a stream', [frame(4, 0, 3, Buffer.alloc(0))], Http2ErrorCode.PROTOCOL_ERROR],
  ['PING of 7 octets', [frame(6, 0, 0, Buffer.alloc(7))], Http2ErrorCode.FRAME_SIZE_ERROR],
  [
    'MAX_FRAME_SIZE under 16384',
    [frame(4, 0, 0, Buffer.from([0, 5, 0, 0, 0x3f, 0xff]))],
    Http2ErrorCode.PROTOCOL_ERROR,
  ],
];

test('each protocol violation after a valid start gets a GOAWAY with its code and fails the open streams', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...violations),
      fc.array(fc.nat(), { maxLength: 4 }),
      async ([, bad, code], cuts) => {
        const r = await run(3, chunked(Buffer.concat([...validStart, ...bad, okHeaders(5, true)]), cuts));
        assertSettled(r);
        assert.equal(r.outcomes[0]!.events.at(-1), 'end');
        assert.equal(goAwayCode(r), code);
        for (const o of r.outcomes.slice(1)) {
          assert.equal(o.events.at(-1), 'error');
          assert.equal(o.errors[0]!.code, code);
        }
      },
    ),
    { numRuns: Math.min(fuzzRuns(), 200) },
  );
});

test('a stream WINDOW_UPDATE of 0 or past 2^31-1 resets that stream only', async () => {
  // RFC 9113 §6.9: stream errors (RST_STREAM), PROTOCOL_ERROR and FLOW_CONTROL_ERROR; the connection goes on.
  const cases: [number, number][] = [
    [0, Http2ErrorCode.PROTOCOL_ERROR],
    [2 ** 31 - 1, Http2ErrorCode.FLOW_CONTROL_ERROR],
  ];
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...cases),
      fc.array(fc.nat(), { maxLength: 4 }),
      async ([increment, code], cuts) => {
        const r = await run(
          3,
          chunked(Buffer.concat([...validStart, frame(8, 0, 3, u32(increment)), okHeaders(5, true)]), cuts),
        );
        assertSettled(r);
        assert.deepEqual(
          r.outcomes.map((o) => o.events.at(-1)),
          ['end', 'error', 'end'],
        );
        assert.equal(r.outcomes[1]!.errors[0]!.code, code);
        const reset = r.clientFrames.find((f) => f.type === 3 && f.streamId === 3);
        assert.equal(reset?.payload.readUInt32BE(0), code);
        assert.ok(!goAwayCode(r), 'no connection error');
      },
    ),
    { numRuns: Math.min(fuzzRuns(), 50) },
  );
});

test('a GOAWAY mid-stream refuses the streams above its last ID and lets the others finish', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(0, 1, 3, 5),
      fc.nat(),
      fc.array(fc.nat(), { maxLength: 4 }),
      async (lastId, code, cuts) => {
        const answers = [1, 3, 5]
          .filter((id) => id <= lastId)
          .flatMap((id) => [okHeaders(id, false), data(id, 2, true)]);
        const r = await run(
          3,
          chunked(Buffer.concat([okHeaders(1, false), goAway(lastId, code), ...answers]), cuts),
        );
        assertSettled(r);
        [1, 3, 5].forEach((id, i) => {
          const o = r.outcomes[i]!;
          if (id <= lastId) assert.equal(o.events.at(-1), 'end');
          else assert.equal(o.errors[0]!.code, Http2ErrorCode.REFUSED_STREAM);
        });
      },
    ),
    { numRuns: Math.min(fuzzRuns(), 200) },
  );
});

// ---- against node:http2's encoder ----------------------------------------------------------------

const TOKEN = "abcdefghijklmnopqrstuvwxyz0123456789-_.!#$%&'*+^`|~";
const FORBIDDEN = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'date',
  'http2-settings',
  'host',
]);
const headerName = fc
  .array(fc.constantFrom(...TOKEN), { minLength: 1, maxLength: 20 })
  .map((a) => a.join(''))
  .filter((n) => !FORBIDDEN.has(n));
const headerValue = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.string({
      unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
      maxLength: 40,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.string({
      unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
      minLength: 500,
      maxLength: 3000,
    }),
  },
);
const headerList = fc.dictionary(headerName, headerValue, { maxKeys: 12 });

test('header lists sent by a node:http2 server reach the stream handler as sent', async () => {
  const h2 = http2.createServer({ maxSendHeaderBlockLength: 1 << 20 });
  let nextHeaders: Record<string, string>[] = [];
  h2.on('stream', (stream) => {
    const headers = nextHeaders.shift() ?? {};
    stream.respond({ ':status': 200, ...headers }, { endStream: true });
  });
  h2.on('sessionError', () => undefined);
  await new Promise<void>((resolve) => h2.listen(0, '127.0.0.1', resolve));
  const h2Port = (h2.address() as AddressInfo).port;
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(headerList, { minLength: 1, maxLength: 6 }), async (lists) => {
        nextHeaders = [...lists];
        const socket = net.connect(h2Port, '127.0.0.1');
        const conn = new Http2ClientConnection(socket, { windowBytes: 65_535 });
        try {
          // One after another on one connection, so nghttp2's dynamic table carries entries across blocks.
          for (const sent of lists) {
            const got = await new Promise<Map<string, string>>((resolve, reject) => {
              const timer = setTimeout(() => reject(new Error('no answer')), SETTLE_WITHIN_MS);
              let fields: Map<string, string> | undefined;
              conn.request(
                [
                  [':method', 'GET'],
                  [':path', '/'],
                  [':scheme', 'http'],
                  [':authority', 'local'],
                ],
                Buffer.alloc(0),
                {
                  onHeaders: (f) => (fields = f),
                  onData: () => undefined,
                  onEnd: () => {
                    clearTimeout(timer);
                    resolve(fields ?? new Map());
                  },
                  onError: (e) => {
                    clearTimeout(timer);
                    reject(e);
                  },
                },
              );
            });
            assert.equal(got.get(':status'), '200');
            for (const [name, value] of Object.entries(sent)) assert.equal(got.get(name), value, name);
          }
        } finally {
          conn.close();
        }
      }),
      { numRuns: Math.ceil(fuzzRuns() / 3) },
    );
  } finally {
    await new Promise((resolve) => h2.close(resolve));
  }
});
