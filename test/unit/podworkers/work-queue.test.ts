import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { BasicWorkQueue } from '../../../src/podworkers/work-queue.js';

describe('BasicWorkQueue', () => {
  it('hands out pods only once their delay has passed, and only once', () => {
    const clock = new FakeClock();
    const q = new BasicWorkQueue(clock);
    q.enqueue('a', 0);
    q.enqueue('b', 1000);
    assert.deepEqual(q.getReady(), ['a']);
    assert.deepEqual(q.getReady(), []);
    clock.advance(999);
    assert.deepEqual(q.getReady(), []);
    clock.advance(1);
    assert.deepEqual(q.getReady(), ['b']);
    assert.equal(q.size, 0);
  });

  it('replaces an earlier schedule for the same pod', () => {
    const clock = new FakeClock();
    const q = new BasicWorkQueue(clock);
    q.enqueue('a', 0);
    q.enqueue('a', 10_000);
    assert.deepEqual(q.getReady(), []);
    clock.advance(10_000);
    assert.deepEqual(q.getReady(), ['a']);
  });
});
