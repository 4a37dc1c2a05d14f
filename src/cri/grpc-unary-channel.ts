/**
 * gRPC unary calls on a unix socket: the CRI's hot path. Hand-written over the project's own HTTP/2
 * connection (http2/client-connection.ts) rather than through grpc-js, because every pod start and
 * relist makes these calls: grpc-js spends about twice the CPU per call of node:http2 (name
 * resolution, load-balancing picks, call credentials, filter stacks) on machinery a local socket does
 * not need, and node:http2 about twice that of the own connection (bench/cri-call.ts).
 *
 * The wire format (grpc-over-http2.ts) is shared with containerd's event stream: here the body is one
 * length-prefixed message, sent with `grpc-timeout`, and so is the answer.
 */
import { CallWatchdog } from '../lib/call-watchdog.js';
import { GrpcStatus, grpcCallError, type GrpcCallError } from '../lib/grpc-status.js';
import { grpcMessageFrame } from '../lib/grpc-wire.js';
import { Http2Connection } from './http2-connection.js';
import { dialOwnHttp2 } from '../lib/http2/dial.js';
import { Http2ErrorCode } from '../lib/http2/client-connection.js';
import type { GrpcHttp2Connection, Http2StreamError } from '../lib/http2/stream-handler.js';
import { grpcAnswerHandler, grpcRequestFields } from './grpc-over-http2.js';

export interface UnaryMethod<Request, Response> {
  path: string;
  requestSerialize: (request: Request) => Buffer;
  /** The request already behind gRPC's prefix, where the method can make it without a copy (grpcMethods' can). */
  requestFrame?: (request: Request) => Buffer;
  responseDeserialize: (bytes: Buffer) => Response;
}

export interface GrpcUnaryChannelOptions {
  /** An answer larger than this fails with RESOURCE_EXHAUSTED, as grpc-js's max_receive_message_length. */
  maxReceiveMessageBytes: number;
  /** Opens a connection to the socket: the project's own by default; bench/cri-call.ts weighs node:http2's. */
  dial?: (socketPath: string, options: { windowBytes: number }) => GrpcHttp2Connection;
}

export function dialNodeHttp2(socketPath: string, options: { windowBytes: number }): GrpcHttp2Connection {
  return new Http2Connection(socketPath, options);
}

// The answers' flow-control window: large enough that a multi-MiB list arrives without a pause for a
// WINDOW_UPDATE every 64 KiB (HTTP/2's default).
const WINDOW_BYTES = 16 * 1024 * 1024;
// The longest grpc-timeout value is 8 digits.
const MAX_TIMEOUT_DIGITS = 99_999_999;

export class GrpcUnaryChannel {
  private connection: GrpcHttp2Connection | undefined;
  private inFlight = 0;
  // Deadlines are noticed within 50 ms; the runtime enforces grpc-timeout itself as well.
  private readonly deadlines = new CallWatchdog(50);
  private closed = false;
  // A call's header fields when it has no metadata, by path, for the last timeout the path was called
  // with: each method is called with the same one nearly always, so its ten small arrays are made once.
  private readonly plainFields = new Map<
    string,
    { timeoutMs: number; fields: (readonly [string, string])[] }
  >();

  constructor(
    private readonly socketPath: string,
    private readonly opts: GrpcUnaryChannelOptions,
  ) {}

  /**
   * A connection to the socket, made on first use and again after the last one failed, was closed by
   * the runtime (a restart) or is going away: the first call after the runtime is back dials afresh.
   */
  private currentConnection(): GrpcHttp2Connection {
    const existing = this.connection;
    if (existing?.acceptsStreams) return existing;
    const connection = (this.opts.dial ?? dialOwnHttp2)(this.socketPath, { windowBytes: WINDOW_BYTES });
    // A failed connect or a reset socket: each open stream gets its own error; the next call dials again.
    connection.onClose = () => {
      if (this.connection === connection) this.connection = undefined;
    };
    if (this.inFlight === 0) connection.unref();
    this.connection = connection;
    return connection;
  }

