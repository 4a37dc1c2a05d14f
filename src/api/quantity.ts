/**
 * Resource quantities (`100m`, `1.5Gi`, `1e3`, `0.5`) with apimachinery's resource.Quantity
 * semantics: parsed exactly, rounded up to nano precision as ParseQuantity rounds, kept with the
 * format their suffix chose, and written back in the canonical form Quantity.String() writes
 * (`1024Mi` → `1Gi`, `1000m` → `1`, `0.5Gi` → `512Mi`). The one parser of quantities in tskubelet.
 */
import type { Quantity } from './core-v1.js';
import { KubeletError } from '../lib/errors.js';

/** How a quantity is written back: with a decimal SI suffix, a binary one, or an `e` exponent. */
export type QuantityFormat = 'DecimalExponent' | 'BinarySI' | 'DecimalSI';

export interface ResourceQuantity {
  /** The value in billionths of the unit (nanocores, nanobytes): every parsed quantity is exact here. */
  readonly nano: bigint;
  readonly format: QuantityFormat;
}

const NANO_PER_UNIT = 1_000_000_000n;
const NANO_PER_MILLI = 1_000_000n;
/** A BinarySI quantity is capped at int64's largest value (upstream: maxAllowed). */
const MAX_BINARY_UNITS = (1n << 63n) - 1n;
// Upstream accepts exponents up to int32; one this large would only build a huge number here.
const MAX_EXPONENT = 10_000;

const DECIMAL_SUFFIX_EXPONENT: Readonly<Record<string, number>> = {
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
const DECIMAL_EXPONENT_SUFFIX: ReadonlyMap<number, string> = new Map(
  Object.entries(DECIMAL_SUFFIX_EXPONENT).map(([suffix, exponent]) => [exponent, suffix]),
);
const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'] as const;

// Upstream's parseQuantityString: sign, digits, an optional fraction, then a suffix made of suffix
// letters, an optional sign and digits (which interpret() then accepts or refuses).
const QUANTITY_SHAPE = /^([+-]?)(\d*)(?:\.(\d*))?([eEinumkKMGTP]*[+-]?\d*)$/;
const NUMBER_PREFIX = /^[+-]?(?:\d+\.?\d*|\.\d*)/;
// The regular expression upstream's ErrFormatWrong names, so the message reads as the API server's.
const UPSTREAM_FORMAT = `'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`;

function invalidQuantity(text: string): KubeletError {
  const number = NUMBER_PREFIX.exec(text)?.[0];
  const message =
    number !== undefined && number !== ''
      ? `invalid quantity suffix ${JSON.stringify(text.slice(number.length))} in ${JSON.stringify(text)}`
      : `invalid quantity ${JSON.stringify(text)}`;
  return new KubeletError(
    'INVALID_QUANTITY',
    `${message}: quantities must match the regular expression ${UPSTREAM_FORMAT}`,
  );
}

/** A suffix as upstream's suffixHandler.interpret reads it: its base-10 exponent or base-2 power. */
function interpretSuffix(
  suffix: string,
): { format: QuantityFormat; exponent: number; binaryPower: bigint } | undefined {
  const decimal = DECIMAL_SUFFIX_EXPONENT[suffix];
  if (decimal !== undefined) return { format: 'DecimalSI', exponent: decimal, binaryPower: 1n };
  const binary = BINARY_SUFFIXES.indexOf(suffix as (typeof BINARY_SUFFIXES)[number]);
  if (binary > 0) return { format: 'BinarySI', exponent: 0, binaryPower: 1n << BigInt(10 * binary) };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?\d+$/.test(suffix.slice(1))) {
    const exponent = Number(suffix.slice(1));
    // Upstream keeps the exponent in an int32 that is negated later: ±(2^31 - 1).
    if (Math.abs(exponent) > 2 ** 31 - 1) return undefined;
    return { format: 'DecimalExponent', exponent, binaryPower: 1n };
  }
  return undefined;
}

/** Upstream's ParseQuantity; numbers are read as the JSON text they would be in an API object. */
export function parseQuantity(input: Quantity): ResourceQuantity {
  let text: string;
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) throw invalidQuantity(String(input));
    text = String(input);
  } else {
    text = input;
  }
  const match = QUANTITY_SHAPE.exec(text);
  if (!match || text === '') throw invalidQuantity(text);
  const [, sign = '', whole = '', fraction = '', suffix = ''] = match;
  const interpreted = interpretSuffix(suffix);
  if (!interpreted) throw invalidQuantity(text);
  if (interpreted.exponent > MAX_EXPONENT)
    throw new KubeletError('INVALID_QUANTITY', `quantity ${JSON.stringify(text)} is too large`);
  // digits × 10^exponent × binaryPower, in nano-units, rounded up (away from zero) as upstream rounds.
  const digits = BigInt(`${whole}${fraction}` || '0') * interpreted.binaryPower;
  const exponent = interpreted.exponent - fraction.length + 9;
  let nano: bigint;
  if (exponent >= 0) {
    nano = digits * 10n ** BigInt(exponent);
  } else if (digits === 0n) {
    nano = 0n;
  } else if (-exponent > digits.toString().length) {
    nano = 1n; // below one nano-unit: upstream rounds any non-zero amount up to 1n
  } else {
    const divisor = 10n ** BigInt(-exponent);
    nano = (digits + divisor - 1n) / divisor;
  }
  let format = interpreted.format;
  if (format === 'BinarySI') {
    if (nano > MAX_BINARY_UNITS * NANO_PER_UNIT) nano = MAX_BINARY_UNITS * NANO_PER_UNIT;
    // A binary amount below one unit cannot be written with a binary suffix.
    if (nano > 0n && nano < NANO_PER_UNIT) format = 'DecimalSI';
  }
  return { nano: sign === '-' ? -nano : nano, format };
}

