/**
 * gRPC's wire format over HTTP/2 (grpc/doc/PROTOCOL-HTTP2.md), the parts both sides here share: the
 * kubelet's client (src/cri/grpc-over-http2.ts) and its server (src/lib/grpc-server). Each message is
 * length-prefixed: a flag byte (0: uncompressed), then a 4-byte big-endian length. grpc-message is
 * percent-encoded UTF-8.
 */

/** The flag byte and the length before each message. */
export const GRPC_PREFIX_BYTES = 5;

/** One message as it goes on the wire: uncompressed, behind its length. */
export function grpcMessageFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(GRPC_PREFIX_BYTES + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, GRPC_PREFIX_BYTES);
  return frame;
}

/** grpc-message as sent: UTF-8 with every byte outside printable ASCII, and '%' itself, as %XX. */
export function encodeGrpcMessage(text: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(text)) return text;
  let out = '';
  for (const byte of Buffer.from(text, 'utf8'))
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

/** grpc-message as received; a malformed one is shown as it came. */
export function decodeGrpcMessage(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
