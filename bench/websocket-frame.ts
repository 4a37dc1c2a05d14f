/**
 * The kubelet's WebSocket server reading one large client frame, as `kubectl exec` with a big stdin
 * write or a port-forward of a large transfer sends it: a 30 MiB masked binary frame written by a raw
 * TCP client in 64 KiB chunks, timed from the first chunk to the server's message callback. The
 * figure is the framing's own cost (parsing, unmasking, buffering), with loopback's transfer in it.
 *
 * Env: BENCH_WS_FRAME_MIB (default 30), BENCH_WS_CHUNK_KIB (default 64), BENCH_WS_ROUNDS (default 5).
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { acceptWebSocket } from '../src/server/websocket.js';
import { emit, envNumber, percentile, quickMode, say } from './report.js';

const BENCH = 'websocket';

/** One masked client frame carrying payload (RFC 6455 §5.2), built before the clock starts. */
function maskedFrame(payload: Buffer): Buffer {
  const header = Buffer.alloc(14);
  header[0] = 0x82; // FIN + binary
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(payload.length), 2);
  const mask = randomBytes(4);
  mask.copy(header, 10);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i]! ^= mask[i & 3]!;
  return Buffer.concat([header, body]);
}

async function main(): Promise<void> {
  const frameBytes = envNumber('BENCH_WS_FRAME_MIB', 30) * 1024 * 1024;
  const chunkBytes = envNumber('BENCH_WS_CHUNK_KIB', 64) * 1024;
  const rounds = envNumber('BENCH_WS_ROUNDS', quickMode() ? 3 : 5);
  const payload = randomBytes(frameBytes);
  const frame = maskedFrame(payload);

  let onMessage: (data: Buffer) => void = () => undefined;
  const server = http.createServer();
  server.on('upgrade', (req, socket, head) => {
    acceptWebSocket(req, socket, head, 'v5.channel.k8s.io', {
      onMessage: (data) => onMessage(data),
      onClose: () => undefined,
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const wallMs: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const key = randomBytes(16).toString('base64');
    socket.write(
      `GET /exec HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
        `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n`,
    );
    const expectedAccept = createHash('sha1')
      .update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64');
    const answer = await new Promise<string>((resolve) =>
      socket.once('data', (d: Buffer) => resolve(d.toString())),
    );
    if (!answer.includes(expectedAccept)) throw new Error(`bad handshake answer: ${answer.split('\r\n')[0]}`);
    socket.on('data', () => undefined);

    const received = new Promise<Buffer>((resolve) => (onMessage = resolve));
    const start = performance.now();
    for (let offset = 0; offset < frame.length; offset += chunkBytes) {
      if (!socket.write(frame.subarray(offset, offset + chunkBytes))) {
        await new Promise((resolve) => socket.once('drain', resolve));
      }
    }
    const data = await received;
    wallMs.push(performance.now() - start);
    if (!data.equals(payload)) throw new Error('the server received other bytes than were sent');
    socket.destroy();
  }
  server.closeAllConnections();
  server.close();

  const p50 = percentile(wallMs, 50);
  say(
    `websocket: ${frameBytes / 1024 / 1024} MiB frame in ${chunkBytes / 1024} KiB chunks: p50 ${p50.toFixed(1)} ms`,
  );
  const note = `one ${frameBytes / 1024 / 1024} MiB masked frame written in ${chunkBytes / 1024} KiB chunks → message callback; ${rounds} round(s)`;
  emit({ bench: BENCH, n: frameBytes / 1024 / 1024, metric: 'large_frame_p50_ms', value: p50, note });
  emit({
    bench: BENCH,
    n: frameBytes / 1024 / 1024,
    metric: 'large_frame_max_ms',
    value: Math.max(...wallMs),
  });
}

await main();
