/**
 * Turns the benches' JSON lines into tables for people: one per bench, a row per metric and a
 * column per size (a figure measured in rounds shows its median and, in brackets, its lowest and
 * highest round), and for density a comparison with the upstream kubelet's reference figures and,
 * when the run had a peer kubelet (BENCH_PEER_KUBELET), tskubelet and the peer side by side.
 *
 * Usage: node dist/bench/table.js RESULTS.jsonl
 */
import { readFileSync } from 'node:fs';
import type { Figure } from './report.js';

/**
 * Upstream kubelet v1.21 on a machine of this kind (2 cores), same containerd, busybox `sleep` pods,
 * as given in the issue that asked for these benches. Keyed by `n/metric`.
 */
export const UPSTREAM_REFERENCE: Record<string, number> = {
  '0/idle_rss_mib': 73,
  '1/p50_ms': 720,
  '1/all_ms': 720,
  '30/p50_ms': 3410,
  '30/p99_ms': 3490,
  '30/all_ms': 3510,
  '30/start_cpu_s': 0.54,
  '30/steady_cpu_cores': 0.024,
  '30/steady_rss_mib': 80,
};

function format(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return '—';
  if (Math.abs(value) >= 100) return String(Math.round(value));
  if (Math.abs(value) >= 10) return value.toFixed(1);
  if (Math.abs(value) >= 1) return value.toFixed(2);
  return value.toPrecision(2);
}

/** A figure's value, with its range over the rounds when it has one. */
function withRange(figure: Figure | undefined): string {
  if (!figure) return '—';
  const { value, min, max } = figure as { value: number | null; min?: number | null; max?: number | null };
  const text = format(value);
  if (min === undefined || max === undefined || min === null || max === null || min === max) return text;
  return `${text} [${format(min)}–${format(max)}]`;
}

function render(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

function main(): void {
  const file = process.argv[2];
  if (!file) throw new Error('usage: table RESULTS.jsonl');
  const figures: Figure[] = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Figure);

  const out: string[] = [];
  for (const bench of [...new Set(figures.map((f) => f.bench))]) {
    const mine = figures.filter((f) => f.bench === bench);
    const sizes = [...new Set(mine.map((f) => f.n))].sort((a, b) => a - b);
    const find = (n: number, metric: string) => mine.find((f) => f.n === n && f.metric === metric);
    const value = (n: number, metric: string) => find(n, metric)?.value ?? null;
    // The peer's figures have a table of their own.
    const peerFigure = (m: string) => m.startsWith('peer_') || m.startsWith('vs_peer_');
    const metrics = [...new Set(mine.map((f) => f.metric))].filter((m) => !peerFigure(m));
    const rows = metrics.map((m) => [m, ...sizes.map((n) => withRange(find(n, m)))]);
    out.push(`${bench}\n${render(['metric', ...sizes.map((n) => `n=${n}`)], rows)}`);

    if (bench === 'density') {
      const compared = Object.entries(UPSTREAM_REFERENCE).map(([key, upstream]) => {
        const [n, metric] = key.split('/') as [string, string];
        const ours = value(Number(n), metric);
        return [
          `n=${n} ${metric}`,
          format(ours),
          format(upstream),
          ours === null ? '—' : `${(ours / upstream).toFixed(2)}×`,
        ];
      });
      out.push(
        `density vs upstream kubelet v1.21 (reference figures)\n` +
          render(['figure', 'tskubelet', 'upstream', 'ratio'], compared),
      );
    }

    // With a peer kubelet (density's BENCH_PEER_KUBELET, cluster-density's): the two side by side.
    const peer = find(0, 'peer_rounds');
    if (peer) {
      const sideBySide: string[][] = [];
      for (const n of sizes) {
        for (const m of metrics) {
          const theirs = find(n, `peer_${m}`);
          if (!theirs) continue;
          const ratio = find(n, `vs_peer_${m}`);
          sideBySide.push([`n=${n} ${m}`, withRange(find(n, m)), withRange(theirs), withRange(ratio)]);
        }
      }
      out.push(
        `${bench} side by side: medians over ${peer.value} rounds [lowest–highest round]; ` +
          `tskubelet/peer per round, then the median\n${peer.note ?? ''}\n` +
          render(['figure', 'tskubelet', 'peer', 'tskubelet/peer'], sideBySide),
      );
    }
  }
  process.stdout.write(out.join('\n\n') + '\n');
}

main();