/** A whole number of units (bytes, pods, cores) in the given format. */
export function quantityOf(units: number | bigint, format: QuantityFormat): ResourceQuantity {
  return { nano: BigInt(units) * NANO_PER_UNIT, format };
}

/** Thousandths of a unit (millicores), in the given format. */
export function milliQuantity(
  milli: number | bigint,
  format: QuantityFormat = 'DecimalSI',
): ResourceQuantity {
  return { nano: BigInt(milli) * NANO_PER_MILLI, format };
}

function abs(n: bigint): bigint {
  return n < 0n ? -n : n;
}

/** Divides, rounding away from zero as Quantity.Value() and MilliValue() round. */
function divideAwayFromZero(num: bigint, den: bigint): bigint {
  const q = num / den;
  if (num % den === 0n) return q;
  return num > 0n ? q + 1n : q - 1n;
}

/** Upstream's Quantity.Value(): whole units, rounded up. */
export function valueOf(q: ResourceQuantity): bigint {
  return divideAwayFromZero(q.nano, NANO_PER_UNIT);
}

/** Upstream's Quantity.MilliValue(): thousandths, rounded up. */
export function milliValueOf(q: ResourceQuantity): bigint {
  return divideAwayFromZero(q.nano, NANO_PER_MILLI);
}

/** Upstream's AsApproximateFloat64(), for settings that are plain numbers (sizes, thresholds). */
export function approximateValue(q: ResourceQuantity): number {
  return Number(q.nano) / 1e9;
}

/** a + b; a zero takes the other's format (upstream: Quantity.Add). */
export function addQuantity(a: ResourceQuantity, b: ResourceQuantity): ResourceQuantity {
  return { nano: a.nano + b.nano, format: a.nano === 0n ? b.format : a.format };
}

/** a − b; a zero takes the other's format (upstream: Quantity.Sub). */
export function subtractQuantity(a: ResourceQuantity, b: ResourceQuantity): ResourceQuantity {
  return { nano: a.nano - b.nano, format: a.nano === 0n ? b.format : a.format };
}

/** -1, 0 or 1 as a is less than, equal to or more than b (upstream: Quantity.Cmp). */
export function compareQuantity(a: ResourceQuantity, b: ResourceQuantity): -1 | 0 | 1 {
  return a.nano < b.nano ? -1 : a.nano > b.nano ? 1 : 0;
}

/** The digits and base-10 exponent of |nano|, with the exponent a multiple of 3 (AsCanonicalBytes). */
function canonicalDecimal(absNano: bigint): { digits: bigint; exponent: number } {
  let digits = absNano;
  let exponent = -9;
  while (digits % 10n === 0n) {
    digits /= 10n;
    exponent++;
  }
  const over = ((exponent % 3) + 3) % 3;
  return { digits: digits * 10n ** BigInt(over), exponent: exponent - over };
}

/** The canonical text upstream's Quantity.String() writes. */
export function formatQuantity(q: ResourceQuantity): string {
  if (q.nano === 0n) return '0';
  const sign = q.nano < 0n ? '-' : '';
  const absNano = abs(q.nano);
  let format = q.format;
  if (format === 'BinarySI') {
    // Below 1Ki or with a fraction BinarySI is written as DecimalSI, rather than lose precision.
    if (absNano < 1024n * NANO_PER_UNIT || absNano % NANO_PER_UNIT !== 0n) {
      format = 'DecimalSI';
    } else {
      let amount = absNano / NANO_PER_UNIT;
      let power = 0;
      while (amount % 1024n === 0n) {
        amount /= 1024n;
        power++;
      }
      const suffix = BINARY_SUFFIXES[power];
      if (suffix !== undefined) return `${sign}${amount}${suffix}`;
      // Past Ei there is no binary suffix: the exact decimal form, with an exponent where it has one.
      format = 'DecimalExponent';
    }
  }
  const { digits, exponent } = canonicalDecimal(absNano);
  const siSuffix = format === 'DecimalSI' ? DECIMAL_EXPONENT_SUFFIX.get(exponent) : undefined;
  if (siSuffix !== undefined) return `${sign}${digits}${siSuffix}`;
  return exponent === 0 ? `${sign}${digits}` : `${sign}${digits}e${exponent}`;
}

/** Whole units of an API quantity field, rounded up; 0 when absent (Quantity.Value()). */
export function quantityValue(q: Quantity | undefined): number {
  return q === undefined ? 0 : Number(valueOf(parseQuantity(q)));
}

/** Thousandths of an API quantity field, rounded up; 0 when absent (Quantity.MilliValue()). */
export function quantityMilliValue(q: Quantity | undefined): number {
  return q === undefined ? 0 : Number(milliValueOf(parseQuantity(q)));
}

export function isZeroQuantity(q: Quantity | undefined): boolean {
  return q === undefined || parseQuantity(q).nano === 0n;
}
