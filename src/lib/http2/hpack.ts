/**
 * HPACK (RFC 7541), as much as an HTTP/2 client of one local gRPC server needs: a full decoder for
 * the server's header blocks (static and dynamic tables, Huffman-coded strings), and an encoder that
 * keeps no state (indexed static entries and literals without indexing), so that requests never
 * depend on what the server's decoder remembers. Written here from the RFC rather than taken from npm
 * (`hpack.js`): for speed on every answer, and no dependency (it brings readable-stream 2 along).
 */

/** RFC 7541 Appendix A: the static table, from index 1. */
const STATIC_TABLE: readonly (readonly [string, string])[] = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

/** The table size both ends start with (SETTINGS_HEADER_TABLE_SIZE's default), which this client keeps. */
export const DEFAULT_HEADER_TABLE_SIZE = 4096;

/**
 * A header block that breaks HPACK, which makes the connection fail with COMPRESSION_ERROR (RFC 9113
 * §4.3). Not a class of its own: it never leaves src/lib/http2, whose connection turns it into the
 * streams' errors.
 */
export type HpackError = Error & { hpack: true };

function hpackError(message: string): HpackError {
  return Object.assign(new Error(message), { hpack: true as const });
}

export function isHpackError(err: unknown): err is HpackError {
  return err instanceof Error && (err as Partial<HpackError>).hpack === true;
}

/**
 * RFC 7541 Appendix B: the Huffman code's length in bits for each byte value 0–255, then EOS (256).
 * The code is canonical (codes of one length are consecutive, in symbol order, shorter codes first),
 * so the lengths are the whole table; `hpack.test.ts` checks the codes this gives against
 * the RFC's.
 */
// prettier-ignore
const HUFFMAN_CODE_LENGTHS: readonly number[] = [
  // 0–31: control bytes
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  // 32–63: ' ' ! " # $ % & ' ( ) * + , - . / 0–9 : ; < = > ?
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  // 64–95: @ A–Z [ \ ] ^ _
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  // 96–127: ` a–z { | } ~ DEL
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  // 128–255
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  // EOS
  30,
];

const EOS = 256;

/** The canonical code in decoding form: per length, the first code, how many, and where its symbols start. */
export interface HuffmanTable {
  firstCode: number[];
  count: number[];
  offset: number[];
  /** Symbols by (length, symbol). */
  symbols: number[];
  /** Each symbol's code (for the tests; the decoder walks lengths). */
  codes: number[];
}

function buildHuffmanTable(lengths: readonly number[]): HuffmanTable {
  const maxLength = Math.max(...lengths);
  const count = new Array<number>(maxLength + 1).fill(0);
  for (const l of lengths) count[l]!++;
  const symbols = lengths
    .map((length, symbol) => ({ length, symbol }))
    .sort((a, b) => a.length - b.length || a.symbol - b.symbol)
    .map((s) => s.symbol);
  const firstCode = new Array<number>(maxLength + 1).fill(0);
  const offset = new Array<number>(maxLength + 1).fill(0);
  const codes = new Array<number>(lengths.length).fill(0);
  let code = 0;
  let index = 0;
  for (let length = 1; length <= maxLength; length++) {
    firstCode[length] = code;
    offset[length] = index;
    for (let i = 0; i < count[length]!; i++) codes[symbols[index++]!] = code++;
    code <<= 1;
  }
  return { firstCode, count, offset, symbols, codes };
}

export const HUFFMAN = buildHuffmanTable(HUFFMAN_CODE_LENGTHS);

