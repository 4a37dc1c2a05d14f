/**
 * Go duration strings (`1m30s`, `500ms`, `2h`), as the kubelet's flags and KubeletConfiguration
 * (metav1.Duration) spell them. Errors carry Go's own wording so messages match upstream's.
 */
import { KubeletError } from './errors.js';

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 micro sign
  μs: 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

// Go's time.Duration is an int64 of nanoseconds: about 292 years.
const MAX_DURATION_MS = 9_223_372_036_854.775;

export class DurationError extends KubeletError {
  constructor(message: string) {
    super('INVALID_DURATION', message);
    this.name = 'DurationError';
  }
}

/** Parses a Go duration string into milliseconds (fractional for sub-millisecond units). */
export function parseGoDurationMs(text: string): number {
  const quoted = JSON.stringify(text);
  let s = text;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    if (s[0] === '-') sign = -1;
    s = s.slice(1);
  }
  // Go accepts a bare "0" (and only zero) without a unit.
  if (s === '0') return 0;
  if (s === '') throw new DurationError(`time: invalid duration ${quoted}`);

  let totalMs = 0;
  while (s !== '') {
    const number = /^(\d*)(?:\.(\d*))?/.exec(s);
    const whole = number?.[1] ?? '';
    const fraction = number?.[2];
    if (whole === '' && (fraction === undefined || fraction === '')) {
      throw new DurationError(`time: invalid duration ${quoted}`);
    }
    s = s.slice(number?.[0].length ?? 0);
    const unit = /^[^\d.]*/.exec(s)?.[0] ?? '';
    if (unit === '') throw new DurationError(`time: missing unit in duration ${quoted}`);
    const unitMs = UNIT_MS[unit];
    if (unitMs === undefined)
      throw new DurationError(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`);
    s = s.slice(unit.length);
    const value = Number(`${whole || '0'}.${fraction ?? '0'}`);
    totalMs += value * unitMs;
    if (totalMs > MAX_DURATION_MS) throw new DurationError(`time: invalid duration ${quoted}`);
  }
  return sign * totalMs;
}

/** Formats milliseconds the way Go's Duration.String does (`1m30s`, `500ms`, `0s`), for help and docs. */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1000) {
    if (rest >= 1) return `${sign}${trimNumber(rest)}ms`;
    if (rest >= 1e-3) return `${sign}${trimNumber(rest * 1e3)}µs`;
    return `${sign}${trimNumber(rest * 1e6)}ns`;
  }
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = rest / 1000;
  let out = sign;
  if (hours > 0) out += `${hours}h`;
  if (hours > 0 || minutes > 0) out += `${minutes}m`;
  return `${out}${trimNumber(seconds)}s`;
}

function trimNumber(n: number): string {
  return String(Number(n.toFixed(9)));
}
