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
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

interface Entry<T> {
  /** The item's fields other than the maps, as they came, in order. */
  fixed: Buffer;
  mapBytes: number;
  value: T;
}

/** One item's bytes split as Entry compares them. */
interface Shape {
  parts: Uint8Array[];
  fixedBytes: number;
  mapBytes: number;
}

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
   * are gone and are forgotten; a filtered listing only adds.
   */
  decodeList(response: Uint8Array, complete: boolean): T[] {
    const reader = new BinaryReader(response);
    const out: T[] = [];
    const seen = complete ? new Map<string, Entry<T>>() : this.entries;
    while (reader.pos < reader.len) {
      const [fieldNo, wireType] = reader.tag();
      if (fieldNo !== 1 || wireType !== WireType.LengthDelimited) {
        reader.skip(wireType, fieldNo);
        continue;
      }
      const item = reader.bytes();
      const id = itemId(item);
      if (id === undefined) {
        out.push(deepFreeze(this.decode(item)));
        continue;
      }
      const shape = this.shape(item);
      let entry = this.entries.get(id);
      if (!entry || !sameShape(entry, shape)) {
        entry = {
          fixed: Buffer.concat(shape.parts, shape.fixedBytes),
          mapBytes: shape.mapBytes,
          value: deepFreeze(this.decode(item)),
        };
      }
      seen.set(id, entry);
      out.push(entry.value);
    }
    if (complete) this.entries = seen;
    return out;
  }

  private shape(item: Uint8Array): Shape {
    const reader = new BinaryReader(item);
    const parts: Uint8Array[] = [];
    let fixedBytes = 0;
    let mapBytes = 0;
    while (reader.pos < reader.len) {
      const start = reader.pos;
      const [fieldNo, wireType] = reader.tag();
      reader.skip(wireType, fieldNo);
      if (this.mapFields.has(fieldNo)) {
        mapBytes += reader.pos - start;
      } else {
        parts.push(item.subarray(start, reader.pos));
        fixedBytes += reader.pos - start;
      }
    }
    return { parts, fixedBytes, mapBytes };
  }
}

function sameShape(entry: Entry<unknown>, shape: Shape): boolean {
  if (entry.mapBytes !== shape.mapBytes || entry.fixed.length !== shape.fixedBytes) return false;
  let at = 0;
  for (const part of shape.parts) {
    if (entry.fixed.compare(part, 0, part.length, at, at + part.length) !== 0) return false;
    at += part.length;
  }
  return true;
}

/** The item's ID: its field 1 (a string), when that comes first, as every protobuf encoder writes it. */
function itemId(item: Uint8Array): string | undefined {
  if (item.length < 2 || item[0] !== 0x0a) return undefined;
  const reader = new BinaryReader(item);
  reader.tag();
  const bytes = reader.bytes();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1');
}

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}
