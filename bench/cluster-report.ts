/**
 * The cluster-mode bench's results: per size, the median over the rounds of each kubelet's figures
 * (tskubelet's as they are, the peer's as `peer_<figure>`: the upstream kubelet, or a tskubelet in
 * an A/B; and their ratio within each round as `vs_peer_<figure>`), as JSON lines for
 * bench/table.ts; everything per run as results.json; the API traffic side by side as markdown.
 */
import os from 'node:os';
import type { Side } from './cluster-kubelet.js';
import { summarize, trafficMarkdown, type RoundTraffic } from './cluster-traffic.js';
import type { ClusterSettings } from './cluster-density.js';
import { median, round, sum, type Figure } from './report.js';

const BENCH = 'cluster-density';

export interface RunFigures {
  side: Side;
  n: number;
  round: number;
  figures: Record<string, number>;
  traffic?: RoundTraffic;
}

export function clusterNotes(s: ClusterSettings): Record<string, string> {
  return {
    p50_ms: "per pod: its create call returned → the bench's watch first shows it Running (status.phase)",
    all_running_ms: 'first create sent → the last pod seen Running',
    start_cpu_s:
      "the kubelet's utime+stime (with its children, waited for or still running) from the first create to the last pod Running",
    start_cpu_children_s:
      "start_cpu_s's share spent in the kubelet's child processes (mount, …), those it waited for and those still running (the mount helper)",
    start_peak_rss_mib: 'VmHWM over the start (reset before it)',
    steady_rss_mib: `mean VmRSS over the steady window (${s.steadyMs / 1000} s from ${s.settleMs / 1000} s after the last pod Running)`,
    steady_cpu_cores: 'CPU over the steady window, in cores',
    delete_ms:
      'all pods deleted at once (grace period 2 s; sleep ignores SIGTERM) → the last one gone from the API',
    ready_ms: 'kubelet process started → its Node Ready',
    ready_cpu_s: "the kubelet's CPU seconds from its start to its Node Ready (start-up, registration)",
    restarts: 'container restarts seen on the watch (should be 0)',
    warm_start_cpu_s:
      'BENCH_WARM_BATCH=1: start_cpu_s of a second batch of as many pods on the same kubelet, once the first is deleted and gone',
    warm_all_running_ms: "BENCH_WARM_BATCH=1: the second batch's all_running_ms",
    warm_p50_ms: "BENCH_WARM_BATCH=1: the second batch's p50_ms",
    warm_start_peak_rss_mib:
      "BENCH_WARM_BATCH=1: the second batch's start_peak_rss_mib (VmHWM reset before it)",
    api_requests_per_pod:
      "requests the node's user made in the start and delete windows (audit log), per pod; the steady window's are apart",
    api_sent_json_bytes_per_pod: 'their request bodies, as JSON (the audit log), per pod',
    api_received_json_bytes_per_pod:
      'their response bodies, as JSON (the audit log), per pod; watch events not included',
    watch_events_per_pod:
      "Pod and Node watch events the API server sent the kubelet (apiserver_watch_events_total less the bench's watches and the API server's own informers), per pod",
    watch_event_bytes_per_pod:
      'their objects as encoded for the kubelet (protobuf or JSON), bytes (apiserver_watch_events_sizes, the same taken out), per pod',
    steady_api_requests_per_min:
      "the node's requests per minute in the steady window (lease, node status, …)",
    other_writes: 'writes by other clients during the run (should be 0: they would blur the metrics figures)',
    cri_calls_per_pod:
      "CRI calls over the start window (the kubelet's kubelet_runtime_operations_total), per pod; cri_<operation>_per_pod by method. Upstream counts only its runtime manager's calls, not its log manager's or stats provider's",
    pod_syncs_per_pod:
      "pod worker syncs over the start window (the kubelet's kubelet_pod_worker_duration_seconds_count), per pod; pod_syncs_<type>_per_pod by update type (create, update, sync)",
  };
}

/** Per size and figure, one value per round, in the order first recorded. */
function byFigure(
  runs: RunFigures[],
  side: Side,
): Map<string, { n: number; metric: string; values: number[] }> {
  const out = new Map<string, { n: number; metric: string; values: number[] }>();
  for (const r of runs.filter((x) => x.side === side)) {
    for (const [metric, value] of Object.entries(r.figures)) {
      const key = `${r.n}/${metric}`;
      const entry = out.get(key) ?? { n: r.n, metric, values: [] };
      out.set(key, entry);
      entry.values.push(value);
    }
  }
  return out;
}

