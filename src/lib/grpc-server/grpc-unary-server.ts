/**
 * A gRPC server for unary calls on a unix socket, over Node's own node:http2: the kubelet's pod
 * resources API and its device plugin registration service.
 * Hand-written because grpc-js's server costs MiB of RSS that the kubelet's idle memory target cannot afford.
 *
 * The wire format is gRPC over HTTP/2 (grpc/doc/PROTOCOL-HTTP2.md): a POST to
 * /package.Service/Method with a content-type starting `application/grpc`, whose body is one
 * length-prefixed message (a flag byte, 0 for uncompressed, then a 4-byte big-endian length). The
 * answer is `:status 200`, one such message and trailers with grpc-status 0; a failure is a
 * trailers-only answer (grpc-status and a percent-encoded grpc-message in the headers), worded as
 * grpc-go words it. Left out: streaming calls, compression, metadata for handlers, and grpc-timeout:
 * the client enforces its own deadline by resetting the stream, and a reset call's answer is dropped.
 */
import type * as Http2 from 'node:http2';
import net from 'node:net';
import { errorMessage } from '../errors.js';
import type { GrpcMethod } from '../grpc-definitions.js';
import { GrpcStatus, grpcCallError } from '../grpc-status.js';
import { GRPC_PREFIX_BYTES, encodeGrpcMessage, grpcMessageFrame } from '../grpc-wire.js';
import { lazyBuiltin } from '../lazy-builtin.js';
import { logger } from '../log.js';
import { grpcStatusOf } from './grpc-status-error.js';

// node:http2 (about 3 MiB) is loaded when the first client connects, so a kubelet nobody talks to
// never holds it; synchronously, so that it is loaded in the same tick as the connection is accepted
// and the session takes the socket before a byte of it has been read.
const http2Module = lazyBuiltin<typeof Http2>('node:http2');

const log = logger('grpc-server');

/** grpc-go's default MaxRecvMsgSize. */
export const DEFAULT_MAX_RECEIVE_MESSAGE_BYTES = 4 * 1024 * 1024;

const NGHTTP2_NO_ERROR = 0;

/** What the server needs of a method (one of grpcMethods(<generated definition>)): its path and codecs. */
export type UnaryMethod<Request, Response> = Pick<
  GrpcMethod<Request, Response>,
  'path' | 'requestDeserialize' | 'responseSerialize'
>;

/** A unary method with its message types hidden, as the server's table holds it. */
export interface UnaryMethodHandler {
  readonly path: string;
  call(body: Buffer): Promise<Uint8Array>;
}

/** The method served by handler, which throws a grpcCallError (or anything with a numeric `code`) to answer with that status. */
export function unaryMethod<Request, Response>(
  method: UnaryMethod<Request, Response>,
  handler: (request: Request) => Response | Promise<Response>,
): UnaryMethodHandler {
  return {
    path: method.path,
    async call(body) {
      let request: Request;
      try {
        request = method.requestDeserialize(body);
      } catch (err) {
        throw grpcCallError(GrpcStatus.INTERNAL, `grpc: error unmarshalling request: ${errorMessage(err)}`);
      }
      const response = await handler(request);
      try {
        return method.responseSerialize(response);
      } catch (err) {
        throw grpcCallError(GrpcStatus.INTERNAL, `grpc: error while marshaling: ${errorMessage(err)}`);
      }
    },
  };
}

export interface GrpcUnaryServerOptions {
  /** A unix socket path; the file must not exist yet. */
  socketPath: string;
  methods: readonly UnaryMethodHandler[];
  /** A larger request fails with RESOURCE_EXHAUSTED. */
  maxReceiveMessageBytes?: number;
}

export class GrpcUnaryServer {
  private readonly listener: net.Server;
  private readonly methods: ReadonlyMap<string, UnaryMethodHandler>;
  private readonly services: ReadonlySet<string>;
  private readonly maxReceiveMessageBytes: number;
  private http2: Http2.Http2Server | undefined;
  private readonly sessions = new Set<Http2.ServerHttp2Session>();
  private listenerClosed: Promise<void> | undefined;

  private constructor(private readonly opts: GrpcUnaryServerOptions) {
    this.methods = new Map(opts.methods.map((m) => [m.path, m]));
    this.services = new Set(opts.methods.map((m) => serviceOf(m.path)));
    this.maxReceiveMessageBytes = opts.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_MESSAGE_BYTES;
    this.listener = net.createServer((socket) => this.onConnection(socket));
  }

