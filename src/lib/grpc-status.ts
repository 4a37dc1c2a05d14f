/** gRPC status codes (grpc/doc/statuscodes.md), without loading a gRPC library for them. */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

const NAMES = Object.keys(GrpcStatus);

/** `NOT_FOUND` for 5: the name of a status code (the keys above are in code order), undefined when unknown. */
export function grpcStatusName(code: number): string | undefined {
  return NAMES[code];
}

/**
 * A failed gRPC call, or what a server's handler throws to answer with that status: an Error with
 * grpc-js's ServiceError shape (a numeric code, the details, and its message `14 UNAVAILABLE:
 * details`), so that what maps grpc-js's errors maps these alike and what reads the message (the
 * evented PLEG looks for UNIMPLEMENTED) reads the same text. Not a class of its own: a KubeletError's
 * code is a string, and this one goes no further than the gRPC code that reads it.
 */
export type GrpcCallError = Error & { code: number; details: string };

export function grpcCallError(code: number, details: string, cause?: unknown): GrpcCallError {
  const message = `${code} ${grpcStatusName(code) ?? `Code(${code})`}: ${details}`;
  return Object.assign(new Error(message, cause === undefined ? undefined : { cause }), { code, details });
}
