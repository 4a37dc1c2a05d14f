/**
 * gRPC unary calls on a unix socket: the CRI's hot path. Hand-written rather than through grpc-js,
 * and over this project's own HTTP/2 connection (src/lib/http2) rather than node:http2, because every
 * pod start and relist makes these calls: grpc-js spends about twice the CPU per call of node:http2
 * (name resolution, load-balancing picks, call credentials, filter stacks), and node:http2 about four
 * times that of this connection (bench/relist's unary_call_cpu_us: about 200 µs against 50). Streaming
 * calls (containerd's events) keep grpc-js.
 *
 * The wire format is gRPC over HTTP/2 (grpc/doc/PROTOCOL-HTTP2.md): a POST to /package.Service/Method
 * with `content-type: application/grpc`, `te: trailers` and `grpc-timeout`; the body is one
 * length-prefixed message (a flag byte, 0 for uncompressed, then a 4-byte big-endian length); the
 * answer is one such message and trailers carrying grpc-status and grpc-message (or, for an error
 * without a body, those in the headers alone).
 */
import net from 'node:net';
import { CallWatchdog } from '../lib/call-watchdog.js';
import { GrpcStatus } from '../lib/grpc-status.js';
import { Http2ClientConnection, type StreamHandler } from '../lib/http2/client-connection.js';
import type { HeaderFields } from '../lib/http2/hpack.js';

/**
 * A failed call: an Error with grpc-js's ServiceError shape (a numeric code and the details), so that
 * toCriError maps both alike. Not a class of its own: it never leaves src/cri (see to-cri-error.ts).
 */
export type GrpcCallError = Error & { code: number; details: string };

export function grpcCallError(code: number, details: string, cause?: unknown): GrpcCallError {
  return Object.assign(new Error(`${code} ${details}`, cause === undefined ? undefined : { cause }), {
    code,
    details,
  });
}

export interface UnaryMethod<Request, Response> {
  path: string;
  requestSerialize: (request: Request) => Buffer;
  responseDeserialize: (bytes: Buffer) => Response;
}

export interface GrpcUnaryChannelOptions {
  /** An answer larger than this fails with RESOURCE_EXHAUSTED, as grpc-js's max_receive_message_length. */
  maxReceiveMessageBytes: number;
}

// The answers' flow-control window: large enough that a multi-MiB list arrives without a pause for a
// WINDOW_UPDATE every 64 KiB (HTTP/2's default).
const WINDOW_BYTES = 16 * 1024 * 1024;
// The longest grpc-timeout value is 8 digits.
const MAX_TIMEOUT_DIGITS = 99_999_999;

export class GrpcUnaryChannel {
  private connection: Http2ClientConnection | undefined;
  private inFlight = 0;
  // Deadlines are noticed within 50 ms; the runtime enforces grpc-timeout itself as well.
  private readonly deadlines = new CallWatchdog(50);
  private closed = false;

  constructor(
    private readonly socketPath: string,
    private readonly opts: GrpcUnaryChannelOptions,
  ) {}

  /**
   * A connection to the socket, made on first use and again after the last one failed, was closed by
   * the runtime (a restart) or is going away: the first call after the runtime is back dials afresh.
   */
  private currentConnection(): Http2ClientConnection {
    const existing = this.connection;
    if (existing?.acceptsStreams) return existing;
    const connection = new Http2ClientConnection(net.connect(this.socketPath), { windowBytes: WINDOW_BYTES });
    // A failed connect or a reset socket: each open stream gets its own error; the next call dials again.
    connection.onClose = () => {
      if (this.connection === connection) this.connection = undefined;
    };
    if (this.inFlight === 0) connection.unref();
    this.connection = connection;
    return connection;
  }

