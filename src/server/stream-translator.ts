/**
 * What upstream's API server (and since 1.36 the kubelet itself) does for clients the runtime cannot
 * serve directly:
 * - WebSocket `v5.channel.k8s.io` exec/attach (kubectl 1.30+): CRI streaming servers speak WebSocket
 *   only up to v4, and v4 cannot half-close stdin. The WebSocket is accepted here and translated to
 *   SPDY remote command v4 toward the runtime (upstream StreamTranslatorHandler).
 * - port-forward tunnelled over WebSocket (`SPDY/3.1+portforward.k8s.io`, earlier `v2.portforward.k8s.io`):
 *   each binary message carries SPDY bytes, which go to the runtime's SPDY port-forward as they are
 *   (upstream TunnelingHandler).
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { sendText, type RequestContext } from './request-context.js';
import { SpdyConnection, type SpdyStream } from './spdy.js';
import {
  dialUpgrade,
  forwardedHeaders,
  idleTimer,
  responseHead,
  type StreamRegistry,
} from './stream-proxy.js';
import { acceptWebSocket, offeredProtocols, type WebSocketConnection } from './websocket.js';

const log = logger('server');

export const STREAM_PROTOCOL_V5 = 'v5.channel.k8s.io';
const STREAM_PROTOCOL_V4 = 'v4.channel.k8s.io';
const TUNNELING_PREFIX = 'SPDY/3.1+';
const LEGACY_TUNNELING_PROTOCOL = 'v2.portforward.k8s.io';
const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';

/** Channel numbers of the channel.k8s.io protocols. */
const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
/** v5: a message on this channel closes the channel named by its one-byte body. */
const CLOSE_SIGNAL = 255;

export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** wsstream.IsWebSocketRequestWithStreamCloseProtocol: a WebSocket client offering v5. */
export function wantsStreamTranslation(req: IncomingMessage): boolean {
  return offeredProtocols(req).includes(STREAM_PROTOCOL_V5);
}

/** The SPDY protocols tunnelled in the client's WebSocket subprotocols, and what to answer it. */
export function tunnelingProtocols(req: IncomingMessage): { spdy: string[]; legacy: boolean } | undefined {
  const offered = offeredProtocols(req);
  const spdy = offered
    .filter((p) => p.startsWith(TUNNELING_PREFIX) && p.endsWith('.k8s.io'))
    .map((p) => p.slice(TUNNELING_PREFIX.length));
  if (spdy.length > 0) return { spdy, legacy: false };
  if (offered.includes(LEGACY_TUNNELING_PROTOCOL)) return { spdy: [PORT_FORWARD_PROTOCOL], legacy: true };
  return undefined;
}

function statusJson(status: Record<string, unknown>): Buffer {
  return Buffer.from(JSON.stringify({ metadata: {}, ...status }));
}

/** Sends on a channel; false when the WebSocket's socket buffer is full. */
function sendOn(ws: WebSocketConnection, channel: number, data: Buffer): boolean {
  return ws.send(Buffer.concat([Buffer.from([channel]), data]));
}

/**
 * Serves a v5 WebSocket exec/attach by speaking SPDY remote command v4 to the runtime's URL. Errors
 * after the WebSocket opened are reported as a Status on the error channel, as upstream does.
 */
