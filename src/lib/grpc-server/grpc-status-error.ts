/**
 * What a gRPC handler throws to answer with a status of its choosing. Anything else it throws answers
 * UNKNOWN with the error's message, as a plain error from a grpc-go handler does.
 */
import { errorMessage } from '../errors.js';
import { GrpcStatus } from '../grpc-status.js';

/**
 * grpc-js's ServiceError shape (a numeric code and the details). Not a class of its own: it carries
 * a gRPC status to the server's answer and goes no further, where a KubeletError's code is a string.
 */
export type GrpcStatusError = Error & { code: number; details: string };

export function grpcStatusError(code: number, details: string): GrpcStatusError {
  return Object.assign(new Error(details), { code, details });
}

export interface GrpcStatusOf {
  code: number;
  message: string;
}

/**
 * The status a thrown value answers with: its numeric `code` and its `details` or message, which
 * also takes grpc-js's ServiceError shape (Node's system errors carry string codes, so they stay
 * UNKNOWN).
 */
export function grpcStatusOf(err: unknown): GrpcStatusOf {
  if (typeof err === 'object' && err !== null) {
    const { code, details } = err as { code?: unknown; details?: unknown };
    if (
      typeof code === 'number' &&
      Number.isInteger(code) &&
      code > GrpcStatus.OK &&
      code <= GrpcStatus.UNAUTHENTICATED
    )
      return { code, message: typeof details === 'string' ? details : errorMessage(err) };
  }
  return { code: GrpcStatus.UNKNOWN, message: errorMessage(err) };
}
