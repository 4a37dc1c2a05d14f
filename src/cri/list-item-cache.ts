/**
 * Decoded list items, kept by their bytes. The PLEG lists every sandbox and container once a second
 * (and more often while pods start), and nearly every item comes back as it was the time before;
 * decoding and converting them again was the largest share of a relist's CPU and of its garbage.
 * Here an item that is the same as the last one seen under its ID is the object made then, and only
 * new or changed items are decoded.
 *
 * "The same": every field's bytes are equal, except the label and annotation maps, whose entries
 * containerd writes in a different order each time (it ranges over Go maps). Those are fixed when
 * the container or sandbox is made (CRI has no call that changes them), so only where they lie is
 * compared (each run of the other fields must be where it was), not their order.
 *
 * Shared objects must not change under their other readers, so each is frozen (with the objects
 * inside it): a caller that wants to change one makes a copy.
 */
interface Entry<T> {
  /** The item's fields other than the maps, as they came, in order. */
  fixed: Buffer;
  /**
   * Where fixed's runs lie in the item: for each run its offset in the item and its length, in
   * order. What lies between them (and before the first, and after the last) is map fields.
   */
  runs: number[];
  /** The item's length in bytes. */
  length: number;
  value: T;
  /** The listing without filter that last held it (ListItemCache.completeListings). */
  listedIn: number;
}

// Protobuf wire types (the encoding guide's "wire types").
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

/**
 * The walk over an answer's bytes is hand-written rather than @bufbuild/protobuf's BinaryReader,
 * whose skip() returns each skipped field as a new view: a relist of 100 containers made thousands,
 * a fifth of all the kubelet allocated while 100 pods started. An unchanged item costs no object
 * either (no cursor, no callback, no Map per listing): a relist reads every item, 30 times a second
 * while pods start, mostly before V8 has optimized the code.
 */
export class ListItemCache<T extends object> {
  private readonly entries = new Map<string, Entry<T>>();
  /** The map fields' numbers as bits. */
  private readonly mapFieldBits: number;
  /** Listings without filter so far: each marks the entries it holds, and the rest are forgotten. */
  private completeListings = 0;

  /**
   * decode: one item's message bytes to the caller's (unfrozen) object. mapFields: the field
   * numbers of the item's map fields (labels, annotations), each from 1 to 15 (a one-byte tag), as
   * the CRI's are.
   */
  constructor(
    private readonly decode: (bytes: Uint8Array) => T,
    mapFields: ReadonlySet<number>,
  ) {
    let bits = 0;
    for (const field of mapFields) {
      if (field < 1 || field > 15) throw new RangeError(`map field ${field} is not between 1 and 15`);
      bits |= 1 << field;
    }
    this.mapFieldBits = bits;
  }

  /** How many items are kept (for the tests). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * The items of a list answer whose field 1 repeats the item message, in order (ListContainers'
   * `containers`, ListPodSandbox's `items`). complete: the listing had no filter, so items not in it
   * are gone and are forgotten; a filtered listing only adds. Throws on bytes that are not protobuf.
   */
  decodeList(response: Uint8Array, complete: boolean): T[] {
    const answer = asBuffer(response);
    const out: T[] = [];
    const listing = complete ? ++this.completeListings : 0;
    // Distinct IDs this listing holds: when fewer than the entries, some items are gone.
    let held = 0;
    const cursor = { pos: 0 };
    while (cursor.pos < answer.length) {
      const tag = readVarint(answer, cursor);
      if (tag >>> 3 !== 1 || (tag & 7) !== LEN) {
        skipField(answer, cursor, tag & 7);
        continue;
      }
      const length = readVarint(answer, cursor);
      const start = cursor.pos;
      const end = start + length;
      if (end > answer.length) throw malformed();
      cursor.pos = end;
      const id = itemId(answer, start, end);
      if (id === undefined) {
        out.push(deepFreeze(this.decode(answer.subarray(start, end))));
        continue;
      }
      const known = this.entries.get(id);
      let entry = known;
      if (!entry || !this.same(entry, answer, start, end)) {
        entry = this.entry(answer, start, end);
        this.entries.set(id, entry);
      }
      if (complete) {
        if (known?.listedIn !== listing) held++;
        entry.listedIn = listing;
      }
      out.push(entry.value);
    }
    if (complete && held < this.entries.size) {
      for (const [id, entry] of this.entries) if (entry.listedIn !== listing) this.entries.delete(id);
    }
    return out;
  }

