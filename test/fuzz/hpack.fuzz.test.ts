/**
 * Property-based fuzzing of the HPACK decoder (RFC 7541) that reads the container runtime's header
 * blocks: blocks from a reference encoder written here (every representation, Huffman or raw,
 * dynamic table size updates and evictions, tracked by a model table) decode to what was encoded
 * across a connection's blocks; integers decode exactly up to the decoder's limit and are refused
 * past it; arbitrary bytes, as a Huffman string or as a block, give fields or the decoder's own
 * error, never another exception, within a bounded time. The check against an independent encoder,
 * node:http2's (nghttp2), is in http2-frames.fuzz.test.ts, through the client connection.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import fc from 'fast-check';
import { HpackDecoder, HUFFMAN, huffmanDecode, isHpackError } from '../../src/lib/http2/hpack.js';
import { fuzzRuns } from './fuzz-runs.js';

/**
 * A decode of a few KiB takes microseconds; this bound only catches a loop or a blow-up, with room
 * for a loaded machine (a GC pause or a starved core once took one case past 200 ms).
 */
const CASE_WITHIN_MS = 2000;
const STATIC_ENTRIES = 61;
const TABLE_LIMIT = 4096;

// ---- a reference encoder -------------------------------------------------------------------------

/** §5.1: `value` with an N-bit prefix under `pattern`; `padSeptets` extra zero septets make it overlong. */
function encodeInteger(value: number, prefixBits: number, pattern: number, padSeptets = 0): number[] {
  const max = 2 ** prefixBits - 1;
  // A value under the prefix has one encoding only: no septets to pad.
  if (value < max) return [pattern | value];
  const out = [pattern | max];
  let rest = value - max;
  const septets: number[] = [];
  do {
    septets.push(rest % 128);
    rest = Math.floor(rest / 128);
  } while (rest > 0);
  for (let i = 0; i < padSeptets; i++) septets.push(0);
  septets.forEach((s, i) => out.push(i < septets.length - 1 ? s | 0x80 : s));
  return out;
}

/** Each symbol's code length, read off the canonical table (its codes are checked against the RFC's in hpack.test.ts). */
const codeLength: number[] = (() => {
  const lengths = new Array<number>(257).fill(0);
  for (let length = 1; length < HUFFMAN.count.length; length++) {
    for (let i = 0; i < HUFFMAN.count[length]!; i++)
      lengths[HUFFMAN.symbols[HUFFMAN.offset[length]! + i]!] = length;
  }
  return lengths;
})();

function huffmanEncode(bytes: Uint8Array): number[] {
  let bits = '';
  for (const b of bytes) bits += HUFFMAN.codes[b]!.toString(2).padStart(codeLength[b]!, '0');
  bits += '1'.repeat((8 - (bits.length % 8)) % 8);
  const out: number[] = [];
  for (let i = 0; i < bits.length; i += 8) out.push(parseInt(bits.slice(i, i + 8), 2));
  return out;
}

function encodeString(text: string, huffman: boolean): number[] {
  const bytes = Buffer.from(text, 'latin1');
  const body = huffman ? huffmanEncode(bytes) : [...bytes];
  return [...encodeInteger(body.length, 7, huffman ? 0x80 : 0), ...body];
}

/** The dynamic table as RFC 7541 §4 describes it, newest first. */
class ModelTable {
  entries: [string, string][] = [];
  size = 0;
  maxSize = TABLE_LIMIT;
  insert(name: string, value: string): void {
    const size = name.length + value.length + 32;
    while (this.entries.length > 0 && this.size + size > this.maxSize) this.dropOldest();
    if (size <= this.maxSize) {
      this.entries.unshift([name, value]);
      this.size += size;
    }
  }
  resize(max: number): void {
    this.maxSize = max;
    while (this.size > max) this.dropOldest();
  }
  private dropOldest(): void {
    const [n, v] = this.entries.pop()!;
    this.size -= n.length + v.length + 32;
  }
}

