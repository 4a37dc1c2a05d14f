/**
 * The CRI calls a kubelet made in a window, by method, from its own /metrics (read through the API
 * server's node proxy): `kubelet_runtime_operations_total{operation_type="…"}`, which both the
 * upstream kubelet and tskubelet keep, so the two can be compared call for call per pod.
 */
const SERIES = 'kubelet_runtime_operations_total{';

/** operation_type → count, from a /metrics text. */
export function criOperations(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(SERIES)) continue;
    const op = /operation_type="([^"]*)"/.exec(line)?.[1];
    const space = line.lastIndexOf(' ');
    if (op !== undefined) out.set(op, (out.get(op) ?? 0) + Number(line.slice(space + 1)));
  }
  return out;
}

/** The figures of a window: `cri_<operation>_per_pod` for each method called, and `cri_calls_per_pod` in all. */
export function criCallsPerPod(
  before: Map<string, number>,
  after: Map<string, number>,
  pods: number,
): Record<string, number> {
  const figures: Record<string, number> = {};
  let all = 0;
  for (const [op, value] of after) {
    const delta = value - (before.get(op) ?? 0);
    if (delta <= 0) continue;
    figures[`cri_${op}_per_pod`] = delta / pods;
    all += delta;
  }
  figures.cri_calls_per_pod = all / pods;
  return figures;
}
