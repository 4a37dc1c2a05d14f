/**
 * The API client's HTTP/2 transport (upstream: Go's http2.Transport under client-go): one TLS
 * connection to the API server, every call and every watch a stream on it, over the project's own
 * HTTP/2 client (src/lib/http2/) rather than node:http2, whose per-stream objects cost more CPU than
 * the protocol saves (docs/benchmarks.md, "The API client over HTTP/2").
 *
 * - The first connection offers ALPN `h2` and `http/1.1`; a server that picks HTTP/1.1 (or none) is
 *   spoken to over the client's HTTP/1.1 agents from then on (`speaksHttp2` false), as Go's does.
 * - A connection that received GOAWAY, failed or closed takes no new streams; the next call opens
 *   another. A stream the server refused unprocessed (REFUSED_STREAM, or above a GOAWAY's last stream)
 *   is sent once more (on a fresh connection after a GOAWAY), as Go's transport does. A lost connection fails every
 *   stream on it: calls fail as Transport errors, watches end with one (their callers retry).
 * - Streams beyond the server's MAX_CONCURRENT_STREAMS wait in the connection until others end.
 * - Health: PING after READ_IDLE_TIMEOUT_MS with nothing received, the connection failed when it is
 *   not answered within PING_TIMEOUT_MS (client-go's defaults, and its environment variables that
 *   change them: http2HealthFromEnv); closed once idle, as the HTTP/1.1
 *   agents close idle sockets. It holds the process open only while it carries streams.
 */
import net from 'node:net';
import tls from 'node:tls';
import { StringDecoder } from 'node:string_decoder';
import type { Clock } from '../lib/clock.js';
import { DeadlineExceededError, type Deadline } from '../lib/deadline.js';
import { Http2ClientConnection, Http2ErrorCode } from '../lib/http2/client-connection.js';
import type { HeaderFields } from '../lib/http2/hpack.js';
import type { Http2StreamError, StreamHandler } from '../lib/http2/stream-handler.js';
import { LineWatchStream } from './watch-stream.js';

const MAX_TIMER_MS = 2 ** 31 - 1;
/** client-go's defaults of HTTP2_READ_IDLE_TIMEOUT_SECONDS and HTTP2_PING_TIMEOUT_SECONDS. */
export const READ_IDLE_TIMEOUT_MS = 30_000;
export const PING_TIMEOUT_MS = 15_000;

/** The health check's timing: readIdleMs 0 sends no PING (the idle connection still closes). */
export interface Http2Health {
  readIdleMs: number;
  pingTimeoutMs: number;
}

/**
 * The health check as client-go reads it from the environment: HTTP2_READ_IDLE_TIMEOUT_SECONDS (0 or
 * less turns the check off) and HTTP2_PING_TIMEOUT_SECONDS (0: Go's 15 s), whole seconds; a value
 * that is not a whole number is warned about and the default used.
 */
export function http2HealthFromEnv(env: NodeJS.ProcessEnv, warn: (message: string) => void): Http2Health {
  const seconds = (name: string, fallbackMs: number): number => {
    const text = env[name];
    if (text === undefined || text === '') return fallbackMs;
    if (!/^[+-]?\d+$/.test(text.trim())) {
      warn(
        `Illegal ${name}(${JSON.stringify(text)}): not a whole number of seconds. Default value ${fallbackMs / 1000} is used`,
      );
      return fallbackMs;
    }
    const ms = Number(text.trim()) * 1000;
    // node fires a timer of more than 2^31-1 ms at once (every 1 ms for an interval), where Go waits.
    if (ms > MAX_TIMER_MS) {
      warn(`${name}(${text}) is more than a timer takes: ${Math.floor(MAX_TIMER_MS / 1000)} s is used`);
      return MAX_TIMER_MS;
    }
    return ms;
  };
  const readIdleMs = Math.max(0, seconds('HTTP2_READ_IDLE_TIMEOUT_SECONDS', READ_IDLE_TIMEOUT_MS));
  const pingTimeoutMs = seconds('HTTP2_PING_TIMEOUT_SECONDS', PING_TIMEOUT_MS);
  return { readIdleMs, pingTimeoutMs: pingTimeoutMs > 0 ? pingTimeoutMs : PING_TIMEOUT_MS };
}
/** A TLS handshake not done by then is given up (a call's own deadline may cut it sooner). */
const CONNECT_TIMEOUT_MS = 30_000;
/**
 * The receive window of each stream and of the connection (Go's transport: 4 MiB a stream). A large
 * list comes at the pace of the window's round trips; the window is topped up as data is handed on, so
 * a watch open for hours never stalls on it.
 */
const WINDOW_BYTES = 4 * 1024 * 1024;
const NO_BODY = Buffer.alloc(0);

