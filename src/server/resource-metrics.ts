/**
 * /metrics/resource: the CPU and memory figures metrics-server scrapes, under upstream's names
 * (node_cpu_usage_seconds_total, node_memory_working_set_bytes, container_*, pod_*, scrape_error),
 * each sample stamped with when it was measured. Containers come from the runtime's
 * ListContainerStats; the node from /proc, as cAdvisor's root container would.
 */
import { readFile } from 'node:fs/promises';
import type { ContainerStats, RuntimeService } from '../cri/types.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { renderText, type MetricFamily, type Sample } from '../lib/metrics.js';

const log = logger('server');

/** USER_HZ, the unit of /proc/stat: 100 on every Linux the kubelet runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

async function nodeCpuSeconds(): Promise<number | undefined> {
  const text = await readFile('/proc/stat', 'utf8').catch(() => undefined);
  const line = text?.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return undefined;
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  // Busy time: everything but idle (3) and iowait (4); guest time is already inside user and nice.
  const busy = f.slice(0, 8).reduce((a, v, i) => (i === 3 || i === 4 ? a : a + (v || 0)), 0);
  return busy / CLOCK_TICKS_PER_SECOND;
}

async function nodeMemoryWorkingSetBytes(): Promise<number | undefined> {
  const text = await readFile('/proc/meminfo', 'utf8').catch(() => undefined);
  if (!text) return undefined;
  const kb = (key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const total = kb('MemTotal');
  const free = kb('MemFree');
  const inactiveFile = kb('Inactive\\(file\\)');
  if (total === undefined || free === undefined) return undefined;
  // cAdvisor's working set: usage minus inactive file cache.
  return Math.max(0, total - free - (inactiveFile ?? 0));
}

function family(name: string, help: string, type: 'counter' | 'gauge', samples: Sample[]): MetricFamily {
  return { name, help, type, samples };
}

/** The exposition text; a runtime failure is scrape_error 1 with the node figures alone. */
export async function resourceMetricsText(
  runtime: RuntimeService,
  clock: Clock,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<string> {
  const nowMs = clock.now();
  let stats: ContainerStats[] = [];
  let scrapeError = 0;
  let sandboxes: Awaited<ReturnType<RuntimeService['listPodSandbox']>> = [];
  let containers: Awaited<ReturnType<RuntimeService['listContainers']>> = [];
  try {
    [stats, containers, sandboxes] = await Promise.all([
      runtime.listContainerStats({}, { timeoutMs, signal }),
      runtime.listContainers({ state: 'CONTAINER_RUNNING' }, { timeoutMs, signal }),
      runtime.listPodSandbox({ state: 'SANDBOX_READY' }, { timeoutMs, signal }),
    ]);
  } catch (err) {
    log.v(2, 'Resource metrics: runtime stats failed', { err: errorMessage(err) });
    scrapeError = 1;
  }
  const cpuSeconds = await nodeCpuSeconds();
  const workingSet = await nodeMemoryWorkingSetBytes();
  const running = new Map(containers.map((c) => [c.id, c]));
  const sandboxIds = new Set(sandboxes.map((s) => s.id));
  const cCpu: Sample[] = [];
  const cMem: Sample[] = [];
  const cStart: Sample[] = [];
  const pods = new Map<
    string,
    { labels: { namespace: string; pod: string }; cpu: number; mem: number; tsMs: number }
  >();
  for (const s of stats) {
    const c = running.get(s.attributes.id);
    // Only running containers of ready sandboxes count, as upstream's summary does.
    if (!c || !sandboxIds.has(c.podSandboxId)) continue;
    const labels = {
      container: s.attributes.metadata.name,
      namespace: s.attributes.labels['io.kubernetes.pod.namespace'] ?? '',
      pod: s.attributes.labels['io.kubernetes.pod.name'] ?? '',
    };
    const podKey = `${labels.namespace}/${labels.pod}`;
    const pod = pods.get(podKey) ?? {
      labels: { namespace: labels.namespace, pod: labels.pod },
      cpu: 0,
      mem: 0,
      tsMs: 0,
    };
    pods.set(podKey, pod);
    const cpu = s.cpu?.usageCoreNanoSeconds?.value;
    if (cpu !== undefined && s.cpu) {
      const tsMs = s.cpu.timestamp / 1e6;
      cCpu.push({ labels, value: cpu / 1e9, timestampMs: tsMs });
      pod.cpu += cpu / 1e9;
      pod.tsMs = Math.max(pod.tsMs, tsMs);
    }
    const mem = s.memory?.workingSetBytes?.value;
    if (mem !== undefined && s.memory) {
      cMem.push({ labels, value: mem, timestampMs: s.memory.timestamp / 1e6 });
      pod.mem += mem;
    }
    cStart.push({ labels, value: Math.floor(c.createdAt / 1e9), timestampMs: nowMs });
  }
  const podSamples = [...pods.values()];
  const families: MetricFamily[] = [
    family('container_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the container in core-seconds', 'counter', cCpu),
    family('container_memory_working_set_bytes', '[STABLE] Current working set of the container in bytes', 'gauge', cMem),
    family('container_start_time_seconds', '[STABLE] Start time of the container since unix epoch in seconds', 'gauge', cStart),
    family('node_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the node in core-seconds', 'counter',
      cpuSeconds === undefined ? [] : [{ value: cpuSeconds, timestampMs: nowMs }]),
    family('node_memory_working_set_bytes', '[STABLE] Current working set of the node in bytes', 'gauge',
      workingSet === undefined ? [] : [{ value: workingSet, timestampMs: nowMs }]),
    family('pod_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', 'counter',
      podSamples.map((p) => ({ labels: p.labels, value: p.cpu, timestampMs: p.tsMs || nowMs }))),
    family('pod_memory_working_set_bytes', '[STABLE] Current working set of the pod in bytes', 'gauge',
      podSamples.map((p) => ({ labels: p.labels, value: p.mem, timestampMs: p.tsMs || nowMs }))),
    family('scrape_error', '[ALPHA] 1 if there was an error while getting container metrics, 0 otherwise', 'gauge', [{ value: scrapeError }]),
  ]; // prettier-ignore
  return renderText(families);
}
