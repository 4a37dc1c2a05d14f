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
 * a fifth of all the kubelet allocated while 100 pods started.
 */
export class ListItemCache<T extends object> {
  private entries = new Map<string, Entry<T>>();

  /**
   * decode: one item's message bytes to the caller's (unfrozen) object. mapFields: the field
   * numbers of the item's map fields (labels, annotations).
   */
  constructor(
    private readonly decode: (bytes: Uint8Array) => T,
    private readonly mapFields: ReadonlySet<number>,
  ) {}

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
    let at = 0;
    const mapBytes = this.walkFields(bytes, start, end, (from, to) => {
      const size = to - from;
      if (at + size > entry.fixed.length || entry.fixed.compare(bytes, from, to, at, at + size) !== 0)
        return false;
      at += size;
      return true;
    });
    return mapBytes === entry.mapBytes && at === entry.fixed.length;
  }

  private entry(bytes: Buffer, start: number, end: number): Entry<T> {
    const parts: Buffer[] = [];
    const mapBytes = this.walkFields(
      bytes,
      start,
      end,
      (from, to) => parts.push(bytes.subarray(from, to)) > 0,
    );
    // Its own memory: Buffer.concat's would be a slice of Buffer's shared 8 KiB pool, which each
    // entry kept alive for as long as the item lives (a heap snapshot with 100 pods: 64 pools,
    // 512 KiB).
    const fixed = Buffer.allocUnsafeSlow(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) at += part.copy(fixed, at);
    return {
      fixed,
      mapBytes,
      value: deepFreeze(this.decode(bytes.subarray(start, end))),
    };
  }

  /**
   * Calls onFixed with the bounds of each run of the item's fields outside the maps (fields next to
   * each other are one run: a container's fields before its labels are one compare, not seven), in
   * order, until it returns false; returns the maps' total size, or -1 when onFixed stopped the walk.
   */
  private walkFields(
    bytes: Buffer,
    start: number,
    end: number,
    onFixed: (from: number, to: number) => boolean,
  ): number {
    const cursor = { pos: start };
    let mapBytes = 0;
    let runStart = start;
    while (cursor.pos < end) {
      const fieldStart = cursor.pos;
      const tag = readVarint(bytes, cursor);
      skipField(bytes, cursor, tag & 7);
      if (!this.mapFields.has(tag >>> 3)) continue;
      mapBytes += cursor.pos - fieldStart;
      if (fieldStart > runStart && !onFixed(runStart, fieldStart)) return -1;
      runStart = cursor.pos;
    }
    if (cursor.pos !== end) throw malformed();
    if (end > runStart && !onFixed(runStart, end)) return -1;
    return mapBytes;
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
  for (let shift = 0; shift < 35; shift += 7) {
    if (cursor.pos >= bytes.length) throw malformed();
    const b = bytes[cursor.pos++]!;
    value += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return value;
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
  const cursor = { pos: start + 1 };
  const length = readVarint(bytes, cursor);
  if (cursor.pos + length > end) throw malformed();
  return bytes.toString('latin1', cursor.pos, cursor.pos + length);
}

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}
