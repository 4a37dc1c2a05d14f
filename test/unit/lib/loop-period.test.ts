/** Loop periods are floored, so no loop can spin on a zero, negative or NaN period. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { loopPeriodMs, MIN_LOOP_PERIOD_MS } from '../../../src/lib/loop-period.js';
import { GenericPLEG } from '../../../src/pleg/generic-pleg.js';
import { InMemoryPodCache } from '../../../src/pleg/pod-cache.js';
import { FakeKubeRuntime, flushPromises } from '../helpers/fake-kube-runtime.js';

const lines: string[] = [];
setLogSink((l) => lines.push(l));

test('a period that is not a finite number at least the floor becomes the floor, with a warning by name', () => {
  lines.length = 0;
  for (const bad of [0, -1, Number.NaN, Infinity, -Infinity, 1e-6, 5])
    assert.equal(loopPeriodMs('test loop', bad), MIN_LOOP_PERIOD_MS, String(bad));
  assert.equal(lines.filter((l) => l.includes('test loop')).length, 7);
  // A loop that asks again at every period is warned about once.
  assert.equal(loopPeriodMs('test loop', 0), MIN_LOOP_PERIOD_MS);
  assert.equal(lines.filter((l) => l.includes('test loop')).length, 7);
  assert.equal(loopPeriodMs('test loop', 1000), 1000);
  assert.equal(loopPeriodMs('test loop', 50, 100), 100);
});

for (const relistPeriodMs of [0, -1000, Number.NaN]) {
  test(`a PLEG with relistPeriodMs ${relistPeriodMs} relists at most once per floor period`, async () => {
    const clock = new FakeClock();
    const runtime = new FakeKubeRuntime();
    const pleg = new GenericPLEG({ runtime, cache: new InMemoryPodCache(), clock, relistPeriodMs });
    pleg.start();
    for (let i = 0; i < 10; i++) {
      clock.advance(MIN_LOOP_PERIOD_MS);
      await flushPromises();
    }
    await pleg.stop();
    const relists = runtime.calls.filter((c) => c === 'getPods').length;
    assert.ok(relists <= 11, `${relists} relists in 10 floor periods`);
  });
}
