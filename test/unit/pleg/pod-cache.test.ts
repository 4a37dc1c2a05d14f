import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InMemoryPodCache } from '../../../src/pleg/pod-cache.js';
import { flushPromises, kubePodStatus } from '../helpers/fake-kube-runtime.js';

describe('InMemoryPodCache', () => {
  it('returns an empty status for a pod it has never seen', () => {
    const cache = new InMemoryPodCache();
    const entry = cache.get('u1');
    assert.equal(entry.status.uid, 'u1');
    assert.deepEqual(entry.status.containerStatuses, []);
    assert.equal(entry.modifiedMs, 0);
    assert.equal(entry.error, undefined);
  });

  it('resolves getNewerThan at once when the stored status is strictly newer', async () => {
    const cache = new InMemoryPodCache();
    cache.set('u1', kubePodStatus('u1', { ips: ['10.0.0.2'] }), undefined, 100);
    const entry = await cache.getNewerThan('u1', 99);
    assert.deepEqual(entry.status.ips, ['10.0.0.2']);
  });

  it('tells onWait when a worker has to wait, and once more after a relist of the same millisecond', async () => {
    const asked: string[] = [];
    const cache = new InMemoryPodCache({ onWait: (uid) => asked.push(uid) });
    cache.updateTime(100);
    await cache.getNewerThan('u1', 99);
    assert.deepEqual(asked, [], 'no wait, no relist asked for');
    const p = cache.getNewerThan('u1', 100);
    assert.deepEqual(asked, ['u1']);
    cache.updateTime(100);
    cache.updateTime(100);
    assert.deepEqual(asked, ['u1', 'u1'], 'asked again once, not on every relist');
    cache.updateTime(101);
    assert.equal((await p).status.uid, 'u1');
  });

  it('waits while the status is not newer, and wakes on set', async () => {
    const cache = new InMemoryPodCache();
    cache.set('u1', kubePodStatus('u1'), undefined, 100);
    let resolved: number | undefined;
    const p = cache.getNewerThan('u1', 100).then((e) => (resolved = e.modifiedMs));
    await flushPromises();
    assert.equal(resolved, undefined, 'a reading at exactly minTime is not newer');
    cache.set('u1', kubePodStatus('u1'), undefined, 101);
    await p;
    assert.equal(resolved, 101);
  });

  it('wakes waiters of pods without events when the global timestamp moves past them', async () => {
    const cache = new InMemoryPodCache();
    let entryUid: string | undefined;
    const p = cache.getNewerThan('quiet', 50).then((e) => (entryUid = e.status.uid));
    cache.updateTime(50);
    await flushPromises();
    assert.equal(entryUid, undefined);
    cache.updateTime(51);
    await p;
    assert.equal(entryUid, 'quiet');
  });

  it('never lets an older reading replace a newer one', () => {
    const cache = new InMemoryPodCache();
    cache.set('u1', kubePodStatus('u1', { ips: ['new'] }), undefined, 200);
    cache.set('u1', kubePodStatus('u1', { ips: ['old'] }), undefined, 150);
    assert.deepEqual(cache.get('u1').status.ips, ['new']);
  });

  it('keeps the error of a failed reading with the entry', async () => {
    const cache = new InMemoryPodCache();
    cache.set('u1', kubePodStatus('u1'), new Error('rpc error: Unavailable'), 10);
    const entry = await cache.getNewerThan('u1', 0);
    assert.equal(entry.error?.message, 'rpc error: Unavailable');
  });

  it('rejects a waiter with the abort reason and forgets it', async () => {
    const cache = new InMemoryPodCache();
    const controller = new AbortController();
    const p = cache.getNewerThan('u1', 10, controller.signal);
    controller.abort(new Error('stopped'));
    await assert.rejects(p, /stopped/);
    // A later update must not touch the forgotten waiter (it would throw on a settled promise otherwise silently).
    cache.updateTime(20);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const cache = new InMemoryPodCache();
    cache.set('u1', kubePodStatus('u1'), undefined, 100);
    await assert.rejects(cache.getNewerThan('u1', 0, AbortSignal.abort(new Error('gone'))), /gone/);
  });

  it('deletes entries, so they read as empty again', () => {
    const cache = new InMemoryPodCache();
    cache.set('u1', kubePodStatus('u1', { ips: ['1.2.3.4'] }), undefined, 100);
    cache.delete('u1');
    assert.deepEqual(cache.get('u1').status.ips, []);
    assert.equal(cache.size, 0);
  });
});