  /** One call; metadata are extra header fields (containerd's `containerd-namespace`, for one). */
  call<Request, Response>(
    method: UnaryMethod<Request, Response>,
    request: Request,
    timeoutMs: number,
    signal?: AbortSignal,
    metadata: readonly (readonly [string, string])[] = [],
  ): Promise<Response> {
    if (this.closed) return Promise.reject(grpcCallError(GrpcStatus.UNAVAILABLE, 'channel closed'));
    const frame = method.requestFrame
      ? method.requestFrame(request)
      : grpcMessageFrame(method.requestSerialize(request));

    return new Promise<Response>((resolve, reject) => {
      let connection: GrpcHttp2Connection | undefined;
      let settled = false;
      let streamId = 0;
      let resent = false;
      const finish = (err: GrpcCallError | undefined, value?: Response): void => {
        if (settled) return;
        settled = true;
        deadline.done();
        signal?.removeEventListener('abort', onAbort);
        if (connection) this.callEnded(connection);
        if (err) reject(err);
        else resolve(value!);
      };
      const cancel = (err: GrpcCallError): void => {
        connection?.cancel(streamId);
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

      const send = (): void => {
        let next: GrpcHttp2Connection;
        try {
          next = this.currentConnection();
        } catch (err) {
          finish(grpcCallError(GrpcStatus.UNAVAILABLE, errorText(err), err));
          return;
        }
        if (!connection) this.callStarted(next);
        connection = next;
        let answer: Buffer | undefined;
        let messages = 0;
        const handler = grpcAnswerHandler({
          peer: this.socketPath,
          maxMessageBytes: this.opts.maxReceiveMessageBytes,
          onMessage: (message) => {
            answer = message;
            messages++;
          },
          cancel: () => next.cancel(streamId),
          onEnd: (err) => {
            if (settled) return;
            // The server did not take the stream (RFC 9113 §8.7): sent once more, as grpc-go's transparent
            // retry does (gRFC A6); a runtime that restarts gracefully refuses the calls it was sent last.
            if (err && !resent && wasRefused(err)) {
              resent = true;
              send();
              return;
            }
            if (err) {
              finish(err);
              return;
            }
            if (answer === undefined || messages > 1) {
              finish(grpcCallError(GrpcStatus.INTERNAL, `${messages} response messages to a unary call`));
              return;
            }
            try {
              finish(undefined, method.responseDeserialize(answer));
            } catch (err) {
              finish(grpcCallError(GrpcStatus.INTERNAL, `response could not be decoded: ${errorText(err)}`));
            }
          },
        });
        streamId = next.request(this.requestFields(method.path, timeoutMs, metadata), frame, handler);
      };
      send();
    });
  }

  private requestFields(
    path: string,
    timeoutMs: number,
    metadata: readonly (readonly [string, string])[],
  ): readonly (readonly [string, string])[] {
    if (metadata.length > 0) {
      return grpcRequestFields(path, [...metadata, ['grpc-timeout', grpcTimeout(timeoutMs)]]);
    }
    const known = this.plainFields.get(path);
    if (known?.timeoutMs === timeoutMs) return known.fields;
    const fields = grpcRequestFields(path, [['grpc-timeout', grpcTimeout(timeoutMs)]]);
    this.plainFields.set(path, { timeoutMs, fields });
    return fields;
  }

  close(): void {
    this.closed = true;
    this.connection?.close();
    this.connection = undefined;
  }

  // The connection keeps the process up only while a call waits on it, as a grpc-js channel does.
  private callStarted(connection: GrpcHttp2Connection): void {
    if (this.inFlight++ === 0) connection.ref();
  }

  private callEnded(connection: GrpcHttp2Connection): void {
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

/** The stream ended unprocessed: refused by RST_STREAM, or above a GOAWAY's last stream, or never sent. */
function wasRefused(err: GrpcCallError): boolean {
  const cause = err.cause as Http2StreamError | undefined;
  return err.code === GrpcStatus.UNAVAILABLE && cause?.code === Http2ErrorCode.REFUSED_STREAM;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
