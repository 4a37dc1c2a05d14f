/**
 * Decoded list items, kept by their bytes. The PLEG lists every sandbox and container once a second
 * (and more often while pods start), and nearly every item comes back as it was the time before;
 * decoding and converting them again was the largest share of a relist's CPU and of its garbage.
 * Here an item that is the same as the last one seen under its ID is the object made then, and only
 * new or changed items are decoded.
 *
 * "The same": every field's bytes are equal, except the label and annotation maps, whose entries
 * containerd writes in a different order each time (it ranges over Go maps). Those are fixed when
 * the container or sandbox is made (CRI has no call that changes them), so their total size is
 * compared, not their order.
 *
 * Shared objects must not change under their other readers, so each is frozen (with the objects
 * inside it): a caller that wants to change one makes a copy.
 */
interface Entry<T> {
  /** The item's fields other than the maps, as they came, in order. */
  fixed: Buffer;
  mapBytes: number;
  value: T;
}

// Protobuf wire types (the encoding guide's "wire types").
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

/**
 * The walk over an answer's bytes is hand-written rather than @bufbuild/protobuf's BinaryReader,
 * whose skip() returns each skipped field as a new view: a relist of 100 containers made thousands,
 * a fifth of all the kubelet allocated while 100 pods started. It makes no object per field or item
 * either (no cursor, no callback): a relist walks every field of every item, 30 times a second while
 * pods start.
 */
export class ListItemCache<T extends object> {
  private entries = new Map<string, Entry<T>>();
  // The map fields as a bit per field number below 32 (all of the CRI's), the rest in the set.
  private readonly mapFieldBits: number;
  // The last walk's runs of fixed fields, as [from, to) pairs; reused from walk to walk.
  private readonly runs: number[] = [];

  /**
   * decode: one item's message bytes to the caller's (unfrozen) object. mapFields: the field
   * numbers of the item's map fields (labels, annotations).
   */
  constructor(
    private readonly decode: (bytes: Uint8Array) => T,
    private readonly mapFields: ReadonlySet<number>,
  ) {
    let bits = 0;
    for (const field of mapFields) if (field < 32) bits |= 1 << field;
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
    const seen = complete ? new Map<string, Entry<T>>() : this.entries;
    let pos = 0;
    while (pos < answer.length) {
      const tag = readVarint(answer, pos);
      pos = varintEnd;
      if (tag !== ITEM_TAG) {
        pos = skipField(answer, pos, tag & 7);
        continue;
      }
      const length = readVarint(answer, pos);
      const start = varintEnd;
      const end = start + length;
      if (end > answer.length) throw malformed();
      pos = end;
      const id = itemId(answer, start, end);
      if (id === undefined) {
        out.push(deepFreeze(this.decode(answer.subarray(start, end))));
        continue;
      }
      let entry = this.entries.get(id);
      if (!entry || !this.same(entry, answer, start, end)) {
        entry = this.entry(answer, start, end);
      }
      seen.set(id, entry);
      out.push(entry.value);
    }
    if (complete) this.entries = seen;
    return out;
  }

  /** Whether the item in bytes[start, end) is the one entry was made from (see the top of the file). */
  private same(entry: Entry<T>, bytes: Buffer, start: number, end: number): boolean {
    const mapBytes = this.walkFields(bytes, start, end);
    if (mapBytes !== entry.mapBytes) return false;
    const runs = this.runs;
    const fixed = entry.fixed;
    let at = 0;
    for (let i = 0; i < runs.length; i += 2) {
      const from = runs[i]!;
      const size = runs[i + 1]! - from;
      if (at + size > fixed.length || fixed.compare(bytes, from, from + size, at, at + size) !== 0)
        return false;
      at += size;
    }
    return at === fixed.length;
  }

