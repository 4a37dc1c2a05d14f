/**
 * /metrics/cadvisor: the container series dashboards read from an upstream kubelet's embedded
 * cAdvisor, under cAdvisor's names, help texts and types, with the labels upstream's
 * containerPrometheusLabelsFunc gives them: container, id (the cgroup), image, name (the runtime's
 * id for the container, cAdvisor's first alias under containerd), namespace, pod.
 *
 * This kubelet embeds no cAdvisor: the figures come from the stats provider's full summary, and the
 * ids, images and cgroups from CRI. Three kinds of series, as cAdvisor has them for a pod:
 *  - one per container (CPU, memory, writable layer, start time);
 *  - the pod cgroup (container="", image="", name=""), carrying the pod's CPU and memory;
 *  - the sandbox (container="", name=its id), carrying the pod's network, which cAdvisor reads only
 *    for the sandbox since the other containers share its network namespace.
 */
import { readSmallTextFile } from '../lib/read-small-file.js';
import os from 'node:os';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { renderText, type Labels, type MetricFamily, type Sample } from '../lib/metrics.js';
import type { Container, PodSandbox } from '../cri/types.js';
import type { SummaryProvider } from '../stats/stats-provider.js';
import type { Summary } from '../stats/summary-types.js';
import { compareStrings } from '../lib/compare.js';

const log = logger('server');

/** containerd's namespace for CRI containers; its default cgroup is /<namespace>/<id>. */
const CONTAINERD_K8S_NAMESPACE = 'k8s.io';

export interface MachineInfo {
  cpuCores: number;
  memoryBytes: number;
  bootId: string;
  machineId: string;
  systemUuid: string;
}

export interface CadvisorMetricsSource {
  stats: SummaryProvider;
  /** The runtime's containers and sandboxes, for ids, images and cgroups (terminated ones are skipped). */
  listContainers(signal: AbortSignal): Promise<Container[]>;
  listPodSandbox(signal: AbortSignal): Promise<PodSandbox[]>;
  /** The pod's cgroup as a path under each hierarchy's root; undefined without per-pod cgroups. */
  podCgroupPath(podUid: string): string | undefined;
  cgroupDriver: 'cgroupfs' | 'systemd';
  machine(): MachineInfo;
  /** Seconds since the epoch, for container_last_seen. */
  nowMs(): number;
}

/** The machine as cAdvisor describes it: cores and memory from the OS, and the identity labels read once. */
export async function readMachineInfo(): Promise<MachineInfo> {
  const first = async (paths: string[]) => {
    for (const p of paths) {
      const text = await readSmallTextFile(p).catch(() => undefined);
      if (text?.trim()) return text.trim();
    }
    return '';
  };
  const [bootId, machineId, systemUuid] = await Promise.all([
    first(['/proc/sys/kernel/random/boot_id']),
    first(['/etc/machine-id', '/var/lib/dbus/machine-id']),
    // Readable by root only; cAdvisor leaves the label empty too when it cannot read it.
    first(['/sys/class/dmi/id/product_uuid']),
  ]);
  return { cpuCores: os.cpus().length, memoryBytes: os.totalmem(), bootId, machineId, systemUuid };
}

/** Where the runtime puts a container's cgroup under its pod's: containerd's runc layout per driver. */
export function containerCgroupPath(
  podCgroup: string,
  containerId: string,
  driver: 'cgroupfs' | 'systemd',
): string {
  const leaf = driver === 'systemd' ? `cri-containerd-${containerId}.scope` : containerId;
  return `${podCgroup.replace(/\/+$/, '')}/${leaf}`;
}

interface Families {
  cpu: Sample[];
  memUsage: Sample[];
  memWs: Sample[];
  memRss: Sample[];
  fsUsage: Sample[];
  rx: Sample[];
  tx: Sample[];
  start: Sample[];
  lastSeen: Sample[];
}

function seriesLabels(
  container: string,
  id: string,
  image: string,
  name: string,
  namespace: string,
  pod: string,
): Labels {
  // Alphabetical, as the Prometheus client writes them.
  return { container, id, image, name, namespace, pod };
}

/** The labels with one more, in name order as the Prometheus client writes them. */
function withLabel(labels: Labels, name: string, value: string): Labels {
  const entries: [string, string][] = [...Object.entries(labels), [name, value]];
  return Object.fromEntries(entries.sort(([a], [b]) => compareStrings(a, b)));
}

