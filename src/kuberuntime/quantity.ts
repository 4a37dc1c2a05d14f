/**
 * Resource quantities (`100m`, `1`, `128Mi`, `1G`, `1e3`, `0.5`) as exact rationals, read the way
 * apimachinery's resource.Quantity reads them: Value() and MilliValue() round up, away from zero.
 */
import type { Quantity } from '../api/core-v1.js';
import { KubeletError } from '../lib/errors.js';

interface Rational {
  num: bigint;
  den: bigint;
}

const BINARY_SUFFIXES: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};

const DECIMAL_EXPONENTS: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const QUANTITY_PATTERN = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE])?$/;

export function parseQuantity(q: Quantity): Rational {
  const text = typeof q === 'number' ? numberToText(q) : q.trim();
  const match = QUANTITY_PATTERN.exec(text);
  if (!match)
    throw new KubeletError(
      'INVALID_MANIFEST',
      `quantities must match the regular expression '${QUANTITY_PATTERN.source}': "${text}"`,
    );
  const [, sign = '', digits = '', suffix = ''] = match;
  const [whole = '', fraction = ''] = digits.split('.');
  let num = BigInt(`${whole || '0'}${fraction}`);
  let den = 10n ** BigInt(fraction.length);
  if (suffix in BINARY_SUFFIXES) {
    num *= BINARY_SUFFIXES[suffix] as bigint;
  } else {
    const exponent =
      suffix.startsWith('e') || suffix.startsWith('E')
        ? Number.parseInt(suffix.slice(1), 10)
        : (DECIMAL_EXPONENTS[suffix] ?? 0);
    if (exponent >= 0) num *= 10n ** BigInt(exponent);
    else den *= 10n ** BigInt(-exponent);
  }
  if (sign === '-') num = -num;
  return { num, den };
}

function numberToText(n: number): string {
  if (!Number.isFinite(n)) throw new KubeletError('INVALID_MANIFEST', `invalid quantity ${n}`);
  // toString may give an exponent form (1e+21), which the pattern accepts once the '+' is kept.
  return String(n).replace('e+', 'e');
}

function ceilDiv(num: bigint, den: bigint): bigint {
  // Away from zero, as Quantity rounds.
  const q = num / den;
  if (num % den === 0n) return q;
  return num > 0n ? q + 1n : q - 1n;
}

/** The quantity as an integer, rounded up (Quantity.Value()). */
export function quantityValue(q: Quantity | undefined): number {
  if (q === undefined) return 0;
  const { num, den } = parseQuantity(q);
  return Number(ceilDiv(num, den));
}

/** The quantity in thousandths, rounded up (Quantity.MilliValue()). */
export function quantityMilliValue(q: Quantity | undefined): number {
  if (q === undefined) return 0;
  const { num, den } = parseQuantity(q);
  return Number(ceilDiv(num * 1000n, den));
}

export function isZeroQuantity(q: Quantity | undefined): boolean {
  return q === undefined || parseQuantity(q).num === 0n;
}
