import type { ServiceError } from '@grpc/grpc-js';
import { KubeletError, errorMessage } from '../lib/errors.js';
import { GrpcStatus, grpcStatusName } from '../lib/grpc-status.js';
import { CriNotFoundError } from './errors.js';

function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as Partial<ServiceError>).code === 'number';
}

/**
 * Maps a failed CRI call to the project's errors: NOT_FOUND is CriNotFoundError (callers treat it as
 * "already gone"); UNAVAILABLE and CANCELLED are CRI_UNAVAILABLE (the runtime is down, its socket is
 * missing, or it dropped the call); DEADLINE_EXCEEDED is CRI_DEADLINE_EXCEEDED; anything else is
 * CRI_ERROR carrying the runtime's own message, which is what upstream shows users in container state
 * messages. The gRPC error stays as `cause` for whoever needs its code.
 */
export function toCriError(err: unknown, method: string, endpoint: string, timeoutMs: number): KubeletError {
  if (!isServiceError(err))
    return new KubeletError('CRI_ERROR', `${method}: ${errorMessage(err)}`, { cause: err });
  // grpc-js appends an empty "Resolution note:" to connection failures on unix sockets; drop it.
  const details =
    err.details.replace(/\s*Resolution note:\s*$/, '') ||
    `${method} failed with gRPC status ${grpcStatusName(err.code) ?? err.code}`;
  switch (err.code) {
    case GrpcStatus.NOT_FOUND:
      return new CriNotFoundError(details, { cause: err });
    // The client cancels only through the caller's signal, which is handled before this mapping, so a
    // CANCELLED status here means the runtime dropped the call: it is shutting down or has gone.
    case GrpcStatus.CANCELLED:
    case GrpcStatus.UNAVAILABLE:
      return new KubeletError(
        'CRI_UNAVAILABLE',
        `container runtime at ${endpoint} is unavailable (${method}): ${details}`,
        {
          cause: err,
        },
      );
    case GrpcStatus.DEADLINE_EXCEEDED:
      return new KubeletError(
        'CRI_DEADLINE_EXCEEDED',
        `${method} to ${endpoint} did not complete within ${timeoutMs} ms`,
        {
          cause: err,
        },
      );
    default:
      return new KubeletError('CRI_ERROR', details, { cause: err });
  }
}
