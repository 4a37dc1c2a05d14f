/**
 * A unary call through grpc-js's generic client, with the method's path and message codecs spelled
 * out: grpc-js is here the independent peer that checks the kubelet's servers against a real gRPC
 * implementation. Test equipment, not product.
 */
import * as grpc from '@grpc/grpc-js';
import { grpcJsUnary } from '../../src/lib/grpc-definitions.js';

/** What ts-proto generates for each message. */
export interface MessageCodec<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(bytes: Uint8Array): T;
}

export function grpcUnaryCall<Request, Response>(
  client: grpc.Client,
  path: string,
  codecs: { request: MessageCodec<Request>; response: MessageCodec<Response> },
  request: Request,
  timeoutMs = 15_000,
): Promise<Response> {
  const method = {
    path,
    requestSerialize: (req: Request) => Buffer.from(codecs.request.encode(req).finish()),
    responseDeserialize: (bytes: Buffer) => codecs.response.decode(bytes),
  };
  return grpcJsUnary(client, method, request, new grpc.Metadata(), { deadline: Date.now() + timeoutMs });
}

/** A grpc-js client on a unix socket, without TLS as the kubelet's sockets are. */
export function unixSocketClient(socketPath: string): grpc.Client {
  return new grpc.Client(`unix://${socketPath}`, grpc.credentials.createInsecure());
}
