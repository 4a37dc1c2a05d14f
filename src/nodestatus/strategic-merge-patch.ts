/**
 * The two-way strategic merge patch that turns one version of an object into another (upstream:
 * apimachinery strategicpatch.CreateTwoWayMergePatch): maps are diffed key by key, a removed key
 * becomes null, lists tagged with a merge key carry only their changed items plus a
 * `$setElementOrder/` list, removed items become `$patch: delete`, and untagged lists are replaced
 * whole. The schema names the tagged fields, as the Go types' patch tags do.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface PatchField {
  /** patchStrategy:"merge" with this patchMergeKey. */
  mergeKey?: string;
  /** patchStrategy:"merge" on a list of scalars (finalizers, podCIDRs). */
  mergeScalars?: boolean;
  /** The fields of the struct this field holds, or of each element of the list it holds. */
  fields?: PatchSchema;
}

export type PatchSchema = { readonly [field: string]: PatchField };

/** The patch tags of core/v1 Node. */
export const NODE_PATCH_SCHEMA: PatchSchema = {
  metadata: { fields: { ownerReferences: { mergeKey: 'uid' }, finalizers: { mergeScalars: true } } },
  spec: { fields: { podCIDRs: { mergeScalars: true } } },
  status: { fields: { conditions: { mergeKey: 'type' }, addresses: { mergeKey: 'type' } } },
};

const SET_ORDER_PREFIX = '$setElementOrder/';
const DELETE_PRIMITIVE_PREFIX = '$deleteFromPrimitiveList/';

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Plain JSON equality (Go's reflect.DeepEqual over decoded JSON). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && jsonEqual(a[k], b[k]));
  }
  return false;
}

/** The patch that turns original into modified. */
export function createTwoWayMergePatch(
  original: JsonObject,
  modified: JsonObject,
  schema: PatchSchema,
): JsonObject {
  return diffMaps(original, modified, schema);
}

function diffMaps(original: JsonObject, modified: JsonObject, schema: PatchSchema): JsonObject {
  const patch: JsonObject = {};
  for (const [key, mod] of Object.entries(modified)) {
    if (!(key in original)) {
      patch[key] = mod;
      continue;
    }
    const orig = original[key];
    const meta = schema[key] ?? {};
    if (isObject(orig) && isObject(mod)) {
      const sub = diffMaps(orig, mod, meta.fields ?? {});
      if (Object.keys(sub).length > 0) patch[key] = sub;
    } else if (Array.isArray(orig) && Array.isArray(mod)) {
      diffSlices(key, orig, mod, meta, patch);
    } else if (!jsonEqual(orig, mod)) {
      patch[key] = mod;
    }
  }
  for (const key of Object.keys(original)) if (!(key in modified)) patch[key] = null;
  return patch;
}

function diffSlices(
  key: string,
  original: Json[],
  modified: Json[],
  meta: PatchField,
  patch: JsonObject,
): void {
  if (meta.mergeKey !== undefined && modified.concat(original).every(isObject)) {
    diffListsOfMaps(
      key,
      original as JsonObject[],
      modified as JsonObject[],
      meta.mergeKey,
      meta.fields ?? {},
      patch,
    );
  } else if (meta.mergeScalars) {
    diffListsOfScalars(key, original, modified, patch);
  } else if (!jsonEqual(original, modified)) {
    patch[key] = modified;
  }
}

function diffListsOfMaps(
  key: string,
  original: JsonObject[],
  modified: JsonObject[],
  mergeKey: string,
  fields: PatchSchema,
  patch: JsonObject,
): void {
  const keyOf = (o: JsonObject) => o[mergeKey];
  const changes: JsonObject[] = [];
  for (const mod of modified) {
    const orig = original.find((o) => jsonEqual(keyOf(o), keyOf(mod)));
    if (!orig) {
      changes.push(mod);
      continue;
    }
    const d = diffMaps(orig, mod, fields);
    if (Object.keys(d).length > 0) changes.push({ [mergeKey]: keyOf(mod) ?? null, ...d });
  }
  const deletions: JsonObject[] = original
    .filter((o) => !modified.some((m) => jsonEqual(keyOf(m), keyOf(o))))
    .map((o) => ({ $patch: 'delete', [mergeKey]: keyOf(o) ?? null }));
  const orderSame =
    original.length === modified.length && original.every((o, i) => jsonEqual(keyOf(o), keyOf(modified[i]!)));
  const list = [...changes, ...deletions];
  if (list.length > 0) patch[key] = list;
  if (list.length > 0 || !orderSame) {
    patch[SET_ORDER_PREFIX + key] = modified.map((m) => ({ [mergeKey]: keyOf(m) ?? null }));
  }
}

function diffListsOfScalars(key: string, original: Json[], modified: Json[], patch: JsonObject): void {
  const added = modified.filter((m) => !original.some((o) => jsonEqual(o, m)));
  const removed = original.filter((o) => !modified.some((m) => jsonEqual(o, m)));
  const orderSame = jsonEqual(original, modified);
  if (added.length > 0) patch[key] = added;
  if (removed.length > 0) patch[DELETE_PRIMITIVE_PREFIX + key] = removed;
  if (added.length > 0 || removed.length > 0 || !orderSame) patch[SET_ORDER_PREFIX + key] = modified;
}
