/**
 * An HTTP/2 client connection to a unix socket, over Node's node:http2 (nghttp2), for containerd's
 * event stream: a request is its header fields and whole body, its answer goes to a StreamHandler,
 * and the connection says when it takes no more streams. The gRPC framing above it is
 * grpc-over-http2.ts.
 *
 * The CRI's unary calls go over the project's own connection (http2/client-connection.ts), which
 * costs half the CPU per call; the event stream is one request for as long as the kubelet runs, so
 * node's cost per stream does not matter there. Loaded on the first subscription, so importing the
 * CRI client does not load it.
 */
import type * as Http2 from 'node:http2';
import net from 'node:net';
import { lazyBuiltin } from '../lib/lazy-builtin.js';
import {
  http2StreamError,
  type GrpcHttp2Connection,
  type StreamHandler,
} from '../lib/http2/stream-handler.js';

const http2Module = lazyBuiltin<typeof Http2>('node:http2');

// RFC 9113 §7's CANCEL, which nghttp2 sends for a stream its owner no longer wants.
const NGHTTP2_CANCEL = 0x8;

// How long close() waits for the reset streams and GOAWAY to go out before it cuts the socket.
const CLOSE_GRACE_MS = 1000;

export interface Http2ConnectionOptions {
  /** The receive window of each stream and of the connection, which sets how fast a large answer comes. */
  windowBytes: number;
}

/**
 * One session; the caller makes a new connection when this one reports `onClose` or stops taking
 * streams (`acceptsStreams`: after GOAWAY, or once the session closed or failed).
 */
export class Http2Connection implements GrpcHttp2Connection {
  private readonly session: Http2.ClientHttp2Session;
  private readonly streams = new Map<number, { stream: Http2.ClientHttp2Stream; handler: StreamHandler }>();
  private nextId = 1;
  private goAwayReceived = false;
  private closeReported = false;

  /** Called once, when the connection can carry nothing more (closed, failed, or told to go away). */
  onClose: ((error: Error | undefined) => void) | undefined;

  constructor(socketPath: string, options: Http2ConnectionOptions) {
    const session = http2Module().connect('http://localhost', {
      createConnection: () => net.connect(socketPath),
      settings: { initialWindowSize: options.windowBytes, enablePush: false },
    });
    this.session = session;
    let failure: Error | undefined;
    // A failed connect or a reset socket: each open stream hears of it through its own events.
    session.on('error', (err) => (failure = err));
    session.on('goaway', () => {
      this.goAwayReceived = true;
      this.reportClose(undefined);
    });
    session.on('close', () => this.reportClose(failure));
    session.once('connect', () => session.setLocalWindowSize(options.windowBytes));
  }

  /** False once GOAWAY came or the session closed or failed. */
  get acceptsStreams(): boolean {
    return !this.goAwayReceived && !this.session.closed && !this.session.destroyed;
  }

  ref(): void {
    if (!this.session.destroyed) this.session.ref();
  }

  unref(): void {
    if (!this.session.destroyed) this.session.unref();
  }

  /** Sends a request (pseudo-headers among the fields) with its whole body; returns the ID cancel() takes. */
  request(fields: readonly (readonly [string, string])[], body: Buffer, handler: StreamHandler): number {
    const headers: Http2.OutgoingHttpHeaders = {};
    for (const [name, value] of fields) {
      // node:http2 sets these itself from the session's authority.
      if (name !== ':scheme' && name !== ':authority') headers[name] = value;
    }
    let stream: Http2.ClientHttp2Stream;
    try {
      stream = this.session.request(headers, { endStream: false });
    } catch (err) {
      const why = http2StreamError(err instanceof Error ? err.message : String(err));
      queueMicrotask(() => handler.onError(why));
      return 0;
    }
    const id = this.nextId++;
    const entry = { stream, handler };
    this.streams.set(id, entry);
    let error: Error | undefined;
    let trailersEnded = false;
    const onHeaders = (h: Http2.IncomingHttpHeaders, flags: number): void => {
      if (this.streams.get(id) !== entry) return;
      // nghttp2's END_STREAM flag: a trailers-only answer, or the trailers.
      const endStream = (flags & 0x1) !== 0;
      trailersEnded ||= endStream;
      handler.onHeaders(headerFields(h), endStream);
    };
    stream.on('response', onHeaders);
    stream.on('trailers', onHeaders);
    stream.on('data', (chunk: Buffer) => {
      if (this.streams.get(id) === entry) handler.onData(chunk);
    });
    stream.on('error', (err) => (error = err));
    stream.on('close', () => {
      if (!this.streams.delete(id)) return;
      // node closes a stream cut off by the server's GOAWAY and the socket's end as it closes one
      // the server ended (NO_ERROR, 'end'). A gRPC answer ends on its trailers, so a stream that
      // closes without them while the session is being torn down did not get its end.
      const ended = stream.rstCode === 0 && error === undefined;
      if (ended && (trailersEnded || !this.session.destroyed)) handler.onEnd();
      else handler.onError(streamFailure(stream.rstCode, error, !this.acceptsStreams));
    });
    stream.end(body);
    return id;
  }

  /** Resets a stream the caller no longer wants (RST_STREAM CANCEL); its handler hears nothing more. */
  cancel(id: number): void {
    const entry = this.streams.get(id);
    if (!entry) return;
    this.streams.delete(id);
    if (!entry.stream.closed) entry.stream.close(NGHTTP2_CANCEL);
  }

  /** Closes at once (open streams reset with CANCEL and failed, then GOAWAY and the socket closed). */
  close(): void {
    const closing = http2StreamError('connection closed by the client');
    for (const [id, { handler }] of [...this.streams]) {
      this.cancel(id);
      handler.onError(closing);
    }
    if (this.session.closed) return;
    // Graceful, so the resets and GOAWAY go out first; bounded, for a runtime that stopped reading.
    this.session.close();
    setTimeout(() => this.session.destroy(), CLOSE_GRACE_MS).unref();
  }

  private reportClose(error: Error | undefined): void {
    if (this.closeReported) return;
    this.closeReported = true;
    this.onClose?.(error);
  }
}

/** Why a stream ended without its answer: the connection's failure, the server's reset, or node's own reason. */
function streamFailure(
  rstCode: number | undefined,
  error: Error | undefined,
  connectionGone: boolean,
): Error {
  const cause = error?.cause;
  if (cause instanceof Error) return http2StreamError(`connection error: ${cause.message}`);
  if (connectionGone) {
    return rstCode === undefined || rstCode === 0
      ? http2StreamError('connection closed')
      : http2StreamError(`connection closed (code ${rstCode})`, rstCode);
  }
  if (rstCode !== undefined && rstCode !== 0)
    return http2StreamError(`stream reset by the server (code ${rstCode})`, rstCode);
  return http2StreamError(error?.message ?? 'connection closed');
}

function headerFields(headers: Http2.IncomingHttpHeaders): Map<string, string> {
  const fields = new Map<string, string>();
  // for…in rather than Object.entries: no array per field on every answer's headers and trailers
  // (node's header objects have no prototype, so nothing inherited is met).
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) fields.set(name, Array.isArray(value) ? value.join(', ') : String(value));
  }
  return fields;
}