/** The exposition text; a stats or runtime failure is container_scrape_error 1 with the machine series. */
export async function cadvisorMetricsText(
  source: CadvisorMetricsSource,
  signal: AbortSignal,
): Promise<string> {
  let summary: Summary | undefined;
  let containers: Container[] = [];
  let sandboxes: PodSandbox[] = [];
  try {
    [summary, containers, sandboxes] = await Promise.all([
      source.stats.getSummary(signal),
      source.listContainers(signal),
      source.listPodSandbox(signal),
    ]);
  } catch (err) {
    summary = undefined;
    log.v(2, 'Error getting container stats for the cAdvisor endpoint', { err: errorMessage(err) });
  }
  const f: Families = {
    cpu: [], memUsage: [], memWs: [], memRss: [], fsUsage: [], rx: [], tx: [], start: [], lastSeen: [],
  }; // prettier-ignore
  const nowSec = Math.floor(source.nowMs() / 1000);
  if (summary) {
    const sandboxByUid = new Map<string, PodSandbox>();
    for (const s of sandboxes) if (s.state === 'SANDBOX_READY') sandboxByUid.set(s.metadata.uid, s);
    // The running container of each (sandbox, name): the summary lists only live ones.
    const byKey = new Map<string, Container>();
    for (const c of containers)
      if (c.state === 'CONTAINER_RUNNING') byKey.set(`${c.podSandboxId}/${c.metadata.name}`, c);
    for (const pod of summary.pods) {
      const { name: podName, namespace, uid } = pod.podRef;
      const podCgroup = source.podCgroupPath(uid);
      const sandbox = sandboxByUid.get(uid);
      // Without a pod cgroup (cgroupsPerQOS off) containerd files the container under its namespace.
      const cgroupOf = (id: string) =>
        podCgroup
          ? containerCgroupPath(podCgroup, id, source.cgroupDriver)
          : `/${CONTAINERD_K8S_NAMESPACE}/${id}`;
      for (const cs of pod.containers) {
        const c = sandbox && byKey.get(`${sandbox.id}/${cs.name}`);
        if (!c) continue;
        const labels = seriesLabels(cs.name, cgroupOf(c.id), c.image?.image ?? '', c.id, namespace, podName);
        addUsage(f, labels, cs.cpu, cs.memory, nowSec);
        f.start.push({ labels, value: cs.startTime / 1000 });
        if (cs.rootfs?.usedBytes !== undefined)
          f.fsUsage.push({
            labels: withLabel(labels, 'device', ''),
            value: cs.rootfs.usedBytes,
            timestampMs: cs.rootfs.time,
          });
      }
      if (podCgroup) {
        const labels = seriesLabels('', podCgroup, '', '', namespace, podName);
        addUsage(f, labels, pod.cpu, pod.memory, nowSec);
        f.start.push({ labels, value: pod.startTime / 1000 });
      }
      if (sandbox && pod.network) {
        const labels = seriesLabels('', cgroupOf(sandbox.id), '', sandbox.id, namespace, podName);
        for (const i of pod.network.interfaces ?? []) {
          const withIf = withLabel(labels, 'interface', i.name);
          const t = pod.network.time;
          if (i.rxBytes !== undefined) f.rx.push({ labels: withIf, value: i.rxBytes, timestampMs: t });
          if (i.txBytes !== undefined) f.tx.push({ labels: withIf, value: i.txBytes, timestampMs: t });
        }
      }
    }
  }
  const m = source.machine();
  const machineLabels = { boot_id: m.bootId, machine_id: m.machineId, system_uuid: m.systemUuid };
  const families: MetricFamily[] = [
    { name: 'container_cpu_usage_seconds_total', help: 'Cumulative cpu time consumed in seconds.', type: 'counter', samples: f.cpu },
    { name: 'container_fs_usage_bytes', help: 'Number of bytes that are consumed by the container on this filesystem.', type: 'gauge', samples: f.fsUsage },
    { name: 'container_last_seen', help: 'Last time a container was seen by the exporter', type: 'gauge', samples: f.lastSeen },
    { name: 'container_memory_rss', help: 'Size of RSS in bytes.', type: 'gauge', samples: f.memRss },
    { name: 'container_memory_usage_bytes', help: 'Current memory usage in bytes, including all memory regardless of when it was accessed', type: 'gauge', samples: f.memUsage },
    { name: 'container_memory_working_set_bytes', help: 'Current working set in bytes.', type: 'gauge', samples: f.memWs },
    { name: 'container_network_receive_bytes_total', help: 'Cumulative count of bytes received', type: 'counter', samples: f.rx },
    { name: 'container_network_transmit_bytes_total', help: 'Cumulative count of bytes transmitted', type: 'counter', samples: f.tx },
    { name: 'container_scrape_error', help: '1 if there was an error while getting container metrics, 0 otherwise', type: 'gauge', samples: [{ value: summary ? 0 : 1 }] },
    { name: 'container_start_time_seconds', help: 'Start time of the container since unix epoch in seconds.', type: 'gauge', samples: f.start },
    { name: 'machine_cpu_cores', help: 'Number of logical CPU cores.', type: 'gauge', samples: [{ labels: machineLabels, value: m.cpuCores }] },
    { name: 'machine_memory_bytes', help: 'Amount of memory installed on the machine.', type: 'gauge', samples: [{ labels: machineLabels, value: m.memoryBytes }] },
  ]; // prettier-ignore
  return renderText(families);
}

function addUsage(
  f: Families,
  labels: Labels,
  cpu: Summary['node']['cpu'],
  memory: Summary['node']['memory'],
  nowSec: number,
): void {
  f.lastSeen.push({ labels, value: nowSec });
  // With per-CPU figures off (as the kubelet runs cAdvisor), cAdvisor labels the total cpu="total"
  // and leaves it out while it is still zero.
  if (cpu?.usageCoreNanoSeconds)
    f.cpu.push({
      labels: withLabel(labels, 'cpu', 'total'),
      value: cpu.usageCoreNanoSeconds / 1e9,
      timestampMs: cpu.time,
    });
  if (!memory) return;
  const t = memory.time;
  if (memory.usageBytes !== undefined) f.memUsage.push({ labels, value: memory.usageBytes, timestampMs: t });
  if (memory.workingSetBytes !== undefined)
    f.memWs.push({ labels, value: memory.workingSetBytes, timestampMs: t });
  if (memory.rssBytes !== undefined) f.memRss.push({ labels, value: memory.rssBytes, timestampMs: t });
}
