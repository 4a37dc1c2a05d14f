import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Slots } from '../../../src/lib/slots.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('Slots', () => {
  test('at most limit holders; the others get their slot in the order they asked', async () => {
    const slots = new Slots(2);
    const order: number[] = [];
    const releases: (() => void)[] = [];
    const holders = [0, 1, 2, 3, 4].map((i) =>
      slots.acquire().then((release) => {
        order.push(i);
        releases.push(release);
      }),
    );
    await tick();
    assert.deepEqual(order, [0, 1]);
    assert.equal(slots.inUse, 2);
    assert.equal(slots.queued, 3);
    releases[1]!();
    await tick();
    assert.deepEqual(order, [0, 1, 2]);
    assert.equal(slots.inUse, 2, 'a released slot passes to the next waiter, not back to the pool');
    releases[0]!();
    releases[2]!();
    await tick();
    assert.deepEqual(order, [0, 1, 2, 3, 4]);
    releases[3]!();
    releases[4]!();
    await Promise.all(holders);
    assert.equal(slots.inUse, 0);
    assert.equal(slots.queued, 0);
  });

  test('a release called twice gives back one slot', async () => {
    const slots = new Slots(1);
    const first = await slots.acquire();
    const second = slots.acquire();
    const third = slots.acquire();
    first();
    first();
    const releaseSecond = await second;
    await tick();
    assert.equal(slots.queued, 1, 'the third still waits: the second release did nothing');
    releaseSecond();
    (await third)();
    assert.equal(slots.inUse, 0);
  });

  test('a waiter whose signal aborts leaves the queue with the reason, and takes no slot', async () => {
    const slots = new Slots(1);
    const held = await slots.acquire();
    const ac = new AbortController();
    const waiting = slots.acquire(ac.signal);
    const after = slots.acquire();
    ac.abort(new Error('pod stopped'));
    await assert.rejects(waiting, /pod stopped/);
    assert.equal(slots.queued, 1);
    held();
    (await after)();
    assert.equal(slots.inUse, 0);
    // A free slot is granted even with an aborted signal (the holder's own call then fails on it);
    // only a wait is cut short.
    const granted = await slots.acquire(AbortSignal.abort());
    assert.equal(slots.inUse, 1);
    granted();
  });

  test('an already aborted signal that has to wait is refused at once', async () => {
    const slots = new Slots(1);
    const held = await slots.acquire();
    await assert.rejects(slots.acquire(AbortSignal.abort(new Error('gone'))), /gone/);
    assert.equal(slots.queued, 0);
    held();
  });

  test('a limit below 1 is refused', () => {
    assert.throws(() => new Slots(0), /positive integer/);
    assert.throws(() => new Slots(1.5), /positive integer/);
  });
});
