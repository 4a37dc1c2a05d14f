/**
 * Pod status throughput: what each syncPod does with a pod's status, in process and on the real
 * code: generateAPIPodStatus (runtime state → v1 PodStatus, against the last reported status) then
 * LocalStatusManager.setPodStatus (copy, monotonic checks, de-duplication, versioning, hand-off to
 * the sink). The sink only counts what reaches it.
 *
 * Two in-process shapes, with 100 and 1,000 pods updated round-robin:
 *  - unchanged: the runtime reports the same state each time (a resync of quiet pods): the update is
 *    recognised as a duplicate and dropped;
 *  - changed: the container restarted since the last sync (new container ID, restart count, last
 *    state): a new version reaches the sink every time.
 * And one through to an API server (`api`): the same changed updates, with ApiStatusSink as the
 * sink (a GET and a strategic merge PATCH of pods/status per pod sync, 4 pods at a time) over HTTP
 * to the test API server of test/apiserver/ on loopback, in this same process (so its CPU is in the
 * figure too). Each round changes every pod's status once and waits until the API has them all;
 * the client is not rate limited here, while a kubelet's is (kubeAPIQPS 50, burst 100, so about 25
 * pod status syncs per second once the burst is spent).
 *
 * Env: BENCH_STATUS_SIZES (default "100,1000"), BENCH_STATUS_MS (time per shape, default 2000),
 * BENCH_STATUS_API=0 to leave out the API shape.
 */
import { performance } from 'node:perf_hooks';
import type { Pod, PodStatus } from '../src/api/core-v1.js';
import { RestClient } from '../src/k8s/rest-client.js';
import type { KubeContainerStatus, KubePodStatus } from '../src/kuberuntime/types.js';
import { realClock } from '../src/lib/clock.js';
import { ApiStatusSink } from '../src/status/api-status-sink.js';
import { generateAPIPodStatus } from '../src/status/generate-api-pod-status.js';
import { LocalStatusManager } from '../src/status/status-manager.js';
import { startTestApiServer } from '../test/apiserver/test-api-server.js';
import { emit, envNumber, quickMode, say } from './report.js';

const BENCH = 'status';
const NODE_IPS = ['10.0.0.1'];
const BATCH = 100;

function benchPod(index: number): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `status-${index}-bench-node`,
      namespace: 'bench',
      uid: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
      annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': String(index) },
    },
    spec: {
      nodeName: 'bench-node',
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'sleep',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sleep', '3600'],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
        },
      ],
    },
  };
}

function containerStatus(
  pod: Pod,
  attempt: number,
  state: 'running' | 'exited',
  startMs: number,
): KubeContainerStatus {
  const id = `${pod.metadata.uid}-${attempt}`;
  return {
    containerID: `containerd://${id}`,
    id,
    name: 'sleep',
    state,
    createdAtMs: startMs - 100,
    startedAtMs: startMs,
    finishedAtMs: state === 'exited' ? startMs + 1000 : 0,
    exitCode: state === 'exited' ? 137 : 0,
    image: 'docker.io/library/busybox:latest',
    imageRef: 'sha256:2b6f6a9d4a3c1f3e5d7a9b8c0e1f2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6',
    hash: 'a1b2c3d4',
    restartCount: attempt,
    reason: state === 'exited' ? 'Error' : '',
    message: '',
    podSandboxId: `${pod.metadata.uid}-sandbox`,
  };
}

