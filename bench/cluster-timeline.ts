/**
 * Where each pod's start went, in one cluster-bench run (BENCH_TIMELINE=1): for every pod, when the
 * bench created it, when the kubelet saw it (its `SyncLoop ADD` line, logged from --v=2: give both
 * kubelets --v=2 through BENCH_KUBELET_ARGS and BENCH_PEER_KUBELET_ARGS), its first status patch,
 * its token request, its sandbox and container in the runtime (CRI's own times), the status patch
 * that said Running, and when the bench's watch saw it Running. Stage by stage, the percentiles over
 * the pods show where one kubelet falls behind the other: admission order, the runtime's calls, or
 * the status patches. Also the kubelet's CPU by thread role over the start window (bench/thread-roles.ts).
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { RuntimeConnection } from '../src/cri/connect-runtime.js';
import { KUBERNETES_POD_NAME_LABEL, KUBERNETES_POD_NAMESPACE_LABEL } from '../src/kuberuntime/labels.js';
import { percentile, say } from './report.js';

const CRI_TIMEOUT_MS = 60_000;

/** The stages of a pod's start, in the order they happen. */
export const STAGES = [
  'created',
  'seen',
  'firstPatch',
  'token',
  'sandbox',
  'containerCreated',
  'containerStarted',
  'runningPatch',
  'runningSeen',
] as const;
export type Stage = (typeof STAGES)[number];

/** Wall-clock ms (the audit log's and the runtime's clock) of each stage a pod reached. */
export type PodTimes = Partial<Record<Stage, number>>;

/** performance.now() of this process to the wall clock. */
export const wallMs = (perfMs: number) => performance.timeOrigin + perfMs;

/** The runtime's times for the namespace's pods: sandbox created, container created and started. */
export async function runtimeTimes(
  conn: RuntimeConnection,
  namespace: string,
): Promise<Map<string, PodTimes>> {
  const out = new Map<string, PodTimes>();
  const opts = { timeoutMs: CRI_TIMEOUT_MS };
  const nsToMs = (ns: number) => (ns > 0 ? ns / 1e6 : undefined);
  const sandboxes = await conn.runtime.listPodSandbox(
    { labelSelector: { [KUBERNETES_POD_NAMESPACE_LABEL]: namespace } },
    opts,
  );
  const podOfSandbox = new Map<string, string>();
  for (const sb of sandboxes) {
    const name = sb.labels[KUBERNETES_POD_NAME_LABEL] ?? sb.metadata.name;
    podOfSandbox.set(sb.id, name);
    const t = out.get(name) ?? {};
    const at = nsToMs(sb.createdAt);
    if (at !== undefined && (t.sandbox === undefined || at < t.sandbox)) t.sandbox = at;
    out.set(name, t);
  }
  const containers = await conn.runtime.listContainers(
    { labelSelector: { [KUBERNETES_POD_NAMESPACE_LABEL]: namespace } },
    opts,
  );
  for (const c of containers) {
    const name = podOfSandbox.get(c.podSandboxId);
    if (name === undefined) continue;
    const { status } = await conn.runtime.containerStatus(c.id, false, opts);
    const t = out.get(name)!;
    t.containerCreated = nsToMs(status.createdAt);
    t.containerStarted = nsToMs(status.startedAt);
  }
  return out;
}

interface RawAudit {
  stage?: string;
  verb?: string;
  requestReceivedTimestamp?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; name?: string; namespace?: string };
  requestObject?: { spec?: { boundObjectRef?: { kind?: string; name?: string } } };
}

/** What the node sent about each pod of namespace between fromMs and toMs: patches, token requests. */
export function auditTimes(
  file: string,
  user: string,
  namespace: string,
  fromMs: number,
  toMs: number,
): { times: Map<string, PodTimes>; patches: Map<string, number> } {
  const times = new Map<string, PodTimes>();
  const patches = new Map<string, number>();
  const at = (name: string) => times.get(name) ?? (times.set(name, {}), times.get(name)!);
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes(user) || !line.includes(namespace)) continue;
    const e = JSON.parse(line) as RawAudit;
    if (e.stage !== 'ResponseComplete' || e.user?.username !== user || !e.requestReceivedTimestamp) continue;
    const ms = Date.parse(e.requestReceivedTimestamp);
    if (ms < fromMs || ms > toMs || e.objectRef?.namespace !== namespace) continue;
    const ref = e.objectRef;
    if (ref.resource === 'pods' && ref.subresource === 'status' && e.verb === 'patch' && ref.name) {
      const t = at(ref.name);
      t.firstPatch = Math.min(t.firstPatch ?? Infinity, ms);
      patches.set(ref.name, (patches.get(ref.name) ?? 0) + 1);
      if (t.runningPatch === undefined && /"phase":\s*"Running"/.test(JSON.stringify(e.requestObject)))
        t.runningPatch = ms;
    } else if (ref.resource === 'serviceaccounts' && ref.subresource === 'token' && e.verb === 'create') {
      const pod = e.requestObject?.spec?.boundObjectRef;
      if (pod?.kind === 'Pod' && pod.name) {
        const t = at(pod.name);
        t.token = Math.min(t.token ?? Infinity, ms);
      }
    }
  }
  return { times, patches };
}