/** How a TLS connection to the API server is made: the client's secure context and checks. */
export interface TlsTarget {
  host: string;
  port: number;
  /** The `:authority` of every request: the server URL's host[:port]. */
  authority: string;
  secureContext: tls.SecureContext;
  servername?: string;
  rejectUnauthorized: boolean;
}

/** A request: path with query, header fields in lower case (no pseudo-headers), the body if any. */
export interface H2Request {
  method: string;
  path: string;
  headers: (readonly [string, string])[];
  body: Buffer | undefined;
}

/** A whole reply. */
export interface H2Reply {
  status: number;
  contentType: string;
  chunks: Buffer[];
}

/** Where a streamed reply's body goes once its head has come. */
interface BodySink {
  data(chunk: Buffer): void;
  end(): void;
  error(err: Error): void;
}

export class ApiHttp2Transport {
  /** undefined until the first handshake tells; false once the server chose HTTP/1.1. */
  speaksHttp2: boolean | undefined;
  private connection: Http2ClientConnection | undefined;
  private connecting: Promise<Http2ClientConnection | undefined> | undefined;
  /** Streams open per connection: a connection holds the process open only while it has some. */
  private readonly open = new Map<Http2ClientConnection, number>();
  private retired = false;
  /** The socket of the handshake under way, if any. */
  private dialing: tls.TLSSocket | undefined;

  constructor(
    private readonly target: TlsTarget,
    private readonly clock: Clock,
    private readonly health: Http2Health = {
      readIdleMs: READ_IDLE_TIMEOUT_MS,
      pingTimeoutMs: PING_TIMEOUT_MS,
    },
  ) {}

  /**
   * Closes the connections, the current one and any still draining after a GOAWAY (a watch can last
   * minutes there): their streams, watches included, fail; a later call opens another.
   */
  close(): void {
    // A handshake under way is given up too: its socket would hold the process open for up to 30 s.
    this.dialing?.destroy(
      new Error('given up while connecting: the client was closed or its certificate changed'),
    );
    for (const conn of [...this.open.keys()]) conn.close();
    this.connection?.close();
    this.connection = undefined;
  }

  /** Closes the connection and any being made (the client certificate changed): this transport is done. */
  retire(): void {
    this.retired = true;
    this.close();
  }

  /**
   * Sends req and reads its whole reply under one deadline; undefined when the server speaks only
   * HTTP/1.1. Rejects with a DeadlineExceededError at the deadline, the caller's reason on its abort.
   */
  async exchange(
    req: H2Request,
    timeoutMs: number,
    caller: AbortSignal | undefined,
  ): Promise<H2Reply | undefined> {
    const startedMs = this.clock.now();
    // The one deadline covers both tries and their connections: each waits only for what is left of it.
    const leftMs = () => Math.max(1, timeoutMs - (this.clock.now() - startedMs));
    return this.sendOnceMoreIfRefused(leftMs, caller, (conn) => this.send(conn, req, leftMs(), caller));
  }

  /**
   * Opens a stream whose body is read as it comes (a watch): resolves at its head. The signal cuts it
   * until then; afterwards the owner of the returned response does. undefined: HTTP/1.1 only.
   */
  async stream(req: H2Request, signal: AbortSignal): Promise<H2Response | undefined> {
    signal.throwIfAborted();
    return this.sendOnceMoreIfRefused(
      () => CONNECT_TIMEOUT_MS,
      signal,
      (conn) => this.openStream(conn, req, signal),
    );
  }

  /**
   * attempt on the connection at hand, or a new one made within connectMs(); a stream the server
   * refused unprocessed is attempted once more on the connection then at hand (a new one after a
   * GOAWAY). undefined when the server speaks only HTTP/1.1.
   */
  private async sendOnceMoreIfRefused<R>(
    connectMs: () => number,
    caller: AbortSignal | undefined,
    attempt: (conn: Http2ClientConnection) => Promise<R>,
  ): Promise<R | undefined> {
    const conn = this.ready() ?? (await this.connected(connectMs(), caller));
    if (!conn) return undefined;
    try {
      return await attempt(conn);
    } catch (err) {
      if (!isRefused(err)) throw err;
      const again = this.ready() ?? (await this.connected(connectMs(), caller));
      if (!again) throw err;
      return attempt(again);
    }
  }

  // ---- streams ----