/** The runtime's view of the pod after `attempt` restarts: the running container, then the one before it. */
function runtimeStatus(pod: Pod, attempt: number, baseMs: number): KubePodStatus {
  const uid = pod.metadata.uid ?? '';
  const containerStatuses = [containerStatus(pod, attempt, 'running', baseMs + attempt * 2000)];
  if (attempt > 0)
    containerStatuses.push(containerStatus(pod, attempt - 1, 'exited', baseMs + attempt * 1000));
  return {
    uid,
    name: pod.metadata.name ?? '',
    namespace: pod.metadata.namespace ?? '',
    ips: ['10.244.77.10'],
    sandboxStatuses: [
      {
        id: `${uid}-sandbox`,
        metadata: { name: pod.metadata.name ?? '', namespace: 'bench', uid, attempt: 0 },
        state: 'SANDBOX_READY',
        createdAt: baseMs * 1_000_000,
        network: { ip: '10.244.77.10', additionalIps: [] },
        labels: {},
        annotations: {},
        runtimeHandler: '',
      },
    ],
    containerStatuses,
    timestampMs: baseMs,
  };
}

interface Run {
  updates: number;
  delivered: number;
  wallMs: number;
  cpuMs: number;
}

/** What the kubelet's syncPod does with a status, for pod: generate it against the last one, then record it. */
function syncStatus(manager: LocalStatusManager, pod: Pod, status: KubePodStatus): void {
  const uid = pod.metadata.uid ?? '';
  const apiStatus: PodStatus = generateAPIPodStatus({
    pod,
    podStatus: status,
    oldPodStatus: manager.getPodStatus(uid),
    podIsTerminal: false,
    nowMs: realClock.now(),
    hostIPs: NODE_IPS,
  });
  manager.setPodStatus(pod, apiStatus);
}

