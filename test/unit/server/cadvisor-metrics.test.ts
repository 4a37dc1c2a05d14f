import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Container, PodSandbox } from '../../../src/cri/types.js';
import {
  cadvisorMetricsText,
  containerCgroupPath,
  type CadvisorMetricsSource,
} from '../../../src/server/cadvisor-metrics.js';
import type { Summary } from '../../../src/stats/summary-types.js';

const T = 1_700_000_000_000; // ms

function sandbox(id: string, uid: string, state: PodSandbox['state'] = 'SANDBOX_READY'): PodSandbox {
  return {
    id,
    metadata: { name: 'web', namespace: 'default', uid, attempt: 0 },
    state,
    createdAt: T * 1e6,
    labels: {},
    annotations: {},
    runtimeHandler: '',
  };
}

function container(id: string, sandboxId: string, name: string, state: Container['state']): Container {
  return {
    id,
    podSandboxId: sandboxId,
    metadata: { name, attempt: 0 },
    image: { image: 'docker.io/library/busybox:1.36', annotations: {} },
    imageRef: 'sha256:abc',
    state,
    createdAt: T * 1e6,
    labels: {},
    annotations: {},
  } as Container;
}

const summary: Summary = {
  node: { nodeName: 'n1', startTime: T },
  pods: [
    {
      podRef: { name: 'web', namespace: 'default', uid: 'u1' },
      startTime: T - 5000,
      containers: [
        {
          name: 'app',
          startTime: T - 4000,
          cpu: { time: T, usageCoreNanoSeconds: 1_500_000_000 },
          memory: { time: T, usageBytes: 3000, workingSetBytes: 2000, rssBytes: 1000 },
          rootfs: { time: T, usedBytes: 4096 },
        },
      ],
      cpu: { time: T, usageCoreNanoSeconds: 2_000_000_000 },
      memory: { time: T, usageBytes: 5000, workingSetBytes: 4000 },
      network: { time: T, name: 'eth0', rxBytes: 10, txBytes: 20, interfaces: [{ name: 'eth0', rxBytes: 10, txBytes: 20 }] },
    },
  ],
}; // prettier-ignore

function source(over: Partial<CadvisorMetricsSource> = {}): CadvisorMetricsSource {
  return {
    stats: { getSummary: () => Promise.resolve(summary), getCPUAndMemorySummary: () => Promise.reject(new Error('unused')) },
    listContainers: () =>
      Promise.resolve([container('c1', 's1', 'app', 'CONTAINER_RUNNING'), container('c0', 's1', 'app', 'CONTAINER_EXITED')]),
    listPodSandbox: () => Promise.resolve([sandbox('s0', 'u1', 'SANDBOX_NOTREADY'), sandbox('s1', 'u1')]),
    podCgroupPath: (uid) => `/kubepods/besteffort/pod${uid}`,
    cgroupDriver: 'cgroupfs',
    machine: () => ({ cpuCores: 2, memoryBytes: 4096, bootId: 'b', machineId: 'm', systemUuid: '' }),
    nowMs: () => T + 999,
    ...over,
  }; // prettier-ignore
}