  private send(
    conn: Http2ClientConnection,
    req: H2Request,
    timeoutMs: number,
    caller: AbortSignal | undefined,
  ): Promise<H2Reply> {
    return new Promise((resolve, reject) => {
      if (caller?.aborted) return reject(caller.reason as Error);
      const reply: H2Reply = { status: 0, contentType: '', chunks: [] };
      let id = 0;
      let settled = false;
      const settle = (err: unknown) => {
        if (settled) return;
        settled = true;
        this.clock.clearTimeout(timer);
        caller?.removeEventListener('abort', onAbort);
        this.streamEnded(conn);
        if (err === undefined) resolve(reply);
        else reject(err as Error);
      };
      const handler: StreamHandler = {
        onHeaders: (fields) => {
          const malformed = readHead(reply, fields);
          if (malformed) cut(malformed);
        },
        onData: (chunk) => reply.chunks.push(chunk),
        onEnd: () => settle(reply.status === 0 ? new Error('stream ended without a response') : undefined),
        // A reset after the head came is of a request the server acted on: never sent again, whatever
        // its code (Go's transport returns the response it has, whose body then fails).
        onError: (err) =>
          settle(reply.status === 0 ? err : new Error(`${err.message} after its answer began`)),
      };
      const cut = (err: unknown) => {
        settle(err);
        conn.cancel(id);
      };
      const onAbort = () => cut(caller?.reason);
      const timer = this.clock.setTimeout(() => cut(new DeadlineExceededError(timeoutMs)), timeoutMs);
      caller?.addEventListener('abort', onAbort, { once: true });
      this.streamStarted(conn);
      id = conn.request(this.fields(req), req.body ?? NO_BODY, handler);
    });
  }

  private openStream(conn: Http2ClientConnection, req: H2Request, signal: AbortSignal): Promise<H2Response> {
    signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        res.cancel();
        reject(signal.reason as Error);
      };
      const res = new H2Response(
        () => {
          signal.removeEventListener('abort', onAbort);
          resolve(res);
        },
        (err) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
        (id) => {
          conn.cancel(id);
          this.streamEnded(conn);
        },
        () => this.streamEnded(conn),
      );
      signal.addEventListener('abort', onAbort, { once: true });
      this.streamStarted(conn);
      res.id = conn.request(this.fields(req), req.body ?? NO_BODY, res);
    });
  }

  private fields(req: H2Request): (readonly [string, string])[] {
    return [
      [':method', req.method],
      [':scheme', 'https'],
      [':authority', this.target.authority],
      [':path', req.path],
      ...req.headers,
    ];
  }

  private streamStarted(conn: Http2ClientConnection): void {
    const open = (this.open.get(conn) ?? 0) + 1;
    this.open.set(conn, open);
    if (open === 1) conn.ref();
  }

  private streamEnded(conn: Http2ClientConnection): void {
    const open = (this.open.get(conn) ?? 1) - 1;
    if (open > 0) {
      this.open.set(conn, open);
      return;
    }
    this.open.delete(conn);
    conn.unref();
  }

  // ---- the connection ----

  /** The connection to send on now, if there is one that takes streams. */
  private ready(): Http2ClientConnection | undefined {
    const conn = this.connection;
    return conn?.acceptsStreams ? conn : undefined;
  }

  /** A new connection (one handshake at a time), waited for no longer than timeoutMs or the caller. */
  private connected(
    timeoutMs: number,
    caller: AbortSignal | undefined,
  ): Promise<Http2ClientConnection | undefined> {
    if (this.speaksHttp2 === false) return Promise.resolve(undefined);
    // Checked before dialing: a dial nobody waits for would fail unheard (an unhandled rejection).
    if (caller?.aborted) return Promise.reject(caller.reason as Error);
    this.connecting ??= this.dial().finally(() => (this.connecting = undefined));
    const connecting = this.connecting;
    return new Promise((resolve, reject) => {
      const done = () => {
        this.clock.clearTimeout(timer);
        caller?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        done();
        reject(caller?.reason as Error);
      };
      const timer = this.clock.setTimeout(() => {
        done();
        reject(new DeadlineExceededError(timeoutMs));
      }, timeoutMs);
      caller?.addEventListener('abort', onAbort, { once: true });
      connecting.then(
        (conn) => {
          done();
          resolve(conn);
        },
        (err: unknown) => {
          done();
          reject(err as Error);
        },
      );
    });
  }

  private dial(): Promise<Http2ClientConnection | undefined> {
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
      this.dialing = socket;
      const timer = setTimeout(
        () => socket.destroy(new Error(`TLS handshake not done within ${CONNECT_TIMEOUT_MS} ms`)),
        CONNECT_TIMEOUT_MS,
      );
      const onError = (err: Error) => {
        clearTimeout(timer);
        if (this.dialing === socket) this.dialing = undefined;
        reject(err);
      };
      socket.once('error', onError);
      socket.once('secureConnect', () => {
        clearTimeout(timer);
        if (this.dialing === socket) this.dialing = undefined;
        socket.removeListener('error', onError);
        if (socket.alpnProtocol !== 'h2') {
          socket.destroy();
          this.speaksHttp2 = false;
          return resolve(undefined);
        }
        this.speaksHttp2 = true;
        if (this.retired) {
          socket.destroy();
          return reject(new Error('the client certificate changed while connecting'));
        }
        resolve(this.adopt(socket));
      });
    });
  }

  private adopt(socket: tls.TLSSocket): Http2ClientConnection {
    const conn = new Http2ClientConnection(socket, {
      windowBytes: WINDOW_BYTES,
      healthCheck: {
        // With PINGs off the check still runs at the default period, to close an idle connection.
        readIdleMs: this.health.readIdleMs > 0 ? this.health.readIdleMs : READ_IDLE_TIMEOUT_MS,
        pingTimeoutMs: this.health.pingTimeoutMs,
        closeWhenIdle: true,
        ping: this.health.readIdleMs > 0,
      },
    });
    conn.unref();
    conn.onClose = () => {
      if (this.connection === conn) this.connection = undefined;
      this.open.delete(conn);
    };
    this.connection = conn;
    return conn;
  }
}

