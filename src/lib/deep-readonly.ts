/**
 * A view of an object that may not be changed through it, at any depth. The status manager hands
 * out its stored statuses this way instead of a copy per read: a caller that wants to change one
 * copies it first (mutableCopy), and the compiler finds any that forget.
 */
import { copyPlainData } from './plain-data.js';

export type DeepReadonly<T> = T extends (infer E)[]
  ? readonly DeepReadonly<E>[]
  : T extends Map<infer K, infer V>
    ? ReadonlyMap<K, DeepReadonly<V>>
    : T extends Set<infer E>
      ? ReadonlySet<DeepReadonly<E>>
      : T extends object
        ? { readonly [P in keyof T]: DeepReadonly<T[P]> }
        : T;

/**
 * A copy that may be changed: what a holder of a read-only view makes before it edits. The views
 * are of plain data (statuses), which copyPlainData copies as structuredClone would in a fifth of
 * its CPU; each status update makes one.
 */
export function mutableCopy<T>(value: DeepReadonly<T>): T {
  return copyPlainData(value) as T;
}
