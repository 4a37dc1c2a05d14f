/**
 * The standard gRPC health service (grpc.health.v1.Health/Check) that gRPC probes call, with its two
 * messages encoded by hand: they have one field each, so a tiny codec spares a generated module.
 *
 *   message HealthCheckRequest { string service = 1; }
 *   message HealthCheckResponse { enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
 *                                 ServingStatus status = 1; }
 */
import type { ServiceDefinition } from '@grpc/grpc-js';

export const HEALTH_CHECK_PATH = '/grpc.health.v1.Health/Check';

const SERVING_STATUS_NAMES = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'] as const;
export type ServingStatusName = (typeof SERVING_STATUS_NAMES)[number];

export interface HealthCheckRequest {
  service: string;
}

export interface HealthCheckResponse {
  /** The enum's number: a server may send one this side does not know. */
  status: number;
}

/** protobuf-go's String() for the enum: its name, or the number when it has none. */
export function servingStatusName(status: number): string {
  return SERVING_STATUS_NAMES[status] ?? String(status);
}

export function servingStatusNumber(name: ServingStatusName): number {
  return SERVING_STATUS_NAMES.indexOf(name);
}

function encodeVarint(n: number): number[] {
  const out: number[] = [];
  let v = n >>> 0;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

function readVarint(buf: Buffer, pos: number): [value: number, next: number] {
  let value = 0;
  let shift = 0;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++]!;
    // Only the low 32 bits matter for the fields read here; the rest is skipped.
    if (shift < 32) value |= (b & 0x7f) << shift;
    shift += 7;
    if ((b & 0x80) === 0) return [value >>> 0, pos];
    if (shift > 63) throw new Error('varint too long');
  }
}

/** Calls onField for each field of a message, skipping over the value of those it ignores. */
function eachField(
  buf: Buffer,
  onField: (field: number, wireType: number, value: number | Buffer) => void,
): void {
  let pos = 0;
  while (pos < buf.length) {
    const [key, afterKey] = readVarint(buf, pos);
    pos = afterKey;
    const field = key >>> 3;
    const wireType = key & 7;
    switch (wireType) {
      case 0: {
        const [v, next] = readVarint(buf, pos);
        pos = next;
        onField(field, wireType, v);
        break;
      }
      case 1:
        pos += 8;
        break;
      case 2: {
        const [len, next] = readVarint(buf, pos);
        if (next + len > buf.length) throw new Error('truncated field');
        onField(field, wireType, buf.subarray(next, next + len));
        pos = next + len;
        break;
      }
      case 5:
        pos += 4;
        break;
      default:
        throw new Error(`unsupported wire type ${wireType}`);
    }
  }
  if (pos > buf.length) throw new Error('truncated message');
}

export function encodeHealthCheckRequest(req: HealthCheckRequest): Buffer {
  if (req.service === '') return Buffer.alloc(0);
  const bytes = Buffer.from(req.service, 'utf8');
  return Buffer.concat([Buffer.from([0x0a, ...encodeVarint(bytes.length)]), bytes]);
}

export function decodeHealthCheckRequest(buf: Buffer): HealthCheckRequest {
  let service = '';
  eachField(buf, (field, wireType, value) => {
    if (field === 1 && wireType === 2) service = (value as Buffer).toString('utf8');
  });
  return { service };
}

export function encodeHealthCheckResponse(res: HealthCheckResponse): Buffer {
  if (res.status === 0) return Buffer.alloc(0);
  return Buffer.from([0x08, ...encodeVarint(res.status)]);
}

export function decodeHealthCheckResponse(buf: Buffer): HealthCheckResponse {
  let status = 0;
  eachField(buf, (field, wireType, value) => {
    if (field === 1 && wireType === 0) status = value as number;
  });
  return { status };
}

/** The service as grpc-js servers register it (tests serve it; the probe only calls it). */
export const healthServiceDefinition: ServiceDefinition = {
  Check: {
    path: HEALTH_CHECK_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: encodeHealthCheckRequest,
    requestDeserialize: decodeHealthCheckRequest,
    responseSerialize: encodeHealthCheckResponse,
    responseDeserialize: decodeHealthCheckResponse,
  },
};
