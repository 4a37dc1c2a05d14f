/**
 * gRPC status codes named as grpc-go prints them, so errors read as upstream's do:
 * `rpc error: code = NotFound desc = …`.
 */
const GO_CODE_NAMES = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

/** A gRPC error as grpc-go formats it. */
export function goRpcErrorText(code: number, details: string): string {
  return `rpc error: code = ${GO_CODE_NAMES[code] ?? `Code(${code})`} desc = ${details}`;
}
