/**
 * What an HTTP/2 connection tells the owner of one of its streams. Shared by the project's own
 * connection (client-connection.ts: the CRI's unary calls, the API client over TLS) and the CRI's
 * node:http2 one (src/cri/http2-connection.ts, containerd's event stream); the CRI's gRPC framing
 * (src/cri/grpc-over-http2.ts) and the API client's transport (src/k8s/http2-transport.ts) see only this.
 */

/** What a stream's owner hears, in order: headers (maybe twice: response, then trailers), data, then one end. */
export interface StreamHandler {
  onHeaders(fields: Map<string, string>, endStream: boolean): void;
  onData(chunk: Buffer): void;
  /** The server ended the stream (END_STREAM). */
  onEnd(): void;
  /** The stream was reset, refused, or the connection went: the answer will not come. */
  onError(error: Http2StreamError): void;
}

/**
 * Why a stream ended without an answer; `code` is the HTTP/2 error code when there is one. Not a
 * class of its own: the layer above turns it into its call's error (the CRI's src/cri/to-cri-error.ts).
 */
export type Http2StreamError = Error & { code?: number };

export function http2StreamError(message: string, code?: number): Http2StreamError {
  return code === undefined ? new Error(message) : Object.assign(new Error(message), { code });
}

/** What the gRPC layer needs of a connection; both connections have it. */
export interface GrpcHttp2Connection {
  /** False once the connection takes no more streams (GOAWAY, failure, closed): dial a new one. */
  readonly acceptsStreams: boolean;
  /** Called once, when the connection can carry nothing more. */
  onClose: ((error: Error | undefined) => void) | undefined;
  /** Sends a request (pseudo-headers among the fields) with its whole body; returns the ID cancel() takes. */
  request(fields: readonly (readonly [string, string])[], body: Buffer, handler: StreamHandler): number;
  /** Resets a stream the caller no longer wants; its handler hears nothing more. */
  cancel(id: number): void;
  close(): void;
  ref(): void;
  unref(): void;
}
