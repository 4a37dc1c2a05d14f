/**
 * apimachinery's strategicpatch.CreateTwoWayMergePatch, for the shapes a kubelet sends: the patch that
 * turns `original` into `modified`, given the patch tags (patchStrategy "merge" with a patchMergeKey) of
 * the fields involved. Lists of objects with a merge key are diffed element by element, with
 * `$patch: delete` for removed elements and a `$setElementOrder/<field>` list whenever the list
 * changed; any other list is replaced whole; a field only in original becomes null.
 *
 * Both documents must be what Go's encoding/json would write for the typed object (the caller
 * normalizes them), since the patch is the difference of those two encodings.
 */

import { compareStrings } from '../lib/compare.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** The patch tags of one field and the fields of the struct it holds (or of each element). */
export interface PatchField {
  /** patchStrategy "merge" with this patchMergeKey: a list of objects merged by that key. */
  mergeKey?: string;
  fields?: PatchSchema;
}

export type PatchSchema = { readonly [field: string]: PatchField };

const SET_ELEMENT_ORDER = '$setElementOrder';

function isObject(v: Json | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Go's reflect.TypeOf over decoded JSON: map, slice, string, float64, bool, or nil. */
function kindOf(v: Json): string {
  if (v === null) return 'nil';
  if (Array.isArray(v)) return 'slice';
  return typeof v;
}

export function jsonEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && jsonEqual(a[k], b[k]));
  }
  return false;
}

export function createTwoWayMergePatch(
  original: JsonObject,
  modified: JsonObject,
  schema: PatchSchema,
): JsonObject {
  return diffMaps(original, modified, schema);
}

/** Whether o has a key: without the array Object.keys would make to count them. */
export function hasKeys(o: JsonObject): boolean {
  for (const key in o) if (Object.hasOwn(o, key)) return true;
  return false;
}

// for…in over plain JSON objects rather than Object.entries and Object.keys: a status patch is
// worked out for every status a pod start reports, and those arrays were most of what it allocated.
function diffMaps(original: JsonObject, modified: JsonObject, schema: PatchSchema): JsonObject {
  const patch: JsonObject = {};
  for (const key in modified) {
    if (!Object.hasOwn(modified, key)) continue;
    const m = modified[key]!;
    if (!(key in original)) {
      patch[key] = m;
      continue;
    }
    const o = original[key]!;
    if (kindOf(o) !== kindOf(m)) {
      patch[key] = m;
      continue;
    }
    if (isObject(o) && isObject(m)) {
      const sub = diffMaps(o, m, schema[key]?.fields ?? {});
      if (hasKeys(sub)) patch[key] = sub;
    } else if (Array.isArray(o) && Array.isArray(m)) {
      diffSlice(key, o, m, patch, schema[key]);
    } else if (o !== m) {
      patch[key] = m;
    }
  }
  for (const key in original) if (Object.hasOwn(original, key) && !(key in modified)) patch[key] = null;
  return patch;
}

function diffSlice(
  key: string,
  original: Json[],
  modified: Json[],
  patch: JsonObject,
  meta: PatchField | undefined,
): void {
  const mergeKey = meta?.mergeKey;
  if (!mergeKey || !original.concat(modified).every(isObject)) {
    if (!jsonEqual(original, modified)) patch[key] = modified;
    return;
  }
  const orig = original as JsonObject[];
  const mod = modified as JsonObject[];
  const { changes, deletions } = diffListsOfMaps(orig, mod, mergeKey, meta.fields ?? {});
  // Changes go in the order of modified, deletions after them (normalizeSliceOrder).
  const position = new Map(mod.map((e, i) => [keyString(e[mergeKey]), i]));
  changes.sort(
    (a, b) => (position.get(keyString(a[mergeKey])) ?? 0) - (position.get(keyString(b[mergeKey])) ?? 0),
  );
  const list: JsonObject[] = [...changes, ...deletions];
  const orderSame =
    orig.length === mod.length &&
    orig.every((e, i) => keyString(e[mergeKey]) === keyString(mod[i]![mergeKey]));
  if (list.length > 0) patch[key] = list;
  if (list.length > 0 || !orderSame) {
    patch[`${SET_ELEMENT_ORDER}/${key}`] = mod.map((e) => ({ [mergeKey]: e[mergeKey] ?? null }));
  }
}

/** Go's fmt.Sprintf("%v") of a merge key value, which orders the elements. */
function keyString(v: Json | undefined): string {
  return v === undefined || v === null ? '<nil>' : String(v);
}

function diffListsOfMaps(
  original: JsonObject[],
  modified: JsonObject[],
  mergeKey: string,
  schema: PatchSchema,
): { changes: JsonObject[]; deletions: JsonObject[] } {
  const byKey = (a: JsonObject, b: JsonObject) =>
    compareStrings(keyString(a[mergeKey]), keyString(b[mergeKey]));
  const o = [...original].sort(byKey);
  const m = [...modified].sort(byKey);
  const changes: JsonObject[] = [];
  const deletions: JsonObject[] = [];
  let i = 0;
  let j = 0;
  while (i < o.length || j < m.length) {
    const ok = i < o.length ? keyString(o[i]![mergeKey]) : undefined;
    const mk = j < m.length ? keyString(m[j]![mergeKey]) : undefined;
    if (ok !== undefined && mk !== undefined && ok === mk) {
      const sub = diffMaps(o[i]!, m[j]!, schema);
      if (hasKeys(sub)) {
        sub[mergeKey] = m[j]![mergeKey] ?? null;
        changes.push(sub);
      }
      i++;
      j++;
    } else if (ok === undefined || (mk !== undefined && ok > mk)) {
      changes.push(m[j]!);
      j++;
    } else {
      deletions.push({ $patch: 'delete', [mergeKey]: o[i]![mergeKey] ?? null });
      i++;
    }
  }
  return { changes, deletions };
}

/**
 * JSON as Go's encoding/json writes a map: keys sorted at every level, and <, >, & escaped (its
 * HTML-safe default), so the bytes match what upstream sends.
 */
export function goJson(value: Json): string {
  return JSON.stringify(sortKeys(value)).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function sortKeys(v: Json): Json {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]!);
  return out;
}
