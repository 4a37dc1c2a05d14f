/**
 * What a kubelet sent the API server, for the cluster-mode bench: its requests by verb and resource
 * from the API server's audit log (the node's user, at level RequestResponse), the sizes of their
 * bodies as the audit log holds them (JSON, whatever the wire encoding: the same measure for both
 * kubelets), and from the API server's /metrics the watch events it sent, less what the bench's
 * own watch received in the same window. (Wire bytes of request bodies are not to be had: v1.28's
 * apiserver_request_body_sizes is defined but never registered, so /metrics does not show it.)
 */
import { open } from 'node:fs/promises';
import { median } from './report.js';

/** One request as the audit log records it. */
export interface AuditRecord {
  /** requestReceivedTimestamp, ms since the epoch. */
  atMs: number;
  user: string;
  userAgent: string;
  verb: string;
  /** `resource` or `resource/subresource`, with `.group` for a named API group: `leases.coordination.k8s.io`. */
  resource: string;
  requestBytes: number;
  responseBytes: number;
}

interface RawAuditEvent {
  stage?: string;
  verb?: string;
  requestReceivedTimestamp?: string;
  user?: { username?: string };
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string; apiGroup?: string };
  requestObject?: unknown;
  responseObject?: unknown;
}

const jsonBytes = (v: unknown) => (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v)));

/** Reads the audit log as it grows: each call returns the requests completed since the last. */
export class AuditReader {
  private offset = 0;
  private partial = '';

  constructor(private readonly file: string) {}

  async readNew(): Promise<AuditRecord[]> {
    const handle = await open(this.file, 'r');
    const records: AuditRecord[] = [];
    try {
      const chunk = Buffer.alloc(1 << 20);
      for (;;) {
        const { bytesRead } = await handle.read(chunk, 0, chunk.length, this.offset);
        if (bytesRead === 0) break;
        this.offset += bytesRead;
        const text = this.partial + chunk.subarray(0, bytesRead).toString('utf8');
        const lines = text.split('\n');
        this.partial = lines.pop() ?? '';
        for (const line of lines) {
          const record = line.trim() === '' ? undefined : toRecord(JSON.parse(line) as RawAuditEvent);
          if (record) records.push(record);
        }
      }
    } finally {
      await handle.close();
    }
    return records;
  }
}

/**
 * A request counts once: a watch when its response starts (it completes only when it ends), any
 * other request when its response is complete.
 */
function toRecord(e: RawAuditEvent): AuditRecord | undefined {
  const counted =
    e.verb === 'watch'
      ? e.stage === 'ResponseStarted'
      : e.stage === 'ResponseComplete' || e.stage === 'Panic';
  if (!counted || !e.requestReceivedTimestamp) return undefined;
  const ref = e.objectRef ?? {};
  const resource = `${ref.resource ?? '(none)'}${ref.apiGroup ? `.${ref.apiGroup}` : ''}${ref.subresource ? `/${ref.subresource}` : ''}`;
  return {
    atMs: Date.parse(e.requestReceivedTimestamp),
    user: e.user?.username ?? '',
    userAgent: e.userAgent ?? '',
    verb: e.verb ?? '',
    resource,
    requestBytes: jsonBytes(e.requestObject),
    responseBytes: jsonBytes(e.responseObject),
  };
}

/** Per `verb resource`: how many requests, and the JSON bytes sent and received. */
export type TrafficRows = Record<string, { requests: number; requestBytes: number; responseBytes: number }>;

export function tally(records: AuditRecord[], user: string, fromMs: number, toMs: number): TrafficRows {
  const rows: TrafficRows = {};
  for (const r of records) {
    if (r.user !== user || r.atMs < fromMs || r.atMs > toMs) continue;
    const row = (rows[`${r.verb} ${r.resource}`] ??= { requests: 0, requestBytes: 0, responseBytes: 0 });
    row.requests++;
    row.requestBytes += r.requestBytes;
    row.responseBytes += r.responseBytes;
  }
  return rows;
}

/** Writes in a window by anyone but the node and the bench (by its user agent): they would blur the metrics' figures. */
export function otherWriters(
  records: AuditRecord[],
  user: string,
  benchAgent: string,
  fromMs: number,
  toMs: number,
): AuditRecord[] {
  const writes = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
  return records.filter(
    (r) =>
      r.atMs >= fromMs &&
      r.atMs <= toMs &&
      r.user !== user &&
      r.userAgent !== benchAgent &&
      writes.has(r.verb),
  );
}

export function addRows(...all: TrafficRows[]): TrafficRows {
  const out: TrafficRows = {};
  for (const rows of all) {
    for (const [key, row] of Object.entries(rows)) {
      const sum = (out[key] ??= { requests: 0, requestBytes: 0, responseBytes: 0 });
      sum.requests += row.requests;
      sum.requestBytes += row.requestBytes;
      sum.responseBytes += row.responseBytes;
    }
  }
  return out;
}

