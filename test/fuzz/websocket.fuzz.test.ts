/**
 * Property-based fuzzing of WebSocket framing through the kubelet API: on a v5.channel.k8s.io exec
 * stream (which the kubelet serves itself, translating to SPDY for the runtime), a malformed client
 * frame gets a close frame with 1002 (protocol error) and the connection and the runtime's stream
 * close; arbitrary well-formed messages never break the server.
 */
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { setLogSink } from '../../src/lib/log.js';
import { upgradeRequest } from '../unit/server/stream-clients.js';
import { fuzzRuns } from './fuzz-runs.js';
import { startStreamingKubelet, type StreamingKubelet } from './streaming-kubelet.js';

setLogSink(() => undefined);

const CLOSE_WITHIN_MS = 2000;
let kubelet: StreamingKubelet;
before(async () => {
  kubelet = await startStreamingKubelet();
});
after(() => kubelet.close());

/** A client frame: masked, as RFC 6455 requires of clients, unless told otherwise. */
function clientFrame(b0: number, payload: Buffer, opts: { masked?: boolean; mask?: Buffer } = {}): Buffer {
  const masked = opts.masked !== false;
  const len = payload.length;
  const lenBytes =
    len < 126
      ? Buffer.from([len])
      : len < 65536
        ? Buffer.from([126, len >> 8, len & 0xff])
        : (() => {
            const b = Buffer.alloc(9);
            b[0] = 127;
            b.writeBigUInt64BE(BigInt(len), 1);
            return b;
          })();
  if (masked) lenBytes[0]! |= 0x80;
  const mask = opts.mask ?? Buffer.from([1, 2, 3, 4]);
  const body = masked ? Buffer.from(payload.map((b, i) => b ^ mask[i & 3]!)) : payload;
  return Buffer.concat([Buffer.from([b0]), lenBytes, masked ? mask : Buffer.alloc(0), body]);
}

const payload = fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a));
/** A message the translator takes: a channel byte then data (stdin 0, resize 4, close 255, others ignored). */
const goodMessage = fc
  .tuple(fc.constantFrom(0, 1, 2, 3, 4, 255), payload)
  .map(([channel, data]) => clientFrame(0x82, Buffer.concat([Buffer.from([channel]), data])));
/** Frames RFC 6455 forbids from a client. */
const malformed = fc.oneof(
  payload.map((p) => clientFrame(0x82, p, { masked: false })), // unmasked
  fc.tuple(fc.integer({ min: 1, max: 7 }), payload).map(([rsv, p]) => clientFrame(0x82 | (rsv << 4), p)), // reserved bits
  fc
    .tuple(fc.constantFrom(3, 4, 5, 6, 7, 0xb, 0xc, 0xd, 0xe, 0xf), payload)
    .map(([op, p]) => clientFrame(0x80 | op, p)), // unknown opcode
  fc.uint8Array({ minLength: 126, maxLength: 300 }).map((p) => clientFrame(0x89, Buffer.from(p))), // control frame > 125
  payload.map((p) => clientFrame(0x09, p.subarray(0, 100))), // fragmented ping
  payload.map((p) => clientFrame(0x80, p)), // continuation without a message
);

async function openExec(): Promise<{ socket: Socket; received: Buffer[]; closed: Promise<boolean> }> {
  const { socket, head } = await upgradeRequest(
    `https://127.0.0.1:${kubelet.port}/exec/default/web/c?command=sh&input=1&output=1`,
    {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': Buffer.from('0123456789abcdef').toString('base64'),
      'sec-websocket-protocol': 'v5.channel.k8s.io',
    },
    { rejectUnauthorized: false },
    'GET',
  );
  const received: Buffer[] = [head];
  socket.on('data', (d: Buffer) => received.push(d));
  socket.on('error', () => undefined);
  const closed = new Promise<boolean>((resolve) => {
    const t = setTimeout(() => resolve(false), CLOSE_WITHIN_MS);
    socket.once('close', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
  return { socket, received, closed };
}

/** The status codes of the close frames (opcode 8) among what the server sent. */
function closeCodes(bytes: Buffer): number[] {
  const codes: number[] = [];
  for (let off = 0; off + 2 <= bytes.length;) {
    const opcode = bytes[off]! & 0x0f;
    let len = bytes[off + 1]! & 0x7f;
    let start = off + 2;
    if (len === 126) {
      len = bytes.readUInt16BE(off + 2);
      start = off + 4;
    } else if (len === 127) {
      len = Number(bytes.readBigUInt64BE(off + 2));
      start = off + 10;
    }
    if (opcode === 8 && len >= 2) codes.push(bytes.readUInt16BE(start));
    off = start + len;
  }
  return codes;
}

test('a malformed client frame gets a 1002 close, and both sides of the stream close', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(goodMessage, { maxLength: 3 }), malformed, async (good, bad) => {
      const { socket, received, closed } = await openExec();
      socket.write(Buffer.concat([...good, bad]));
      assert.equal(await closed, true, 'the kubelet closed the connection');
      assert.deepEqual(closeCodes(Buffer.concat(received)), [1002]);
      for (let waited = 0; kubelet.runtimeSockets.size > 0 && waited < CLOSE_WITHIN_MS; waited += 20)
        await new Promise((r) => setTimeout(r, 20));
      assert.equal(kubelet.runtimeSockets.size, 0, 'the runtime stream was closed too');
    }),
    { numRuns: Math.max(10, Math.floor(fuzzRuns() / 15)) },
  );
});

test('well-formed messages of any content keep the stream open; a close frame ends it cleanly', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(goodMessage, { maxLength: 5 }), async (good) => {
      const { socket, received, closed } = await openExec();
      socket.write(Buffer.concat(good));
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(socket.destroyed, false, 'still open');
      socket.write(clientFrame(0x88, Buffer.from([0x03, 0xe8])));
      assert.equal(await closed, true);
      assert.ok(closeCodes(Buffer.concat(received)).every((c) => c === 1000));
    }),
    { numRuns: Math.max(10, Math.floor(fuzzRuns() / 15)) },
  );
});

// Found by the property above (seed -1488299497): stdin closed (channel 255, then 0), then more stdin.
test('stdin sent after the client closed it is dropped, and a close frame still ends the stream', async () => {
  const { socket, received, closed } = await openExec();
  socket.write(clientFrame(0x82, Buffer.from([255, 0])));
  socket.write(clientFrame(0x82, Buffer.from([0])));
  socket.write(clientFrame(0x82, Buffer.from([0, 0x68, 0x69])));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(socket.destroyed, false, 'still open');
  socket.write(clientFrame(0x88, Buffer.from([0x03, 0xe8])));
  assert.equal(await closed, true, 'the close frame was read and answered');
  assert.deepEqual(closeCodes(Buffer.concat(received)), [1000]);
});
