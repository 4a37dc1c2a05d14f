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

test('a decoder follows RFC 7541 C.6 (responses, Huffman, a 256-octet table) through its evictions', () => {
  const d = new HpackDecoder(256);
  const first = d.decode(
    hex(`4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
         2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3`),
  );
  assert.deepEqual(
    [...first],
    [
      [':status', '302'],
      ['cache-control', 'private'],
      ['date', 'Mon, 21 Oct 2013 20:13:21 GMT'],
      ['location', 'https://www.example.com'],
    ],
  );
  // (":status", "302") is evicted to make room for (":status", "307").
  const second = d.decode(hex('4883 640e ffc1 c0bf'));
  assert.deepEqual(
    [...second],
    [
      [':status', '307'],
      ['cache-control', 'private'],
      ['date', 'Mon, 21 Oct 2013 20:13:21 GMT'],
      ['location', 'https://www.example.com'],
    ],
  );
  const third = d.decode(
    hex(`88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
         77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
         9587 3160 65c0 03ed 4ee5 b106 3d50 07`),
  );
  assert.deepEqual(
    [...third],
    [
      [':status', '200'],
      ['cache-control', 'private'],
      ['date', 'Mon, 21 Oct 2013 20:13:22 GMT'],
      ['location', 'https://www.example.com'],
      ['content-encoding', 'gzip'],
      ['set-cookie', 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'],
    ],
  );
  // The table the RFC shows after C.6.3: three entries, newest first, and nothing at 65.
  const table = d.decode(hex('bebf c0'));
  assert.deepEqual(
    [...table],
    [
      ['set-cookie', 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'],
      ['content-encoding', 'gzip'],
      ['date', 'Mon, 21 Oct 2013 20:13:22 GMT'],
    ],
  );
  assert.throws(() => d.decode(hex('c1')), isHpackError);
  // A size update past what this end announced is refused.
  assert.throws(() => new HpackDecoder(256).decode(hex('3fe2 01')), isHpackError);
});

test('a decoder follows RFC 7541 C.3 (requests without Huffman) across blocks', () => {
  const d = new HpackDecoder();
  const first = d.decode(hex('8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d'));
  assert.equal(first.get(':authority'), 'www.example.com');
  const second = d.decode(hex('8286 84be 5808 6e6f 2d63 6163 6865'));
  assert.equal(second.get(':authority'), 'www.example.com');
  assert.equal(second.get('cache-control'), 'no-cache');
  const third = d.decode(hex('8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65'));
  assert.deepEqual(
    [...third],
    [
      [':method', 'GET'],
      [':scheme', 'https'],
      [':path', '/index.html'],
      [':authority', 'www.example.com'],
      ['custom-key', 'custom-value'],
    ],
  );
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

test("blocks written one after another are each whole, a block larger than the encoder's scratch too", () => {
  // Lengths around the 7-bit prefix's limit, a name outside the static table, and a block of 40 KiB.
  for (const length of [0, 126, 127, 128, 255, 16_510, 16_511, 40_000, 3]) {
    const fields: [string, string][] = [
      [':method', 'GET'],
      [':path', '/' + 'p'.repeat(length)],
      ['x-custom', 'v'.repeat(length)],
      ['accept-encoding', 'gzip, deflate'],
    ];
    const block = hpackEncode(fields);
    const copy = Buffer.from(block);
    hpackEncode([['x-other', 'w'.repeat(100)]]);
    assert.deepEqual(block, copy, 'a later block does not write over an earlier one');
    assert.deepEqual([...new HpackDecoder().decode(block)], fields);
  }
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
