/**
 * The CPU of two cluster-mode paths of a pod start, in process (process.cpuUsage: the whole process),
 * per item in µs:
 * - "watch": BENCH_PODS pods, each through WATCH_EVENTS_PER_POD watch events (ADDED, then status
 *   changes as the kubelet's own patches come back), handed to PodConfig as the API source hands
 *   them: the reflector's whole list as a SET on each change, each object marked with its source
 *   once (ApiSource.markedCopy), so all but the changed pod are the same objects as last time. The
 *   pods are the real pod of bench/fixtures/api-content-type/pod.json, renamed; every event's object
 *   is decoded before the measured window. A listener takes the merged updates, as the sync loop.
 * - "events": EVENTS_PER_POD events per pod recorded as cluster mode does, through two correlators
 *   (the API recorder's, whose writes come back through updateState, and the node's store's): the
 *   event's name, makeEvent, correlate.
 *
 * With BENCH_WATCH_BASELINE (another checkout's root, e.g. a worktree of main; its .ts is loaded
 * through tsx) its PodConfig and correlator are measured too, the two taking turns within each round;
 * the figure is the median over BENCH_ROUNDS rounds, with the per-round ratio new/old.
 *
 * Run: node --import tsx bench/pod-watch-path.ts [watch|events]   Env: BENCH_ROUNDS (9), BENCH_PODS (100),
 *      BENCH_REPEAT (stage repetitions per round, 20), BENCH_WATCH_BASELINE.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pod } from '../src/api/core-v1.js';
import { emit, envNumber, median, say } from './report.js';

const BENCH = 'pod-watch-path';
const ROUNDS = envNumber('BENCH_ROUNDS', 9);
const PODS = envNumber('BENCH_PODS', 100);
const REPEAT = envNumber('BENCH_REPEAT', 20);
// A 100-pod cluster start (docs/benchmarks.md): about 8 pod watch events and 5-6 events per pod.
const WATCH_EVENTS_PER_POD = 8;
const EVENTS_PER_POD = 6;

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(here, 'fixtures/api-content-type/pod.json');

interface Side {
  name: string;
  PodConfig: typeof import('../src/config/pod-config.js').PodConfig;
  EventCorrelator: typeof import('../src/events/event-correlator.js').EventCorrelator;
  eventTime: typeof import('../src/events/event-correlator.js').eventTime;
  makeEvent: typeof import('../src/events/event-recorder.js').makeEvent;
  podReference: typeof import('../src/events/event-recorder.js').podReference;
}

async function loadSide(name: string, root: string): Promise<Side> {
  const mod = (rel: string) => import(path.join(root, rel));
  const config = (await mod('src/config/pod-config.ts')) as typeof import('../src/config/pod-config.js');
  const corr = (await mod(
    'src/events/event-correlator.ts',
  )) as typeof import('../src/events/event-correlator.js');
  const rec = (await mod('src/events/event-recorder.ts')) as typeof import('../src/events/event-recorder.js');
  return {
    name,
    PodConfig: config.PodConfig,
    EventCorrelator: corr.EventCorrelator,
    eventTime: corr.eventTime,
    makeEvent: rec.makeEvent,
    podReference: rec.podReference,
  };
}

function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** Pod i as the watch sends it at its k-th event: ADDED pending, then the kubelet's status steps. */
function podVersion(base: Pod, i: number, k: number): Pod {
  const pod = JSON.parse(JSON.stringify(base)) as Pod;
  pod.metadata.name = `bench-${i}`;
  pod.metadata.uid = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
  pod.metadata.resourceVersion = String(1000 + k * PODS + i);
  const status = pod.status!;
  status.phase = k < 6 ? 'Pending' : 'Running';
  status.conditions = (status.conditions ?? []).slice(0, Math.min(k + 1, 5));
  status.containerStatuses = k < 3 ? undefined : status.containerStatuses?.slice(0, k - 2);
  if (k < 4) delete status.podIP;
  return pod;
}

function watchEvents(): Pod[][] {
  const base = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Pod;
  const byPod: Pod[][] = [];
  for (let i = 0; i < PODS; i++) {
    byPod.push(Array.from({ length: WATCH_EVENTS_PER_POD }, (_, k) => podVersion(base, i, k)));
  }
  return byPod;
}

/** ApiSource's markSource: a copy as far as changed, carrying the config.source annotation. */
function markSource(pod: Pod): Pod {
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      annotations: { ...pod.metadata.annotations, 'kubernetes.io/config.source': 'api' },
    },
  };
}

