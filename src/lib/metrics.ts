/**
 * A small Prometheus registry: counters, gauges and histograms with labels, and collectors that
 * compute their samples at scrape time. `expose()` renders the text exposition format (0.0.4) that
 * /metrics serves, so the same Prometheus scrape config works against this kubelet and upstream's.
 */

import { compareStrings } from './compare.js';

export const PROMETHEUS_TEXT_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export type MetricType = 'counter' | 'gauge' | 'histogram';

export type Labels = Record<string, string>;

/** One line of a metric family: a value, its labels and, rarely, its own timestamp. */
export interface Sample {
  /** Appended to the family name: '' for plain metrics, '_bucket', '_sum', '_count' for histograms. */
  suffix?: string;
  labels?: Labels;
  value: number;
  /** Milliseconds since the epoch; only for samples read from elsewhere (resource metrics). */
  timestampMs?: number;
}

/** A whole metric family as exposed: what a collector returns. */
export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

interface Metric {
  readonly name: string;
  collect(): MetricFamily;
}

/** Upstream's default buckets (prometheus.DefBuckets), in seconds. */
export const DEFAULT_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Exponential buckets: count values from start, each factor times the last. */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  const out: number[] = [];
  for (let i = 0, v = start; i < count; i++, v *= factor) out.push(v);
  return out;
}

const NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

// Label values are kept in a Map under one string: the values in the metric's label order, joined
// by a separator no sane value holds. A value that does hold it makes a JSON key instead, marked by
// a leading byte a joined key cannot start with. (Joining, not JSON, because every CRI call counts.)
const SEPARATOR = '\u0001';
const JSON_KEY = '\u0002';

function keyOf(labelNames: readonly string[], labels: Labels | undefined): string {
  if (labelNames.length === 0) return '';
  const given = labels ?? {};
  for (const k in given) {
    if (!labelNames.includes(k)) throw new Error(`unknown label ${k}`);
  }
  // One label (the CRI's operation_type, at every call): its value is the key, with no array made.
  if (labelNames.length === 1) {
    const value = given[labelNames[0]!] ?? '';
    if (!value.includes(SEPARATOR) && !value.startsWith(JSON_KEY)) return value;
  }
  const values = labelNames.map((n) => given[n] ?? '');
  if (values.some((v) => v.includes(SEPARATOR) || v.startsWith(JSON_KEY))) {
    return JSON_KEY + JSON.stringify(values);
  }
  return values.join(SEPARATOR);
}

function labelsOf(labelNames: readonly string[], key: string): Labels {
  if (labelNames.length === 0) return {};
  const values = key.startsWith(JSON_KEY) ? (JSON.parse(key.slice(1)) as string[]) : key.split(SEPARATOR);
  return Object.fromEntries(labelNames.map((n, i) => [n, values[i] ?? '']));
}

abstract class LabelledMetric<T> implements Metric {
  protected readonly series = new Map<string, T>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    if (!NAME_RE.test(name)) throw new Error(`invalid metric name ${name}`);
    for (const l of labelNames) {
      if (!LABEL_RE.test(l) || l === 'le') throw new Error(`invalid label name ${l} on ${name}`);
    }
  }

  protected entry(labels: Labels | undefined, init: () => T): T {
    const key = keyOf(this.labelNames, labels);
    let e = this.series.get(key);
    if (e === undefined) {
      e = init();
      this.series.set(key, e);
    }
    return e;
  }

  /** A series at its zero value: what an unlabelled metric shows before its first event. */
  protected abstract emptySeries(): T;

  /** An unlabelled metric has its one series from the start (0, or empty buckets), as client_golang's. */
  ensureUnlabelledSeries(): void {
    if (this.labelNames.length === 0) this.entry(undefined, () => this.emptySeries());
  }

  /** Forgets one labelled series (a pod that is gone, say). */
  remove(labels: Labels): void {
    this.series.delete(keyOf(this.labelNames, labels));
  }

  reset(): void {
    this.series.clear();
  }

  abstract collect(): MetricFamily;
}

export class Counter extends LabelledMetric<{ value: number }> {
  protected emptySeries(): { value: number } {
    return { value: 0 };
  }

  inc(labels?: Labels, by = 1): void {
    if (by < 0) throw new Error(`counter ${this.name} cannot decrease`);
    this.entry(labels, () => ({ value: 0 })).value += by;
  }

  get(labels?: Labels): number {
    return this.series.get(keyOf(this.labelNames, labels))?.value ?? 0;
  }

  collect(): MetricFamily {
    const samples: Sample[] = [];
    for (const [key, e] of this.series)
      samples.push({ labels: labelsOf(this.labelNames, key), value: e.value });
    return { name: this.name, help: this.help, type: 'counter', samples };
  }
}

export class Gauge extends LabelledMetric<{ value: number }> {
  protected emptySeries(): { value: number } {
    return { value: 0 };
  }

