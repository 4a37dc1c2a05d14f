import { retryDelayMs } from '../lib/backoff.js';
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage, isKubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { GrpcConnection } from './grpc-connection.js';
import { RemoteImageService, type RemoteImageOptions } from './remote-image.js';
import { RemoteRuntimeService, type RemoteRuntimeOptions } from './remote-runtime.js';
import type { VersionResponse } from './types.js';

const log = logger('remote_runtime');

export interface ConnectRuntimeOptions extends RemoteRuntimeOptions, RemoteImageOptions {
  /** --image-service-endpoint; the runtime endpoint when absent. */
  imageEndpoint?: string;
  /** Stops the retry loop; connectRuntime then rejects with the signal's reason. */
  signal?: AbortSignal;
  clock?: Clock;
  /** Deadline of each handshake call (default 10 s): a wedged runtime is retried, not waited on for minutes. */
  handshakeTimeoutMs?: number;
  /** First pause between attempts (default 1 s); it doubles up to retryMaxDelayMs (default 30 s). */
  retryInitialDelayMs?: number;
  retryMaxDelayMs?: number;
}

export interface RuntimeConnection {
  readonly runtime: RemoteRuntimeService;
  readonly images: RemoteImageService;
  /** What the runtime answered to the Version handshake. */
  readonly version: VersionResponse;
  /** Closes the gRPC channels; calls made afterwards fail with CRI_UNAVAILABLE. */
  close(): void;
}

/**
 * Dials the runtime and performs upstream's handshake: Version on the runtime service, ImageFsInfo
 * on the image service. While the socket is missing or the runtime refuses, it logs the reason and
 * tries again with back-off, until it succeeds or opts.signal aborts. After it resolves, the
 * clients ride out runtime restarts on their own (see GrpcConnection).
 */
export async function connectRuntime(
  endpoint: string,
  opts: ConnectRuntimeOptions = {},
): Promise<RuntimeConnection> {
  const clock = opts.clock ?? realClock;
  const handshakeTimeoutMs = opts.handshakeTimeoutMs ?? 10_000;
  const initialMs = opts.retryInitialDelayMs ?? 1000;
  const maxMs = opts.retryMaxDelayMs ?? 30_000;
  const imageEndpoint = opts.imageEndpoint ?? endpoint;

  const runtimeConnection = new GrpcConnection(endpoint, opts);
  const imageConnection =
    imageEndpoint === endpoint ? runtimeConnection : new GrpcConnection(imageEndpoint, opts);
  const close = (): void => {
    runtimeConnection.close();
    if (imageConnection !== runtimeConnection) imageConnection.close();
  };
  const runtime = new RemoteRuntimeService(runtimeConnection, opts);
  const images = new RemoteImageService(imageConnection, opts);

  try {
    for (let attempt = 0; ; attempt++) {
      opts.signal?.throwIfAborted();
      try {
        const version = await runtime.version({ timeoutMs: handshakeTimeoutMs, signal: opts.signal });
        await images.imageFsInfo({ timeoutMs: handshakeTimeoutMs, signal: opts.signal });
        log.info('Connected to the container runtime', {
          endpoint,
          imageEndpoint,
          runtimeName: version.runtimeName,
          runtimeVersion: version.runtimeVersion,
          runtimeApiVersion: version.runtimeApiVersion,
        });
        return { runtime, images, version, close };
      } catch (err) {
        if (opts.signal?.aborted || !isKubeletError(err)) throw err;
        const delayMs = retryDelayMs(attempt, initialMs, maxMs);
        log.error('Cannot reach the container runtime; will retry', {
          endpoint,
          imageEndpoint,
          attempt: attempt + 1,
          retryInMs: delayMs,
          err: errorMessage(err),
        });
        await clock.sleep(delayMs, opts.signal);
      }
    }
  } catch (err) {
    close();
    throw err;
  }
}