  private entry(bytes: Buffer, start: number, end: number): Entry<T> {
    const mapBytes = this.walkFields(bytes, start, end);
    const runs = this.runs;
    let size = 0;
    for (let i = 0; i < runs.length; i += 2) size += runs[i + 1]! - runs[i]!;
    // Its own memory: a slice of Buffer's shared 8 KiB pool would keep the pool alive for as long as
    // the item lives (a heap snapshot with 100 pods: 64 pools, 512 KiB).
    const fixed = Buffer.allocUnsafeSlow(size);
    let at = 0;
    for (let i = 0; i < runs.length; i += 2) at += bytes.copy(fixed, at, runs[i]!, runs[i + 1]!);
    return {
      fixed,
      mapBytes,
      value: deepFreeze(this.decode(bytes.subarray(start, end))),
    };
  }

  /**
   * Notes in `runs` the bounds of each run of the item's fields outside the maps (fields next to each
   * other are one run: a container's fields before its labels are one compare, not seven), in order;
   * returns the maps' total size.
   */
  private walkFields(bytes: Buffer, start: number, end: number): number {
    const runs = this.runs;
    runs.length = 0;
    let pos = start;
    let mapBytes = 0;
    let runStart = start;
    while (pos < end) {
      const fieldStart = pos;
      // A one-octet tag and length (every field of an item but the largest) read in place: this
      // loop runs for every field of every item, mostly before V8 has optimized it.
      let tag = bytes[pos]!;
      if (tag < 0x80) pos++;
      else {
        tag = readVarint(bytes, pos);
        pos = varintEnd;
      }
      if ((tag & 7) === LEN && pos < end && bytes[pos]! < 0x80) {
        pos += 1 + bytes[pos]!;
        if (pos > bytes.length) throw malformed();
      } else {
        pos = skipField(bytes, pos, tag & 7);
      }
      const field = tag >>> 3;
      if (field < 32 ? ((this.mapFieldBits >>> field) & 1) === 0 : !this.mapFields.has(field)) continue;
      mapBytes += pos - fieldStart;
      if (fieldStart > runStart) runs.push(runStart, fieldStart);
      runStart = pos;
    }
    if (pos !== end) throw malformed();
    if (end > runStart) runs.push(runStart, end);
    return mapBytes;
  }
}

// Field 1, length-delimited: the repeated item of a list answer.
const ITEM_TAG = (1 << 3) | LEN;

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

function malformed(): Error {
  return new Error('malformed protobuf in a list answer');
}

// Where the last readVarint's varint ended: a second result without an object to carry it.
let varintEnd = 0;

/** A varint of at most 32 bits (tags, lengths) at `at`; varintEnd is set past it. */
function readVarint(bytes: Uint8Array, at: number): number {
  if (at >= bytes.length) throw malformed();
  const first = bytes[at]!;
  if (first < 0x80) {
    varintEnd = at + 1;
    return first;
  }
  let value = first & 0x7f;
  let pos = at + 1;
  for (let shift = 7; shift < 35; shift += 7) {
    if (pos >= bytes.length) throw malformed();
    const b = bytes[pos++]!;
    value += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) {
      varintEnd = pos;
      return value;
    }
  }
  throw malformed();
}

/** The position past a field's value, whose tag was just read and ended at `at`. */
function skipField(bytes: Uint8Array, at: number, wireType: number): number {
  let pos = at;
  switch (wireType) {
    case VARINT:
      for (let i = 0; ; i++) {
        if (pos >= bytes.length || i >= 10) throw malformed();
        if (bytes[pos++]! < 0x80) break;
      }
      break;
    case I64:
      pos += 8;
      break;
    case LEN: {
      const length = readVarint(bytes, pos);
      pos = varintEnd + length;
      break;
    }
    case I32:
      pos += 4;
      break;
    default:
      // Groups (3, 4) are proto2 only; the CRI never sends them.
      throw malformed();
  }
  if (pos > bytes.length) throw malformed();
  return pos;
}

/** The item's ID: its field 1 (a string), when that comes first, as every protobuf encoder writes it. */
function itemId(bytes: Buffer, start: number, end: number): string | undefined {
  if (end - start < 2 || bytes[start] !== 0x0a) return undefined;
  const length = readVarint(bytes, start + 1);
  const from = varintEnd;
  if (from + length > end) throw malformed();
  return bytes.toString('latin1', from, from + length);
}

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}
