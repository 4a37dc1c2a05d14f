/**
 * prober_probe_total (upstream: ProberResults in prober_manager.go), kept as plain numbers so the
 * metrics endpoint can render it however it likes. A worker's series disappear when it stops, as
 * upstream deletes them, so the snapshot only ever shows containers that are still probed.
 */

/** Upstream's label values for the result: the verdict, not the handler's own word. */
export type ProbeMetricResult = 'successful' | 'failed' | 'unknown';

export interface ProbeCounterLabels {
  probe_type: 'Liveness' | 'Readiness' | 'Startup';
  result: ProbeMetricResult;
  container: string;
  pod: string;
  namespace: string;
  pod_uid: string;
}

export interface ProbeCounterSample {
  labels: ProbeCounterLabels;
  value: number;
}

export interface ProbeMetricsSnapshot {
  name: 'prober_probe_total';
  help: string;
  type: 'counter';
  samples: ProbeCounterSample[];
}

export const PROBE_TOTAL_HELP =
  'Cumulative number of a liveness, readiness or startup probe for a container by result.';

function keyOf(l: ProbeCounterLabels): string {
  return JSON.stringify([l.probe_type, l.result, l.container, l.pod, l.namespace, l.pod_uid]);
}

export class ProberMetrics {
  private readonly series = new Map<string, ProbeCounterSample>();

  inc(labels: ProbeCounterLabels): void {
    const key = keyOf(labels);
    const s = this.series.get(key);
    if (s) s.value++;
    else this.series.set(key, { labels: { ...labels }, value: 1 });
  }

  /** Forgets a worker's series, whatever their result. */
  deleteWorker(labels: Omit<ProbeCounterLabels, 'result'>): void {
    for (const result of ['successful', 'failed', 'unknown'] as const) {
      this.series.delete(keyOf({ ...labels, result }));
    }
  }

  snapshot(): ProbeMetricsSnapshot {
    return {
      name: 'prober_probe_total',
      help: PROBE_TOTAL_HELP,
      type: 'counter',
      samples: [...this.series.values()].map((s) => ({ labels: { ...s.labels }, value: s.value })),
    };
  }
}