  set(labels: Labels | undefined, value: number): void {
    this.entry(labels, () => ({ value: 0 })).value = value;
  }

  inc(labels?: Labels, by = 1): void {
    this.entry(labels, () => ({ value: 0 })).value += by;
  }

  dec(labels?: Labels, by = 1): void {
    this.entry(labels, () => ({ value: 0 })).value -= by;
  }

  get(labels?: Labels): number {
    return this.series.get(keyOf(this.labelNames, labels))?.value ?? 0;
  }

  collect(): MetricFamily {
    const samples: Sample[] = [];
    for (const [key, e] of this.series)
      samples.push({ labels: labelsOf(this.labelNames, key), value: e.value });
    return { name: this.name, help: this.help, type: 'gauge', samples };
  }
}

interface HistogramSeries {
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends LabelledMetric<HistogramSeries> {
  readonly buckets: readonly number[];

  constructor(name: string, help: string, labelNames: readonly string[], buckets = DEFAULT_BUCKETS_SECONDS) {
    super(name, help, labelNames);
    this.buckets = [...buckets].sort((a, b) => a - b);
  }

  protected emptySeries(): HistogramSeries {
    return { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }

  observe(labels: Labels | undefined, value: number): void {
    const s = this.entry(labels, () => this.emptySeries());
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) s.counts[i]!++;
    s.sum += value;
    s.count++;
  }

  /** Starts a timer; calling the result observes the seconds elapsed. */
  startTimer(labels?: Labels, nowMs: () => number = Date.now): () => number {
    const start = nowMs();
    return () => {
      const seconds = (nowMs() - start) / 1000;
      this.observe(labels, seconds);
      return seconds;
    };
  }

  /** How many observations a series has (for tests). */
  countOf(labels?: Labels): number {
    return this.series.get(keyOf(this.labelNames, labels))?.count ?? 0;
  }

  collect(): MetricFamily {
    const samples: Sample[] = [];
    for (const [key, s] of this.series) {
      const labels = labelsOf(this.labelNames, key);
      // Cumulative already: observe() counts a value in every bucket whose bound is at least the value.
      this.buckets.forEach((le, i) =>
        samples.push({ suffix: '_bucket', labels: { ...labels, le: formatNumber(le) }, value: s.counts[i]! }),
      );
      samples.push({ suffix: '_bucket', labels: { ...labels, le: '+Inf' }, value: s.count });
      samples.push({ suffix: '_sum', labels, value: s.sum });
      samples.push({ suffix: '_count', labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', samples };
  }
}

/** Computes its families at scrape time (e.g. pods counted from the pod manager). */
export type Collector = () => MetricFamily[] | Promise<MetricFamily[]>;

export class MetricsRegistry {
  private readonly metrics = new Map<string, Metric>();
  private readonly collectors: Collector[] = [];

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.register(new Counter(name, help, labelNames));
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.register(new Gauge(name, help, labelNames));
  }

  histogram(name: string, help: string, labelNames: readonly string[] = [], buckets?: number[]): Histogram {
    return this.register(new Histogram(name, help, labelNames, buckets));
  }

  /** Registers (or returns the one already registered under that name, so two callers can share it). */
  register<M extends Metric>(metric: M): M {
    const existing = this.metrics.get(metric.name);
    if (existing) {
      if (existing.constructor !== metric.constructor)
        throw new Error(`metric ${metric.name} is already registered with another type`);
      return existing as M;
    }
    this.metrics.set(metric.name, metric);
    if (metric instanceof LabelledMetric) metric.ensureUnlabelledSeries();
    return metric;
  }

  addCollector(c: Collector): void {
    this.collectors.push(c);
  }

  /** Every family, sorted by name as Prometheus clients print them. */
  async gather(): Promise<MetricFamily[]> {
    const families = [...this.metrics.values()].map((m) => m.collect());
    for (const c of this.collectors) families.push(...(await c()));
    return families.sort((a, b) => compareStrings(a.name, b.name));
  }

  /** The text exposition format; families without samples are left out, as client_golang does. */
  async expose(): Promise<string> {
    return renderText(await this.gather());
  }
}

function escapeHelp(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function escapeLabelValue(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** Numbers as Prometheus prints them: integers plainly, infinities and NaN by name. */
export function formatNumber(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

export function renderText(families: readonly MetricFamily[]): string {
  const out: string[] = [];
  for (const f of families) {
    if (f.samples.length === 0) continue;
    out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`);
    out.push(`# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) {
      const entries = Object.entries(s.labels ?? {});
      const labels =
        entries.length === 0 ? '' : `{${entries.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
      const ts = s.timestampMs === undefined ? '' : ` ${Math.round(s.timestampMs)}`;
      out.push(`${f.name}${s.suffix ?? ''}${labels} ${formatNumber(s.value)}${ts}`);
    }
  }
  return out.length === 0 ? '' : out.join('\n') + '\n';
}
