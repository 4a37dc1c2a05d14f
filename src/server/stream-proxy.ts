/**
 * Streams to the runtime's streaming server (containerd serves it on 127.0.0.1:<random>), as
 * upstream's UpgradeAwareHandler does for the kubelet: the client's upgrade request is re-sent to the
 * runtime's URL with its own headers (Upgrade, Connection, Sec-WebSocket-*, X-Stream-Protocol-Version),
 * the runtime's answer goes back as it is, and after a 101 the two sockets are piped both ways.
 * Never a redirect: the runtime's address is not the client's business.
 */
import http, { type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { sendText, type RequestContext } from './request-context.js';
import { goAwayFrame, GOAWAY_PROTOCOL_ERROR, SpdyFrameChecker } from './spdy.js';

const log = logger('server');

/** How long the runtime may take to answer the upgrade request. */
export const DIAL_TIMEOUT_MS = 30_000;

export type DialResult =
  | { upgraded: true; socket: Socket; head: Buffer; response: IncomingMessage }
  | { upgraded: false; response: IncomingMessage };

/** Sends an upgrade request to target and waits (bounded) for the switch or a plain answer. */
export function dialUpgrade(
  target: URL,
  method: string,
  headers: OutgoingHttpHeaders,
  signal: AbortSignal,
  timeoutMs = DIAL_TIMEOUT_MS,
): Promise<DialResult> {
  return new Promise((resolve, reject) => {
    const client = target.protocol === 'https:' ? https : http;
    const req = client.request({
      host: target.hostname,
      port: target.port || (target.protocol === 'https:' ? 443 : 80),
      method,
      path: target.pathname + target.search,
      headers: { ...headers, host: target.host },
      agent: false,
      // The runtime's streaming server has a self-signed certificate when it uses TLS at all; its
      // address came from the runtime over the CRI socket, which is what we trust.
      ...(target.protocol === 'https:' ? { rejectUnauthorized: false } : {}),
      signal,
    });
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer from ${target.host} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    req.on('upgrade', (response: IncomingMessage, socket: Socket, head: Buffer) => {
      clearTimeout(timer);
      resolve({ upgraded: true, socket, head, response });
    });
    req.on('response', (response: IncomingMessage) => {
      clearTimeout(timer);
      resolve({ upgraded: false, response });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

/** The status line and headers of a response, as raw bytes to replay to a client socket. */
export function responseHead(res: IncomingMessage): string {
  const lines = [`HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}`];
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
    lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
  return lines.join('\r\n') + '\r\n\r\n';
}

/** Headers never passed on: credentials for us, and the hop's own framing. */
const DROPPED_HEADERS = new Set([
  'host',
  'authorization',
  'proxy-authorization',
  'content-length',
  'transfer-encoding',
]);

/** The client's headers for the runtime, duplicates kept as separate lines (X-Stream-Protocol-Version lists). */
export function forwardedHeaders(req: IncomingMessage): OutgoingHttpHeaders {
  const out: Record<string, string[]> = {};
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    if (DROPPED_HEADERS.has(name)) continue;
    (out[name] ??= []).push(req.rawHeaders[i + 1]!);
  }
  // Credentials the authenticator consumed are gone from req.headers; keep that for the raw copy too.
  if (req.headers['sec-websocket-protocol'] === undefined) delete out['sec-websocket-protocol'];
  else out['sec-websocket-protocol'] = [req.headers['sec-websocket-protocol']];
  const remote = req.socket.remoteAddress;
  if (remote) out['x-forwarded-for'] = [...(out['x-forwarded-for'] ?? []), remote];
  return out;
}

/** Live streams, so closing the server ends them too. */
export class StreamRegistry {
  private readonly live = new Set<{ close(): void }>();

  add(s: { close(): void }): () => void {
    this.live.add(s);
    return () => this.live.delete(s);
  }

  closeAll(): void {
    for (const s of this.live) s.close();
    this.live.clear();
  }

  get size(): number {
    return this.live.size;
  }
}

/**
 * Closes both sides after idleMs without a byte either way (streamingConnectionIdleTimeout);
 * returns a function to call on each byte, and one to stop the timer.
 */
export function idleTimer(idleMs: number, onIdle: () => void): { touch(): void; stop(): void } {
  if (idleMs <= 0) return { touch: () => undefined, stop: () => undefined };
  let last = Date.now();
  // One coarse timer rather than one reset per chunk: checks at a tenth of the timeout, at most each second.
  const periodMs = Math.max(1000, Math.min(idleMs / 10, 60_000));
  const t = setInterval(
    () => {
      if (Date.now() - last >= idleMs) {
        clearInterval(t);
        onIdle();
      }
    },
    Math.min(periodMs, idleMs),
  );
  t.unref();
  return {
    touch: () => {
      last = Date.now();
    },
    stop: () => clearInterval(t),
  };
}

/** Pipes two sockets both ways with backpressure, until either ends or idles. */
export function pipeSockets(
  a: Duplex,
  b: Duplex,
  idleMs: number,
  registry: StreamRegistry,
  what: string,
): void {
  let done = false;
  const close = () => {
    if (done) return;
    done = true;
    idle.stop();
    unregister();
    a.destroy();
    b.destroy();
  };
  const idle = idleTimer(idleMs, () => {
    log.v(2, 'Closing an idle stream', { stream: what, idleTimeoutMs: idleMs });
    close();
  });
  const unregister = registry.add({ close });
  a.on('data', idle.touch);
  b.on('data', idle.touch);
  a.pipe(b);
  b.pipe(a);
  for (const s of [a, b]) {
    s.on('error', close);
    s.on('close', close);
  }
}

/**
 * Proxies ctx's upgrade request to the runtime's URL. A client that did not ask to upgrade gets
 * upstream's answer: 500 "Upgrade request required".
 */
export async function proxyUpgrade(
  ctx: RequestContext,
  runtimeUrl: string,
  idleMs: number,
  registry: StreamRegistry,
): Promise<void> {
  if (!ctx.upgrade) return sendText(ctx.res, 500, 'Upgrade request required\n');
  const target = new URL(runtimeUrl);
  // The runtime's URL carries its own token; the client's query only matters when the URL has none.
  if (target.search === '' && ctx.query.toString() !== '') target.search = ctx.query.toString();
  let dialed: DialResult;
  try {
    dialed = await dialUpgrade(target, ctx.method, forwardedHeaders(ctx.req), ctx.signal);
  } catch (err) {
    log.error('Error while proxying request', { err: errorMessage(err) });
    return sendText(ctx.res, 500, `error dialing backend: ${errorMessage(err)}\n`);
  }
  const client = ctx.upgrade.socket;
  if (!dialed.upgraded) {
    // The runtime refused (403 for an unknown protocol, 404 for a spent token): its answer goes back as is.
    const body: Buffer[] = [];
    for await (const chunk of dialed.response) body.push(chunk as Buffer);
    const text = Buffer.concat(body);
    const status = dialed.response.statusCode ?? 502;
    ctx.res.writeHead(status, {
      'Content-Type': String(dialed.response.headers['content-type'] ?? 'text/plain; charset=utf-8'),
      'Content-Length': String(text.length),
    });
    ctx.res.end(text);
    return;
  }
  client.write(responseHead(dialed.response));
  if (dialed.head.length > 0) client.write(dialed.head);
  if (ctx.upgrade.head.length > 0) dialed.socket.write(ctx.upgrade.head);
  dialed.socket.setNoDelay(true);
  if (isSpdyUpgrade(dialed.response)) closeOnBadSpdyFrames(client, dialed.socket, ctx.upgrade.head);
  pipeSockets(client, dialed.socket, idleMs, registry, ctx.path.split('/')[1] ?? '');
}

function isSpdyUpgrade(response: IncomingMessage): boolean {
  return /^spdy\//i.test(String(response.headers.upgrade ?? ''));
}

/** How long a client that broke the SPDY framing has to read our GOAWAY before its socket is destroyed. */
const GOAWAY_LINGER_MS = 1000;

/**
 * Watches what the client sends: at the first bytes that cannot be a SPDY/3 frame the runtime is cut
 * off and the client gets a GOAWAY (PROTOCOL_ERROR) and is closed, rather than left waiting on a
 * connection that will never answer.
 */
function closeOnBadSpdyFrames(client: Duplex, runtime: Duplex, head: Buffer): void {
  const checker = new SpdyFrameChecker();
  const check = (chunk: Buffer) => {
    const problem = checker.push(chunk);
    if (problem === undefined) return;
    client.off('data', check);
    log.v(2, 'Closing a SPDY stream that broke the framing', { err: problem });
    client.unpipe(runtime);
    runtime.unpipe(client);
    client.end(goAwayFrame(GOAWAY_PROTOCOL_ERROR));
    // The runtime goes once the GOAWAY has left (pipeSockets closes both sides on the client's close).
    client.once('finish', () => client.destroy());
    setTimeout(() => client.destroy(), GOAWAY_LINGER_MS).unref();
  };
  if (head.length > 0) check(head);
  client.on('data', check);
}