function runWatch(side: Side, byPod: Pod[][]): number {
  const config = new side.PodConfig();
  const channel = config.channel('api');
  let delivered = 0;
  config.onUpdate((u) => (delivered += u.pods.length));
  const marked = new WeakMap<Pod, Pod>();
  const mark = (pod: Pod) => {
    let copy = marked.get(pod);
    if (!copy) marked.set(pod, (copy = markSource(pod)));
    return copy;
  };
  const list: Pod[] = [];
  channel({ op: 'SET', pods: [] });
  // Events arrive pod after pod in waves: all pods created, then each one's status steps.
  for (let k = 0; k < WATCH_EVENTS_PER_POD; k++) {
    for (let i = 0; i < byPod.length; i++) {
      list[i] = byPod[i]![k]!;
      channel({ op: 'SET', pods: list.map(mark) });
    }
  }
  config.stop();
  return delivered;
}

const REASONS: [string, string][] = [
  ['Pulled', 'Container image "busybox:1.36" already present on machine'],
  ['Created', 'Created container app'],
  ['Started', 'Started container app'],
  ['Pulled', 'Container image "busybox:1.36" already present on machine and more'],
  ['Created', 'Created container sidecar'],
  ['Started', 'Started container sidecar'],
];

function runEvents(side: Side, pods: Pod[]): number {
  let nowMs = 1_765_000_000_000;
  const clock = { now: () => nowMs } as unknown as ConstructorParameters<Side['EventCorrelator']>[0]['clock'];
  const api = new side.EventCorrelator({ clock });
  const store = new side.EventCorrelator({ clock });
  let written = 0;
  for (const pod of pods) {
    for (let e = 0; e < EVENTS_PER_POD; e++) {
      nowMs += 3;
      const [reason, message] = REASONS[e % REASONS.length]!;
      const ref = side.podReference(pod, `spec.containers{${e < 3 ? 'app' : 'sidecar'}}`);
      for (const corr of [api, store]) {
        const event = side.makeEvent(ref, 'Normal', reason, message, {
          name: corr.eventName(ref.name ?? ''),
          time: side.eventTime(nowMs),
          component: 'kubelet',
          host: 'bench-node',
        });
        const result = corr.correlate(event);
        if (corr === api && !result.dropped) {
          corr.updateState({ ...result.event, metadata: { ...result.event.metadata, resourceVersion: '1' } });
          written++;
        }
      }
    }
  }
  return written;
}

async function main(): Promise<void> {
  const sides = [await loadSide('this', path.join(here, '..'))];
  const baseline = process.env.BENCH_WATCH_BASELINE;
  if (baseline) sides.unshift(await loadSide('baseline', path.resolve(baseline)));
  const byPod = watchEvents();
  const pods = byPod.map((versions) => versions.at(-1)!);
  const stages = {
    watch: { items: PODS * WATCH_EVENTS_PER_POD, run: (s: Side) => runWatch(s, byPod) },
    events: { items: PODS * EVENTS_PER_POD, run: (s: Side) => runEvents(s, pods) },
  };
  const only = process.argv[2];
  if (only !== undefined && !(only in stages)) throw new Error(`unknown stage ${only}: watch or events`);
  for (const [stage, { items, run }] of Object.entries(stages)) {
    if (only !== undefined && stage !== only) continue;
    for (const side of sides) run(side); // warm-up
    const perItem = new Map<string, number[]>(sides.map((s) => [s.name, []]));
    const ratios: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      const round = new Map<string, number>();
      for (const side of order) {
        const t0 = cpuMicros();
        for (let n = 0; n < REPEAT; n++) run(side);
        const us = (cpuMicros() - t0) / (REPEAT * items);
        round.set(side.name, us);
        perItem.get(side.name)!.push(us);
      }
      if (baseline) ratios.push(round.get('this')! / round.get('baseline')!);
    }
    for (const side of sides) {
      const values = perItem.get(side.name)!;
      emit({
        bench: BENCH,
        n: PODS,
        metric: `${stage}_${side.name}_us_per_item`,
        value: median(values),
        min: Math.min(...values),
        max: Math.max(...values),
        rounds: ROUNDS,
        note: stage === 'watch' ? 'per pod watch event' : 'per event recorded (two correlators)',
      });
    }
    if (baseline) {
      emit({
        bench: BENCH,
        n: PODS,
        metric: `${stage}_ratio_this_to_baseline`,
        value: median(ratios),
        min: Math.min(...ratios),
        max: Math.max(...ratios),
        rounds: ROUNDS,
      });
    }
    say(
      `${stage}: ${sides.map((s) => `${s.name} ${median(perItem.get(s.name)!).toFixed(2)} µs`).join(', ')}`,
    );
  }
}

await main();
