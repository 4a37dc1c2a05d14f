/**
 * gRPC's framing over HTTP/2, piece by piece: messages cut out of DATA however it is split, the
 * limits a broken server meets (a compressed or oversized message), and the call's end read from
 * trailers, headers alone, or their absence.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grpcAnswerHandler, GrpcMessageReader } from '../../../src/cri/grpc-over-http2.js';
import { GrpcStatus, grpcCallError, type GrpcCallError } from '../../../src/lib/grpc-status.js';
import { grpcMessageFrame } from '../../../src/lib/grpc-wire.js';
import { http2StreamError } from '../../../src/lib/http2/stream-handler.js';

function reader(maxMessageBytes = 1024): { reader: GrpcMessageReader; messages: Buffer[] } {
  const messages: Buffer[] = [];
  // Copied: a message may share its chunk's memory, and a test's chunks are reused below.
  return { reader: new GrpcMessageReader(maxMessageBytes, (m) => messages.push(Buffer.from(m))), messages };
}

const text = (messages: Buffer[]): string[] => messages.map((m) => m.toString());

describe('GrpcMessageReader', () => {
  it('frames a message behind its flag and big-endian length', () => {
    assert.deepEqual([...grpcMessageFrame(Buffer.from('hi'))], [0, 0, 0, 0, 2, 0x68, 0x69]);
  });

  it('puts together a message fed one byte at a time, and holds nothing once it is out', () => {
    const { reader: r, messages } = reader();
    const wire = Buffer.concat([
      grpcMessageFrame(Buffer.from('first')),
      grpcMessageFrame(Buffer.from('second')),
    ]);
    const seen: number[] = [];
    for (const byte of wire) {
      assert.equal(r.push(Buffer.from([byte])), undefined);
      seen.push(messages.length);
    }
    assert.deepEqual(text(messages), ['first', 'second']);
    // The first message is out exactly at its last byte (5 + 5), not before.
    assert.equal(seen.indexOf(1), 9);
    assert.equal(r.midMessage, false);
  });

  it('cuts several messages, an empty one among them, out of one chunk and keeps the partial rest', () => {
    const { reader: r, messages } = reader();
    const third = grpcMessageFrame(Buffer.from('third'));
    const chunk = Buffer.concat([
      grpcMessageFrame(Buffer.from('one')),
      grpcMessageFrame(Buffer.alloc(0)),
      grpcMessageFrame(Buffer.from('two')),
      third.subarray(0, 7),
    ]);
    assert.equal(r.push(chunk), undefined);
    assert.deepEqual(text(messages), ['one', '', 'two']);
    assert.equal(r.midMessage, true);
    assert.equal(r.push(third.subarray(7)), undefined);
    assert.deepEqual(text(messages), ['one', '', 'two', 'third']);
    assert.equal(r.midMessage, false);
  });

  it('joins a message split across chunks with its prefix split too', () => {
    const { reader: r, messages } = reader();
    const body = Buffer.from('a message that spans three chunks');
    const wire = grpcMessageFrame(body);
    for (const piece of [wire.subarray(0, 3), wire.subarray(3, 12), wire.subarray(12)]) r.push(piece);
    assert.deepEqual(messages, [body]);
  });

  it('hands a message whole within its chunk over without copying it', () => {
    const chunk = grpcMessageFrame(Buffer.from('in place'));
    let message: Buffer | undefined;
    new GrpcMessageReader(1024, (m) => (message = m)).push(chunk);
    assert.equal(message?.toString(), 'in place');
    assert.equal(message.buffer, chunk.buffer);
    assert.equal(message.byteOffset, chunk.byteOffset + 5);
  });

  it('refuses a message over the limit from its prefix alone, before its bytes come', () => {
    const { reader: r, messages } = reader(16);
    assert.equal(r.push(grpcMessageFrame(Buffer.alloc(16))), undefined);
    const prefix = Buffer.from([0, 0, 0, 0, 17]);
    const error = r.push(prefix);
    assert.equal(error?.code, GrpcStatus.RESOURCE_EXHAUSTED);
    assert.match(error.message, /^8 RESOURCE_EXHAUSTED: Received message larger than max \(17 vs\. 16\)$/);
    assert.equal(messages.length, 1);
  });

  it('refuses a compressed message (none is asked for)', () => {
    const { reader: r, messages } = reader();
    const wire = grpcMessageFrame(Buffer.from('zipped'));
    wire[0] = 1;
    const error = r.push(wire);
    assert.equal(error?.code, GrpcStatus.INTERNAL);
    assert.match(error.details, /compressed/);
    assert.equal(messages.length, 0);
  });
});

describe('grpcAnswerHandler', () => {
  const ok = (fields: [string, string][] = []): Map<string, string> =>
    new Map([[':status', '200'], ['content-type', 'application/grpc'], ...fields]);

  function call(maxMessageBytes = 1024): {
    handler: ReturnType<typeof grpcAnswerHandler>;
    messages: string[];
    ends: (GrpcCallError | undefined)[];
    cancels: () => number;
  } {
    const messages: string[] = [];
    const ends: (GrpcCallError | undefined)[] = [];
    let cancelled = 0;
    const handler = grpcAnswerHandler({
      peer: '/run/test.sock',
      maxMessageBytes,
      onMessage: (m) => messages.push(m.toString()),
      onEnd: (e) => ends.push(e),
      cancel: () => cancelled++,
    });
    return { handler, messages, ends, cancels: () => cancelled };
  }

  it('passes messages on as they come and ends with no error on grpc-status 0 in the trailers', () => {
    const c = call();
    c.handler.onHeaders(ok(), false);
    c.handler.onData(grpcMessageFrame(Buffer.from('a')));
    assert.deepEqual(c.messages, ['a']);
    c.handler.onData(grpcMessageFrame(Buffer.from('b')));
    c.handler.onHeaders(new Map([['grpc-status', '0']]), true);
    c.handler.onEnd();
    assert.deepEqual(c.messages, ['a', 'b']);
    assert.deepEqual(c.ends, [undefined]);
  });

  it("a non-zero status in the trailers is the call's error, its message percent-decoded", () => {
    const c = call();
    c.handler.onHeaders(ok(), false);
    c.handler.onHeaders(
      new Map([
        ['grpc-status', '12'],
        ['grpc-message', 'unknown%20service'],
      ]),
      true,
    );
    c.handler.onEnd();
    assert.equal(c.ends.length, 1);
    assert.equal(c.ends[0]?.code, GrpcStatus.UNIMPLEMENTED);
    assert.equal(c.ends[0]?.details, 'unknown service');
    assert.equal(c.ends[0]?.message, '12 UNIMPLEMENTED: unknown service');
  });

  it('reads the status of an answer that is headers alone', () => {
    const c = call();
    c.handler.onHeaders(
      ok([
        ['grpc-status', '5'],
        ['grpc-message', 'no such thing'],
      ]),
      true,
    );
    c.handler.onEnd();
    assert.equal(c.ends[0]?.code, GrpcStatus.NOT_FOUND);
  });

  it('a grpc-status that is not a number is INTERNAL, not a code of NaN or an empty one read as OK', () => {
    for (const status of ['abc', '', '0x0', ' 1']) {
      const c = call();
      c.handler.onHeaders(ok(), false);
      c.handler.onData(grpcMessageFrame(Buffer.from('a')));
      c.handler.onHeaders(new Map([['grpc-status', status]]), true);
      c.handler.onEnd();
      assert.equal(c.ends[0]?.code, GrpcStatus.INTERNAL, `grpc-status ${JSON.stringify(status)}`);
      assert.match(c.ends[0].details, /malformed grpc-status/);
    }
  });

  it('an answer ended without trailers, or without any headers, is an error', () => {
    const noTrailers = call();
    noTrailers.handler.onHeaders(ok(), false);
    noTrailers.handler.onData(grpcMessageFrame(Buffer.from('a')));
    noTrailers.handler.onEnd();
    assert.equal(noTrailers.ends[0]?.code, GrpcStatus.INTERNAL);
    assert.match(noTrailers.ends[0].details, /no grpc-status in the answer \(HTTP status 200\)/);

    const nothing = call();
    nothing.handler.onEnd();
    assert.equal(nothing.ends[0]?.code, GrpcStatus.UNAVAILABLE);
    assert.match(nothing.ends[0].details, /\/run\/test\.sock ended the stream without an answer/);
  });

  it('an OK status after half a message is an error', () => {
    const c = call();
    c.handler.onHeaders(ok(), false);
    c.handler.onData(grpcMessageFrame(Buffer.from('cut short')).subarray(0, 8));
    c.handler.onHeaders(new Map([['grpc-status', '0']]), true);
    c.handler.onEnd();
    assert.equal(c.ends[0]?.code, GrpcStatus.INTERNAL);
    assert.match(c.ends[0].details, /inside a message/);
  });

  it('cancels the stream on an unreadable message and ends once, whatever comes after', () => {
    const c = call(4);
    c.handler.onHeaders(ok(), false);
    c.handler.onData(grpcMessageFrame(Buffer.from('too long')));
    assert.equal(c.cancels(), 1);
    c.handler.onData(grpcMessageFrame(Buffer.from('ok')));
    c.handler.onError(http2StreamError('connection closed'));
    assert.deepEqual(c.messages, []);
    assert.equal(c.ends.length, 1);
    assert.equal(c.ends[0]?.code, GrpcStatus.RESOURCE_EXHAUSTED);
  });

  it('a reset or a lost connection is UNAVAILABLE with its reason', () => {
    const c = call();
    c.handler.onHeaders(ok(), false);
    c.handler.onError(http2StreamError('stream reset by the server (code 2)', 2));
    assert.equal(c.ends[0]?.code, GrpcStatus.UNAVAILABLE);
    assert.equal(c.ends[0]?.message, '14 UNAVAILABLE: stream reset by the server (code 2)');
  });

  it("names an unknown code as grpc-go does, since it is not one of the protocol's", () => {
    assert.equal(grpcCallError(42, 'odd').message, '42 Code(42): odd');
  });
});
