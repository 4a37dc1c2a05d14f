/**
 * A view of an object that may not be changed through it, at any depth. The status manager hands
 * out its stored statuses this way instead of a copy per read: a caller that wants to change one
 * copies it first (structuredClone), and the compiler finds any that forget.
 */
export type DeepReadonly<T> = T extends (infer E)[]
  ? readonly DeepReadonly<E>[]
  : T extends Map<infer K, infer V>
    ? ReadonlyMap<K, DeepReadonly<V>>
    : T extends Set<infer E>
      ? ReadonlySet<DeepReadonly<E>>
      : T extends object
        ? { readonly [P in keyof T]: DeepReadonly<T[P]> }
        : T;

/** A copy that may be changed: what a holder of a read-only view makes before it edits. */
export function mutableCopy<T>(value: DeepReadonly<T>): T {
  return structuredClone(value) as T;
}