/** Decodes a Huffman-coded string (RFC 7541 §5.2) into its bytes, as latin1 (one char per byte). */
export function huffmanDecode(bytes: Uint8Array, start: number, end: number): string {
  const { firstCode, count, offset, symbols } = HUFFMAN;
  // The shortest code is 5 bits: at most 8/5 symbols a byte.
  const out = Buffer.allocUnsafe(Math.ceil(((end - start) * 8) / 5));
  let written = 0;
  let code = 0;
  let length = 0;
  for (let i = start; i < end; i++) {
    const byte = bytes[i]!;
    for (let bit = 7; bit >= 0; bit--) {
      code = (code << 1) | ((byte >> bit) & 1);
      length++;
      const n = code - firstCode[length]!;
      if (n >= 0 && n < count[length]!) {
        const symbol = symbols[offset[length]! + n]!;
        if (symbol === EOS) throw hpackError('EOS in a Huffman-coded string');
        out[written++] = symbol;
        code = 0;
        length = 0;
      } else if (length >= 30) {
        throw hpackError('invalid Huffman code');
      }
    }
  }
  // What is left is padding: fewer than 8 bits, all ones (the EOS code's first bits).
  if (length > 7 || code !== (1 << length) - 1) throw hpackError('invalid Huffman padding');
  return out.toString('latin1', 0, written);
}

/** A decoded header block: each name with its value (a repeated name keeps the last one). */
export type HeaderFields = Map<string, string>;

/** The decoding context of one connection (RFC 7541 §2.3.2): blocks must be decoded in the order they came. */
export class HpackDecoder {
  // Newest first, as the dynamic table is indexed.
  private readonly entries: [string, string][] = [];
  private size = 0;
  private maxSize: number;
  private pos = 0;
  private block: Uint8Array = new Uint8Array(0);

  /** limitBytes: the SETTINGS_HEADER_TABLE_SIZE this end announced, the most the table may hold. */
  constructor(private readonly limitBytes = DEFAULT_HEADER_TABLE_SIZE) {
    this.maxSize = limitBytes;
  }

  /** Decodes one complete header block; throws HpackError on anything malformed. */
  decode(block: Uint8Array): HeaderFields {
    this.block = block;
    this.pos = 0;
    const fields: HeaderFields = new Map();
    let fieldSeen = false;
    while (this.pos < block.length) {
      const b = block[this.pos]!;
      if (b & 0x80) {
        const [name, value] = this.entry(this.integer(7));
        fields.set(name, value);
        fieldSeen = true;
      } else if (b & 0x40) {
        const [name, value] = this.literal(6);
        this.insert(name, value);
        fields.set(name, value);
        fieldSeen = true;
      } else if (b & 0x20) {
        // A table size update may only open a block (§4.2).
        if (fieldSeen) throw hpackError('dynamic table size update after a header field');
        const size = this.integer(5);
        if (size > this.limitBytes) throw hpackError(`table size ${size} over the limit`);
        this.maxSize = size;
        this.evict(0);
      } else {
        // Literal without indexing (0000) or never indexed (0001): 4-bit prefix, not stored.
        const [name, value] = this.literal(4);
        fields.set(name, value);
        fieldSeen = true;
      }
    }
    this.block = new Uint8Array(0);
    return fields;
  }

  private entry(index: number): readonly [string, string] {
    if (index === 0) throw hpackError('index 0');
    if (index <= STATIC_TABLE.length) return STATIC_TABLE[index - 1]!;
    const entry = this.entries[index - STATIC_TABLE.length - 1];
    if (!entry) throw hpackError(`index ${index} beyond the tables`);
    return entry;
  }

  private literal(prefixBits: number): [string, string] {
    const index = this.integer(prefixBits);
    const name = index === 0 ? this.string() : this.entry(index)[0];
    return [name, this.string()];
  }

  private insert(name: string, value: string): void {
    const size = name.length + value.length + 32;
    this.evict(size);
    // An entry larger than the whole table empties it and is not stored (§4.4).
    if (size > this.maxSize) return;
    this.entries.unshift([name, value]);
    this.size += size;
  }