  call<Request, Response>(
    method: UnaryMethod<Request, Response>,
    request: Request,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Response> {
    if (this.closed) return Promise.reject(grpcCallError(GrpcStatus.UNAVAILABLE, 'channel closed'));
    const message = method.requestSerialize(request);
    const frame = Buffer.allocUnsafe(5 + message.length);
    frame[0] = 0;
    frame.writeUInt32BE(message.length, 1);
    message.copy(frame, 5);

    return new Promise<Response>((resolve, reject) => {
      let connection: Http2ClientConnection;
      try {
        connection = this.currentConnection();
      } catch (err) {
        reject(grpcCallError(GrpcStatus.UNAVAILABLE, errorText(err), err));
        return;
      }
      this.callStarted(connection);

      const chunks: Buffer[] = [];
      let received = 0;
      let headerStatus: number | undefined;
      let grpcStatus: number | undefined;
      let grpcMessage = '';
      let settled = false;
      let streamId = 0;
      const finish = (err: GrpcCallError | undefined, value?: Response): void => {
        if (settled) return;
        settled = true;
        deadline.done();
        signal?.removeEventListener('abort', onAbort);
        this.callEnded(connection);
        if (err) reject(err);
        else resolve(value!);
      };
      const cancel = (err: GrpcCallError): void => {
        connection.cancel(streamId);
        finish(err);
      };
      const deadline = this.deadlines.watch(timeoutMs, () =>
        cancel(grpcCallError(GrpcStatus.DEADLINE_EXCEEDED, 'Deadline exceeded')),
      );
      const onAbort = (): void => {
        // The caller maps this one to its signal's reason.
        cancel(grpcCallError(GrpcStatus.CANCELLED, 'Cancelled on client'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });

      const readStatus = (fields: HeaderFields): void => {
        const status = fields.get('grpc-status');
        if (status !== undefined) {
          grpcStatus = Number(status);
          grpcMessage = percentDecode(fields.get('grpc-message') ?? '');
        }
      };
      const handler: StreamHandler = {
        onHeaders: (fields) => {
          if (headerStatus === undefined) headerStatus = Number(fields.get(':status'));
          readStatus(fields);
        },
        onData: (chunk) => {
          received += chunk.length;
          if (received - 5 > this.opts.maxReceiveMessageBytes) {
            cancel(
              grpcCallError(
                GrpcStatus.RESOURCE_EXHAUSTED,
                `Received message larger than max (${received - 5} vs. ${this.opts.maxReceiveMessageBytes})`,
              ),
            );
            return;
          }
          chunks.push(chunk);
        },
        onError: (err) => finish(grpcCallError(GrpcStatus.UNAVAILABLE, err.message, err)),
        onEnd: () => {
          if (settled) return;
          if (grpcStatus === undefined) {
            // No status at all: something that is not a gRPC server answered.
            const why =
              headerStatus === undefined
                ? `connection to ${this.socketPath} ended the stream without an answer`
                : `no grpc-status in the answer (HTTP status ${headerStatus})`;
            finish(grpcCallError(headerStatus === 200 ? GrpcStatus.INTERNAL : GrpcStatus.UNAVAILABLE, why));
            return;
          }
          if (grpcStatus !== GrpcStatus.OK) {
            finish(grpcCallError(grpcStatus, grpcMessage));
            return;
          }
          const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
          if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
            // The request advertised no compression, so a compressed or partial message is a fault.
            finish(grpcCallError(GrpcStatus.INTERNAL, 'malformed or compressed response message'));
            return;
          }
          try {
            finish(undefined, method.responseDeserialize(body.subarray(5)));
          } catch (err) {
            finish(grpcCallError(GrpcStatus.INTERNAL, `response could not be decoded: ${errorText(err)}`));
          }
        },
      };
      streamId = connection.request(
        [
          [':method', 'POST'],
          [':scheme', 'http'],
          [':path', method.path],
          [':authority', 'localhost'],
          ['content-type', 'application/grpc'],
          ['te', 'trailers'],
          ['grpc-timeout', grpcTimeout(timeoutMs)],
          ['user-agent', 'tskubelet-grpc'],
        ],
        frame,
        handler,
      );
    });
  }

  close(): void {
    this.closed = true;
    this.connection?.close();
    this.connection = undefined;
  }

  // The connection keeps the process up only while a call waits on it, as a grpc-js channel does.
  private callStarted(connection: Http2ClientConnection): void {
    if (this.inFlight++ === 0) connection.ref();
  }

  private callEnded(connection: Http2ClientConnection): void {
    if (--this.inFlight > 0) return;
    for (const c of [connection, this.connection]) c?.unref();
  }
}
/** grpc-timeout: at most 8 digits; beyond about three years (or Infinity) the longest it can say. */
function grpcTimeout(timeoutMs: number): string {
  const ms = Math.max(1, Math.ceil(timeoutMs));
  if (ms <= MAX_TIMEOUT_DIGITS) return `${ms}m`;
  return `${Math.min(Math.ceil(ms / 1000), MAX_TIMEOUT_DIGITS)}S`;
}

/** grpc-message is percent-encoded UTF-8; a malformed one is shown as it came. */
function percentDecode(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
