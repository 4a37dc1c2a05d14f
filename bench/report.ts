/**
 * How the benches hand back figures: one JSON line per figure on stdout, for bench/run.sh to collect
 * and for anyone to diff between runs; prose (progress, notes) goes to stderr so it never mixes in.
 */

export interface Figure {
  bench: string;
  /** The size the figure is for: pods, containers or updates; 0 for a figure of no size (idle). */
  n: number;
  /** Name with its unit: `p50_ms`, `rss_mib`, `cpu_cores`, … */
  metric: string;
  value: number;
  /** For a figure measured in several rounds (value is then their median): the lowest and highest round. */
  min?: number;
  max?: number;
  rounds?: number;
  /** What the figure covers, when the metric name alone would leave a reader guessing. */
  note?: string;
}

export function emit(figure: Figure): void {
  const clean = (v: number | undefined) =>
    v === undefined ? undefined : Number.isFinite(v) ? round(v) : null;
  process.stdout.write(
    JSON.stringify({
      ...figure,
      value: clean(figure.value),
      min: clean(figure.min),
      max: clean(figure.max),
    }) + '\n',
  );
}

/** Progress and notes, kept off stdout. */
export function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** Three significant digits past the point are plenty for a figure that varies run to run by more. */
export function round(value: number): number {
  if (value === 0 || !Number.isFinite(value)) return value;
  const digits = Math.max(0, 3 - Math.floor(Math.log10(Math.abs(value))));
  return Number(value.toFixed(Math.min(digits, 6)));
}

/** The nearest-rank percentile (p in 0..100) of values; NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** The median (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number, got ${raw}`);
  return v;
}

/** `A=1 B=2` in the variable named into an environment; a word without `=` is refused by name. */
export function envPairs(variable: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of (process.env[variable] ?? '').split(' ').filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`${variable}: expected NAME=VALUE pairs, got ${JSON.stringify(pair)}`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

/** BENCH_QUICK=1: shorter windows and fewer repetitions, for a check that the benches still run. */
export function quickMode(): boolean {
  return process.env.BENCH_QUICK === '1';
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export const MIB = 1024 * 1024;