/**
 * The first final head of a reply (1xx heads are skipped; trailers come after it and are not read).
 * A head whose :status is not three digits is an error, as Go's transport and node's HTTP/1.1
 * parser make it: taken as a number it would be NaN, or 200 for "2e2".
 */
function readHead(reply: { status: number; contentType: string }, fields: HeaderFields): Error | undefined {
  if (reply.status !== 0) return undefined;
  const text = fields.get(':status');
  if (text === undefined || !/^[1-9]\d\d$/.test(text)) {
    return new Error(`malformed response from the server: :status ${JSON.stringify(text ?? null)}`);
  }
  const status = Number(text);
  if (status < 200) return undefined;
  reply.status = status;
  reply.contentType = fields.get('content-type') ?? '';
  return undefined;
}

/** Refused by the server unprocessed, or sent to a connection already going away: safe to send again. */
function isRefused(err: unknown): boolean {
  return (err as Http2StreamError | undefined)?.code === Http2ErrorCode.REFUSED_STREAM;
}

/** A stream read as it comes: its head, then its body handed to one sink (what came before, first). */
export class H2Response implements StreamHandler {
  status = 0;
  contentType = '';
  id = 0;
  private sink: BodySink | undefined;
  private early: Buffer[] = [];
  private outcome: { err?: Error } | undefined;
  private released = false;

  constructor(
    private readonly onHead: () => void,
    private readonly onFailedHead: (err: Error) => void,
    private readonly cancelStream: (id: number) => void,
    private readonly ended: () => void,
  ) {}

  onHeaders(fields: HeaderFields): void {
    if (this.status !== 0) return;
    const malformed = readHead(this, fields);
    if (malformed) {
      this.cancel();
      return this.onFailedHead(malformed);
    }
    if (this.status !== 0) this.onHead();
  }

  onData(chunk: Buffer): void {
    if (this.sink) this.sink.data(chunk);
    else this.early.push(chunk);
  }

  onEnd(): void {
    this.release();
    if (this.status === 0) return this.onFailedHead(new Error('stream ended without a response'));
    if (this.sink) this.sink.end();
    else this.outcome = {};
  }

  onError(err: Http2StreamError): void {
    this.release();
    if (this.status === 0) return this.onFailedHead(err);
    if (this.sink) this.sink.error(err);
    else this.outcome = { err };
  }

  /** Hands the body to sink, what already came first. */
  attach(sink: BodySink): void {
    this.sink = sink;
    for (const chunk of this.early) sink.data(chunk);
    this.early = [];
    if (this.outcome?.err) sink.error(this.outcome.err);
    else if (this.outcome) sink.end();
  }

  /** Resets the stream (RST_STREAM CANCEL) unless it has ended. */
  cancel(): void {
    if (this.released) return;
    this.released = true;
    this.cancelStream(this.id);
  }

  private release(): void {
    if (this.released) return;
    this.released = true;
    this.ended();
  }
}

/** The whole body of a streamed reply (a watch refused with a Status), cut when signal aborts. */
export function readWholeBody(res: H2Response, signal: AbortSignal): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const onAbort = () => {
      res.cancel();
      reject(signal.reason as Error);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    res.attach({
      data: (chunk) => chunks.push(chunk),
      end: () => {
        signal.removeEventListener('abort', onAbort);
        resolve(chunks);
      },
      error: (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    });
  });
}

/** A watch's events over HTTP/2: the stream's DATA as text (a character split across frames kept whole). */
export class H2WatchStream<T> extends LineWatchStream<T> {
  constructor(
    private readonly res: H2Response,
    deadline: Deadline,
    what: string,
  ) {
    super(deadline, what);
    const decoder = new StringDecoder('utf8');
    res.attach({
      data: (chunk) => this.onText(decoder.write(chunk)),
      end: () => {
        const rest = decoder.end();
        if (rest !== '') this.onText(rest);
        this.finish();
      },
      error: (err) => this.finish(err),
    });
    this.watchDeadline();
  }

  protected cut(): void {
    this.res.cancel();
  }
}
