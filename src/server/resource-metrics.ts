/**
 * /metrics/resource: the CPU and memory figures metrics-server scrapes, under upstream's names and
 * labels (node_cpu_usage_seconds_total, node_memory_working_set_bytes, container_*, pod_*,
 * scrape_error), each sample stamped with when it was measured. Rendered from the stats
 * provider's CPU-and-memory summary, as upstream's resourceMetricsCollector does.
 */
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { renderText, type MetricFamily, type Sample } from '../lib/metrics.js';
import type { SummaryProvider } from '../stats/stats-provider.js';
import type { Summary } from '../stats/summary-types.js';

const log = logger('server');

function family(name: string, help: string, type: 'counter' | 'gauge', samples: Sample[]): MetricFamily {
  return { name, help, type, samples };
}

/** The exposition text; a stats failure is scrape_error 1 and nothing else, as upstream. */
export async function resourceMetricsText(provider: SummaryProvider, signal: AbortSignal): Promise<string> {
  let summary: Summary | undefined;
  try {
    summary = await provider.getCPUAndMemorySummary(signal);
  } catch (err) {
    log.v(2, 'Error getting summary for resourceMetric prometheus endpoint', { err: errorMessage(err) });
  }
  const nodeCpu: Sample[] = [];
  const nodeMem: Sample[] = [];
  const cCpu: Sample[] = [];
  const cMem: Sample[] = [];
  const cStart: Sample[] = [];
  const pCpu: Sample[] = [];
  const pMem: Sample[] = [];
  if (summary) {
    const { cpu, memory } = summary.node;
    if (cpu?.usageCoreNanoSeconds !== undefined)
      nodeCpu.push({ value: cpu.usageCoreNanoSeconds / 1e9, timestampMs: cpu.time });
    if (memory?.workingSetBytes !== undefined)
      nodeMem.push({ value: memory.workingSetBytes, timestampMs: memory.time });
    for (const pod of summary.pods) {
      const podLabels = { pod: pod.podRef.name, namespace: pod.podRef.namespace };
      for (const c of pod.containers) {
        const labels = { container: c.name, ...podLabels };
        cStart.push({ labels, value: Math.floor(c.startTime / 1000), timestampMs: c.startTime });
        if (c.cpu?.usageCoreNanoSeconds !== undefined)
          cCpu.push({ labels, value: c.cpu.usageCoreNanoSeconds / 1e9, timestampMs: c.cpu.time });
        if (c.memory?.workingSetBytes !== undefined)
          cMem.push({ labels, value: c.memory.workingSetBytes, timestampMs: c.memory.time });
      }
      if (pod.cpu?.usageCoreNanoSeconds !== undefined)
        pCpu.push({
          labels: podLabels,
          value: pod.cpu.usageCoreNanoSeconds / 1e9,
          timestampMs: pod.cpu.time,
        });
      if (pod.memory?.workingSetBytes !== undefined)
        pMem.push({ labels: podLabels, value: pod.memory.workingSetBytes, timestampMs: pod.memory.time });
    }
  }
  const families: MetricFamily[] = [
    family('container_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the container in core-seconds', 'counter', cCpu),
    family('container_memory_working_set_bytes', '[STABLE] Current working set of the container in bytes', 'gauge', cMem),
    family('container_start_time_seconds', '[STABLE] Start time of the container since unix epoch in seconds', 'gauge', cStart),
    family('node_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the node in core-seconds', 'counter', nodeCpu),
    family('node_memory_working_set_bytes', '[STABLE] Current working set of the node in bytes', 'gauge', nodeMem),
    family('pod_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', 'counter', pCpu),
    family('pod_memory_working_set_bytes', '[STABLE] Current working set of the pod in bytes', 'gauge', pMem),
    family('scrape_error', '[ALPHA] 1 if there was an error while getting container metrics, 0 otherwise', 'gauge', [{ value: summary ? 0 : 1 }]),
  ]; // prettier-ignore
  return renderText(families);
}
