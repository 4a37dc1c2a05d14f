import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeKubeRuntime } from '../helpers/fake-kube-runtime.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { MetricsRegistry } from '../../../src/lib/metrics.js';
import { GenericPLEG } from '../../../src/pleg/generic-pleg.js';
import { InMemoryPodCache } from '../../../src/pleg/pod-cache.js';
import { registerPlegMetrics } from '../../../src/pleg/pleg-metrics.js';

describe("upstream's PLEG metrics", () => {
  it('relist durations and intervals, the last relist in whole seconds, and discarded events', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 27, 12, 0, 0, 700));
    const registry = new MetricsRegistry();
    // Read at scrape time, once the PLEG exists (as build-kubelet wires it).
    const hooks = registerPlegMetrics(registry, () => pleg.metrics());
    const pleg = new GenericPLEG({
      runtime: new FakeKubeRuntime(),
      cache: new InMemoryPodCache(),
      clock,
      onRelist: hooks.onRelist,
      onRelistStart: hooks.onRelistStart,
    });
    const value = async (series: string): Promise<number | undefined> => {
      const line = (await registry.expose()).split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };

    assert.equal(await value('kubelet_pleg_last_seen_seconds'), 0, 'no relist yet');
    await pleg.relist();
    clock.advance(1500);
    await pleg.relist();
    clock.advance(2000);
    await pleg.relist();

    assert.equal(await value('kubelet_pleg_relist_duration_seconds_count'), 3);
    // The first relist has no earlier one to be an interval from.
    assert.equal(await value('kubelet_pleg_relist_interval_seconds_count'), 2);
    assert.equal(await value('kubelet_pleg_relist_interval_seconds_sum'), 3.5);
    assert.equal(await value('kubelet_pleg_last_seen_seconds'), Math.floor(clock.now() / 1000));
    assert.equal(await value('kubelet_pleg_discard_events'), 0);
  });
});
