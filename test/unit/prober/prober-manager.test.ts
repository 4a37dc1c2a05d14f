import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Container, Pod, Probe } from '../../../src/api/core-v1.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { ProberManager, type ProbeUpdate } from '../../../src/prober/prober-manager.js';
import type { ProbeRunner, ProbeType, ProbeVerdictResult } from '../../../src/prober/prober.js';
import type { ProbeContainerStatus } from '../../../src/prober/worker.js';

/** Lets the workers' promise chains run after the clock moved. */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

interface ProbeCall {
  probeType: ProbeType;
  container: string;
  containerId: string;
  podIP: string;
  atMs: number;
}

/** A scripted prober, a container status table and a manager over a FakeClock. */
function harness(opts: { random?: () => number; startOffsetMs?: number } = {}) {
  const clock = new FakeClock();
  const t0 = clock.now();
  const statuses = new Map<string, ProbeContainerStatus>();
  const calls: ProbeCall[] = [];
  const answers = new Map<string, ProbeVerdictResult[]>();
  const fallback = new Map<string, ProbeVerdictResult>();
  const pending: { resolve: (v: ProbeVerdictResult) => void; signal?: AbortSignal }[] = [];
  let holdProbes = false;
  const prober: ProbeRunner = {
    probe(probeType, _pod, container, target, signal) {
      calls.push({
        probeType,
        container: container.name,
        containerId: target.containerId,
        podIP: target.podIP,
        atMs: clock.now() - t0,
      });
      if (holdProbes) return new Promise((resolve) => pending.push({ resolve, signal }));
      const key = `${container.name}/${probeType}`;
      const queue = answers.get(key);
      const next = queue?.shift() ?? fallback.get(key) ?? { result: 'Success' };
      return Promise.resolve(next);
    },
  };
  const manager = new ProberManager({
    runtimeService: {
      execSync: () => Promise.reject(new Error('not used')),
    },
    getContainerStatus: (uid, name) => statuses.get(`${uid}/${name}`),
    kubernetesVersion: 'v1.30.0',
    clock,
    random: opts.random ?? (() => 0),
    prober,
  });
  const updates: ProbeUpdate[] = [];
  manager.onUpdate((u) => updates.push(u));
  return {
    clock,
    manager,
    calls,
    updates,
    pending,
    /** Elapsed fake time since the harness was made. */
    elapsedMs: () => clock.now() - t0,
    holdProbes: (v: boolean) => (holdProbes = v),
    script(container: string, probeType: ProbeType, ...results: ProbeVerdictResult['result'][]) {
      answers.set(
        `${container}/${probeType}`,
        results.map((result) => ({ result })),
      );
    },
    always(container: string, probeType: ProbeType, result: ProbeVerdictResult) {
      fallback.set(`${container}/${probeType}`, result);
    },
    run(uid: string, name: string, id: string, startedAgoMs = 0) {
      statuses.set(`${uid}/${name}`, {
        containerId: `containerd://${id}`,
        state: 'running',
        startedAtMs: clock.now() - startedAgoMs,
        podIP: '10.244.0.9',
      });
    },
    setState(uid: string, name: string, state: ProbeContainerStatus['state']) {
      const s = statuses.get(`${uid}/${name}`)!;
      statuses.set(`${uid}/${name}`, { ...s, state });
    },
    async advance(ms: number) {
      // Step a second at a time so promise chains settle between timers, as they would in real time.
      for (let done = 0; done < ms;) {
        const step = Math.min(1000, ms - done);
        clock.advance(step);
        done += step;
        await flush();
      }
      if (ms === 0) {
        clock.advance(0);
        await flush();
      }
    },
  };
}

function probe(p: Probe = {}): Probe {
  return { exec: { command: ['check'] }, periodSeconds: 10, timeoutSeconds: 1, ...p };
}

function pod(uid: string, containers: Container[], extra: Partial<Pod['spec']> = {}): Pod {
  return { metadata: { name: `pod-${uid}`, namespace: 'default', uid }, spec: { containers, ...extra } };
}

const ofType = (calls: ProbeCall[], t: ProbeType) => calls.filter((c) => c.probeType === t);

