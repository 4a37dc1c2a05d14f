/**
 * Node resources as exact values with the format the API prints them in (apimachinery's
 * resource.Quantity): a capacity keeps its format through subtraction, so `24684092Ki` minus
 * `100Mi` prints as `24581692Ki`, and `2` cpus minus `100m` as `1900m`.
 */
import { parseQuantityNano } from '../status/parse-quantity.js';

export type QuantityFormat = 'DecimalSI' | 'BinarySI';

export interface ResourceQuantity {
  /** The value in billionths of the unit (nanocores, nanobytes), so every API quantity is exact. */
  nano: bigint;
  format: QuantityFormat;
}

const NANO = 1_000_000_000n;

const DECIMAL_SUFFIX: Readonly<Record<number, string>> = {
  [-9]: 'n',
  [-6]: 'u',
  [-3]: 'm',
  0: '',
  3: 'k',
  6: 'M',
  9: 'G',
  12: 'T',
  15: 'P',
  18: 'E',
};

const BINARY_SUFFIX = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

export function quantityOf(units: number | bigint, format: QuantityFormat): ResourceQuantity {
  return { nano: BigInt(units) * NANO, format };
}

export function milliQuantity(
  milli: number | bigint,
  format: QuantityFormat = 'DecimalSI',
): ResourceQuantity {
  return { nano: BigInt(milli) * 1_000_000n, format };
}

/** Parses API text; the format follows the suffix as upstream's ParseQuantity decides it. */
export function parseResourceQuantity(text: string): ResourceQuantity {
  const format: QuantityFormat = /[KMGTPE]i$/.test(text.trim()) ? 'BinarySI' : 'DecimalSI';
  return { nano: parseQuantityNano(text), format };
}

/** The whole units, rounded up as upstream's Quantity.Value() rounds. */
export function quantityValue(q: ResourceQuantity): bigint {
  const whole = q.nano / NANO;
  return q.nano % NANO > 0n ? whole + 1n : whole;
}

/** The canonical text upstream's Quantity.String() writes. */
export function formatQuantity(q: ResourceQuantity): string {
  if (q.nano === 0n) return '0';
  const abs = q.nano < 0n ? -q.nano : q.nano;
  const sign = q.nano < 0n ? '-' : '';
  // BinarySI prints small or fractional values as DecimalSI rather than lose precision.
  if (q.format === 'BinarySI' && abs % NANO === 0n && abs >= 1024n * NANO) {
    let amount = abs / NANO;
    let power = 0;
    while (amount % 1024n === 0n && power < BINARY_SUFFIX.length - 1) {
      amount /= 1024n;
      power++;
    }
    return `${sign}${amount}${BINARY_SUFFIX[power]}`;
  }
  let amount = abs;
  let exponent = -9;
  while (amount % 10n === 0n) {
    amount /= 10n;
    exponent++;
  }
  // The exponent goes down to a multiple of three, so that it has an SI suffix.
  const over = ((exponent % 3) + 3) % 3;
  amount *= 10n ** BigInt(over);
  exponent -= over;
  const suffix = DECIMAL_SUFFIX[exponent];
  return suffix !== undefined ? `${sign}${amount}${suffix}` : `${sign}${amount}e${exponent}`;
}

/** a − b in a's format (upstream's Quantity.Sub). */
export function subtractQuantity(a: ResourceQuantity, b: ResourceQuantity): ResourceQuantity {
  return { nano: a.nano - b.nano, format: a.format };
}
