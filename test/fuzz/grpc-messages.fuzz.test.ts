/**
 * Property-based fuzzing of the gRPC message reader (src/cri/grpc-over-http2.ts), the one decoder
 * of the runtime's bytes left of the CRI client's transport once HTTP/2 is node:http2's: however
 * DATA cuts the answer, the messages come out whole, in order and as sent; arbitrary bytes give
 * messages or the reader's own error, never an exception, and never a message over the limit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { GrpcMessageReader } from '../../src/cri/grpc-over-http2.js';
import { GrpcStatus } from '../../src/lib/grpc-status.js';
import { grpcMessageFrame } from '../../src/lib/grpc-wire.js';
import { fuzzRuns } from './fuzz-runs.js';

const MAX_MESSAGE_BYTES = 512;

/** bytes cut at the given offsets (taken modulo its length, sorted, repeats allowed: empty chunks). */
function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = offsets.map((o) => (bytes.length === 0 ? 0 : o % (bytes.length + 1))).sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let at = 0;
  for (const p of [...points, bytes.length]) {
    chunks.push(bytes.subarray(at, p));
    at = p;
  }
  return chunks;
}

test('framed messages come out whole, in order and as sent, however the chunks fall', () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ maxLength: MAX_MESSAGE_BYTES }), { maxLength: 8 }),
      fc.array(fc.nat(), { maxLength: 20 }),
      (messages, offsets) => {
        const wire = Buffer.concat(messages.map((m) => grpcMessageFrame(m)));
        const out: Buffer[] = [];
        // Copied: a message may share its chunk's memory.
        const reader = new GrpcMessageReader(MAX_MESSAGE_BYTES, (m) => out.push(Buffer.from(m)));
        for (const chunk of cut(wire, offsets)) assert.equal(reader.push(chunk), undefined);
        assert.deepEqual(
          out.map((m) => m.toString('hex')),
          messages.map((m) => Buffer.from(m).toString('hex')),
        );
        assert.equal(reader.midMessage, false);
      },
    ),
    { numRuns: fuzzRuns() },
  );
});

test("arbitrary bytes give messages within the limit or the reader's error, never an exception", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 2048 }),
      fc.array(fc.nat(), { maxLength: 20 }),
      (bytes, offsets) => {
        const sizes: number[] = [];
        const reader = new GrpcMessageReader(MAX_MESSAGE_BYTES, (m) => sizes.push(m.length));
        for (const chunk of cut(Buffer.from(bytes), offsets)) {
          const error = reader.push(chunk);
          if (error) {
            assert.ok(
              error.code === GrpcStatus.RESOURCE_EXHAUSTED || error.code === GrpcStatus.INTERNAL,
              `unexpected code ${error.code}`,
            );
            break;
          }
        }
        for (const size of sizes) assert.ok(size <= MAX_MESSAGE_BYTES);
      },
    ),
    { numRuns: fuzzRuns() },
  );
});
