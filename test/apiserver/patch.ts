/**
 * The three PATCH bodies the API server takes for built-in types: RFC 7386 JSON merge patch, RFC 6902
 * JSON patch, and Kubernetes' strategic merge patch (apimachinery's strategicpatch package: lists
 * merged by a key, the `$patch`, `$setElementOrder/`, `$deleteFromPrimitiveList/` and `$retainKeys`
 * directives, and its element-order rules), driven by a small schema of the fields that carry
 * `patchStrategy`/`patchMergeKey` tags in the Go types. A field absent from the schema is atomic.
 */
import { ApiError, badRequest, internalError, unprocessable } from './api-error.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** The patch tags of one field: `patchStrategy:"merge"` with `patchMergeKey`, or a merged set of scalars. */
export interface PatchField {
  mergeKey?: string;
  /** A list of scalars with patchStrategy merge (finalizers, podCIDRs): merged as a set. */
  mergeScalars?: boolean;
  /** The fields of the struct this field holds, or of each element of the list it holds. */
  fields?: PatchSchema;
}

export type PatchSchema = { readonly [field: string]: PatchField };

export type PatchType = 'json' | 'merge' | 'strategic';

const CONTENT_TYPES: Record<string, PatchType> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
};

/** The patch type named by a request's Content-Type, or undefined for one the server does not take. */
export function patchTypeOf(contentType: string | undefined): PatchType | undefined {
  const base = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return CONTENT_TYPES[base];
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function clone<T extends Json>(v: T): T {
  return structuredClone(v);
}

export function applyPatch(
  type: PatchType,
  original: JsonObject,
  patch: Json,
  schema: PatchSchema,
): JsonObject {
  let result: Json;
  if (type === 'merge') {
    if (!isObject(patch)) throw badRequest('invalid JSON document');
    result = mergePatch(original, patch);
  } else if (type === 'json') {
    result = jsonPatch(original, patch);
  } else {
    if (!isObject(patch)) throw badRequest('invalid JSON document');
    result = strategicMergePatch(original, patch, schema);
  }
  if (!isObject(result)) throw unprocessable();
  return result;
}

// ---- RFC 7386 ----------------------------------------------------------------------------------

export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

// ---- RFC 6902 ----------------------------------------------------------------------------------

interface JsonPatchOp {
  op: string;
  path: string;
  from?: string;
  value?: Json;
}

function decodePointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw unprocessable();
  return path
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The container that holds the last token of path, and that token. */
function locate(doc: Json, tokens: string[]): { parent: Json; key: string } {
  let cur: Json = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) {
      const i = Number(t);
      if (!/^\d+$/.test(t) || i >= cur.length) throw unprocessable();
      cur = cur[i]!;
    } else if (isObject(cur) && Object.prototype.hasOwnProperty.call(cur, t)) {
      cur = cur[t]!;
    } else throw unprocessable();
  }
  return { parent: cur, key: tokens[tokens.length - 1]! };
}

function getAt(doc: Json, path: string): Json {
  const tokens = decodePointer(path);
  if (tokens.length === 0) return doc;
  const { parent, key } = locate(doc, tokens);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!/^\d+$/.test(key) || i >= parent.length) throw unprocessable();
    return parent[i]!;
  }
  if (isObject(parent) && Object.prototype.hasOwnProperty.call(parent, key)) return parent[key]!;
  throw unprocessable();
}

function removeAt(doc: Json, path: string): Json {
  const tokens = decodePointer(path);
  if (tokens.length === 0) throw unprocessable();
  const { parent, key } = locate(doc, tokens);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!/^\d+$/.test(key) || i >= parent.length) throw unprocessable();
    return parent.splice(i, 1)[0]!;
  }
  if (isObject(parent) && Object.prototype.hasOwnProperty.call(parent, key)) {
    const v = parent[key]!;
    delete parent[key];
    return v;
  }
  throw unprocessable();
}

function addAt(doc: Json, path: string, value: Json): Json {
  const tokens = decodePointer(path);
  if (tokens.length === 0) return value;
  const { parent, key } = locate(doc, tokens);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (key !== '-' && (!/^\d+$/.test(key) || i > parent.length)) throw unprocessable();
    parent.splice(i, 0, value);
  } else if (isObject(parent)) {
    parent[key] = value;
  } else throw unprocessable();
  return doc;
}

