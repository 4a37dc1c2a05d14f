/**
 * Kubernetes resource quantities (`10Mi`, `1.5Gi`, `500m`, `1e3`, `100M`) as plain numbers, for the
 * configuration fields that hold them (containerLogMaxSize, evictionHard, kubeReserved, ...).
 */

const SUFFIX_MULTIPLIER: Readonly<Record<string, number>> = {
  '': 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY_RE = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|([a-zA-Z]*))$/;

/** The quantity's value in base units (bytes for memory, cores for cpu); throws on a malformed quantity. */
export function parseQuantity(text: string): number {
  const match = QUANTITY_RE.exec(text.trim());
  if (!match)
    throw new Error(
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
    );
  const mantissa = Number(match[1]);
  if (match[2] !== undefined) return mantissa * 10 ** Number(match[2].slice(1));
  const multiplier = SUFFIX_MULTIPLIER[match[3] ?? ''];
  if (multiplier === undefined)
    throw new Error(`unable to parse quantity's suffix ${JSON.stringify(match[3])}`);
  return mantissa * multiplier;
}

/** True for a percentage such as `10%` or `7.5%` (eviction thresholds accept either form). */
export function isPercentage(text: string): boolean {
  return /^\d+(?:\.\d+)?%$/.test(text);
}