function runShape(pods: number, changed: boolean, durationMs: number): Run {
  let delivered = 0;
  const manager = new LocalStatusManager({
    clock: realClock,
    sink: { podStatusChanged: () => void delivered++ },
  });
  const baseMs = realClock.now() - 3_600_000;
  const podList = Array.from({ length: pods }, (_, i) => benchPod(i));
  const attempts = new Array<number>(pods).fill(0);
  // Every pod has a status before timing starts, as after its first sync.
  podList.forEach((pod) => syncStatus(manager, pod, runtimeStatus(pod, 0, baseMs)));
  delivered = 0;

  let updates = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let wallMs = 0;
  while (wallMs < durationMs) {
    // The clock is read once per batch: performance.now itself is not free at a million calls.
    for (let b = 0; b < BATCH; b++) {
      const i = updates % pods;
      const pod = podList[i]!;
      if (changed) attempts[i]!++;
      syncStatus(manager, pod, runtimeStatus(pod, attempts[i]!, baseMs));
      updates++;
    }
    wallMs = performance.now() - t0;
  }
  const cpu = process.cpuUsage(cpu0);
  return { updates, delivered, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** Changed statuses through ApiStatusSink to the test API server, in rounds of one update per pod. */
async function runApiShape(pods: number, durationMs: number): Promise<Run & { patches: number }> {
  const server = await startTestApiServer({ nodeName: 'bench-node', plainHttp: true });
  const client = new RestClient({
    config: { server: server.url, token: server.tokenFor(server.nodeUser) },
    qps: -1,
  });
  const sink = new ApiStatusSink({ client });
  try {
    let delivered = 0;
    const manager = new LocalStatusManager({
      clock: realClock,
      sink: {
        podStatusChanged: (update) => {
          delivered++;
          sink.podStatusChanged(update);
        },
      },
    });
    // Pods as the scheduler leaves them in the API: created, then bound to this node.
    server.store.create('namespaces', { metadata: { name: 'bench' } });
    const podList: Pod[] = [];
    for (let i = 0; i < pods; i++) {
      const { nodeName: _unbound, ...spec } = benchPod(i).spec;
      server.store.create('pods', { metadata: { name: `status-${i}`, namespace: 'bench' }, spec });
      podList.push(server.store.bindPod(`status-${i}`, 'bench', 'bench-node') as unknown as Pod);
    }
    const baseMs = realClock.now() - 3_600_000;
    const attempts = new Array<number>(pods).fill(0);
    podList.forEach((pod) => syncStatus(manager, pod, runtimeStatus(pod, 0, baseMs)));
    await sink.idle();
    const patches0 = server.requests.filter((r) => r.verb === 'patch').length;
    delivered = 0;

    let updates = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let wallMs = 0;
    while (wallMs < durationMs) {
      podList.forEach((pod, i) => syncStatus(manager, pod, runtimeStatus(pod, ++attempts[i]!, baseMs)));
      updates += pods;
      await sink.idle();
      wallMs = performance.now() - t0;
    }
    const cpu = process.cpuUsage(cpu0);
    const patches = server.requests.filter((r) => r.verb === 'patch').length - patches0;
    // Every round's newest status must be what the API holds now.
    const last = server.store.tryGet('pods', 'status-0', 'bench') as unknown as Pod | undefined;
    if (last?.status?.containerStatuses?.[0]?.restartCount !== attempts[0]) {
      throw new Error(
        `the API has restartCount ${last?.status?.containerStatuses?.[0]?.restartCount} for status-0, not ${attempts[0]}`,
      );
    }
    return { updates, delivered, wallMs, cpuMs: (cpu.user + cpu.system) / 1000, patches };
  } finally {
    await sink.stop();
    client.close();
    await server.stop();
  }
}

function report(pods: number, shape: string, run: Run): void {
  const perSecond = (run.updates / run.wallMs) * 1000;
  emit({
    bench: BENCH,
    n: pods,
    metric: `${shape}_updates_per_s`,
    value: perSecond,
    note: `generateAPIPodStatus + setPodStatus, in process, to a counting sink (no API server); ${run.updates} updates, ${run.delivered} delivered`,
  });
  emit({ bench: BENCH, n: pods, metric: `${shape}_us_per_update`, value: (run.wallMs * 1000) / run.updates });
  emit({
    bench: BENCH,
    n: pods,
    metric: `${shape}_cpu_us_per_update`,
    value: (run.cpuMs * 1000) / run.updates,
  });
  say(
    `status n=${pods} ${shape}: ${Math.round(perSecond)} updates/s, ${run.delivered} of ${run.updates} delivered`,
  );
}

async function main(): Promise<void> {
  const sizes = (process.env.BENCH_STATUS_SIZES ?? '100,1000').split(',').map((s) => Number(s.trim()));
  const durationMs = envNumber('BENCH_STATUS_MS', quickMode() ? 1000 : 2000);
  const withApi = process.env.BENCH_STATUS_API !== '0';
  say(
    `status: ${sizes.join(', ')} pods, ${durationMs} ms per shape${withApi ? ', then through the test API server' : ''}`,
  );
  // A short warm-up so the first shape is not the one that pays for the JIT.
  runShape(10, true, Math.min(500, durationMs));
  for (const pods of sizes) {
    const unchanged = runShape(pods, false, durationMs);
    if (unchanged.delivered !== 0)
      throw new Error(`unchanged statuses were delivered ${unchanged.delivered} times`);
    report(pods, 'unchanged', unchanged);
    const changed = runShape(pods, true, durationMs);
    if (changed.delivered !== changed.updates) {
      throw new Error(`only ${changed.delivered} of ${changed.updates} changed statuses were delivered`);
    }
    report(pods, 'changed', changed);
  }
  if (!withApi) return;
  for (const pods of sizes) {
    const api = await runApiShape(pods, durationMs);
    const perSecond = (api.updates / api.wallMs) * 1000;
    emit({
      bench: BENCH,
      n: pods,
      metric: 'api_updates_per_s',
      value: perSecond,
      note:
        'changed statuses through ApiStatusSink (GET + strategic merge PATCH) to the in-process test API ' +
        `server over loopback HTTP, unthrottled client; ${api.updates} updates, ${api.patches} PATCHes`,
    });
    emit({
      bench: BENCH,
      n: pods,
      metric: 'api_cpu_us_per_update',
      value: (api.cpuMs * 1000) / api.updates,
      note: 'kubelet side and test API server together',
    });
    say(`status n=${pods} api: ${Math.round(perSecond)} updates/s reached the API (${api.patches} PATCHes)`);
  }
}

main().catch((err: unknown) => {
  say(`status bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