/**
 * When the kubelet first logged each pod of namespace in a `SyncLoop` ADD line (klog's text format,
 * which both kubelets write: `I1206 23:10:01.123456 <pid> file.go:1] "SyncLoop ADD" … pods=[…]`, or
 * tskubelet's `"SyncLoop" op="ADD"`); the log's local time, the year taken from fromMs.
 */
export function logSeenTimes(file: string, namespace: string, fromMs: number): Map<string, number> {
  const out = new Map<string, number>();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return out;
  }
  const year = new Date(fromMs).getFullYear();
  const head = /^I(\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)/;
  const pod = new RegExp(`${namespace}/([A-Za-z0-9.-]+)`, 'g');
  for (const line of text.split('\n')) {
    if (!line.includes('SyncLoop') || !/ADD/.test(line)) continue;
    const m = head.exec(line);
    if (!m) continue;
    const ms = new Date(`${year}-${m[1]}-${m[2]}T${m[3]!.slice(0, 12)}`).getTime();
    for (const p of line.matchAll(pod)) if (!out.has(p[1]!)) out.set(p[1]!, ms);
  }
  return out;
}

export interface TimelineInput {
  label: string;
  out: string;
  names: string[];
  createdAtWallMs: Map<string, number>;
  runningAtWallMs: Map<string, number>;
  runtime: Map<string, PodTimes>;
  auditLog?: string;
  user: string;
  namespace: string;
  windowMs: [number, number];
  kubeletLog: string;
  threads: Record<string, number>;
}

/** Merges the sources, writes timeline-<label>.json to out, and prints each stage's spread. */
export async function writeTimeline(i: TimelineInput): Promise<void> {
  const audit = i.auditLog
    ? auditTimes(i.auditLog, i.user, i.namespace, i.windowMs[0], i.windowMs[1])
    : { times: new Map<string, PodTimes>(), patches: new Map<string, number>() };
  const seen = logSeenTimes(i.kubeletLog, i.namespace, i.windowMs[0]);
  const t0 = Math.min(...i.names.map((n) => i.createdAtWallMs.get(n) ?? Infinity));
  const pods = i.names.map((name) => {
    const t: PodTimes = {
      created: i.createdAtWallMs.get(name),
      seen: seen.get(name),
      ...audit.times.get(name),
      ...i.runtime.get(name),
      runningSeen: i.runningAtWallMs.get(name),
    };
    const rel: Record<string, number | string | undefined> = { name, patches: audit.patches.get(name) };
    for (const s of STAGES) rel[s] = t[s] === undefined ? undefined : Math.round(t[s] - t0);
    return rel;
  });
  const spread: Record<string, Record<string, number>> = {};
  const lines = [`timeline ${i.label}: ms after the first create, p10 / p50 / p90 / max over the pods`];
  for (const s of STAGES) {
    const v = pods.map((p) => p[s]).filter((x): x is number => typeof x === 'number');
    if (v.length === 0) continue;
    const row = {
      pods: v.length,
      p10: percentile(v, 10),
      p50: percentile(v, 50),
      p90: percentile(v, 90),
      max: Math.max(...v),
    };
    spread[s] = row;
    lines.push(
      `  ${s.padEnd(17)} ${[row.p10, row.p50, row.p90, row.max].map((x) => String(Math.round(x)).padStart(6)).join(' ')}  (${v.length} pods)`,
    );
  }
  const patchCounts = [...audit.patches.values()];
  if (patchCounts.length > 0)
    lines.push(
      `  status patches per pod: ${(patchCounts.reduce((a, b) => a + b, 0) / patchCounts.length).toFixed(2)}`,
    );
  lines.push(`  start CPU by thread (s): ${JSON.stringify(i.threads)}`);
  say(lines.join('\n'));
  await writeFile(
    path.join(i.out, `timeline-${i.label.replace(/[^A-Za-z0-9=-]+/g, '-')}.json`),
    JSON.stringify({ label: i.label, t0, spread, threads: i.threads, pods }, null, 1),
  );
}