  /**
   * Whether the item in bytes[start, end) is the one entry was made from (see the top of the file):
   * each run of fixed fields compared where it lay before, and only the maps' tags and lengths read
   * between them. This is the cost of every unchanged item of every relist, so it makes no objects.
   */
  private same(entry: Entry<T>, bytes: Buffer, start: number, end: number): boolean {
    if (end - start !== entry.length) return false;
    const runs = entry.runs;
    let pos = start;
    let fixedAt = 0;
    for (let i = 0; i < runs.length; i += 2) {
      const runStart = start + runs[i]!;
      const runEnd = runStart + runs[i + 1]!;
      if (!this.onlyMapFields(bytes, pos, runStart)) return false;
      if (entry.fixed.compare(bytes, runStart, runEnd, fixedAt, fixedAt + runEnd - runStart) !== 0)
        return false;
      fixedAt += runEnd - runStart;
      pos = runEnd;
    }
    return this.onlyMapFields(bytes, pos, end);
  }

  /** Whether bytes[from, to) is whole map fields and nothing else; false for anything malformed. */
  private onlyMapFields(bytes: Buffer, from: number, to: number): boolean {
    let pos = from;
    while (pos < to) {
      // A map field is a one-byte tag (see the constructor), a length and the entry.
      const tag = bytes[pos++]!;
      if (!this.isMapField(tag)) return false;
      let length = 0;
      for (let scale = 1; ; scale *= 0x80) {
        if (pos >= to || scale > 2 ** 28) return false;
        const b = bytes[pos++]!;
        length += (b & 0x7f) * scale;
        if (b < 0x80) break;
      }
      pos += length;
    }
    return pos === to;
  }

  private entry(bytes: Buffer, start: number, end: number): Entry<T> {
    const runs: number[] = [];
    const cursor = { pos: start };
    let runStart = start;
    let fixedLength = 0;
    const endRun = (runEnd: number): void => {
      if (runEnd > runStart) {
        runs.push(runStart - start, runEnd - runStart);
        fixedLength += runEnd - runStart;
      }
    };
    while (cursor.pos < end) {
      const fieldStart = cursor.pos;
      const tag = readVarint(bytes, cursor);
      skipField(bytes, cursor, tag & 7);
      if (!this.isMapField(tag)) continue;
      endRun(fieldStart);
      runStart = cursor.pos;
    }
    if (cursor.pos !== end) throw malformed();
    endRun(end);
    // Its own memory: a slice of Buffer's shared 8 KiB pool would keep the pool alive for as long
    // as the item lives (a heap snapshot with 100 pods: 64 pools, 512 KiB).
    const fixed = Buffer.allocUnsafeSlow(fixedLength);
    let at = 0;
    for (let i = 0; i < runs.length; i += 2) {
      const from = start + runs[i]!;
      at += bytes.copy(fixed, at, from, from + runs[i + 1]!);
    }
    return {
      fixed,
      runs,
      length: end - start,
      value: deepFreeze(this.decode(bytes.subarray(start, end))),
      listedIn: 0,
    };
  }

  private isMapField(tag: number): boolean {
    return tag < 0x80 && (tag & 7) === LEN && ((this.mapFieldBits >>> (tag >>> 3)) & 1) === 1;
  }
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

function malformed(): Error {
  return new Error('malformed protobuf in a list answer');
}

/** A varint of at most 32 bits (tags, lengths); the cursor moves past it. */
function readVarint(bytes: Uint8Array, cursor: { pos: number }): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 5; i++) {
    if (cursor.pos >= bytes.length) throw malformed();
    const b = bytes[cursor.pos++]!;
    value += (b & 0x7f) * scale;
    if (b < 0x80) return value;
    scale *= 0x80;
  }
  throw malformed();
}

/** Moves the cursor past a field's value, whose tag was just read. */
function skipField(bytes: Uint8Array, cursor: { pos: number }, wireType: number): void {
  switch (wireType) {
    case VARINT:
      for (let i = 0; ; i++) {
        if (cursor.pos >= bytes.length || i >= 10) throw malformed();
        if (bytes[cursor.pos++]! < 0x80) return;
      }
    case I64:
      cursor.pos += 8;
      break;
    case LEN: {
      // Read first: `cursor.pos += readVarint(…)` would add to the position from before the length.
      const length = readVarint(bytes, cursor);
      cursor.pos += length;
      break;
    }
    case I32:
      cursor.pos += 4;
      break;
    default:
      // Groups (3, 4) are proto2 only; the CRI never sends them.
      throw malformed();
  }
  if (cursor.pos > bytes.length) throw malformed();
}

/** The item's ID: its field 1 (a string), when that comes first, as every protobuf encoder writes it. */
function itemId(bytes: Buffer, start: number, end: number): string | undefined {
  if (end - start < 2 || bytes[start] !== 0x0a) return undefined;
  // IDs are under 128 bytes, so their length is one byte: no cursor to make for each item.
  let from = start + 2;
  let length = bytes[start + 1]!;
  if (length >= 0x80) {
    const cursor = { pos: start + 1 };
    length = readVarint(bytes, cursor);
    from = cursor.pos;
  }
  if (from + length > end) throw malformed();
  return bytes.toString('latin1', from, from + length);
}

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}