describe('ProberManager workers', () => {
  test('readiness starts as Failure, then follows successThreshold', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.script('app', 'readiness', 'Success', 'Success', 'Failure', 'Success', 'Success');
    h.manager.addPod(pod('u1', [{ name: 'app', readinessProbe: probe({ successThreshold: 2 }) }]));
    await h.advance(0);
    // First probe: a success, but one of two.
    assert.deepEqual(
      h.updates.map((u) => [u.probeType, u.result, u.containerID]),
      [['readiness', 'Failure', 'containerd://c1']],
    );
    assert.equal(h.manager.statusProbeResults.readiness?.get('containerd://c1'), false);
    await h.advance(10_000);
    assert.equal(h.manager.readinessResults.get('containerd://c1'), 'Success');
    assert.equal(h.manager.statusProbeResults.readiness?.get('containerd://c1'), true);
    // A single failure reaches failureThreshold 3? No: it stays Success until three in a row.
    await h.advance(10_000);
    assert.equal(h.manager.readinessResults.get('containerd://c1'), 'Success');
    await h.advance(20_000);
    assert.equal(h.updates.length, 2);
    assert.deepEqual(
      ofType(h.calls, 'readiness').map((c) => c.atMs),
      [0, 10_000, 20_000, 30_000, 40_000],
    );
    assert.equal(h.calls[0]!.containerId, 'c1');
    assert.equal(h.calls[0]!.podIP, '10.244.0.9');
  });

  test('readiness goes back to Failure after failureThreshold failures in a row', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.script('app', 'readiness', 'Success', 'Failure', 'Failure', 'Failure');
    h.manager.addPod(pod('u1', [{ name: 'app', readinessProbe: probe({ failureThreshold: 3 }) }]));
    await h.advance(0);
    assert.equal(h.manager.readinessResults.get('containerd://c1'), 'Success');
    await h.advance(20_000);
    assert.equal(h.manager.readinessResults.get('containerd://c1'), 'Success');
    await h.advance(10_000);
    assert.equal(h.manager.readinessResults.get('containerd://c1'), 'Failure');
    // Readiness keeps probing after it fails.
    await h.advance(10_000);
    assert.equal(ofType(h.calls, 'readiness').length, 5);
  });

  test('liveness: Failure after failureThreshold, then on hold until the container is replaced', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.always('app', 'liveness', { result: 'Failure' });
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe({ failureThreshold: 3 }) }]));
    await h.advance(0);
    assert.equal(h.manager.runtimeProbeResults.liveness('c1'), 'Success');
    await h.advance(20_000);
    assert.equal(h.manager.runtimeProbeResults.liveness('c1'), 'Failure');
    assert.deepEqual(
      h.updates.map((u) => [u.probeType, u.result]),
      [
        ['liveness', 'Success'],
        ['liveness', 'Failure'],
      ],
    );
    // On hold: the failing container is not probed again.
    await h.advance(60_000);
    assert.equal(ofType(h.calls, 'liveness').length, 3);
    assert.equal(h.manager.getWorker('u1', 'app', 'liveness')?.status.onHold, true);

    // The kubelet restarted it: a new ID starts over from Success and is probed again.
    h.run('u1', 'app', 'c2');
    h.always('app', 'liveness', { result: 'Success' });
    await h.advance(10_000);
    assert.equal(h.manager.runtimeProbeResults.liveness('c1'), undefined);
    assert.equal(h.manager.runtimeProbeResults.liveness('c2'), 'Success');
    assert.equal(ofType(h.calls, 'liveness').at(-1)?.containerId, 'c2');
  });

  test('a restart resets the run: failures of the old container do not count for the new one', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.always('app', 'readiness', { result: 'Failure' });
    h.script('app', 'readiness', 'Success');
    h.manager.addPod(pod('u1', [{ name: 'app', readinessProbe: probe({ failureThreshold: 3 }) }]));
    await h.advance(10_000); // Success, then one Failure
    assert.equal(h.manager.readinessResults.get('containerd://c1'), 'Success');
    await h.advance(10_000); // two failures in a row
    h.run('u1', 'app', 'c2');
    await h.advance(10_000); // the new container's first failure
    const w = h.manager.getWorker('u1', 'app', 'readiness')!;
    assert.equal(w.status.containerId, 'containerd://c2');
    assert.equal(w.status.resultRun, 1);
    // The new container starts as not ready.
    assert.equal(h.manager.readinessResults.get('containerd://c2'), 'Failure');
    assert.equal(h.manager.readinessResults.get('containerd://c1'), undefined);
  });

  test('initialDelaySeconds counts from the container start, in whole seconds', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe({ initialDelaySeconds: 15 }) }]));
    await h.advance(0);
    await h.advance(10_000); // 10 s in: still within the delay
    assert.equal(ofType(h.calls, 'liveness').length, 0);
    await h.advance(10_000);
    assert.deepEqual(
      ofType(h.calls, 'liveness').map((c) => c.atMs),
      [20_000],
    );
  });

  test('a container that started long ago is probed at once', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1', 60_000);
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe({ initialDelaySeconds: 30 }) }]));
    await h.advance(0);
    assert.equal(ofType(h.calls, 'liveness').length, 1);
  });

  test('a startup probe holds liveness and readiness back until it succeeds, then stops', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.script('app', 'startup', 'Failure', 'Failure', 'Success');
    h.manager.addPod(
      pod('u1', [
        {
          name: 'app',
          startupProbe: probe({ failureThreshold: 5 }),
          livenessProbe: probe(),
          readinessProbe: probe(),
        },
      ]),
    );
    await h.advance(0);
    assert.equal(h.manager.startupResults.get('containerd://c1'), 'Unknown');
    assert.equal(h.manager.statusProbeResults.startup?.get('containerd://c1'), false);
    await h.advance(10_000);
    assert.equal(ofType(h.calls, 'liveness').length, 0);
    assert.equal(ofType(h.calls, 'readiness').length, 0);
    await h.advance(10_000); // third startup probe: a success
    assert.equal(h.manager.startupResults.get('containerd://c1'), 'Success');
    assert.equal(h.manager.statusProbeResults.startup?.get('containerd://c1'), true);
    await h.advance(10_000);
    assert.equal(ofType(h.calls, 'startup').length, 3);
    assert.ok(ofType(h.calls, 'liveness').length >= 1);
    assert.ok(ofType(h.calls, 'readiness').length >= 1);
    assert.equal(h.manager.readinessResults.get('containerd://c1'), 'Success');
  });

  test('a startup probe that fails failureThreshold times is a Failure, then on hold', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.always('app', 'startup', { result: 'Failure' });
    h.manager.addPod(
      pod('u1', [{ name: 'app', startupProbe: probe({ failureThreshold: 2 }), livenessProbe: probe() }]),
    );
    await h.advance(10_000);
    assert.equal(h.manager.runtimeProbeResults.startup('c1'), 'Failure');
    await h.advance(30_000);
    assert.equal(ofType(h.calls, 'startup').length, 2);
    assert.equal(ofType(h.calls, 'liveness').length, 0);
    assert.ok(h.updates.some((u) => u.probeType === 'startup' && u.result === 'Failure'));
  });

  test('liveness and startup need one success whatever successThreshold says', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.script('app', 'startup', 'Success');
    h.manager.addPod(pod('u1', [{ name: 'app', startupProbe: probe({ successThreshold: 3 }) }]));
    await h.advance(0);
    assert.equal(h.manager.startupResults.get('containerd://c1'), 'Success');
  });

  test('a container not running is judged Failure; the worker ends when it will not restart', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.manager.addPod(pod('u1', [{ name: 'app', readinessProbe: probe() }], { restartPolicy: 'Never' }));
    await h.advance(0);
    h.setState('u1', 'app', 'exited');
    await h.advance(10_000);
    assert.equal(h.manager.workerCount(), 0);
    assert.equal(h.manager.readinessResults.get('containerd://c1'), undefined);
  });

  test('an exited container that will restart keeps its worker', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.manager.addPod(pod('u1', [{ name: 'app', readinessProbe: probe() }]));
    h.script('app', 'readiness', 'Success');
    await h.advance(0);
    h.setState('u1', 'app', 'exited');
    await h.advance(10_000);
    assert.equal(h.manager.workerCount(), 1);
    assert.equal(h.manager.readinessResults.get('containerd://c1'), 'Failure');
  });

  test('a container created but not started is left alone', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.setState('u1', 'app', 'created');
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe() }]));
    await h.advance(10_000);
    assert.equal(h.manager.runtimeProbeResults.liveness('c1'), 'Success');
    assert.equal(h.calls.length, 0);
  });

  test('no container yet: the worker waits and probes once it appears', async () => {
    const h = harness();
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe() }]));
    await h.advance(10_000);
    assert.equal(h.calls.length, 0);
    h.run('u1', 'app', 'c1', 5000);
    await h.advance(10_000);
    assert.equal(h.calls.length, 1);
  });

  test('a slow probe never overlaps the next tick; a missed tick runs once right after', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.holdProbes(true);
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe({ periodSeconds: 10 }) }]));
    await h.advance(0);
    assert.equal(h.calls.length, 1);
    await h.advance(25_000); // two ticks pass while the probe runs
    assert.equal(h.calls.length, 1);
    assert.equal(h.manager.getWorker('u1', 'app', 'liveness')?.status.probing, true);
    h.holdProbes(false);
    h.pending.shift()!.resolve({ result: 'Success' });
    await flush();
    // The held tick runs at once (t = 25 s), then the grid resumes at 30 s.
    assert.deepEqual(
      h.calls.map((c) => c.atMs),
      [0, 25_000],
    );
    await h.advance(5000);
    assert.deepEqual(
      h.calls.map((c) => c.atMs),
      [0, 25_000, 30_000],
    );
  });

  test('errors are thrown away: no verdict, no count', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.always('app', 'liveness', { result: 'Failure', error: new Error('runtime down') });
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe({ failureThreshold: 1 }) }]));
    await h.advance(30_000);
    assert.equal(h.calls.length, 4);
    assert.equal(h.manager.runtimeProbeResults.liveness('c1'), 'Success');
    assert.equal(h.manager.metricsSnapshot().samples.length, 0);
  });

  test('a pod being deleted: liveness is set to Success and its worker stops', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    const p = pod('u1', [{ name: 'app', livenessProbe: probe(), readinessProbe: probe() }]);
    p.metadata.deletionTimestamp = '2024-01-01T00:00:00Z';
    h.manager.addPod(p);
    await h.advance(0);
    assert.equal(h.manager.getWorker('u1', 'app', 'liveness'), undefined);
    assert.ok(h.manager.getWorker('u1', 'app', 'readiness'));
    assert.equal(ofType(h.calls, 'liveness').length, 0);
  });
});

