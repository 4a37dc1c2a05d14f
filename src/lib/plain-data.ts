/**
 * Copy and compare for plain data (what JSON or protobuf decoding makes: objects of Object's
 * prototype or none, arrays, primitives), as structuredClone and util.isDeepStrictEqual answer
 * for it, at a fraction of their CPU: a pod watch event copied and compared whole through the
 * builtins cost most of PodConfig's time (bench/pod-watch-path.ts). Any other kind of object met
 * on the way (a Date, a Map, a typed array, a class instance) is handed to the builtin, so the
 * answer stays the builtin's. Own symbol keys and array holes, which decoded data never has, are
 * not looked at.
 */
import { isDeepStrictEqual } from 'node:util';

const OBJECT_PROTO = Object.prototype;
const ARRAY_PROTO = Array.prototype;

/** structuredClone for plain data. */
export function copyPlainData<T>(value: T): T {
  if (typeof value !== 'object' || value === null) {
    // structuredClone refuses functions and symbols: keep its error.
    return typeof value === 'function' || typeof value === 'symbol' ? structuredClone(value) : value;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto === ARRAY_PROTO) {
    const from = value as unknown as unknown[];
    // Pushed, not written into new Array(length): that array would stay holey in V8, as decoded
    // arrays are not, and every reader of the copy would take the slower holey path.
    const out: unknown[] = [];
    for (let i = 0; i < from.length; i++) out.push(copyPlainData(from[i]));
    return out as T;
  }
  if (proto !== OBJECT_PROTO && proto !== null) return structuredClone(value);
  const from = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(from)) out[key] = copyPlainData(from[key]);
  return out as T;
}

/** util.isDeepStrictEqual for plain data. */
export function plainDataEqual(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (a === b) return true;
  const proto = Object.getPrototypeOf(a) as unknown;
  if (proto !== Object.getPrototypeOf(b)) return false;
  if (proto === ARRAY_PROTO) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!plainDataEqual(x[i], y[i])) return false;
    return true;
  }
  if (proto !== OBJECT_PROTO && proto !== null) return isDeepStrictEqual(a, b);
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(y, key) || !plainDataEqual(x[key], y[key])) return false;
  }
  return true;
}