  /** Drops the oldest entries until `room` more octets fit. */
  private evict(room: number): void {
    while (this.entries.length > 0 && this.size + room > this.maxSize) {
      const [name, value] = this.entries.pop()!;
      this.size -= name.length + value.length + 32;
    }
  }

  /** §5.1: an integer with an N-bit prefix. */
  private integer(prefixBits: number): number {
    const block = this.block;
    if (this.pos >= block.length) throw hpackError('truncated integer');
    const max = (1 << prefixBits) - 1;
    let value = block[this.pos++]! & max;
    if (value < max) return value;
    for (let shift = 0; ; shift += 7) {
      if (this.pos >= block.length) throw hpackError('truncated integer');
      if (shift > 21) throw hpackError('integer too large');
      const b = block[this.pos++]!;
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
    }
  }

  /** §5.2: a string literal, raw or Huffman-coded; octets as latin1. */
  private string(): string {
    const huffman = (this.block[this.pos]! & 0x80) !== 0;
    const length = this.integer(7);
    const start = this.pos;
    const end = start + length;
    if (end > this.block.length) throw hpackError('truncated string');
    this.pos = end;
    if (huffman) return huffmanDecode(this.block, start, end);
    return Buffer.from(this.block.buffer, this.block.byteOffset + start, length).toString('latin1');
  }
}

// The static table's entries with a value, by name then value, and each name's first entry: two
// lookups per field rather than a joined key string made for each.
const STATIC_INDEX = new Map<string, Map<string, number>>();
const STATIC_NAME_INDEX = new Map<string, number>();
STATIC_TABLE.forEach(([name, value], i) => {
  if (value !== '') {
    let byValue = STATIC_INDEX.get(name);
    if (!byValue) STATIC_INDEX.set(name, (byValue = new Map()));
    byValue.set(value, i + 1);
  }
  if (!STATIC_NAME_INDEX.has(name)) STATIC_NAME_INDEX.set(name, i + 1);
});

// A block is written here, then copied out at its size: one allocation per block, where a growing
// array of numbers cost one per octet on the way. A larger block gets a buffer of its own.
const scratch = Buffer.allocUnsafeSlow(16 * 1024);

/**
 * Encodes header fields without touching the dynamic table: a static entry that matches exactly is
 * indexed, anything else is a literal without indexing (raw octets, latin1), its name indexed when
 * the static table has it. Names must be lower case, as HTTP/2 requires.
 */
export function hpackEncode(fields: readonly (readonly [string, string])[]): Buffer {
  // At most: a 5-octet integer for an index or a name's length, and each value's length and octets.
  let most = 0;
  for (const [name, value] of fields) most += name.length + value.length + 15;
  const out = most > scratch.length ? Buffer.allocUnsafe(most) : scratch;
  let at = 0;
  for (const [name, value] of fields) {
    const exact = STATIC_INDEX.get(name)?.get(value);
    if (exact !== undefined) {
      at = writeInteger(out, at, exact, 7, 0x80);
      continue;
    }
    const nameIndex = STATIC_NAME_INDEX.get(name);
    if (nameIndex !== undefined) {
      at = writeInteger(out, at, nameIndex, 4, 0x00);
    } else {
      out[at++] = 0x00;
      at = writeString(out, at, name);
    }
    at = writeString(out, at, value);
  }
  const block = Buffer.allocUnsafe(at);
  out.copy(block, 0, 0, at);
  return block;
}

function writeInteger(out: Buffer, at: number, value: number, prefixBits: number, pattern: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[at++] = pattern | value;
    return at;
  }
  out[at++] = pattern | max;
  let rest = value - max;
  while (rest >= 0x80) {
    out[at++] = (rest & 0x7f) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  out[at++] = rest;
  return at;
}

function writeString(out: Buffer, at: number, text: string): number {
  at = writeInteger(out, at, text.length, 7, 0x00);
  for (let i = 0; i < text.length; i++) out[at++] = text.charCodeAt(i) & 0xff;
  return at;
}