const STATIC_SAMPLE: Record<number, [string, string]> = {
  2: [':method', 'GET'],
  8: [':status', '200'],
  31: ['content-type', ''],
};

type Op =
  | { kind: 'static'; index: number }
  | { kind: 'dynamic'; pick: number }
  | {
      kind: 'literal';
      mode: 'incremental' | 'without' | 'never';
      nameIndex: number;
      name: string;
      value: string;
      huffName: boolean;
      huffValue: boolean;
    };

/** Latin1 text, from short to long enough that a few entries fill the 4096-octet table. */
const text = fc
  .oneof(
    { weight: 4, arbitrary: fc.uint8Array({ maxLength: 24 }) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 200, maxLength: 1500 }) },
  )
  .map((a) => Buffer.from(a).toString('latin1'));

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.constantFrom(2, 8, 31).map((index): Op => ({ kind: 'static', index })),
  fc.nat(200).map((pick): Op => ({ kind: 'dynamic', pick })),
  fc
    .record({
      mode: fc.constantFrom('incremental' as const, 'without' as const, 'never' as const),
      // 0: a literal name; otherwise a static name (a dynamic one when the table has entries).
      nameIndex: fc.oneof(fc.constant(0), fc.constantFrom(2, 8, 31), fc.integer({ min: 62, max: 100 })),
      name: text,
      value: text,
      huffName: fc.boolean(),
      huffValue: fc.boolean(),
    })
    .map((r): Op => ({ kind: 'literal', ...r })),
);

const block = fc.record({
  sizeUpdates: fc.array(fc.integer({ min: 0, max: TABLE_LIMIT }), { maxLength: 2 }),
  ops: fc.array(op, { maxLength: 12 }),
});

/** Encodes one block and updates the model as the decoder must; returns the bytes and the fields expected. */
function encodeBlock(
  model: ModelTable,
  b: { sizeUpdates: number[]; ops: Op[] },
): { bytes: Buffer; expected: Map<string, string> } {
  const out: number[] = [];
  const expected = new Map<string, string>();
  for (const size of b.sizeUpdates) {
    out.push(...encodeInteger(size, 5, 0x20));
    model.resize(size);
  }
  const nameAt = (index: number): string =>
    index <= STATIC_ENTRIES ? STATIC_SAMPLE[index]![0] : model.entries[index - STATIC_ENTRIES - 1]![0];
  for (const o of b.ops) {
    if (o.kind === 'static') {
      out.push(...encodeInteger(o.index, 7, 0x80));
      expected.set(...STATIC_SAMPLE[o.index]!);
    } else if (o.kind === 'dynamic') {
      if (model.entries.length === 0) continue;
      const i = o.pick % model.entries.length;
      out.push(...encodeInteger(STATIC_ENTRIES + 1 + i, 7, 0x80));
      expected.set(...model.entries[i]!);
    } else {
      let nameIndex = o.nameIndex;
      if (nameIndex > STATIC_ENTRIES) {
        nameIndex =
          model.entries.length === 0 ? 0 : STATIC_ENTRIES + 1 + ((nameIndex - 62) % model.entries.length);
      }
      const name = nameIndex === 0 ? o.name : nameAt(nameIndex);
      const [prefix, pattern] =
        o.mode === 'incremental' ? [6, 0x40] : o.mode === 'without' ? [4, 0] : [4, 0x10];
      out.push(...encodeInteger(nameIndex, prefix, pattern));
      if (nameIndex === 0) out.push(...encodeString(name, o.huffName));
      out.push(...encodeString(o.value, o.huffValue));
      if (o.mode === 'incremental') model.insert(name, o.value);
      expected.set(name, o.value);
    }
  }
  return { bytes: Buffer.from(out), expected };
}

function timed<T>(fn: () => T): T {
  const started = performance.now();
  try {
    return fn();
  } finally {
    const took = performance.now() - started;
    assert.ok(took < CASE_WITHIN_MS, `a decode took ${took.toFixed(1)} ms`);
  }
}

