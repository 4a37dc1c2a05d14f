import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  HUFFMAN,
  HpackDecoder,
  isHpackError,
  hpackEncode,
  huffmanDecode,
} from '../../../../src/lib/http2/hpack.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

test('the canonical Huffman code built from the lengths is RFC 7541 Appendix B, code for code', () => {
  // [symbol, code as hex in the RFC]: from each length, and the ends of the table.
  const rfc: [number, number][] = [
    [0, 0x1ff8],
    [1, 0x7fffd8],
    [9, 0xffffea],
    [10, 0x3ffffffc],
    [32, 0x14],
    [47, 0x18],
    [48, 0x0],
    [60, 0x7ffc],
    [92, 0x7fff0],
    [127, 0xffffffc],
    [128, 0xfffe6],
    [153, 0x1fffdc],
    [199, 0x1ffffec],
    [203, 0x7ffffde],
    [220, 0xffffffd],
    [255, 0x3ffffee],
    [256, 0x3fffffff],
  ];
  for (const [symbol, code] of rfc) assert.equal(HUFFMAN.codes[symbol], code, `symbol ${symbol}`);
  assert.equal(HUFFMAN.codes.length, 257);
  // A complete prefix code: the Kraft sum is exactly 1.
  const kraft = HUFFMAN.count.reduce((sum, n, length) => sum + n * 2 ** -length, 0);
  assert.equal(kraft, 1);
});

test('Huffman strings decode as in RFC 7541 C.4; bad padding and EOS are refused', () => {
  assert.equal(huffmanDecode(hex('f1e3c2e5f23a6ba0ab90f4ff'), 0, 12), 'www.example.com');
  assert.equal(huffmanDecode(hex('a8eb10649cbf'), 0, 6), 'no-cache');
  assert.equal(huffmanDecode(hex('25a849e95bb8e8b4bf'), 0, 9), 'custom-value');
  // 'a' is 00011: padded with three 1s it is 0x1f; padded with 0s it is not valid.
  assert.equal(huffmanDecode(hex('1f'), 0, 1), 'a');
  assert.throws(() => huffmanDecode(hex('18'), 0, 1), isHpackError);
  // Eight or more bits of padding.
  assert.throws(() => huffmanDecode(hex('1fff'), 0, 2), isHpackError);
  // The EOS code itself (30 ones, then padding).
  assert.throws(() => huffmanDecode(hex('ffffffff'), 0, 4), isHpackError);
});

test('a decoder follows RFC 7541 C.4 (requests, Huffman) across blocks, dynamic table included', () => {
  const d = new HpackDecoder();
  const first = d.decode(hex('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff'));
  assert.deepEqual(
    [...first],
    [
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
    ],
  );
  const second = d.decode(hex('8286 84be 5886 a8eb 1064 9cbf'));
  assert.equal(second.get(':authority'), 'www.example.com');
  assert.equal(second.get('cache-control'), 'no-cache');
  const third = d.decode(hex('8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf'));
  assert.equal(third.get(':scheme'), 'https');
  assert.equal(third.get(':path'), '/index.html');
  assert.equal(third.get(':authority'), 'www.example.com');
  assert.equal(third.get('custom-key'), 'custom-value');
});

test('a decoder evicts the oldest entries past the table size, and takes a size update first only', () => {
  const d = new HpackDecoder();
  // A size update to 60 octets, then two literals with indexing of 32+1+20 octets each: only the newer fits.
  const literal = (name: string, value: string): Buffer =>
    Buffer.concat([
      Buffer.from([0x40, name.length]),
      Buffer.from(name),
      Buffer.from([value.length]),
      Buffer.from(value),
    ]);
  const fields = d.decode(
    Buffer.concat([Buffer.from([0x3f, 0x1d]), literal('a', 'x'.repeat(20)), literal('b', 'y'.repeat(20))]),
  );
  assert.equal(fields.get('a'), 'x'.repeat(20));
  // Index 62 is now 'b'; 63 is gone.
  assert.equal(d.decode(Buffer.from([0x80 | 62])).get('b'), 'y'.repeat(20));
  assert.throws(() => d.decode(Buffer.from([0x80 | 63])), isHpackError);
  // A size update after a field, one over the limit, index 0 and a truncated string are errors.
  assert.throws(() => new HpackDecoder().decode(Buffer.from([0x82, 0x20])), isHpackError);
  assert.throws(() => new HpackDecoder().decode(Buffer.from([0x3f, 0xe2, 0x1f])), isHpackError);
  assert.throws(() => new HpackDecoder().decode(Buffer.from([0x80])), isHpackError);
  assert.throws(() => new HpackDecoder().decode(Buffer.from([0x00, 0x05, 0x61])), isHpackError);
});

test('what the encoder writes decodes to the same fields, static entries indexed', () => {
  const fields: [string, string][] = [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', '/runtime.v1.RuntimeService/Version'],
    [':authority', 'localhost'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ['user-agent', 'x'.repeat(300)],
  ];
  const block = hpackEncode(fields);
  assert.equal(block[0], 0x83);
  assert.equal(block[1], 0x86);
  assert.deepEqual([...new HpackDecoder().decode(block)], fields);
});

test('a Huffman string far longer than any header decodes whole (no argument-count limit)', () => {
  // 'a' is 00011: 160,000 of them are 800,000 bits, 100,000 bytes, with no padding.
  const count = 160_000;
  const bytes = Buffer.alloc((count * 5) / 8);
  for (let i = 0; i < count; i++) {
    for (const [j, bit] of [0, 0, 0, 1, 1].entries()) {
      const at = i * 5 + j;
      if (bit) bytes[at >> 3]! |= 0x80 >> (at & 7);
    }
  }
  const text = huffmanDecode(bytes, 0, bytes.length);
  assert.equal(text.length, count);
  assert.ok(/^a+$/.test(text));
});
