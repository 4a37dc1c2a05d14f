/**
 * The stats plane through the built kubelet and real containerd: /stats/summary for a running pod
 * (CPU, memory working set, logs, an emptyDir's usage, ephemeral storage) growing as its container
 * works, ?only_cpu_and_memory=true, /metrics/resource as metrics-server reads it, and
 * /metrics/cadvisor as dashboards read it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type { PodStats, Summary } from '../../src/stats/summary-types.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = 'stats-it';

/** The JSON shape: times are strings there. */
type SummaryJson = Omit<Summary, 'pods'> & { pods: (PodStats & { startTime: string })[] };

describe('stats through the kubelet process', () => {
  let cri: CriInspector;
  let kubelet: KubeletProcess;
  let podName: string;

  const summary = async (query = ''): Promise<SummaryJson> => {
    const res = await fetch(`http://127.0.0.1:${kubelet.readOnlyPort}/stats/summary${query}`, {
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200);
    return (await res.json()) as SummaryJson;
  };
  const podStats = async (query = '') =>
    (await summary(query)).pods.find((p) => p.podRef.name === podName && p.podRef.namespace === ns);

  before(async () => {
    cri = await CriInspector.connect();
    kubelet = new KubeletProcess({ extraConfig: ['volumeStatsAggPeriod: 2s'] });
    await kubelet.start();
    podName = `busy-${kubelet.nodeName}`;
    await kubelet.writeManifest(
      'busy.yaml',
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'busy', namespace: ns },
        spec: {
          terminationGracePeriodSeconds: 1,
          volumes: [{ name: 'scratch', emptyDir: {} }],
          containers: [
            {
              name: 'worker',
              image: 'busybox',
              imagePullPolicy: 'IfNotPresent',
              // Burns CPU, holds a few MiB in memory, writes a log line and 1 MiB to the emptyDir each round.
              command: [
                'sh',
                '-c',
                'dd if=/dev/zero of=/scratch/blob bs=1M count=4 2>/dev/null; i=0; while true; do i=$((i+1)); echo "round $i $(head -c 2000 /dev/zero | tr "\\0" x)"; dd if=/dev/zero of=/scratch/r$i bs=1M count=1 2>/dev/null; j=0; while [ $j -lt 20000 ]; do j=$((j+1)); done; done',
              ],
              volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
            },
          ],
        },
      }),
    );
    await waitFor(
      'the worker to run',
      async () => (await kubelet.pod('busy'))?.status?.containerStatuses?.[0]?.state?.running,
      30_000,
    );
  });

  after(async () => {
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
  });

  test('/stats/summary reports CPU, memory, logs and volume usage that grow as the container works', async () => {
    const first = await waitFor(
      'stats with volume usage',
      async () => {
        const p = await podStats();
        return p?.volume?.some((v) => (v.usedBytes ?? 0) > 0) ? p : undefined;
      },
      20_000,
    );
    const c1 = first.containers.find((c) => c.name === 'worker');
    assert.ok(c1, 'the worker container is listed');
    assert.ok((c1.cpu?.usageCoreNanoSeconds ?? 0) > 0, 'cpu used');
    assert.ok((c1.memory?.workingSetBytes ?? 0) > 0, 'memory working set');
    assert.ok((c1.logs?.usedBytes ?? 0) > 0, 'log usage');
    assert.match(String(first.startTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok((first['ephemeral-storage']?.usedBytes ?? 0) >= 4 * 1024 * 1024, 'the emptyDir counts');

    const second = await waitFor(
      'CPU, logs and the emptyDir to grow',
      async () => {
        const p = await podStats();
        const c2 = p?.containers.find((c) => c.name === 'worker');
        const v1 = first.volume?.find((v) => v.name === 'scratch')?.usedBytes ?? 0;
        const v2 = p?.volume?.find((v) => v.name === 'scratch')?.usedBytes ?? 0;
        return c2 &&
          (c2.cpu?.usageCoreNanoSeconds ?? 0) > (c1.cpu?.usageCoreNanoSeconds ?? 0) &&
          (c2.logs?.usedBytes ?? 0) > (c1.logs?.usedBytes ?? 0) &&
          v2 > v1
          ? p
          : undefined;
      },
      20_000,
      1000,
    );
    assert.ok(second.cpu?.usageCoreNanoSeconds, 'the pod has CPU figures');
    assert.ok((second.containers[0]?.cpu?.usageNanoCores ?? 0) > 0, 'a rate between two readings');

    const s = await summary();
    assert.ok((s.node.memory?.availableBytes ?? 0) > 0);
    assert.ok((s.node.fs?.capacityBytes ?? 0) > 0);
    assert.ok((s.node.runtime?.imageFs?.usedBytes ?? 0) > 0);
    assert.ok((s.node.rlimit?.maxpid ?? 0) > 0);
  });

  test('?only_cpu_and_memory=true leaves out filesystems and network', async () => {
    const p = await podStats('?only_cpu_and_memory=true');
    assert.ok(p?.cpu && p.memory);
    assert.equal(p.volume, undefined);
    assert.equal(p.containers[0]?.logs, undefined);
    assert.equal(p['ephemeral-storage'], undefined);
  });

  test('/metrics/resource parses and names what metrics-server reads', async () => {
    const res = await fetch(`http://127.0.0.1:${kubelet.readOnlyPort}/metrics/resource`, {
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200);
    const families = new Map(parsePrometheusTextFormat(await res.text()).map((f) => [f.name, f]));
    for (const name of [
      'node_cpu_usage_seconds_total',
      'node_memory_working_set_bytes',
      'container_cpu_usage_seconds_total',
      'container_memory_working_set_bytes',
      'container_start_time_seconds',
      'pod_cpu_usage_seconds_total',
      'pod_memory_working_set_bytes',
      'scrape_error',
    ])
      assert.ok(families.has(name), name);
    assert.equal(families.get('scrape_error')?.metrics[0]?.value, '0');
    const mine = families
      .get('container_memory_working_set_bytes')
      ?.metrics.find((m) => m.labels?.['pod'] === podName && m.labels['namespace'] === ns);
    assert.equal(mine?.labels?.['container'], 'worker');
    assert.ok(Number(mine?.value) > 0 && Number(mine?.timestamp_ms) > 0);
    const pod = families
      .get('pod_cpu_usage_seconds_total')
      ?.metrics.find((m) => m.labels?.['pod'] === podName);
    assert.ok(Number(pod?.value) > 0);
  });

  test('/metrics/cadvisor has the container series with upstream labels', async () => {
    const res = await fetch(`http://127.0.0.1:${kubelet.readOnlyPort}/metrics/cadvisor`, {
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200);
    const families = new Map(parsePrometheusTextFormat(await res.text()).map((f) => [f.name, f]));
    const worker = (await cri.podContainers(ns, podName)).find((c) => c.state === 'CONTAINER_RUNNING');
    assert.ok(worker, 'the worker container in CRI');
    const mine = (name: string) => {
      const m = families
        .get(name)
        ?.metrics.find((x) => x.labels?.['pod'] === podName && x.labels['container'] === 'worker');
      assert.ok(m, `${name} for the worker`);
      return m;
    };
    const cpu = mine('container_cpu_usage_seconds_total');
    assert.equal(families.get('container_cpu_usage_seconds_total')?.type, 'COUNTER');
    assert.equal(cpu.labels?.['cpu'], 'total');
    assert.ok(Number(cpu.value) > 0);
    const ws = mine('container_memory_working_set_bytes');
    assert.ok(Number(ws.value) > 0);
    assert.deepEqual(
      { ...ws.labels, id: undefined },
      {
        container: 'worker',
        id: undefined,
        image: worker.image.image,
        name: worker.id,
        namespace: ns,
        pod: podName,
      },
    );
    // The container's cgroup: under the pod's, named by its id.
    assert.ok(ws.labels?.['id']?.includes(worker.id), ws.labels?.['id']);
    assert.ok(Number(mine('container_memory_usage_bytes').value) > 0);
    assert.ok(Number(mine('container_start_time_seconds').value) > 0);
    mine('container_memory_rss');
    mine('container_last_seen');
    // The pod cgroup's series, and the network on the sandbox's.
    const podCg = families
      .get('container_memory_working_set_bytes')
      ?.metrics.find(
        (x) => x.labels?.['pod'] === podName && x.labels['container'] === '' && x.labels['name'] === '',
      );
    // Kubelets on a private test stack run without per-pod cgroups (see KubeletProcess): containerd
    // then files the container under /k8s.io and there is no pod cgroup to report.
    if (ws.labels?.['id']?.startsWith('/k8s.io/')) assert.equal(podCg, undefined);
    else assert.ok(Number(podCg?.value) > 0, 'the pod cgroup series');
    const rx = families
      .get('container_network_receive_bytes_total')
      ?.metrics.find((x) => x.labels?.['pod'] === podName && x.labels['interface'] === 'eth0');
    assert.ok(rx, 'network on the sandbox series');
    assert.equal(rx.labels?.['container'], '');
    assert.equal(families.get('container_scrape_error')?.metrics[0]?.value, '0');
    assert.ok(Number(families.get('machine_cpu_cores')?.metrics[0]?.value) >= 1);
    assert.ok(Number(families.get('machine_memory_bytes')?.metrics[0]?.value) > 0);
  });
});