describe('ProberManager lifecycle', () => {
  test('addPod starts one worker per probe, sidecars included, and twice is once', () => {
    const h = harness();
    const p = pod(
      'u1',
      [
        { name: 'app', livenessProbe: probe(), readinessProbe: probe(), startupProbe: probe() },
        { name: 'plain' },
      ],
      {
        initContainers: [
          { name: 'sidecar', restartPolicy: 'Always', readinessProbe: probe() },
          { name: 'init', readinessProbe: probe() },
        ],
      },
    );
    h.manager.addPod(p);
    h.manager.addPod(p);
    assert.equal(h.manager.workerCount(), 4);
    assert.ok(h.manager.getWorker('u1', 'sidecar', 'readiness'));
    assert.equal(h.manager.getWorker('u1', 'init', 'readiness'), undefined);
  });

  test('removePod stops the workers and drops their verdicts', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    const p = pod('u1', [{ name: 'app', livenessProbe: probe(), readinessProbe: probe() }]);
    h.manager.addPod(p);
    await h.advance(0);
    assert.equal(h.manager.readinessResults.get('containerd://c1'), 'Success');
    h.manager.removePod(p);
    assert.equal(h.manager.workerCount(), 0);
    assert.equal(h.manager.readinessResults.get('containerd://c1'), undefined);
    assert.equal(h.manager.runtimeProbeResults.liveness('c1'), undefined);
    const before = h.calls.length;
    await h.advance(30_000);
    assert.equal(h.calls.length, before);
    assert.equal(h.clock.pendingTimers(), 0);
  });

  test('stopLivenessAndStartup keeps readiness', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    const p = pod('u1', [
      { name: 'app', livenessProbe: probe(), readinessProbe: probe(), startupProbe: probe() },
    ]);
    h.manager.addPod(p);
    h.manager.stopLivenessAndStartup(p);
    assert.equal(h.manager.workerCount(), 1);
    assert.ok(h.manager.getWorker('u1', 'app', 'readiness'));
    // With the startup worker gone and no verdict left, the container counts as started.
    assert.equal(h.manager.isStarted('u1', 'app', 'containerd://c1'), true);
  });

  test('cleanupPods stops the workers of pods not desired', () => {
    const h = harness();
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe() }]));
    h.manager.addPod(pod('u2', [{ name: 'app', livenessProbe: probe() }]));
    h.manager.cleanupPods(['u2']);
    assert.equal(h.manager.getWorker('u1', 'app', 'liveness'), undefined);
    assert.ok(h.manager.getWorker('u2', 'app', 'liveness'));
  });

  test('a probe that finishes after its worker stopped changes nothing', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.holdProbes(true);
    const p = pod('u1', [{ name: 'app', readinessProbe: probe({ failureThreshold: 1 }) }]);
    h.manager.addPod(p);
    await h.advance(0);
    const inFlight = h.pending.shift()!;
    h.manager.removePod(p);
    assert.equal(inFlight.signal?.aborted, true);
    inFlight.resolve({ result: 'Success' });
    await flush();
    assert.equal(h.manager.readinessResults.get('containerd://c1'), undefined);
    assert.equal(h.updates.filter((u) => u.result === 'Success').length, 0);
  });

  test('stop ends every worker and addPod afterwards does nothing', () => {
    const h = harness();
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe() }]));
    h.manager.stop();
    assert.equal(h.manager.workerCount(), 0);
    h.manager.addPod(pod('u2', [{ name: 'app', livenessProbe: probe() }]));
    assert.equal(h.manager.workerCount(), 0);
    assert.equal(h.clock.pendingTimers(), 0);
  });
});