export function jsonPatch(original: Json, patch: Json): Json {
  if (!Array.isArray(patch)) {
    throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  }
  const ops = patch.map((p): JsonPatchOp => {
    if (!isObject(p) || typeof p.op !== 'string' || typeof p.path !== 'string') {
      throw badRequest('json patch operation is missing "op" or "path"');
    }
    return {
      op: p.op,
      path: p.path,
      ...(typeof p.from === 'string' ? { from: p.from } : {}),
      ...(p.value !== undefined ? { value: p.value } : {}),
    };
  });
  let doc = clone(original);
  for (const op of ops) {
    switch (op.op) {
      case 'add':
        doc = addAt(doc, op.path, clone(op.value ?? null));
        break;
      case 'remove':
        removeAt(doc, op.path);
        break;
      case 'replace':
        getAt(doc, op.path); // replace requires the target to exist
        if (decodePointer(op.path).length === 0) doc = clone(op.value ?? null);
        else {
          removeAt(doc, op.path);
          doc = addAt(doc, op.path, clone(op.value ?? null));
        }
        break;
      case 'move': {
        const v = removeAt(doc, op.from ?? '');
        doc = addAt(doc, op.path, v);
        break;
      }
      case 'copy':
        doc = addAt(doc, op.path, clone(getAt(doc, op.from ?? '')));
        break;
      case 'test':
        if (!deepEqual(getAt(doc, op.path), op.value ?? null)) throw unprocessable();
        break;
      default:
        throw badRequest(`Unexpected kind: ${op.op}`);
    }
  }
  return doc;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

// ---- strategic merge patch -----------------------------------------------------------------------

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const SET_ORDER_PREFIX = '$setElementOrder/';
const DELETE_PRIMITIVE_PREFIX = '$deleteFromPrimitiveList/';

export function strategicMergePatch(
  original: JsonObject,
  patch: JsonObject,
  schema: PatchSchema,
): JsonObject {
  try {
    return mergeMap(original, clone(patch), schema);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // Errors that upstream does not map to a status (a list element without its merge key, ...)
    // surface as 500s from the real server too.
    throw internalError(err);
  }
}

function mergeMap(original: JsonObject | undefined, patch: JsonObject, schema: PatchSchema): JsonObject {
  if (DIRECTIVE in patch) {
    const directive = patch[DIRECTIVE];
    if (directive === 'replace') {
      delete patch[DIRECTIVE];
      return mergeMap(undefined, patch, schema);
    }
    if (directive === 'delete') return {};
    throw badRequest(`Unknown patch type: ${JSON.stringify(directive)} in map: ${JSON.stringify(patch)}`);
  }
  const out: JsonObject = original ? clone(original) : {};

  if (RETAIN_KEYS in patch) {
    const keep = patch[RETAIN_KEYS];
    delete patch[RETAIN_KEYS];
    if (!Array.isArray(keep)) throw badRequest('invalid patch format of retainKeys');
    for (const [k, v] of Object.entries(patch)) {
      if (v === null || k.startsWith(SET_ORDER_PREFIX) || k.startsWith(DELETE_PRIMITIVE_PREFIX)) continue;
      if (!keep.includes(k)) throw badRequest('invalid patch format of retainKeys');
    }
    for (const k of Object.keys(out)) if (!keep.includes(k)) delete out[k];
  }

  // $setElementOrder lists are merged together with the list they order, then dropped from the patch.
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ORDER_PREFIX)) continue;
    const order = patch[key];
    delete patch[key];
    if (!Array.isArray(order)) throw badRequest('invalid patch format of setElementOrder list');
    const field = key.slice(SET_ORDER_PREFIX.length);
    const meta = schema[field] ?? {};
    const origList = Array.isArray(out[field]) ? (out[field] as Json[]) : undefined;
    const patchList = Array.isArray(patch[field]) ? (patch[field] as Json[]) : undefined;
    if (!origList && !patchList) continue;
    const merged = patchList ? mergeList(origList ?? [], patchList, meta) : origList!;
    out[field] = orderBy(merged, order, origList ?? [], meta.mergeKey);
    delete patch[field];
  }

  // Parallel deletion lists first, so that a value both removed and re-added ends up present.
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(DELETE_PRIMITIVE_PREFIX)) continue;
    const values = patch[key];
    delete patch[key];
    if (!Array.isArray(values)) throw badRequest('invalid patch format of primitive list');
    const field = key.slice(DELETE_PRIMITIVE_PREFIX.length);
    const cur = out[field];
    if (Array.isArray(cur)) out[field] = cur.filter((v) => !values.some((d) => d === v));
  }

  for (const [key, value] of Object.entries(patch)) {
    const meta = schema[key] ?? {};
    if (value === null) {
      delete out[key];
      continue;
    }
    const cur = out[key];
    if (isObject(value)) {
      out[key] = mergeMap(isObject(cur) ? cur : undefined, value, meta.fields ?? {});
    } else if (Array.isArray(value)) {
      out[key] = mergeList(Array.isArray(cur) ? cur : [], value, meta);
    } else {
      out[key] = value;
    }
  }
  return out;
}

