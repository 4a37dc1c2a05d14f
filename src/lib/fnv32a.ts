/**
 * 32-bit FNV-1a (Go's hash/fnv New32a): the hash of upstream's checkpoint checksums and of the
 * container hash, kept in one place so the checkpoints of every manager agree on it.
 */
const FNV32_OFFSET_BASIS = 0x811c9dc5;
const FNV32_PRIME = 0x01000193;

export function fnv32a(data: Uint8Array): number {
  let h = FNV32_OFFSET_BASIS;
  for (const byte of data) {
    h ^= byte;
    // Math.imul keeps the multiplication in 32 bits, as the algorithm needs.
    h = Math.imul(h, FNV32_PRIME) >>> 0;
  }
  return h >>> 0;
}
