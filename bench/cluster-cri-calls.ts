/**
 * Counters a kubelet keeps by operation, read from its own /metrics (through the API server's node
 * proxy) before and after a window, so the upstream kubelet and tskubelet can be compared per pod:
 * the CRI calls (`kubelet_runtime_operations_total{operation_type="…"}`) and the pod worker's syncs
 * (`kubelet_pod_worker_duration_seconds_count{operation_type="create|update|sync|…"}`, one
 * observation per sync the worker ran), which both kubelets keep under the same names.
 */
const CRI_SERIES = 'kubelet_runtime_operations_total{';
const POD_SYNC_SERIES = 'kubelet_pod_worker_duration_seconds_count{';

/** operation_type → count, summed over the other labels, for the lines of one series of a /metrics text. */
function countsByOperation(text: string, series: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(series)) continue;
    const op = /operation_type="([^"]*)"/.exec(line)?.[1];
    const space = line.lastIndexOf(' ');
    if (op !== undefined) out.set(op, (out.get(op) ?? 0) + Number(line.slice(space + 1)));
  }
  return out;
}

/** `<prefix>_<operation>_per_pod` for each operation that counted in the window, and `total` for all of them. */
function perPod(
  before: Map<string, number>,
  after: Map<string, number>,
  pods: number,
  prefix: string,
  total: string,
): Record<string, number> {
  const figures: Record<string, number> = {};
  let all = 0;
  for (const [op, value] of after) {
    const delta = value - (before.get(op) ?? 0);
    if (delta <= 0) continue;
    figures[`${prefix}_${op}_per_pod`] = delta / pods;
    all += delta;
  }
  figures[total] = all / pods;
  return figures;
}

/** CRI operation_type → calls, from a /metrics text. */
export function criOperations(text: string): Map<string, number> {
  return countsByOperation(text, CRI_SERIES);
}

/** The figures of a window: `cri_<operation>_per_pod` for each method called, and `cri_calls_per_pod` in all. */
export function criCallsPerPod(
  before: Map<string, number>,
  after: Map<string, number>,
  pods: number,
): Record<string, number> {
  return perPod(before, after, pods, 'cri', 'cri_calls_per_pod');
}

/** The pod worker's update type (create, update, sync, terminated, …) → syncs run, from a /metrics text. */
export function podSyncs(text: string): Map<string, number> {
  return countsByOperation(text, POD_SYNC_SERIES);
}

/** The figures of a window: `pod_syncs_<type>_per_pod` for each update type, and `pod_syncs_per_pod` in all. */
export function podSyncsPerPod(
  before: Map<string, number>,
  after: Map<string, number>,
  pods: number,
): Record<string, number> {
  return perPod(before, after, pods, 'pod_syncs', 'pod_syncs_per_pod');
}
