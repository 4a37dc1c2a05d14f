import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import {
  defaultMaxParallelPodStarts,
  POD_START_SLOT_LAPSE_MS,
  PodStartSlots,
} from '../../../src/kuberuntime/pod-start-slots.js';
import { FakeClock } from '../../../src/lib/clock.js';

const tick = () => new Promise((r) => setImmediate(r));

/** An acquire in flight, with whether it has been granted yet. */
function pending(p: Promise<() => void>): { granted: () => boolean; release: Promise<() => void> } {
  let granted = false;
  const release = p.then((r) => ((granted = true), r));
  return { granted: () => granted, release };
}

function pod(name: string, priority?: number): Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { containers: [{ name: 'c', image: 'busybox' }], ...(priority !== undefined ? { priority } : {}) },
  };
}

describe('PodStartSlots', () => {
  test('the default is 4 starts per CPU, at least 4', () => {
    assert.equal(defaultMaxParallelPodStarts(2), 8);
    assert.equal(defaultMaxParallelPodStarts(16), 64);
    assert.equal(defaultMaxParallelPodStarts(0), 4);
  });

  test('a start waits while the slots are held, and goes when one is given back', async () => {
    const clock = new FakeClock();
    const slots = new PodStartSlots(1, clock);
    const first = await slots.acquire(pod('a'));
    const second = pending(slots.acquire(pod('b')));
    await tick();
    assert.equal(second.granted(), false);
    assert.equal(slots.waiting, 1);
    first();
    const releaseSecond = await second.release;
    assert.equal(slots.waiting, 0);
    releaseSecond();
    assert.equal(clock.pendingTimers(), 0, 'a release clears its lapse timer');
  });

  test('a start that holds its slot past the lapse lets the next pod go', async () => {
    const clock = new FakeClock();
    const slots = new PodStartSlots(1, clock);
    const hung = await slots.acquire(pod('hung'));
    const next = pending(slots.acquire(pod('next')));
    clock.advance(POD_START_SLOT_LAPSE_MS - 1);
    await tick();
    assert.equal(next.granted(), false, 'not before the lapse');
    clock.advance(1);
    const releaseNext = await next.release;
    assert.equal(next.granted(), true);
    hung(); // the late release of a lapsed slot gives back nothing more
    const third = pending(slots.acquire(pod('third')));
    await tick();
    assert.equal(third.granted(), false, 'the lapsed holder did not free a second slot');
    releaseNext();
    (await third.release)();
  });

  test('pods of system-critical priority never wait', async () => {
    const clock = new FakeClock();
    const slots = new PodStartSlots(1, clock);
    const held = await slots.acquire(pod('user'));
    const critical = await slots.acquire(pod('kube-apiserver', 2_000_001_000));
    critical();
    assert.equal(slots.waiting, 0);
    held();
  });

  test("a static pod whose priorityClassName is system-critical never waits; others' names do not count", async () => {
    const clock = new FakeClock();
    const slots = new PodStartSlots(1, clock);
    const held = await slots.acquire(pod('user'));
    const staticPod = (name: string, priorityClassName: string): Pod => {
      const p = pod(name);
      p.metadata.annotations = { 'kubernetes.io/config.source': 'file' };
      p.spec.priorityClassName = priorityClassName;
      return p;
    };
    (await slots.acquire(staticPod('etcd', 'system-node-critical')))();
    (await slots.acquire(staticPod('kube-proxy', 'system-cluster-critical')))();
    const apiPod = pod('api-pod');
    apiPod.spec.priorityClassName = 'system-node-critical'; // an API pod's priority is the API server's to set
    const api = pending(slots.acquire(apiPod));
    const plain = pending(slots.acquire(staticPod('web', 'high')));
    await tick();
    assert.equal(api.granted(), false);
    assert.equal(plain.granted(), false);
    held();
    (await api.release)();
    (await plain.release)();
  });

  test('a start whose pod is stopped while it waits gives up with the reason', async () => {
    const clock = new FakeClock();
    const slots = new PodStartSlots(1, clock);
    const held = await slots.acquire(pod('a'));
    const ac = new AbortController();
    const waiting = slots.acquire(pod('b'), ac.signal);
    ac.abort(new Error('pod is being stopped'));
    await assert.rejects(waiting, /pod is being stopped/);
    assert.equal(slots.waiting, 0);
    held();
  });
});