function figure(n: number, metric: string, values: number[], note: string | undefined): Figure {
  const finite = values.filter((v) => Number.isFinite(v));
  const value = metric === 'restarts' || metric === 'other_writes' ? sum(finite) : median(finite);
  const clean = (v: number) => (Number.isFinite(v) ? round(v) : (null as unknown as number));
  return {
    bench: BENCH,
    n,
    metric,
    value: clean(value),
    ...(values.length > 1 && finite.length > 0
      ? { min: clean(Math.min(...finite)), max: clean(Math.max(...finite)), rounds: values.length }
      : {}),
    ...(note ? { note } : {}),
  };
}

export function clusterReport(
  runs: RunFigures[],
  s: ClusterSettings,
  notes: Record<string, string>,
): { figures: Figure[]; results: unknown; traffic: string } {
  const figures: Figure[] = [];
  const peer = s.sides.includes('peer');
  if (peer) {
    figures.push({
      bench: BENCH,
      n: 0,
      metric: 'peer_rounds',
      value: s.rounds,
      note:
        `peer: ${s.peerKind === 'tskubelet' ? 'tskubelet' : 'the upstream kubelet'} ${s.peerBinary} (${s.peerVersion})` +
        `${s.peerNodeArgs.length ? ` with node ${s.peerNodeArgs.join(' ')}` : ''}. peer_<figure> is its figure, vs_peer_<figure> tskubelet's over the ` +
        "peer's in the same round (median over the rounds): below 1 is tskubelet faster or lighter",
    });
  }
  for (const { n, metric, values } of byFigure(runs, 'tskubelet').values())
    figures.push(figure(n, metric, values, notes[metric]));
  if (peer) {
    for (const { n, metric, values } of byFigure(runs, 'peer').values())
      figures.push(figure(n, `peer_${metric}`, values, undefined));
    // Ratios within a round: the pair saw the same machine within minutes.
    const ratios = new Map<string, { n: number; metric: string; values: number[] }>();
    for (const ours of runs.filter((r) => r.side === 'tskubelet')) {
      const theirs = runs.find((r) => r.side === 'peer' && r.n === ours.n && r.round === ours.round);
      if (!theirs) continue;
      for (const [metric, v] of Object.entries(ours.figures)) {
        if (metric === 'restarts' || metric === 'other_writes') continue;
        const key = `${ours.n}/${metric}`;
        const entry = ratios.get(key) ?? { n: ours.n, metric: `vs_peer_${metric}`, values: [] };
        ratios.set(key, entry);
        entry.values.push(v / (theirs.figures[metric] ?? NaN));
      }
    }
    for (const { n, metric, values } of ratios.values()) figures.push(figure(n, metric, values, undefined));
  }

  const sections: string[] = [
    `# API traffic per pod, cluster-mode density bench`,
    `${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} cores, load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')} at the end. Windows: *start* = first create → all Running + ${s.settleMs / 1000} s; ` +
      `*delete* = first delete → all gone from the API + ${s.settleMs / 1000} s; both summed and divided by the pod count. ` +
      `Requests: the API server's audit log, the node's user only (\`system:node:${s.nodeName}\`). ` +
      `Pods: busybox \`sleep\`, ${s.automountToken ? 'with' : 'without'} the service account token volume. ` +
      '`·` is none.',
  ];
  for (const n of s.sizes) {
    const sides = s.sides
      .map((side) => {
        const rounds = runs.filter((r) => r.side === side && r.n === n && r.traffic).map((r) => r.traffic!);
        const name =
          side === 'tskubelet' ? side : s.peerKind === 'tskubelet' ? 'tskubelet (peer)' : 'upstream';
        return { name, summary: summarize(rounds), rounds: rounds.length };
      })
      .filter((x) => x.rounds > 0);
    if (sides.length > 0) sections.push(trafficMarkdown(n, sides));
  }
  if (sections.length === 2) sections.push('No traffic figures: no audit log (BENCH_AUDIT_LOG) to read.');
  const results = {
    bench: BENCH,
    date: new Date().toISOString(),
    machine: {
      cores: os.cpus().length,
      memoryBytes: os.totalmem(),
      kernel: os.release(),
      loadAverageAtEnd: os.loadavg(),
    },
    settings: { ...s, figuresNotes: notes },
    figures,
    runs,
  };
  return { figures, results, traffic: `${sections.join('\n\n')}\n` };
}
