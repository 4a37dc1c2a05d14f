/**
 * The status a gRPC handler's error answers with: a grpcCallError's (or anything with a numeric
 * `code`) as it says; anything else UNKNOWN with the error's message, as a plain error from a grpc-go
 * handler does.
 */
import { errorMessage } from '../errors.js';
import { GrpcStatus } from '../grpc-status.js';

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