function keyOf(item: Json, mergeKey: string | undefined): Json | undefined {
  if (mergeKey === undefined) return item;
  return isObject(item) ? item[mergeKey] : undefined;
}

function mergeList(original: Json[], patch: Json[], meta: PatchField): Json[] {
  if (meta.mergeScalars) {
    const merged = [...original];
    for (const v of patch) if (!merged.some((m) => m === v)) merged.push(v);
    return orderBy(merged, patch, original, undefined);
  }
  const mergeKey = meta.mergeKey;
  if (mergeKey === undefined) {
    // An atomic list: the patch's list replaces it whole (its maps still lose any directives).
    return patch.map((v) => (isObject(v) ? mergeMap(undefined, v, meta.fields ?? {}) : v));
  }

  let base = [...original];
  const plain: JsonObject[] = [];
  let replace = false;
  for (const item of patch) {
    if (!isObject(item)) throw new Error(`value for a list with merge key ${mergeKey} is not a map`);
    if (!(DIRECTIVE in item)) {
      plain.push(item);
      continue;
    }
    const directive = item[DIRECTIVE];
    if (directive === 'delete') {
      if (!(mergeKey in item))
        throw new Error(`map: ${JSON.stringify(item)} does not contain declared merge key: ${mergeKey}`);
      base = base.filter((o) => keyOf(o, mergeKey) !== item[mergeKey]);
    } else if (directive === 'replace') {
      replace = true;
    } else if (directive === 'merge') {
      throw new Error('merging lists cannot yet be specified in the patch');
    } else {
      throw badRequest(`Unknown patch type: ${JSON.stringify(directive)} in map: ${JSON.stringify(item)}`);
    }
  }
  if (replace) return plain.map((v) => mergeMap(undefined, v, meta.fields ?? {}));

  const serverOrder = [...base];
  const merged = [...base];
  for (const item of plain) {
    if (!(mergeKey in item))
      throw new Error(`map: ${JSON.stringify(item)} does not contain declared merge key: ${mergeKey}`);
    const i = merged.findIndex((o) => keyOf(o, mergeKey) === item[mergeKey]);
    if (i >= 0) merged[i] = mergeMap(merged[i] as JsonObject, item, meta.fields ?? {});
    else merged.push(mergeMap(undefined, item, meta.fields ?? {}));
  }
  return orderBy(merged, plain, serverOrder, mergeKey);
}

/**
 * Upstream's normalizeElementOrder: the items named in patchOrder keep that order, the others (the
 * server's own) keep theirs, and the two are interleaved by the server's order where both are known.
 */
function orderBy(
  merged: Json[],
  patchOrder: Json[],
  serverOrder: Json[],
  mergeKey: string | undefined,
): Json[] {
  const keys = (list: Json[]) => list.map((v) => keyOf(v, mergeKey));
  const patchKeys = keys(patchOrder);
  const serverKeys = keys(serverOrder);
  const inPatch = (v: Json) => patchKeys.includes(keyOf(v, mergeKey));
  const byIndex = (order: (Json | undefined)[]) => (a: Json, b: Json) => {
    const ia = order.indexOf(keyOf(a, mergeKey));
    const ib = order.indexOf(keyOf(b, mergeKey));
    return ia >= 0 && ib >= 0 ? ia - ib : 0;
  };
  const fromPatch = merged.filter(inPatch).sort(byIndex(patchKeys));
  const serverOnly = merged.filter((v) => !inPatch(v)).sort(byIndex(serverKeys));
  const out: Json[] = [];
  let i = 0;
  let j = 0;
  while (i < serverOnly.length || j < fromPatch.length) {
    if (i >= serverOnly.length) out.push(fromPatch[j++]!);
    else if (j >= fromPatch.length) out.push(serverOnly[i++]!);
    else {
      const li = serverKeys.indexOf(keyOf(serverOnly[i]!, mergeKey));
      const ri = serverKeys.indexOf(keyOf(fromPatch[j]!, mergeKey));
      if (li >= 0 && ri >= 0 && li < ri) out.push(serverOnly[i++]!);
      else out.push(fromPatch[j++]!);
    }
  }
  return out;
}
