/**
 * Orders strings by code unit, as Go's sort.Strings does by byte (the same order for the ASCII of
 * names, paths and timestamps). Not localeCompare: its first call loads ICU's collation data and
 * code, about 4 MiB of resident memory for a kubelet that never shows a sorted list to a person.
 */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