describe('ProberManager timing and metrics', () => {
  test('the first probe is jittered over a period while the kubelet has just started', async () => {
    const h = harness({ random: () => 0.5 });
    h.run('u1', 'app', 'c1', 60_000);
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe({ periodSeconds: 10 }) }]));
    await h.advance(4000);
    assert.equal(h.calls.length, 0);
    await h.advance(1000);
    assert.deepEqual(
      h.calls.map((c) => c.atMs),
      [5000],
    );
    await h.advance(10_000);
    assert.deepEqual(
      h.calls.map((c) => c.atMs),
      [5000, 15_000],
    );
  });

  test('no jitter once the kubelet has run for a period', async () => {
    const h = harness({ random: () => 0.9 });
    await h.advance(20_000);
    h.run('u1', 'app', 'c1', 60_000);
    h.manager.addPod(pod('u1', [{ name: 'app', livenessProbe: probe({ periodSeconds: 10 }) }]));
    await h.advance(0);
    assert.equal(h.calls.length, 1);
  });

  test('prober_probe_total counts verdicts per worker and forgets them with it', async () => {
    const h = harness();
    h.run('u1', 'app', 'c1');
    h.script('app', 'readiness', 'Failure', 'Success', 'Success');
    const p = pod('u1', [{ name: 'app', readinessProbe: probe() }]);
    h.manager.addPod(p);
    await h.advance(20_000);
    const snap = h.manager.metricsSnapshot();
    assert.equal(snap.name, 'prober_probe_total');
    const byResult = Object.fromEntries(snap.samples.map((s) => [s.labels.result, s.value]));
    assert.deepEqual(byResult, { failed: 1, successful: 2 });
    assert.deepEqual(snap.samples[0]!.labels, {
      probe_type: 'Readiness',
      result: 'failed',
      container: 'app',
      pod: 'pod-u1',
      namespace: 'default',
      pod_uid: 'u1',
    });
    h.manager.removePod(p);
    assert.equal(h.manager.metricsSnapshot().samples.length, 0);
  });
});
