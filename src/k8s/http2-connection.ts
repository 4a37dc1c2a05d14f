/**
 * The API client's HTTP/2 connection (upstream: Go's http2.Transport under client-go): one TLS
 * connection to the API server, every call and watch a stream on it. The first connection offers
 * ALPN `h2` and `http/1.1`; a server that picks HTTP/1.1 (or none) is spoken to over HTTP/1.1 from
 * then on, as Go's transport does.
 *
 * - A session that received GOAWAY, failed or closed takes no new streams; the next call opens
 *   another. A stream the server refused unprocessed (REFUSED_STREAM, or beyond a GOAWAY's last
 *   stream) is sent again once on a fresh session, as Go's transport retries it.
 * - Health: when nothing arrived for READ_IDLE_TIMEOUT_MS the session is pinged, and closed when
 *   the ping is not answered within PING_TIMEOUT_MS (client-go's HTTP2_READ_IDLE_TIMEOUT_SECONDS 30,
 *   HTTP2_PING_TIMEOUT_SECONDS 15), so calls do not wait on a connection that died silently.
 * - The session holds the process open only while it carries streams.
 */
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import type { Readable } from 'node:stream';
import { raceAbort } from '../lib/deadline.js';

const READ_IDLE_TIMEOUT_MS = 30_000;
const PING_TIMEOUT_MS = 15_000;
/** A TLS handshake that has not finished by then is given up (the call's own deadline may be longer). */
const CONNECT_TIMEOUT_MS = 30_000;

const { NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM, NGHTTP2_NO_ERROR } = http2.constants;

/** How a TLS connection to the API server is made: the client's secure context and checks. */
export interface TlsTarget {
  host: string;
  port: number;
  secureContext: tls.SecureContext;
  servername?: string;
  rejectUnauthorized: boolean;
}

/** A reply's head and its body as it arrives, whichever HTTP version carried it. */
export interface ApiResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: Readable;
  /**
   * Calls back once, when the body has arrived whole (no argument), failed (err), or was cut short
   * (cut: the connection closed or the stream was reset before its end).
   */
  onDone(callback: (outcome: { err?: Error; cut?: boolean }) => void): void;
  destroy(): void;
}

export interface Http2Request {
  method: string;
  /** Path and query. */
  path: string;
  headers: Record<string, string>;
  payload?: Buffer;
  signal: AbortSignal;
}

/** Thrown when the server speaks only HTTP/1.1: the caller sends over its HTTP/1.1 agent. */
export class Http1Only extends Error {
  constructor() {
    super('the API server did not choose HTTP/2');
  }
}

class Refused extends Error {}

export class Http2Connection {
  private session: http2.ClientHttp2Session | undefined;
  private connecting: Promise<http2.ClientHttp2Session> | undefined;
  private http1Only = false;
  /** Open streams per session: a session holds the process open only while it has some. */
  private readonly streams = new WeakMap<http2.ClientHttp2Session, number>();

  constructor(private readonly target: TlsTarget) {}

  /** False once the server chose HTTP/1.1: the caller need not ask again. */
  get mayUseHttp2(): boolean {
    return !this.http1Only;
  }

  /** Sends req on the session (one retry on a fresh session when refused unprocessed). */
  async request(req: Http2Request): Promise<ApiResponse> {
    try {
      return await this.requestOnce(req);
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      return this.requestOnce(req);
    }
  }

  /** Closes the session: its streams, watches included, end; the next call opens another. */
  close(): void {
    const s = this.session;
    this.session = undefined;
    this.connecting = undefined;
    s?.destroy();
  }

