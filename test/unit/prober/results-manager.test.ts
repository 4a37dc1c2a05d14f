import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ResultsManager,
  runtimeIdOf,
  runtimeProbeResults,
  statusProbeResults,
  type ResultUpdate,
} from '../../../src/prober/results-manager.js';

describe('ResultsManager', () => {
  test('tells listeners of a verdict only when it changes', () => {
    const m = new ResultsManager();
    const updates: ResultUpdate[] = [];
    m.onUpdate((u) => updates.push(u));
    m.set('containerd://a', 'Unknown', 'pod-1');
    m.set('containerd://a', 'Unknown', 'pod-1');
    m.set('containerd://a', 'Success', 'pod-1');
    m.set('containerd://a', 'Success', 'pod-1');
    assert.deepEqual(updates, [
      { containerID: 'containerd://a', result: 'Unknown', podUid: 'pod-1' },
      { containerID: 'containerd://a', result: 'Success', podUid: 'pod-1' },
    ]);
    assert.equal(m.get('containerd://a'), 'Success');
  });

  test('a removed verdict is gone, and setting it again is a change', () => {
    const m = new ResultsManager();
    const updates: ResultUpdate[] = [];
    m.set('containerd://a', 'Failure', 'p');
    m.onUpdate((u) => updates.push(u));
    m.remove('containerd://a');
    assert.equal(m.get('containerd://a'), undefined);
    assert.equal(m.getByRuntimeId('a'), undefined);
    assert.equal(m.successView.has('containerd://a'), false);
    m.set('containerd://a', 'Failure', 'p');
    assert.equal(updates.length, 1);
  });

  test('reads by the runtime ID as computePodActions holds it', () => {
    const m = new ResultsManager();
    m.set('containerd://abc123', 'Failure', 'p');
    assert.equal(m.getByRuntimeId('abc123'), 'Failure');
    assert.equal(runtimeIdOf('containerd://abc123'), 'abc123');
    assert.equal(runtimeIdOf('abc123'), 'abc123');
  });

  test('the success view is live and says whether the last verdict was Success', () => {
    const m = new ResultsManager();
    const view = m.successView;
    m.set('containerd://a', 'Failure', 'p');
    assert.equal(view.get('containerd://a'), false);
    m.set('containerd://a', 'Success', 'p');
    assert.equal(view.get('containerd://a'), true);
    m.set('containerd://b', 'Unknown', 'p');
    assert.equal(view.get('containerd://b'), false);
  });

  test('a listener that throws does not keep the others from hearing', () => {
    const m = new ResultsManager();
    let heard = 0;
    m.onUpdate(() => {
      throw new Error('boom');
    });
    m.onUpdate(() => heard++);
    m.set('containerd://a', 'Success', 'p');
    assert.equal(heard, 1);
    assert.equal(m.get('containerd://a'), 'Success');
  });

  test('onUpdate returns the function that stops it', () => {
    const m = new ResultsManager();
    let heard = 0;
    const off = m.onUpdate(() => heard++);
    m.set('containerd://a', 'Success', 'p');
    off();
    m.set('containerd://a', 'Failure', 'p');
    assert.equal(heard, 1);
  });
});

describe('adapters', () => {
  test('runtime adapter reads liveness and startup by runtime ID', () => {
    const liveness = new ResultsManager();
    const startup = new ResultsManager();
    const r = runtimeProbeResults(liveness, startup);
    liveness.set('containerd://c1', 'Failure', 'p');
    startup.set('containerd://c1', 'Success', 'p');
    assert.equal(r.liveness('c1'), 'Failure');
    assert.equal(r.startup('c1'), 'Success');
    assert.equal(r.liveness('c2'), undefined);
  });

  test('status adapter gives readiness and startup maps by containerd:// ID', () => {
    const readiness = new ResultsManager();
    const startup = new ResultsManager();
    const s = statusProbeResults(readiness, startup);
    readiness.set('containerd://c1', 'Success', 'p');
    startup.set('containerd://c1', 'Unknown', 'p');
    assert.equal(s.readiness?.get('containerd://c1'), true);
    assert.equal(s.startup?.get('containerd://c1'), false);
  });
});
