import type { GrpcMethod } from '../lib/grpc-definitions.js';
import { KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { parseCriEndpoint } from './cri-endpoint.js';
import { GrpcUnaryChannel } from './grpc-unary-channel.js';
import { toCriError } from './to-cri-error.js';

const log = logger('remote_runtime');

/**
 * The largest CRI answer taken in. Upstream dials with 16 MiB, but its answers grow with what pods
 * carry: each sandbox lists its pod's annotations (up to 256 KiB once validated), so 110 pods with
 * their dead sandboxes can pass 16 MiB, and one relist that fails blinds the whole node. Four times
 * upstream's figure gives that margin; it costs nothing until an answer is that large. (containerd
 * sends at most its own `[grpc] max_send_message_size`, 16 MiB by default.)
 */
export const DEFAULT_MAX_RECEIVE_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface GrpcConnectionOptions {
  maxReceiveMessageBytes?: number;
}

/** One generated RPC (see ./generated): its path and codecs; the request and response types follow from it. */
export type CriMethod<Request, Response> = GrpcMethod<Request, Response>;

/** `Version` of `/runtime.v1.RuntimeService/Version`: the name errors and logs use. */
export function methodName(method: { path: string }): string {
  return method.path.slice(method.path.lastIndexOf('/') + 1);
}

export interface UnaryCallOptions {
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * One connection to a CRI socket, shared by the runtime and image clients of that endpoint. Unary
 * calls go through GrpcUnaryChannel (the project's gRPC framing over node:http2; see there why not
 * grpc-js).
 *
 * Calls never wait for the runtime to be ready (grpc-js's default `waitForReady: false` did the
 * same), so while the runtime is down they fail at once with CRI_UNAVAILABLE instead of sitting out
 * their deadline, and the first call after the runtime came back dials afresh and succeeds.
 */
export class GrpcConnection {
  readonly endpoint: string;
  private readonly channel: GrpcUnaryChannel;
  private closed = false;
  private unavailableLogged = false;

  constructor(endpoint: string, options: GrpcConnectionOptions = {}) {
    this.endpoint = endpoint;
    this.channel = new GrpcUnaryChannel(parseCriEndpoint(endpoint).socketPath, {
      maxReceiveMessageBytes: options.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_MESSAGE_BYTES,
    });
  }

  /** Makes one unary call; rejects with a KubeletError (see toCriError), or with the signal's reason when aborted. */
  call<Request, Response>(
    definition: CriMethod<Request, Response>,
    request: Request,
    options: UnaryCallOptions,
  ): Promise<Response> {
    const { timeoutMs, signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.closed) {
      return Promise.reject(
        new KubeletError(
          'CRI_UNAVAILABLE',
          `${methodName(definition)}: the connection to ${this.endpoint} is closed`,
        ),
      );
    }
    return this.channel.call(definition, request, timeoutMs, signal).then(
      (response) => {
        this.noteOutcome(undefined);
        return response;
      },
      (err: unknown) => {
        if (signal?.aborted) throw signal.reason;
        const criError = toCriError(err, methodName(definition), this.endpoint, timeoutMs);
        this.noteOutcome(criError);
        throw criError;
      },
    );
  }

  // One line when the runtime goes away and one when it is back, rather than one per failed call.
  private noteOutcome(err: KubeletError | undefined): void {
    if (err?.code === 'CRI_UNAVAILABLE') {
      if (!this.unavailableLogged)
        log.error('Container runtime is unavailable', { endpoint: this.endpoint, err });
      this.unavailableLogged = true;
    } else if (this.unavailableLogged && err?.code !== 'CRI_DEADLINE_EXCEEDED') {
      log.info('Container runtime is available again', { endpoint: this.endpoint });
      this.unavailableLogged = false;
    }
  }

  close(): void {
    this.closed = true;
    this.channel.close();
  }
}