test('renders the container, pod cgroup and sandbox series with upstream labels, help texts and types', async () => {
  const text = await cadvisorMetricsText(source(), new AbortController().signal);
  const app =
    'container="app",id="/kubepods/besteffort/podu1/c1",image="docker.io/library/busybox:1.36",name="c1",namespace="default",pod="web"';
  const podCg = 'container="",id="/kubepods/besteffort/podu1",image="",name="",namespace="default",pod="web"';
  const appCpu =
    'container="app",cpu="total",id="/kubepods/besteffort/podu1/c1",image="docker.io/library/busybox:1.36",name="c1",namespace="default",pod="web"';
  const podCpu =
    'container="",cpu="total",id="/kubepods/besteffort/podu1",image="",name="",namespace="default",pod="web"';
  const appFs =
    'container="app",device="",id="/kubepods/besteffort/podu1/c1",image="docker.io/library/busybox:1.36",name="c1",namespace="default",pod="web"';
  const sbIf =
    'container="",id="/kubepods/besteffort/podu1/s1",image="",interface="eth0",name="s1",namespace="default",pod="web"';
  const machine = 'boot_id="b",machine_id="m",system_uuid=""';
  const expected = [
    '# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.',
    '# TYPE container_cpu_usage_seconds_total counter',
    `container_cpu_usage_seconds_total{${appCpu}} 1.5 ${T}`,
    `container_cpu_usage_seconds_total{${podCpu}} 2 ${T}`,
    '# HELP container_fs_usage_bytes Number of bytes that are consumed by the container on this filesystem.',
    '# TYPE container_fs_usage_bytes gauge',
    `container_fs_usage_bytes{${appFs}} 4096 ${T}`,
    '# HELP container_last_seen Last time a container was seen by the exporter',
    '# TYPE container_last_seen gauge',
    `container_last_seen{${app}} ${Math.floor((T + 999) / 1000)}`,
    `container_last_seen{${podCg}} ${Math.floor((T + 999) / 1000)}`,
    '# HELP container_memory_rss Size of RSS in bytes.',
    '# TYPE container_memory_rss gauge',
    `container_memory_rss{${app}} 1000 ${T}`,
    '# HELP container_memory_usage_bytes Current memory usage in bytes, including all memory regardless of when it was accessed',
    '# TYPE container_memory_usage_bytes gauge',
    `container_memory_usage_bytes{${app}} 3000 ${T}`,
    `container_memory_usage_bytes{${podCg}} 5000 ${T}`,
    '# HELP container_memory_working_set_bytes Current working set in bytes.',
    '# TYPE container_memory_working_set_bytes gauge',
    `container_memory_working_set_bytes{${app}} 2000 ${T}`,
    `container_memory_working_set_bytes{${podCg}} 4000 ${T}`,
    '# HELP container_network_receive_bytes_total Cumulative count of bytes received',
    '# TYPE container_network_receive_bytes_total counter',
    `container_network_receive_bytes_total{${sbIf}} 10 ${T}`,
    '# HELP container_network_transmit_bytes_total Cumulative count of bytes transmitted',
    '# TYPE container_network_transmit_bytes_total counter',
    `container_network_transmit_bytes_total{${sbIf}} 20 ${T}`,
    '# HELP container_scrape_error 1 if there was an error while getting container metrics, 0 otherwise',
    '# TYPE container_scrape_error gauge',
    'container_scrape_error 0',
    '# HELP container_start_time_seconds Start time of the container since unix epoch in seconds.',
    '# TYPE container_start_time_seconds gauge',
    `container_start_time_seconds{${app}} ${(T - 4000) / 1000}`,
    `container_start_time_seconds{${podCg}} ${(T - 5000) / 1000}`,
    '# HELP machine_cpu_cores Number of logical CPU cores.',
    '# TYPE machine_cpu_cores gauge',
    `machine_cpu_cores{${machine}} 2`,
    '# HELP machine_memory_bytes Amount of memory installed on the machine.',
    '# TYPE machine_memory_bytes gauge',
    `machine_memory_bytes{${machine}} 4096`,
  ]; // prettier-ignore
  assert.equal(text, expected.join('\n') + '\n');
});

test('a failing summary is container_scrape_error 1 with the machine series only', async () => {
  const text = await cadvisorMetricsText(
    source({ stats: { getSummary: () => Promise.reject(new Error('boom')), getCPUAndMemorySummary: () => Promise.reject(new Error('unused')) } }),
    new AbortController().signal,
  ); // prettier-ignore
  assert.match(text, /^container_scrape_error 1$/m);
  assert.doesNotMatch(text, /container_cpu_usage_seconds_total/);
  assert.match(text, /^machine_cpu_cores\{.*\} 2$/m);
});

test('without per-pod cgroups there is no pod series; a zero CPU total is left out as cAdvisor does', async () => {
  const zero: Summary = structuredClone(summary);
  zero.pods[0]!.containers[0]!.cpu = { time: T, usageCoreNanoSeconds: 0 };
  const text = await cadvisorMetricsText(
    source({ podCgroupPath: () => undefined, stats: { getSummary: () => Promise.resolve(zero), getCPUAndMemorySummary: () => Promise.reject(new Error('unused')) } }),
    new AbortController().signal,
  ); // prettier-ignore
  assert.doesNotMatch(text, /container_cpu_usage_seconds_total/);
  assert.doesNotMatch(text, /container="",id="\/kubepods/);
  assert.match(text, /container_memory_working_set_bytes\{container="app",id="\/k8s\.io\/c1",/);
});

test('container cgroups follow containerd’s layout for each driver', () => {
  assert.equal(
    containerCgroupPath('/kubepods/burstable/podu1', 'abc', 'cgroupfs'),
    '/kubepods/burstable/podu1/abc',
  );
  assert.equal(
    containerCgroupPath('/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu1.slice', 'abc', 'systemd'),
    '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu1.slice/cri-containerd-abc.scope',
  ); // prettier-ignore
});
