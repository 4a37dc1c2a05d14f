import * as grpc from '@grpc/grpc-js';
import { KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { parseCriEndpoint } from './cri-endpoint.js';
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
export type CriMethod<Request, Response> = grpc.MethodDefinition<Request, Response>;

/** `Version` of `/runtime.v1.RuntimeService/Version`: the name errors and logs use. */
export function methodName(method: { path: string }): string {
  return method.path.slice(method.path.lastIndexOf('/') + 1);
}

export interface UnaryCallOptions {
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * One gRPC channel to a CRI socket, shared by the runtime and image clients of that endpoint.
 *
 * Calls never wait for the channel to become ready (grpc-js's default `waitForReady: false`), so
 * while the runtime is down they fail at once with CRI_UNAVAILABLE instead of sitting out their
 * deadline. grpc-js would also refuse calls for the rest of its reconnect back-off after the runtime
 * came back; dialling a unix socket is cheap, so a channel found in TRANSIENT_FAILURE is replaced
 * and the call makes a fresh attempt: the first call after a runtime restart succeeds.
 */
export class GrpcConnection {
  readonly endpoint: string;
  private readonly target: string;
  private readonly channelOptions: grpc.ChannelOptions;
  private client: grpc.Client;
  private closed = false;
  private unavailableLogged = false;

  constructor(endpoint: string, options: GrpcConnectionOptions = {}) {
    this.endpoint = endpoint;
    this.target = parseCriEndpoint(endpoint).grpcTarget;
    this.channelOptions = {
      'grpc.max_receive_message_length': options.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_MESSAGE_BYTES,
      // Upstream's dial back-off for the runtime socket: 100 ms growing to 3 s.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 3000,
    };
    this.client = this.newClient();
  }

  private newClient(): grpc.Client {
    return new grpc.Client(this.target, grpc.credentials.createInsecure(), this.channelOptions);
  }

  private currentClient(): grpc.Client {
    if (this.client.getChannel().getConnectivityState(false) === grpc.connectivityState.TRANSIENT_FAILURE) {
      this.client.close();
      this.client = this.newClient();
    }
    return this.client;
  }

  /** Makes one unary call; rejects with a KubeletError (see toCriError), or with the signal's reason when aborted. */
  call<Request, Response>(
    definition: CriMethod<Request, Response>,
    request: Request,
    options: UnaryCallOptions,
  ): Promise<Response> {
    const { timeoutMs, signal } = options;
    const method = methodName(definition);
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.closed) {
      return Promise.reject(
        new KubeletError('CRI_UNAVAILABLE', `${method}: the connection to ${this.endpoint} is closed`),
      );
    }
    const client = this.currentClient();
    return new Promise<Response>((resolve, reject) => {
      // grpc-js deadlines are wall-clock instants, so they come from Date.now(), not an injected Clock.
      const callOptions: grpc.CallOptions = { deadline: Date.now() + timeoutMs };
      const onAbort = (): void => call.cancel();
      const call = client.makeUnaryRequest<Request, Response>(
        definition.path,
        definition.requestSerialize,
        definition.responseDeserialize,
        request,
        new grpc.Metadata(),
        callOptions,
        (err, response) => {
          signal?.removeEventListener('abort', onAbort);
          if (err) {
            if (signal?.aborted) return reject(signal.reason);
            const criError = toCriError(err, method, this.endpoint, timeoutMs);
            this.noteOutcome(criError);
            return reject(criError);
          }
          this.noteOutcome(undefined);
          // grpc-js hands a response to every successful unary call; undefined only in its types.
          if (response === undefined)
            return reject(toCriError(new Error('no response'), method, this.endpoint, timeoutMs));
          resolve(response);
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
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
    this.client.close();
  }
}