/** What a decode gave: its fields, or that it threw the decoder's own error (anything else is thrown on). */
function outcome(fn: () => Map<string, string>): [string, string][] | 'hpack error' {
  try {
    return [...timed(fn)];
  } catch (err) {
    if (isHpackError(err)) return 'hpack error';
    throw err;
  }
}

/** Runs `fn`, which may only return or throw the decoder's own error. */
function returnsOrHpackError(fn: () => unknown): void {
  try {
    timed(fn);
  } catch (err) {
    if (!isHpackError(err)) throw err;
  }
}

// ---- properties ----------------------------------------------------------------------------------

test('blocks from a reference encoder decode to their fields, table updates and evictions included', () => {
  fc.assert(
    fc.property(fc.array(block, { minLength: 1, maxLength: 8 }), (blocks) => {
      const model = new ModelTable();
      const decoder = new HpackDecoder();
      for (const b of blocks) {
        const { bytes, expected } = encodeBlock(model, b);
        assert.deepEqual(
          timed(() => decoder.decode(bytes)),
          expected,
        );
      }
      // The decoder's table is the model's: its last entry is there, and one past it is not.
      const n = model.entries.length;
      if (n > 0) {
        const last = decoder.decode(Buffer.from(encodeInteger(STATIC_ENTRIES + n, 7, 0x80)));
        assert.deepEqual([...last], [model.entries[n - 1]]);
      }
      assert.throws(
        () => decoder.decode(Buffer.from(encodeInteger(STATIC_ENTRIES + n + 1, 7, 0x80))),
        isHpackError,
      );
    }),
    { numRuns: fuzzRuns() },
  );
});

test('a table size update over the limit or after a field is refused', () => {
  fc.assert(
    fc.property(fc.integer({ min: TABLE_LIMIT + 1, max: 2 ** 28 }), fc.boolean(), (size, afterField) => {
      const bytes = afterField
        ? Buffer.from([0x82, ...encodeInteger(100, 5, 0x20)])
        : Buffer.from(encodeInteger(size, 5, 0x20));
      assert.throws(() => new HpackDecoder().decode(bytes), isHpackError);
    }),
    { numRuns: fuzzRuns() },
  );
});

test('integers decode exactly at every prefix boundary; overlong ones are refused', () => {
  // Seen through an indexed field, whose error names the index it decoded.
  const limit = 127 + 2 ** 28 - 1; // the 7-bit prefix and four continuation octets
  const near = fc.oneof(
    fc.integer({ min: 0, max: 2 ** 32 }),
    fc.constantFrom(126, 127, 128, 127 + 127, 127 + 128, 127 + 2 ** 14 - 1, 127 + 2 ** 21, limit, limit + 1),
  );
  fc.assert(
    fc.property(near, fc.integer({ min: 0, max: 6 }), (value, pad) => {
      const bytes = Buffer.from(encodeInteger(value, 7, 0x80, pad));
      const continuation = bytes.length - 1;
      const decode = (): unknown => new HpackDecoder().decode(bytes);
      if (value === 0) assert.throws(decode, (e: Error) => isHpackError(e) && /index 0/.test(e.message));
      else if (continuation > 4)
        assert.throws(decode, (e: Error) => isHpackError(e) && /too large/.test(e.message));
      else if (value <= STATIC_ENTRIES) assert.equal(timed(decode) instanceof Map, true);
      else
        assert.throws(
          decode,
          (e: Error) => isHpackError(e) && e.message === `index ${value} beyond the tables`,
        );
    }),
    { numRuns: fuzzRuns() },
  );
});

test('Huffman strings of any bytes decode to those bytes; padding of a whole octet is refused', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
      const coded = Uint8Array.from(huffmanEncode(bytes));
      assert.equal(
        timed(() => huffmanDecode(coded, 0, coded.length)),
        Buffer.from(bytes).toString('latin1'),
      );
      // §5.2: padding longer than 7 bits is an error, even when it is all ones.
      const overPadded = Uint8Array.from([...coded, 0xff]);
      assert.throws(() => huffmanDecode(overPadded, 0, overPadded.length), isHpackError);
    }),
    { numRuns: fuzzRuns() },
  );
});

