/**
 * Probe fields that slipped past validation (a negative, fractional or NaN period, a negative timeout
 * or threshold) are floored at upstream's minimum of 1, so no worker spins and no probe times out at once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Pod, Probe } from '../../../src/api/core-v1.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { ProberManager } from '../../../src/prober/prober-manager.js';
import { probeSeconds, type ProbeRunner } from '../../../src/prober/prober.js';
import { normalizeProbe } from '../../../src/prober/worker.js';

/** Stops a runaway worker: past this many probes the fake prober never answers again. */
const RUNAWAY_CALLS = 200;

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

/** How many probes one liveness worker with this spec runs in 10 s of fake time. */
async function probesIn10s(spec: Probe): Promise<number> {
  const clock = new FakeClock();
  let calls = 0;
  const prober: ProbeRunner = {
    probe() {
      calls++;
      if (calls > RUNAWAY_CALLS) return new Promise(() => undefined);
      return Promise.resolve({ result: 'Success' });
    },
  };
  const manager = new ProberManager({
    runtimeService: { execSync: () => Promise.reject(new Error('not used')) },
    getContainerStatus: () => ({
      containerId: 'containerd://c1',
      state: 'running',
      startedAtMs: clock.now() - 60_000,
      podIP: '10.244.0.9',
    }),
    kubernetesVersion: 'v1.30.0',
    clock,
    random: () => 0,
    prober,
  });
  const pod: Pod = {
    metadata: { name: 'p', namespace: 'default', uid: 'u1' },
    spec: { containers: [{ name: 'app', livenessProbe: { exec: { command: ['true'] }, ...spec } }] },
  };
  manager.addPod(pod);
  for (let i = 0; i < 10; i++) {
    clock.advance(1000);
    await flush();
  }
  manager.stop();
  return calls;
}

describe('probe period floors', () => {
  for (const periodSeconds of [-1, 0.001, Number.NaN, -Infinity, 1e-9]) {
    test(`periodSeconds ${periodSeconds}: at most one probe a second`, async () => {
      const calls = await probesIn10s({ periodSeconds });
      assert.ok(calls <= 11, `${calls} probes in 10 s`);
      assert.ok(calls >= 1, 'the probe still runs');
    });
  }

  test('periodSeconds 0 is the API default of 10 s', async () => {
    assert.equal(await probesIn10s({ periodSeconds: 0 }), 2, 'at 0 s and 10 s');
  });

  test('whole seconds at least 1; 0 and absent are the default; huge values stay in int32', () => {
    assert.equal(probeSeconds(-1, 10), 1);
    assert.equal(probeSeconds(0.001, 10), 1);
    assert.equal(probeSeconds(2.7, 10), 2);
    assert.equal(probeSeconds(Number.NaN, 10), 10);
    assert.equal(probeSeconds(undefined, 10), 10);
    assert.equal(probeSeconds(0, 1), 1);
    assert.equal(probeSeconds(Infinity, 10), 2 ** 31 - 1);
    assert.equal(probeSeconds('5' as unknown as number, 10), 10);
  });

  test('normalizeProbe floors period and thresholds, and a negative initial delay is none', () => {
    assert.deepEqual(
      normalizeProbe(
        { periodSeconds: -1, failureThreshold: -3, successThreshold: -2, initialDelaySeconds: -5 },
        'readiness',
      ),
      { initialDelaySeconds: 0, periodSeconds: 1, successThreshold: 1, failureThreshold: 1 },
    );
  });
});