export async function translateToSpdy(
  ctx: RequestContext,
  runtimeUrl: string,
  opts: StreamOptions,
  idleMs: number,
  registry: StreamRegistry,
): Promise<void> {
  const up = ctx.upgrade!;
  // Filled in as each side comes up; finish() may run before either does (a client that leaves at once).
  const peer: { ws?: WebSocketConnection; spdy?: SpdyConnection } = {};
  let finished = false;
  const streams: Partial<Record<'stdin' | 'stdout' | 'stderr' | 'error' | 'resize', SpdyStream>> = {};

  const idle = idleTimer(idleMs, () => {
    log.v(2, 'Closing an idle stream', { stream: ctx.path, idleTimeoutMs: idleMs });
    finish(undefined);
  });
  const unregister = registry.add({ close: () => finish(undefined) });
  function finish(status: Buffer | undefined): void {
    if (finished) return;
    finished = true;
    idle.stop();
    unregister();
    if (peer.ws?.isOpen) {
      if (status) sendOn(peer.ws, ERROR, status);
      peer.ws.close(1000);
    }
    peer.spdy?.close();
  }

  const ws = acceptWebSocket(ctx.req, up.socket, up.head, STREAM_PROTOCOL_V5, {
    onMessage: (data) => {
      idle.touch();
      if (data.length === 0) return;
      const channel = data[0]!;
      const body = data.subarray(1);
      if (channel === CLOSE_SIGNAL) {
        if (body[0] === STDIN) streams.stdin?.end();
        return;
      }
      // Stdin the client has closed takes nothing more: a write after end would fail, and the pause
      // its `false` asks for would never be lifted (no drain comes), so not even a close frame would
      // be read again.
      if (channel === STDIN && streams.stdin && !streams.stdin.writableEnded) {
        if (!streams.stdin.write(body)) peer.ws?.pause();
      } else if (channel === RESIZE && streams.resize) {
        streams.resize.write(body);
      }
    },
    onClose: () => finish(undefined),
  });
  if (!ws) {
    finish(undefined);
    return;
  }
  peer.ws = ws;
  // Nothing from the client is read until the runtime's streams exist to take it.
  ws.pause();
  // Tell the client the connection is up: an empty message on the lowest writable channel (wsstream does the same).
  sendOn(ws, opts.stdout ? STDOUT : opts.stderr ? STDERR : ERROR, Buffer.alloc(0));

  let dialed;
  try {
    dialed = await dialUpgrade(
      new URL(runtimeUrl),
      'POST',
      { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': [STREAM_PROTOCOL_V4] },
      ctx.signal,
    );
  } catch (err) {
    const message = `error dialing backend: ${errorMessage(err)}`;
    return finish(statusJson({ status: 'Failure', message, reason: 'InternalError', code: 500 }));
  }
  if (!dialed.upgraded) {
    const chunks: Buffer[] = [];
    for await (const c of dialed.response) chunks.push(c as Buffer);
    const code = dialed.response.statusCode ?? 500;
    const message =
      Buffer.concat(chunks).toString('utf8').trim() ||
      `unable to upgrade connection: ${dialed.response.statusMessage ?? code}`;
    return finish(
      statusJson({ status: 'Failure', message, reason: code === 404 ? 'NotFound' : 'InternalError', code }),
    );
  }
  if (finished) {
    dialed.socket.destroy();
    return;
  }
  dialed.socket.setNoDelay(true);
  const conn = new SpdyConnection(dialed.socket, dialed.head);
  peer.spdy = conn;
  conn.on('error', (err: Error) => log.v(2, 'SPDY connection to the runtime failed', { err: err.message }));

  // Upstream's v4 client opens the error stream first, then the ones asked for.
  streams.error = conn.openStream({ streamtype: 'error' });
  if (opts.stdin) streams.stdin = conn.openStream({ streamtype: 'stdin' });
  if (opts.stdout) streams.stdout = conn.openStream({ streamtype: 'stdout' });
  if (opts.stderr && !opts.tty) streams.stderr = conn.openStream({ streamtype: 'stderr' });
  if (opts.tty) streams.resize = conn.openStream({ streamtype: 'resize' });
  streams.stdin?.on('drain', () => ws.resume());
  for (const s of [streams.stdin, streams.resize]) s?.on('error', () => undefined);
  ws.resume();

  const errorChunks: Buffer[] = [];
  const ended: Promise<void>[] = [];
  let waitingForDrain = false;
  const collect = (s: SpdyStream | undefined, onData: (d: Buffer) => void) => {
    if (!s) return;
    s.on('error', () => undefined);
    s.on('data', (d: Buffer) => {
      idle.touch();
      onData(d);
    });
    ended.push(new Promise((resolve) => s.once('end', resolve).once('close', resolve)));
  };
  const forward = (channel: number) => (d: Buffer) => {
    if (sendOn(ws, channel, d) || waitingForDrain) return;
    // The client reads slowly: stop reading from the runtime until its socket drains.
    waitingForDrain = true;
    conn.pauseReading();
    up.socket.once('drain', () => {
      waitingForDrain = false;
      conn.resumeReading();
    });
  };
  collect(streams.stdout, forward(STDOUT));
  collect(streams.stderr, forward(STDERR));
  collect(streams.error, (d) => errorChunks.push(d));
  await Promise.all(ended);
  const reported = Buffer.concat(errorChunks);
  finish(reported.length > 0 ? reported : statusJson({ status: 'Success' }));
}

/**
 * Serves port-forward tunnelled in a WebSocket: opens SPDY to the runtime with the tunnelled
 * protocols, then answers the WebSocket with the one the runtime chose and relays raw bytes.
 */
export async function tunnelSpdyOverWebSocket(
  ctx: RequestContext,
  runtimeUrl: string,
  tunnel: { spdy: string[]; legacy: boolean },
  idleMs: number,
  registry: StreamRegistry,
): Promise<void> {
  const up = ctx.upgrade!;
  const headers = forwardedHeaders(ctx.req);
  for (const h of [
    'sec-websocket-protocol',
    'sec-websocket-key',
    'sec-websocket-version',
    'sec-websocket-extensions',
  ])
    delete headers[h];
  headers.connection = 'Upgrade';
  headers.upgrade = 'SPDY/3.1';
  headers['x-stream-protocol-version'] = tunnel.spdy;
  let dialed;
  try {
    dialed = await dialUpgrade(new URL(runtimeUrl), 'POST', headers, ctx.signal);
  } catch (err) {
    return sendText(ctx.res, 500, `error dialing backend: ${errorMessage(err)}\n`);
  }
  if (!dialed.upgraded) {
    // Anything but an upgrade passes through to the client as the runtime wrote it.
    up.socket.write(responseHead(dialed.response));
    dialed.response.pipe(up.socket);
    return;
  }
  const chosen = String(dialed.response.headers['x-stream-protocol-version'] ?? '').trim();
  const protocol = tunnel.legacy ? LEGACY_TUNNELING_PROTOCOL : chosen ? TUNNELING_PREFIX + chosen : '';
  const backend: Socket = dialed.socket;
  backend.setNoDelay(true);
  const peer: { ws?: WebSocketConnection } = {};
  let closed = false;
  const idle = idleTimer(idleMs, () => close());
  const unregister = registry.add({ close: () => close() });
  function close(): void {
    if (closed) return;
    closed = true;
    idle.stop();
    unregister();
    backend.destroy();
    peer.ws?.close(1000);
  }
  let clientWaiting = false;
  let backendWaiting = false;
  const ws = acceptWebSocket(ctx.req, up.socket, up.head, protocol, {
    onMessage: (data) => {
      idle.touch();
      if (backend.write(data) || backendWaiting) return;
      backendWaiting = true;
      peer.ws?.pause();
      backend.once('drain', () => {
        backendWaiting = false;
        peer.ws?.resume();
      });
    },
    onClose: close,
  });
  if (!ws) return close();
  peer.ws = ws;
  if (dialed.head.length > 0) ws.send(dialed.head);
  backend.on('data', (d: Buffer) => {
    idle.touch();
    if (ws.send(d) || clientWaiting) return;
    clientWaiting = true;
    backend.pause();
    up.socket.once('drain', () => {
      clientWaiting = false;
      backend.resume();
    });
  });
  backend.on('close', close);
  backend.on('error', close);
}