test('Huffman decoding of arbitrary bytes returns or throws the decoder error', () => {
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 4096 }),
    // Mostly ones: long codes, EOS and padding edges.
    fc.array(fc.constantFrom(0xff, 0xfe, 0x3f, 0x7f), { maxLength: 64 }).map((a) => Uint8Array.from(a)),
  );
  fc.assert(
    fc.property(bytes, (b) => returnsOrHpackError(() => huffmanDecode(b, 0, b.length))),
    { numRuns: fuzzRuns() },
  );
});

test('arbitrary and mutated header blocks decode or throw the decoder error, in bounded time', () => {
  const good = fc.array(block, { minLength: 1, maxLength: 3 }).map((blocks) => {
    const model = new ModelTable();
    return blocks.map((b) => encodeBlock(model, b).bytes);
  });
  const mutated = fc
    .tuple(good, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 8 }), fc.nat())
    .map(([blocks, flips, cut]) =>
      blocks.map((b) => {
        const copy = Buffer.from(b);
        for (const [at, v] of flips) if (copy.length > 0) copy[at % copy.length] = v;
        return copy.subarray(0, copy.length - (cut % (copy.length + 1)) * (cut & 1));
      }),
    );
  const random = fc.array(
    fc.uint8Array({ maxLength: 2048 }).map((a) => Buffer.from(a)),
    { minLength: 1, maxLength: 3 },
  );
  fc.assert(
    fc.property(fc.oneof(mutated, random), fc.uint8Array({ minLength: 1, maxLength: 64 }), (blocks, junk) => {
      // Each block decoded twice: alone in a buffer of its own size, and as a view with other bytes
      // after it, as the connection's frames are. Both must agree: nothing may read past the block.
      const alone = new HpackDecoder();
      const inPlace = new HpackDecoder();
      for (const b of blocks) {
        const own = Uint8Array.from(b);
        const view = Buffer.concat([b, junk]).subarray(0, b.length);
        const a = outcome(() => alone.decode(own));
        assert.deepEqual(
          outcome(() => inPlace.decode(view)),
          a,
        );
        if (a === 'hpack error') return;
      }
    }),
    { numRuns: fuzzRuns() },
  );
});

test('a table filled to the octet keeps every entry, and one more entry evicts only the oldest', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 33, max: 1024 }), (k, entrySize) => {
      const table = k * entrySize;
      fc.pre(table <= TABLE_LIMIT);
      const entry = (i: number, size: number): number[] => [
        ...encodeInteger(0, 6, 0x40),
        ...encodeString(`n${i}`.slice(0, 1), false),
        ...encodeString(String.fromCharCode(97 + i).repeat(size - 33), false),
      ];
      const decoder = new HpackDecoder();
      const fill = [...encodeInteger(table, 5, 0x20)];
      for (let i = 0; i < k; i++) fill.push(...entry(i, entrySize));
      decoder.decode(Buffer.from(fill));
      const oldest = decoder.decode(Buffer.from(encodeInteger(STATIC_ENTRIES + k, 7, 0x80)));
      assert.equal(oldest.get('n'), 'a'.repeat(entrySize - 33));
      // An entry as large as the others takes exactly the oldest one's room.
      decoder.decode(Buffer.from(entry(9, entrySize)));
      assert.throws(
        () => decoder.decode(Buffer.from(encodeInteger(STATIC_ENTRIES + k + 1, 7, 0x80))),
        isHpackError,
      );
      const next = decoder.decode(Buffer.from(encodeInteger(STATIC_ENTRIES + k, 7, 0x80)));
      assert.equal(next.get('n'), (k > 1 ? 'b' : 'j').repeat(entrySize - 33));
    }),
    { numRuns: fuzzRuns() },
  );
});
