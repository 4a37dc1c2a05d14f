/**
 * Property-based fuzzing of SPDY/3 framing: the frame checker follows any well-framed stream however
 * it is chunked and flags the first header that cannot begin a frame; the SPDY connection fed
 * arbitrary bytes never throws past itself and closes on broken framing; and through the kubelet API,
 * a client that sends garbage on an exec stream gets a GOAWAY and a closed connection.
 */
import assert from 'node:assert/strict';
import net, { type AddressInfo, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { setLogSink } from '../../src/lib/log.js';
import { SpdyConnection, SpdyFrameChecker, spdyFrameHeaderProblem } from '../../src/server/spdy.js';
import { upgradeRequest } from '../unit/server/stream-clients.js';
import { fuzzRuns } from './fuzz-runs.js';
import { startStreamingKubelet, type StreamingKubelet } from './streaming-kubelet.js';

setLogSink(() => undefined);

const CLOSE_WITHIN_MS = 2000;

// ---- frames ----------------------------------------------------------------------------------------

function frameHeader(control: boolean, idOrType: number, flags: number, length: number): Buffer {
  const h = Buffer.alloc(8);
  if (control) {
    h.writeUInt16BE(0x8000 | 3, 0);
    h.writeUInt16BE(idOrType, 2);
  } else h.writeUInt32BE(idOrType & 0x7fffffff, 0);
  h.writeUInt32BE(length & 0xffffff, 4);
  h[4] = flags;
  return h;
}

/** A well-framed SPDY/3 frame: a data frame on a stream other than 0, or a control frame of a known type. */
const goodFrame = fc.oneof(
  fc
    .tuple(
      fc.integer({ min: 1, max: 0x7fffffff }),
      fc.integer({ min: 0, max: 255 }),
      fc.uint8Array({ maxLength: 64 }),
    )
    .map(([id, flags, p]) => Buffer.concat([frameHeader(false, id, flags, p.length), Buffer.from(p)])),
  fc
    .tuple(
      fc.constantFrom(1, 2, 3, 4, 6, 7, 8, 9),
      fc.integer({ min: 0, max: 255 }),
      fc.uint8Array({ minLength: 10, maxLength: 64 }),
    )
    .map(([type, flags, p]) => Buffer.concat([frameHeader(true, type, flags, p.length), Buffer.from(p)])),
);
/** An 8-byte header that cannot begin a SPDY/3 frame. */
const badHeader = fc
  .uint8Array({ minLength: 8, maxLength: 8 })
  .map((a) => Buffer.from(a))
  .filter((h) => spdyFrameHeaderProblem(h) !== undefined);

/** Splits bytes at arbitrary points. */
function chunked(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of [...points, bytes.length]) {
    out.push(bytes.subarray(prev, p));
    prev = p;
  }
  return out;
}

test('the frame checker follows well-framed streams in any chunks, and flags the first bad header', () => {
  fc.assert(
    fc.property(
      fc.array(goodFrame, { maxLength: 8 }),
      fc.option(badHeader, { nil: undefined }),
      fc.array(fc.nat(), { maxLength: 6 }),
      (frames, bad, cuts) => {
        const bytes = Buffer.concat([...frames, ...(bad ? [bad, Buffer.alloc(20)] : [])]);
        const checker = new SpdyFrameChecker();
        let problem: string | undefined;
        for (const c of chunked(bytes, cuts)) problem = checker.push(c);
        assert.equal(problem !== undefined, bad !== undefined, String(problem));
      },
    ),
    { numRuns: fuzzRuns() },
  );
});

// ---- the connection ----------------------------------------------------------------------------------

/** A SpdyConnection over a real socket pair; peer is the other end. */
async function connectionPair(): Promise<{ conn: SpdyConnection; peer: Socket; server: net.Server }> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise<void>((r) => socket.once('connect', () => r()));
  const peer = await accepted;
  return { conn: new SpdyConnection(socket), peer, server };
}

function closed(conn: SpdyConnection): Promise<boolean> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), CLOSE_WITHIN_MS);
    conn.once('close', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

test('a SPDY connection fed arbitrary bytes never throws, and closes on broken framing', async () => {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.array(goodFrame, { maxLength: 4 }),
        fc.oneof(
          badHeader,
          fc.uint8Array({ maxLength: 256 }).map((a) => Buffer.from(a)),
        ),
        async (frames, tail) => {
          const { conn, peer, server } = await connectionPair();
          conn.on('error', () => undefined);
          const stream = conn.openStream({ streamtype: 'stdout' });
          stream.on('error', () => undefined);
          stream.resume();
          const isClosed = closed(conn);
          peer.on('error', () => undefined);
          peer.resume();
          peer.write(Buffer.concat([...frames, tail]));
          const broken = tail.length >= 8 && spdyFrameHeaderProblem(tail.subarray(0, 8)) !== undefined;
          if (!broken) peer.end(); // well framed so far: the peer hanging up closes it
          assert.equal(await isClosed, true, 'the connection closed');
          peer.destroy();
          server.close();
        },
      ),
      { numRuns: Math.max(20, Math.floor(fuzzRuns() / 3)) },
    );
  } finally {
    process.off('uncaughtException', onUncaught);
  }
  assert.deepEqual(uncaught, []);
});

// ---- through the kubelet API ---------------------------------------------------------------------------

let kubelet: StreamingKubelet;
before(async () => {
  kubelet = await startStreamingKubelet();
});
after(() => kubelet.close());

test('garbage on an exec stream gets a GOAWAY and a closed connection; good frames pass', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(goodFrame, { maxLength: 3 }), badHeader, async (frames, bad) => {
      const { socket } = await upgradeRequest(
        `https://127.0.0.1:${kubelet.port}/exec/default/web/c?command=sh&output=1`,
        { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'v4.channel.k8s.io' },
        { rejectUnauthorized: false },
      );
      const received: Buffer[] = [];
      socket.on('data', (d: Buffer) => received.push(d));
      socket.on('error', () => undefined);
      const isClosed = new Promise<boolean>((resolve) => {
        const t = setTimeout(() => resolve(false), CLOSE_WITHIN_MS);
        socket.once('close', () => {
          clearTimeout(t);
          resolve(true);
        });
      });
      socket.write(Buffer.concat([...frames, bad, Buffer.alloc(16)]));
      assert.equal(await isClosed, true, 'the kubelet closed the connection');
      const answer = Buffer.concat(received);
      // The last frame is a GOAWAY with PROTOCOL_ERROR: 80 03 00 07, flags 0, length 8, stream 0, status 1.
      assert.deepEqual(
        [...answer.subarray(answer.length - 16)],
        [0x80, 3, 0, 7, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1],
      );
      for (let waited = 0; kubelet.runtimeSockets.size > 0 && waited < CLOSE_WITHIN_MS; waited += 20)
        await new Promise((r) => setTimeout(r, 20));
      assert.equal(kubelet.runtimeSockets.size, 0, 'the runtime side was closed too');
    }),
    { numRuns: Math.max(10, Math.floor(fuzzRuns() / 15)) },
  );
});