  private async requestOnce(req: Http2Request): Promise<ApiResponse> {
    req.signal.throwIfAborted();
    const session = await raceAbort(this.current(), req.signal);
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(
        { ':method': req.method, ':path': req.path, ...req.headers },
        { endStream: req.payload === undefined },
      );
    } catch (err) {
      // A session that began closing between our check and the request: not sent, so send again.
      if (this.session === session) this.session = undefined;
      throw new Refused('session closing', { cause: err });
    }
    this.track(session, stream);
    if (req.payload !== undefined) stream.end(req.payload);
    return new Promise<ApiResponse>((resolve, reject) => {
      const onAbort = () => stream.close(NGHTTP2_CANCEL);
      const settle = () => req.signal.removeEventListener('abort', onAbort);
      req.signal.addEventListener('abort', onAbort, { once: true });
      stream.once('response', (headers) => {
        settle();
        resolve(h2Response(stream, headers));
      });
      stream.once('error', (err) => {
        settle();
        reject(
          stream.rstCode === NGHTTP2_REFUSED_STREAM ? new Refused('stream refused', { cause: err }) : err,
        );
      });
      stream.once('close', () => {
        settle();
        if (stream.rstCode === NGHTTP2_REFUSED_STREAM) reject(new Refused('stream refused'));
        else if (req.signal.aborted) reject(req.signal.reason as Error);
        else reject(new Error(`stream closed before a response (code ${stream.rstCode})`));
      });
    });
  }

  private track(session: http2.ClientHttp2Session, stream: http2.ClientHttp2Stream): void {
    const open = (this.streams.get(session) ?? 0) + 1;
    this.streams.set(session, open);
    if (open === 1) session.ref();
    stream.once('close', () => {
      const left = (this.streams.get(session) ?? 1) - 1;
      this.streams.set(session, left);
      if (left === 0 && !session.destroyed) session.unref();
    });
  }

  private current(): Promise<http2.ClientHttp2Session> {
    const s = this.session;
    if (s && !s.closed && !s.destroyed) return Promise.resolve(s);
    if (this.http1Only) return Promise.reject(new Http1Only());
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<http2.ClientHttp2Session> {
    const socket = await this.handshake();
    if (socket.alpnProtocol !== 'h2') {
      socket.destroy();
      this.http1Only = true;
      throw new Http1Only();
    }
    const session = http2.connect(`https://${this.target.host}:${this.target.port}`, {
      createConnection: () => socket,
    });
    const forget = () => {
      if (this.session === session) this.session = undefined;
    };
    session.on('goaway', forget);
    session.on('close', forget);
    session.on('error', forget);
    session.setTimeout(READ_IDLE_TIMEOUT_MS, () => this.checkHealth(session));
    session.unref();
    this.session = session;
    return session;
  }

  private handshake(): Promise<tls.TLSSocket> {
    const t = this.target;
    return new Promise((resolve, reject) => {
      const socket = tls.connect({
        host: t.host,
        port: t.port,
        secureContext: t.secureContext,
        // No SNI for an address (RFC 6066), as node's https agent does.
        ...(t.servername ? { servername: t.servername } : net.isIP(t.host) ? {} : { servername: t.host }),
        rejectUnauthorized: t.rejectUnauthorized,
        ALPNProtocols: ['h2', 'http/1.1'],
      });
      const timer = setTimeout(
        () => socket.destroy(new Error(`TLS handshake not done within ${CONNECT_TIMEOUT_MS} ms`)),
        CONNECT_TIMEOUT_MS,
      );
      socket.once('secureConnect', () => {
        clearTimeout(timer);
        socket.removeListener('error', onError);
        resolve(socket);
      });
      const onError = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      };
      socket.once('error', onError);
    });
  }

  private checkHealth(session: http2.ClientHttp2Session): void {
    if (session.destroyed || session.closed) return;
    const timer = setTimeout(() => session.destroy(new Error('HTTP/2 ping not answered')), PING_TIMEOUT_MS);
    timer.unref();
    const sent = session.ping((err) => {
      clearTimeout(timer);
      if (err && !session.destroyed) session.destroy(err);
    });
    if (!sent) clearTimeout(timer);
  }
}

function h2Response(stream: http2.ClientHttp2Stream, headers: http2.IncomingHttpHeaders): ApiResponse {
  return {
    status: Number(headers[':status'] ?? 0),
    contentType: headers['content-type'] ?? '',
    body: stream,
    onDone: (callback) => {
      let done = false;
      const once = (outcome: { err?: Error; cut?: boolean }) => {
        if (done) return;
        done = true;
        callback(outcome);
      };
      stream.on('error', (err) => once({ err }));
      // A session destroyed under it closes the stream with no error code and its body unfinished.
      stream.on('close', () =>
        once(stream.rstCode === NGHTTP2_NO_ERROR && stream.readableEnded ? {} : { cut: true }),
      );
    },
    destroy: () => {
      if (!stream.closed) stream.close(NGHTTP2_CANCEL);
    },
  };
}
