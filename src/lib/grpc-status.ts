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
