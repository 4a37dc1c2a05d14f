/**
 * The node page's live feed: what it costs the kubelet to keep open pages up to date. The real
 * NodePageFeed over a source of N synthetic pods (each with a probe and a last termination), three
 * pages subscribed (their sinks only count bytes), pushes driven by a fake clock so only the work
 * is measured. Three shapes a second:
 *  - quiet: nothing changed (the steady state of a healthy node): only the comparison runs;
 *  - churn: a tenth of the pods changed status and one event was recorded;
 *  - all: every pod changed (the worst case, as after a kubelet restart).
 * Figures: CPU ms per push (user+system of this process, over all pushes), the share of one core
 * at one push a second, bytes sent per push to one page, and the first snapshot's size.
 *
 * Env: BENCH_NODE_PAGE_SIZES (default "100,1000"), BENCH_NODE_PAGE_PUSHES (default 120; 20 quick).
 */
import type { Pod } from '../src/api/core-v1.js';
import { EventStore, StoreEventRecorder } from '../src/events/event-store.js';
import { FakeClock } from '../src/lib/clock.js';
import { NodePageFeed } from '../src/nodepage/node-page-feed.js';
import type { NodePageSource } from '../src/nodepage/node-page-model.js';
import { emit, envNumber, quickMode, say } from './report.js';

const BENCH = 'node-page';
const PAGES = 3;

function benchPod(i: number, generation: number, startMs: number): Pod {
  const started = new Date(startMs + generation * 1000).toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `pod-${i}`,
      namespace: `ns-${i % 10}`,
      uid: `uid-${i}`,
      annotations: { 'kubernetes.io/config.source': 'file' },
    },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'busybox',
          readinessProbe: { exec: { command: ['true'] }, periodSeconds: 10 },
        },
        { name: 'sidecar', image: 'busybox' },
      ],
    },
    status: {
      phase: 'Running',
      podIP: `10.244.${(i >> 8) & 255}.${i & 255}`,
      startTime: new Date(startMs).toISOString(),
      conditions: [{ type: 'Ready', status: 'True' }],
      containerStatuses: ['app', 'sidecar'].map((name) => ({
        name,
        ready: true,
        restartCount: generation,
        image: 'docker.io/library/busybox:latest',
        imageID: 'sha256:0123',
        containerID: `containerd://${i}-${name}-${generation}`,
        started: true,
        state: { running: { startedAt: started } },
        ...(generation > 0
          ? { lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: started } } }
          : {}),
      })),
    },
  } as Pod;
}

function measure(n: number, pushes: number): void {
  const clock = new FakeClock();
  const startMs = clock.now() - 3600_000;
  const store = new EventStore();
  const recorder = new StoreEventRecorder({ store, nodeName: 'bench', clock });
  const generations = new Array<number>(n).fill(0);
  let pods = generations.map((g, i) => benchPod(i, g, startMs));
  const source: NodePageSource = {
    nodeName: 'bench',
    kubeletVersion: 'v1.30.0',
    runtime: { name: 'containerd', version: '1.6.20' },
    startedAtMs: startMs,
    now: () => clock.now(),
    pods: () => pods,
    node: () => undefined,
    pleg: () => ({ healthy: true }),
    pressure: () => ({ memory: false, disk: false, pid: false }),
    probe: () => ({ lastResult: 'Success', resultRun: 3 }),
    backoffDelayMs: () => 0,
    events: store,
  };
  const feed = new NodePageFeed(source, { clock });
  let bytes = 0;
  let snapshotBytes = 0;
  for (let p = 0; p < PAGES; p++)
    feed.subscribe((event, data) => {
      if (p !== 0) return;
      if (event === 'snapshot') snapshotBytes = data.length;
      else bytes += data.length;
    });
  emit({
    bench: BENCH,
    n,
    metric: 'snapshot_kib',
    value: snapshotBytes / 1024,
    note: 'first snapshot a page gets',
  });

  for (const shape of ['quiet', 'churn', 'all'] as const) {
    bytes = 0;
    const before = process.cpuUsage();
    for (let r = 0; r < pushes; r++) {
      if (shape !== 'quiet') {
        const changed = shape === 'all' ? n : Math.max(1, Math.floor(n / 10));
        for (let k = 0; k < changed; k++) {
          const i = (r * changed + k) % n;
          generations[i]!++;
        }
        pods = generations.map((g, i) => benchPod(i, g, startMs));
        recorder.event(
          pods[r % n]!,
          'spec.containers{app}',
          'Normal',
          'Started',
          `Started container app ${r}`,
        );
      }
      clock.advance(1000);
    }
    const cpu = process.cpuUsage(before);
    // The pods are rebuilt by the bench itself between pushes; that is the source's cost, not the feed's.
    const rebuild = shape === 'quiet' ? 0 : rebuildCostMs(n, generations, startMs);
    const msPerPush = Math.max(0, (cpu.user + cpu.system) / 1000 / pushes - rebuild);
    emit({
      bench: BENCH,
      n,
      metric: `${shape}_cpu_ms_per_push`,
      value: msPerPush,
      note: `${PAGES} pages open`,
    });
    emit({
      bench: BENCH,
      n,
      metric: `${shape}_cpu_cores`,
      value: msPerPush / 1000,
      note: 'at one push a second',
    });
    emit({
      bench: BENCH,
      n,
      metric: `${shape}_kib_per_push`,
      value: bytes / 1024 / pushes,
      note: 'to one page',
    });
  }
  feed.stop();
}

/** CPU ms the bench spends making the N pod objects once (subtracted from the feed's figure). */
function rebuildCostMs(n: number, generations: number[], startMs: number): number {
  const rounds = 5;
  const before = process.cpuUsage();
  for (let r = 0; r < rounds; r++) generations.map((g, i) => benchPod(i % n, g, startMs));
  const cpu = process.cpuUsage(before);
  return (cpu.user + cpu.system) / 1000 / rounds;
}

const sizes = (process.env.BENCH_NODE_PAGE_SIZES ?? '100,1000').split(',').map(Number);
const pushes = envNumber('BENCH_NODE_PAGE_PUSHES', quickMode() ? 20 : 120);
for (const n of sizes) {
  say(`node-page: ${n} pods, ${pushes} pushes per shape`);
  measure(n, pushes);
}