export function scaleRows(rows: TrafficRows, factor: number): TrafficRows {
  return Object.fromEntries(
    Object.entries(rows).map(([k, r]) => [
      k,
      {
        requests: r.requests * factor,
        requestBytes: r.requestBytes * factor,
        responseBytes: r.responseBytes * factor,
      },
    ]),
  );
}

export function totals(rows: TrafficRows): { requests: number; requestBytes: number; responseBytes: number } {
  return Object.values(rows).reduce(
    (a, r) => ({
      requests: a.requests + r.requests,
      requestBytes: a.requestBytes + r.requestBytes,
      responseBytes: a.responseBytes + r.responseBytes,
    }),
    { requests: 0, requestBytes: 0, responseBytes: 0 },
  );
}

// ---- the API server's metrics ---------------------------------------------------------------------

/** The series the bench reads, by their text form: `name{labels}` → value. */
export type MetricsSnapshot = Map<string, number>;

const WANTED = [
  'apiserver_request_body_sizes_sum',
  'apiserver_watch_events_sizes_sum',
  'apiserver_watch_events_total',
];

export function parseMetrics(text: string): MetricsSnapshot {
  const out: MetricsSnapshot = new Map();
  for (const line of text.split('\n')) {
    if (!WANTED.some((w) => line.startsWith(`${w}{`))) continue;
    const space = line.lastIndexOf(' ');
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

function label(series: string, name: string): string {
  return new RegExp(`${name}="([^"]*)"`).exec(series)?.[1] ?? '';
}

/** Watch events the API server sent between two snapshots, per kind: how many, and their objects' encoded bytes. */
export interface WireTraffic {
  watchEvents: Record<string, { events: number; bytes: number }>;
}

export function wireDiff(before: MetricsSnapshot, after: MetricsSnapshot): WireTraffic {
  const out: WireTraffic = { watchEvents: {} };
  for (const [series, value] of after) {
    const delta = value - (before.get(series) ?? 0);
    if (delta === 0) continue;
    const kind = label(series, 'kind');
    const entry = (out.watchEvents[kind] ??= { events: 0, bytes: 0 });
    if (series.startsWith('apiserver_watch_events_total')) entry.events += delta;
    else entry.bytes += delta;
  }
  return out;
}

export function addWire(a: WireTraffic, b: WireTraffic): WireTraffic {
  const out: WireTraffic = { watchEvents: {} };
  for (const src of [a, b]) {
    for (const [k, v] of Object.entries(src.watchEvents)) {
      const e = (out.watchEvents[k] ??= { events: 0, bytes: 0 });
      e.events += v.events;
      e.bytes += v.bytes;
    }
  }
  return out;
}

// ---- the report -----------------------------------------------------------------------------------

/** One kubelet's traffic in one round, per pod (start and delete windows) and per minute (steady). */
export interface RoundTraffic {
  perPod: TrafficRows;
  steadyPerMin: TrafficRows;
  /** From the kubelet's start to the first create (registration, first lists and watches): not per pod. */
  startup: TrafficRows;
  wirePerPod: WireTraffic;
  /** What the bench's own pod watch received, per pod: taken out of wirePerPod's Pod events, shown beside them. */
  benchWatchPerPod: { events: number; bytes: number };
}

/** Per key, the median over the rounds (a key missing in a round counts 0 there). */
function medianRows(rounds: TrafficRows[]): TrafficRows {
  const keys = new Set(rounds.flatMap((r) => Object.keys(r)));
  const out: TrafficRows = {};
  for (const k of keys) {
    const pick = (f: 'requests' | 'requestBytes' | 'responseBytes') =>
      median(rounds.map((r) => r[k]?.[f] ?? 0));
    out[k] = {
      requests: pick('requests'),
      requestBytes: pick('requestBytes'),
      responseBytes: pick('responseBytes'),
    };
  }
  return out;
}

function medianRecord(rounds: Record<string, number>[]): Record<string, number> {
  const keys = new Set(rounds.flatMap((r) => Object.keys(r)));
  return Object.fromEntries([...keys].map((k) => [k, median(rounds.map((r) => r[k] ?? 0))]));
}

export interface TrafficSummary {
  perPod: TrafficRows;
  steadyPerMin: TrafficRows;
  startup: TrafficRows;
  watchEventsPerPod: Record<string, number>;
  watchEventBytesPerPod: Record<string, number>;
  benchWatchPerPod: { events: number; bytes: number };
}

export function summarize(rounds: RoundTraffic[]): TrafficSummary {
  return {
    perPod: medianRows(rounds.map((r) => r.perPod)),
    steadyPerMin: medianRows(rounds.map((r) => r.steadyPerMin)),
    startup: medianRows(rounds.map((r) => r.startup)),
    watchEventsPerPod: medianRecord(
      rounds.map((r) =>
        Object.fromEntries(Object.entries(r.wirePerPod.watchEvents).map(([k, v]) => [k, v.events])),
      ),
    ),
    watchEventBytesPerPod: medianRecord(
      rounds.map((r) =>
        Object.fromEntries(Object.entries(r.wirePerPod.watchEvents).map(([k, v]) => [k, v.bytes])),
      ),
    ),
    benchWatchPerPod: {
      events: median(rounds.map((r) => r.benchWatchPerPod.events)),
      bytes: median(rounds.map((r) => r.benchWatchPerPod.bytes)),
    },
  };
}

const fmt = (v: number | undefined) =>
  v === undefined || !Number.isFinite(v) || v === 0
    ? '·'
    : v >= 100
      ? String(Math.round(v))
      : v >= 10
        ? v.toFixed(1)
        : v.toFixed(2);

function markdownTable(header: string[], rows: string[][]): string {
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

/** The rows of a table: the requests some side made in a median round (a median of 0 everywhere is no row). */
function keysOf(sides: { summary: TrafficSummary }[], rows: (s: TrafficSummary) => TrafficRows): string[] {
  const keys = new Set(sides.flatMap((s) => Object.keys(rows(s.summary))));
  return [...keys].filter((k) => sides.some((s) => (rows(s.summary)[k]?.requests ?? 0) > 0)).sort();
}

/** The traffic of each kubelet side by side, for one size, as markdown. */
export function trafficMarkdown(
  n: number,
  sides: { name: string; summary: TrafficSummary; rounds: number }[],
): string {
  const out: string[] = [];
  const names = sides.map((s) => s.name);
  const keys = keysOf(sides, (s) => s.perPod);
  const cells = (pick: (s: TrafficSummary) => number | undefined) => sides.map((s) => fmt(pick(s.summary)));
  const rows = keys.map((k) => [
    `\`${k}\``,
    ...cells((s) => s.perPod[k]?.requests),
    ...cells((s) => s.perPod[k]?.requestBytes),
    ...cells((s) => s.perPod[k]?.responseBytes),
  ]);
  const sum = (s: TrafficSummary) => totals(s.perPod);
  rows.push([
    '**all**',
    ...cells((s) => sum(s).requests),
    ...cells((s) => sum(s).requestBytes),
    ...cells((s) => sum(s).responseBytes),
  ]);
  out.push(
    `### ${n} pods: requests per pod (audit log; pods created, Running, deleted and gone)\n\n` +
      `Rounds: ${sides.map((s) => `${s.name} ${s.rounds}`).join(', ')} (medians). Bytes are the bodies' JSON as the audit log ` +
      `records them (the same measure for both, whatever the wire encoding).\n\n` +
      markdownTable(
        [
          'verb resource',
          ...names.map((x) => `${x} req`),
          ...names.map((x) => `${x} sent B`),
          ...names.map((x) => `${x} recv B`),
        ],
        rows,
      ),
  );
  // A kind with under one event in ten pods on both sides is the control plane's own stir (a
  // bookmark, a watch's first event): in the totals, not worth a row.
  const kinds = [...new Set(sides.flatMap((s) => Object.keys(s.summary.watchEventsPerPod)))]
    .filter((k) => sides.some((s) => (s.summary.watchEventsPerPod[k] ?? 0) >= 0.1))
    .sort();
  out.push(
    `Watch events the API server sent the kubelet, per pod (its /metrics: apiserver_watch_events_total and ` +
      `_sizes, less the bench's own watches and the API server's own pod and node informers, which get the ` +
      `stream of the bench's counting protobuf watch; bytes are the objects as encoded for the kubelet, ` +
      `protobuf for upstream's, JSON for tskubelet's):\n\n` +
      markdownTable(
        ['kind', ...names.map((x) => `${x} events`), ...names.map((x) => `${x} bytes`)],
        [
          ...kinds.map((k) => [
            k,
            ...cells((s) => s.watchEventsPerPod[k]),
            ...cells((s) => s.watchEventBytesPerPod[k]),
          ]),
          [
            "Pod, the bench's own JSON watch (taken out; for scale)",
            ...cells((s) => s.benchWatchPerPod.events),
            ...cells((s) => s.benchWatchPerPod.bytes),
          ],
        ],
      ),
  );
  const steadyKeys = keysOf(sides, (s) => s.steadyPerMin);
  out.push(
    `Steady state, ${n} pods running: requests per minute\n\n` +
      markdownTable(
        ['verb resource', ...names],
        steadyKeys.map((k) => [`\`${k}\``, ...cells((s) => s.steadyPerMin[k]?.requests)]),
      ),
  );
  const startupKeys = keysOf(sides, (s) => s.startup);
  out.push(
    `From the kubelet's start to the first create (registration, first lists and watches): requests\n\n` +
      markdownTable(
        ['verb resource', ...names],
        startupKeys.map((k) => [`\`${k}\``, ...cells((s) => s.startup[k]?.requests)]),
      ),
  );
  return out.join('\n\n');
}
