/**
 * Resource quantities ("100m", "1.5Gi", "1e3") as exact integers of nano-units, so that sums and
 * comparisons (QoS asks whether requests equal limits) never suffer from binary fractions.
 */

const NANO_PER_UNIT = 1_000_000_000n;

const DECIMAL_EXPONENT: Readonly<Record<string, number>> = {
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

const BINARY_POWER: Readonly<Record<string, bigint>> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};

const QUANTITY_RE = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+)|([a-zA-Z]*))$/;

/**
 * The quantity in nano-units (cores ×1e9 for cpu, bytes ×1e9 for memory), rounded up as the API
 * rounds sub-nano values; throws on text that is not a quantity.
 */
export function parseQuantityNano(quantity: string | number): bigint {
  const text = typeof quantity === 'number' ? String(quantity) : quantity.trim();
  const match = QUANTITY_RE.exec(text);
  const whole = match?.[2] ?? '';
  const fraction = match?.[3] ?? '';
  if (!match || (whole === '' && fraction === ''))
    throw new Error(`invalid quantity ${JSON.stringify(quantity)}`);
  const negative = match[1] === '-';
  // The digits as an integer, scaled by 10^-fraction.length.
  let mantissa = BigInt(whole + fraction || '0');
  let exponent = -fraction.length;
  let binary = 1n;
  if (match[4] !== undefined) {
    exponent += Number(match[4]);
  } else {
    const suffix = match[5] ?? '';
    if (suffix in BINARY_POWER) binary = BINARY_POWER[suffix]!;
    else if (suffix in DECIMAL_EXPONENT) exponent += DECIMAL_EXPONENT[suffix]!;
    else throw new Error(`invalid quantity suffix ${JSON.stringify(suffix)} in ${JSON.stringify(quantity)}`);
  }
  mantissa *= binary * NANO_PER_UNIT;
  let value: bigint;
  if (exponent >= 0) value = mantissa * 10n ** BigInt(exponent);
  else {
    const divisor = 10n ** BigInt(-exponent);
    value = (mantissa + divisor - 1n) / divisor;
  }
  return negative ? -value : value;
}
