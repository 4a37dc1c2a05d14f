/**
 * gRPC's wire format over an HTTP/2 connection (http2-connection.ts; grpc/doc/PROTOCOL-HTTP2.md),
 * shared by the CRI's unary calls (grpc-unary-channel.ts) and containerd's event stream
 * (containerd-events/subscribe-task-events.ts). Hand-written rather than grpc-js, which costs the
 * kubelet several MiB of memory and about twice the CPU per call (see grpc-unary-channel.ts).
 *
 * A request is a POST to /package.Service/Method with `content-type: application/grpc` and
 * `te: trailers`; each message either way is length-prefixed (a flag byte, 0 for uncompressed, then
 * a 4-byte big-endian length). The answer is headers, any number of messages split across DATA
 * frames however the server likes, and trailers carrying grpc-status and grpc-message (or, for an
 * error without a body, those in the headers alone).
 */
import type { StreamHandler } from '../lib/http2/stream-handler.js';
import { GrpcStatus, grpcCallError, type GrpcCallError } from '../lib/grpc-status.js';
import { GRPC_PREFIX_BYTES, decodeGrpcMessage } from '../lib/grpc-wire.js';

/** A request's header fields: the pseudo-headers and gRPC's own, then extra (metadata, grpc-timeout). */
export function grpcRequestFields(
  path: string,
  extra: readonly (readonly [string, string])[],
): (readonly [string, string])[] {
  return [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', path],
    [':authority', 'localhost'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ...extra,
    ['user-agent', 'tskubelet-grpc'],
  ];
}

/**
 * Cuts an answer's DATA into its messages as the chunks come: a message may span chunks and a chunk
 * may hold several. A message's bytes are not copied when one chunk holds them all.
 */
export class GrpcMessageReader {
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  // The length of the message being read, once its prefix is in; -1 while the prefix is awaited.
  private expected = -1;

  constructor(
    private readonly maxMessageBytes: number,
    private readonly onMessage: (message: Buffer) => void,
  ) {}

  /** True when the bytes taken so far end inside a message (an answer ending here was cut short). */
  get midMessage(): boolean {
    return this.expected >= 0 || this.buffered > 0;
  }

  /**
   * Takes one chunk and passes on each message it completes. Returns why the answer cannot be read
   * (a compressed or oversized message), after which the reader must not be fed again.
   */
  push(chunk: Buffer): GrpcCallError | undefined {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.expected < 0) {
        if (this.buffered < GRPC_PREFIX_BYTES) return undefined;
        const prefix = this.take(GRPC_PREFIX_BYTES);
        // No request here asks for compression (grpc-accept-encoding is never sent), so a compressed
        // message is a fault, as the protocol says.
        if (prefix[0] !== 0) {
          return grpcCallError(
            GrpcStatus.INTERNAL,
            `compressed message (flag ${prefix[0]}) was not asked for`,
          );
        }
        const length = prefix.readUInt32BE(1);
        // Checked on the prefix, before any of it is held: a broken server cannot make this buffer GiBs.
        if (length > this.maxMessageBytes) {
          return grpcCallError(
            GrpcStatus.RESOURCE_EXHAUSTED,
            `Received message larger than max (${length} vs. ${this.maxMessageBytes})`,
          );
        }
        this.expected = length;
      }
      if (this.buffered < this.expected) return undefined;
      const message = this.take(this.expected);
      this.expected = -1;
      this.onMessage(message);
    }
  }

  /** The first n buffered bytes, which must all be in. */
  private take(n: number): Buffer {
    const first = this.chunks[0];
    if (first !== undefined && first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let at = 0;
    let used = 0;
    while (at < n) {
      const chunk = this.chunks[used]!;
      const k = Math.min(chunk.length, n - at);
      chunk.copy(out, at, 0, k);
      at += k;
      if (k === chunk.length) used++;
      else this.chunks[used] = chunk.subarray(k);
    }
    // Once, not a shift per chunk: a large message arrives in thousands of 16 KiB frames.
    this.chunks.splice(0, used);
    this.buffered -= n;
    return out;
  }
}

export interface GrpcAnswerOptions {
  /** The server, as errors name it (the socket's path). */
  peer: string;
  maxMessageBytes: number;
  /** Each whole message of the answer, in order, as it completes. */
  onMessage: (message: Buffer) => void;
  /**
   * Once, when the call is over: undefined for grpc-status OK, else why it failed. Not called after
   * the owner cancelled the stream itself.
   */
  onEnd: (error: GrpcCallError | undefined) => void;
  /** Resets the stream: the answer is unreadable (compressed, too large) and onEnd says so next. */
  cancel: () => void;
}

/** The handler of one call's HTTP/2 stream: it reads the answer's messages and its status. */
export function grpcAnswerHandler(options: GrpcAnswerOptions): StreamHandler {
  const { peer, onEnd } = options;
  const reader = new GrpcMessageReader(options.maxMessageBytes, options.onMessage);
  let httpStatus: number | undefined;
  // The status as sent: read once the answer is over, so that a malformed one fails the call.
  let grpcStatus: string | undefined;
  let grpcMessage = '';
  let ended = false;
  const end = (error: GrpcCallError | undefined): void => {
    if (ended) return;
    ended = true;
    onEnd(error);
  };
  return {
    onHeaders: (fields) => {
      if (httpStatus === undefined) httpStatus = Number(fields.get(':status'));
      const status = fields.get('grpc-status');
      if (status !== undefined) {
        grpcStatus = status;
        grpcMessage = decodeGrpcMessage(fields.get('grpc-message') ?? '');
      }
    },
    onData: (chunk) => {
      if (ended) return;
      const error = reader.push(chunk);
      if (!error) return;
      options.cancel();
      end(error);
    },
    onError: (err) => end(grpcCallError(GrpcStatus.UNAVAILABLE, err.message, err)),
    onEnd: () => end(statusAtEnd(peer, httpStatus, grpcStatus, grpcMessage, reader.midMessage)),
  };
}

function statusAtEnd(
  peer: string,
  httpStatus: number | undefined,
  grpcStatusText: string | undefined,
  grpcMessage: string,
  midMessage: boolean,
): GrpcCallError | undefined {
  if (grpcStatusText === undefined) {
    // No status at all: the server went mid-answer, or something that is not a gRPC server answered.
    const why =
      httpStatus === undefined
        ? `connection to ${peer} ended the stream without an answer`
        : `no grpc-status in the answer (HTTP status ${httpStatus})`;
    return grpcCallError(httpStatus === 200 ? GrpcStatus.INTERNAL : GrpcStatus.UNAVAILABLE, why);
  }
  // Decimal digits only, as grpc-go reads it: Number() would take '' as OK and 'abc' as a code of NaN.
  if (!/^\d{1,10}$/.test(grpcStatusText)) {
    return grpcCallError(GrpcStatus.INTERNAL, `malformed grpc-status ${JSON.stringify(grpcStatusText)}`);
  }
  const grpcStatus = Number(grpcStatusText);
  if (grpcStatus !== GrpcStatus.OK) return grpcCallError(grpcStatus, grpcMessage);
  if (midMessage) return grpcCallError(GrpcStatus.INTERNAL, 'the answer ended inside a message');
  return undefined;
}
