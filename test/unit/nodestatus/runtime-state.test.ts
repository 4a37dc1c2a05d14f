import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { formatRuntimeCondition, RuntimeState } from '../../../src/nodestatus/runtime-state.js';
import { FakeCri } from './fixtures.js';

setLogSink(() => undefined);

describe('RuntimeState', () => {
  it('is not ready until the first status check, then down 30 s after the last good one', async () => {
    const clock = new FakeClock();
    const cri = new FakeCri();
    const state = new RuntimeState(clock);
    assert.deepEqual(state.runtimeErrors(), ['container runtime status check may not have completed yet']);
    await state.updateRuntimeUp(async () => (await cri.status()).status);
    assert.deepEqual(state.runtimeErrors(), []);
    assert.deepEqual(state.networkErrors(), []);

    cri.statusError = new Error('connection refused');
    clock.advance(29_999);
    await state.updateRuntimeUp(async () => (await cri.status()).status);
    assert.deepEqual(state.runtimeErrors(), []);
    clock.advance(1);
    assert.deepEqual(state.runtimeErrors(), ['container runtime is down']);
  });

  it("reports the runtime's conditions in Go's words", async () => {
    const clock = new FakeClock();
    const cri = new FakeCri();
    const state = new RuntimeState(clock);
    cri.conditions = [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      {
        type: 'NetworkReady',
        status: false,
        reason: 'NetworkPluginNotReady',
        message: 'Network plugin returns error: cni plugin not initialized',
      },
    ];
    await state.updateRuntimeUp(async () => (await cri.status()).status);
    assert.deepEqual(state.networkErrors(), [
      'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized',
    ]);
    cri.conditions = [{ type: 'RuntimeReady', status: false, reason: 'Broken', message: 'it broke' }];
    await state.updateRuntimeUp(async () => (await cri.status()).status);
    assert.deepEqual(state.networkErrors(), ['container runtime network not ready: <nil>']);
    assert.deepEqual(state.runtimeErrors(), [
      'container runtime not ready: RuntimeReady=false reason:Broken message:it broke',
    ]);
    assert.equal(formatRuntimeCondition(undefined), '<nil>');
  });

  it('names failing health checks', async () => {
    const clock = new FakeClock();
    const state = new RuntimeState(clock);
    state.setRuntimeSync(clock.now());
    let healthy = false;
    state.addHealthCheck({
      name: 'PLEG',
      check: () => (healthy ? { healthy } : { healthy, message: 'pleg has yet to be successful' }),
    });
    assert.deepEqual(state.runtimeErrors(), ['PLEG is not healthy: pleg has yet to be successful']);
    healthy = true;
    assert.deepEqual(state.runtimeErrors(), []);
  });
});