  /** Listens on opts.socketPath; rejects if it cannot (the file exists, the folder is missing). */
  static async listen(opts: GrpcUnaryServerOptions): Promise<GrpcUnaryServer> {
    const server = new GrpcUnaryServer(opts);
    const { listener } = server;
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(opts.socketPath, () => {
        listener.off('error', reject);
        resolve();
      });
    });
    // Past listen, an error is a failed accept (out of file descriptors): the server goes on.
    listener.on('error', (err) =>
      log.error('Failed to accept a gRPC connection', { socket: opts.socketPath, err: err.message }),
    );
    return server;
  }

  get socketPath(): string {
    return this.opts.socketPath;
  }

  /** The HTTP/2 server, made on the first connection; undefined until then. */
  get http2Server(): Http2.Http2Server | undefined {
    return this.http2;
  }

  private onConnection(socket: net.Socket): void {
    this.http2 ??= this.createHttp2Server();
    this.http2.emit('connection', socket);
  }

  private createHttp2Server(): Http2.Http2Server {
    const server = http2Module().createServer();
    server.on('session', (session) => {
      this.sessions.add(session);
      session.once('close', () => this.sessions.delete(session));
    });
    server.on('stream', (stream, headers) => this.onStream(stream, headers));
    return server;
  }

  private onStream(stream: Http2.ServerHttp2Stream, headers: Http2.IncomingHttpHeaders): void {
    // A stream's errors (a reset, a write after the peer left) end that call only.
    stream.on('error', () => {});
    const httpMethod = headers[':method'];
    if (httpMethod !== 'POST') {
      this.respondWithStatus(stream, GrpcStatus.INTERNAL, `invalid gRPC request method "${httpMethod}"`, 405);
      return;
    }
    const contentType = headers['content-type'] ?? '';
    if (!contentType.startsWith('application/grpc')) {
      this.respondWithStatus(
        stream,
        GrpcStatus.INVALID_ARGUMENT,
        `invalid gRPC request content-type "${contentType}"`,
        415,
      );
      return;
    }
    const path = headers[':path'] ?? '';
    const method = this.methods.get(path);
    if (!method) {
      this.respondWithStatus(stream, GrpcStatus.UNIMPLEMENTED, this.unknownMethodText(path));
      return;
    }
    this.readRequest(stream, headers, (body) => {
      void method.call(body).then(
        (response) => this.respond(stream, response),
        (err: unknown) => {
          const { code, message } = grpcStatusOf(err);
          this.respondWithStatus(stream, code, message);
        },
      );
    });
  }

  /** grpc-go's wording, which tells a client whether the service or only the method is missing. */
  private unknownMethodText(path: string): string {
    const service = serviceOf(path);
    if (!path.startsWith('/') || service === '') return `malformed method name: "${path}"`;
    if (!this.services.has(service)) return `unknown service ${service}`;
    return `unknown method ${path.slice(service.length + 2)} for service ${service}`;
  }

  /** Gathers the one request message, failing the call as soon as its header shows it cannot be taken. */
  private readRequest(
    stream: Http2.ServerHttp2Stream,
    headers: Http2.IncomingHttpHeaders,
    onMessage: (message: Buffer) => void,
  ): void {
    let chunks: Buffer[] = [];
    let received = 0;
    let messageBytes: number | undefined;
    const fail = (code: number, message: string): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      chunks = [];
      this.respondWithStatus(stream, code, message);
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      received += chunk.length;
      if (messageBytes === undefined && received >= GRPC_PREFIX_BYTES) {
        const head = chunks.length === 1 ? chunk : Buffer.concat(chunks, received);
        chunks = [head];
        messageBytes = head.readUInt32BE(1);
        if (messageBytes > this.maxReceiveMessageBytes) {
          fail(
            GrpcStatus.RESOURCE_EXHAUSTED,
            `grpc: received message larger than max (${messageBytes} vs. ${this.maxReceiveMessageBytes})`,
          );
          return;
        }
        if (head[0] !== 0) {
          const encoding = headers['grpc-encoding'];
          if (encoding === undefined || encoding === 'identity')
            fail(GrpcStatus.INTERNAL, 'grpc: compressed flag set with identity or empty encoding');
          else
            fail(
              GrpcStatus.UNIMPLEMENTED,
              `grpc: Decompressor is not installed for grpc-encoding "${encoding}"`,
            );
          return;
        }
      }
      if (messageBytes !== undefined && received > GRPC_PREFIX_BYTES + messageBytes)
        fail(GrpcStatus.INTERNAL, 'grpc: more than one request message in a unary call');
    };
    const onEnd = (): void => {
      if (messageBytes === undefined || received < GRPC_PREFIX_BYTES + messageBytes) {
        fail(GrpcStatus.INTERNAL, received === 0 ? 'grpc: no request message' : 'unexpected EOF');
        return;
      }
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
      onMessage(body.subarray(GRPC_PREFIX_BYTES));
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
  }

  private respond(stream: Http2.ServerHttp2Stream, message: Uint8Array): void {
    if (stream.destroyed || stream.closed) return;
    const frame = grpcMessageFrame(message);
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(GrpcStatus.OK) }));
    stream.end(frame);
  }

  /** A trailers-only answer. */
  private respondWithStatus(
    stream: Http2.ServerHttp2Stream,
    code: number,
    message: string,
    httpStatus = 200,
  ): void {
    if (stream.destroyed || stream.closed) return;
    stream.respond(
      {
        ':status': httpStatus,
        'content-type': 'application/grpc',
        'grpc-status': String(code),
        'grpc-message': encodeGrpcMessage(message),
      },
      { endStream: true },
    );
    // The rest of the request is of no use now: once the answer is out, ask the client to stop
    // sending it (RFC 9113 §8.1), rather than take in up to a message's worth for nothing.
    if (!stream.readableEnded) stream.close(NGHTTP2_NO_ERROR);
  }

  /** Resolves once the socket no longer accepts and every connection is closed. */
  private stopListening(): Promise<void> {
    this.listenerClosed ??= new Promise((resolve) => this.listener.close(() => resolve()));
    return this.listenerClosed;
  }

  /**
   * Stops accepting and sends each connection GOAWAY: calls in flight finish, then the connections
   * close and callback runs (grpc-js's Server.tryShutdown, so that shutdownGrpcServer drives both).
   */
  tryShutdown(callback: (err?: Error) => void): void {
    void this.stopListening().then(() => callback());
    for (const session of this.sessions) session.close();
  }

  /** Stops accepting and cuts every connection, calls in flight too. */
  forceShutdown(): void {
    void this.stopListening();
    for (const session of this.sessions) session.destroy();
  }
}

/** `package.Service` of `/package.Service/Method`; '' when the path has no method part. */
function serviceOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash > 0 ? path.slice(1, slash) : '';
}
