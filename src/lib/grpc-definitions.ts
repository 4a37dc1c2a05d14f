/**
 * The generated protos (`src/**\/generated`) describe their services as plain data (ts-proto's
 * `outputServices=generic-definitions`): a method's name, its message codecs and whether it streams.
 * They do not import a gRPC library, so a kubelet that serves and calls nothing over grpc-js never
 * loads it (it costs several MiB of memory). This module turns those definitions into what
 * a transport wants: grpc-js's method definitions (for its clients and servers, and for this project's
 * own gRPC channels, which read the same fields), and calls through a grpc-js loaded on first use.
 */
import type * as grpc from '@grpc/grpc-js';
import { BinaryWriter, type BinaryReader } from '@bufbuild/protobuf/wire';
import { GRPC_PREFIX_BYTES } from './grpc-wire.js';

/** A generated message's codec (ts-proto's MessageFns). */
export interface MessageCodec<T> {
  encode(message: T, writer?: BinaryWriter): BinaryWriter;
  decode(input: BinaryReader | Uint8Array, length?: number): T;
}

/** One method of a generated service definition. */
export interface GeneratedMethod<Request, Response> {
  name: string;
  requestType: MessageCodec<Request>;
  requestStream: boolean;
  responseType: MessageCodec<Response>;
  responseStream: boolean;
}

/** A generated service definition (`XxxDefinition` in a generated file). */
export interface GeneratedService {
  name: string;
  fullName: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each method has its own message types
  methods: Record<string, GeneratedMethod<any, any>>;
}

/**
 * A method as grpc-js describes one (its MethodDefinition, structurally): the HTTP/2 path and the
 * codecs between messages and bytes.
 */
export interface GrpcMethod<Request, Response> {
  path: string;
  originalName: string;
  requestStream: boolean;
  responseStream: boolean;
  requestSerialize: (message: Request) => Buffer;
  requestDeserialize: (bytes: Buffer) => Request;
  responseSerialize: (message: Response) => Buffer;
  responseDeserialize: (bytes: Buffer) => Response;
  /** The request as it goes on the wire: one uncompressed gRPC message behind its prefix (the project's own channels). */
  requestFrame: (message: Request) => Buffer;
}

type RequestOf<M> = M extends GeneratedMethod<infer Request, unknown> ? Request : never;
type ResponseOf<M> = M extends GeneratedMethod<unknown, infer Response> ? Response : never;

/** A service's methods as grpc-js method definitions, under the generated (camelCase) keys. */
export type GrpcMethods<S extends GeneratedService> = {
  [K in keyof S['methods']]: GrpcMethod<RequestOf<S['methods'][K]>, ResponseOf<S['methods'][K]>>;
};

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// One writer for every request frame: an encode is synchronous, so they never share it at once,
// and a writer that keeps its buffer spares each message the doubling from 128 bytes that a new
// one goes through (half of a CreateContainerRequest's encode: bench/cri-call.ts).
let frameWriter = new BinaryWriter();
// A writer grown past this (a request with a large config) is not kept: its buffer would stay.
const MAX_KEPT_WRITER_BYTES = 64 * 1024;
const NO_PREFIX = new Uint8Array(GRPC_PREFIX_BYTES);

/** The message behind gRPC's prefix (0: uncompressed, then its length), encoded in place: no copy of the message. */
export function encodeGrpcFrame<T>(codec: MessageCodec<T>, message: T): Buffer {
  const writer = frameWriter;
  let bytes: Uint8Array;
  try {
    codec.encode(message, writer.raw(NO_PREFIX));
  } finally {
    // finish() also resets the writer after an encode that threw midway.
    bytes = writer.finish();
  }
  if (bytes.length > MAX_KEPT_WRITER_BYTES) frameWriter = new BinaryWriter();
  const frame = toBuffer(bytes);
  frame.writeUInt32BE(frame.length - GRPC_PREFIX_BYTES, 1);
  return frame;
}

/** The service's methods as grpc-js method definitions: paths `/<package.Service>/<Method>`. */
export function grpcMethods<S extends GeneratedService>(service: S): GrpcMethods<S> {
  const methods: Record<string, GrpcMethod<unknown, unknown>> = {};
  for (const [key, m] of Object.entries(service.methods)) {
    methods[key] = {
      path: `/${service.fullName}/${m.name}`,
      originalName: key,
      requestStream: m.requestStream,
      responseStream: m.responseStream,
      requestSerialize: (message) => toBuffer(m.requestType.encode(message).finish()),
      requestDeserialize: (bytes) => m.requestType.decode(bytes),
      responseSerialize: (message) => toBuffer(m.responseType.encode(message).finish()),
      responseDeserialize: (bytes) => m.responseType.decode(bytes),
      requestFrame: (message) => encodeGrpcFrame(m.requestType, message),
    };
  }
  return methods as GrpcMethods<S>;
}

/** The service as grpc-js's Server.addService takes it (its methods are grpc-js method definitions). */
export function grpcJsService(service: GeneratedService): grpc.ServiceDefinition {
  return grpcMethods(service) as unknown as grpc.ServiceDefinition;
}

/**
 * One unary call on a grpc-js client (a plain `grpc.Client`: the method brings its path and codecs).
 * Rejects with grpc-js's ServiceError; an abort of signal cancels the call (CANCELLED).
 */
export function grpcJsUnary<Request, Response>(
  client: grpc.Client,
  method: Pick<GrpcMethod<Request, Response>, 'path' | 'requestSerialize' | 'responseDeserialize'>,
  request: Request,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  signal?: AbortSignal,
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => call.cancel();
    const call = client.makeUnaryRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      request,
      metadata,
      options,
      (err, response) => {
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve(response as Response);
      },
    );
    // A signal that aborted before the call (while grpc-js loaded, for one) fires no event: cancel now.
    if (signal?.aborted) call.cancel();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** grpc-js, loaded on first use: only the callers that need it (CSI, plugins, gRPC probes) pay for it. */
export function loadGrpcJs(): Promise<typeof grpc> {
  return import('@grpc/grpc-js');
}
