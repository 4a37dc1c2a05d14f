import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { FakeClock } from '../../../src/lib/clock.js';
import { ComponentRunner } from '../../../src/lib/component-runner.js';
import { asComponent, loopComponent, type Component } from '../../../src/lib/component.js';

/** Lets pending promise callbacks run. */
async function flush(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

function recorder(events: string[], name: string, extra: { stopMs?: number; clock?: FakeClock } = {}) {
  return asComponent(
    name,
    {
      start: () => {
        events.push(`start ${name}`);
      },
      stop: async () => {
        events.push(`stop ${name}`);
        if (extra.stopMs !== undefined) await extra.clock!.sleep(extra.stopMs);
        events.push(`stopped ${name}`);
      },
    },
    { clock: extra.clock },
  );
}

describe('asComponent', () => {
  test('goes NEW → STARTING → RUNNING → STOPPING → STOPPED, with its detail in the snapshot', async () => {
    const clock = new FakeClock();
    let release!: () => void;
    const c = asComponent(
      'pleg',
      { start: () => new Promise<void>((r) => (release = r)), detail: () => ({ relists: 3 }) },
      { clock },
    );
    assert.equal(c.status().state, 'NEW');
    const started = c.start();
    assert.equal(c.status().state, 'STARTING');
    clock.advance(5);
    release();
    await started;
    assert.deepEqual(c.status(), {
      name: 'pleg',
      state: 'RUNNING',
      sinceMs: clock.now(),
      detail: { relists: 3 },
    });
    await c.stop(new AbortController().signal);
    assert.equal(c.status().state, 'STOPPED');
  });

  test('a failed start reads FAILED with its error and rejects; an optional one resolves', async () => {
    const required = asComponent('kubeletserver', { start: () => Promise.reject(new Error('EADDRINUSE')) });
    await assert.rejects(required.start(), /EADDRINUSE/);
    assert.equal(required.status().state, 'FAILED');
    assert.equal(required.status().error, 'EADDRINUSE');
    const optional = asComponent(
      'kubeletserver',
      { start: () => Promise.reject(new Error('EADDRINUSE')) },
      { optional: true },
    );
    await optional.start();
    assert.equal(optional.status().state, 'FAILED');
  });

  test('stop resolves at the deadline while the work goes on; the state stays STOPPING', async () => {
    const clock = new FakeClock();
    const c = asComponent('podworkers', { stop: () => clock.sleep(120_000) }, { clock });
    await c.start();
    const deadline = new AbortController();
    const stopped = c.stop(deadline.signal);
    await flush();
    deadline.abort();
    await stopped;
    assert.equal(c.status().state, 'STOPPING');
    clock.advance(120_000);
    await flush();
    assert.equal(c.status().state, 'STOPPED');
  });

  test('a stop during start aborts it; a never-started component just reads STOPPED', async () => {
    let abort!: () => void;
    const c = asComponent('runtime', {
      start: () => new Promise<void>((_, reject) => (abort = () => reject(new Error('aborted')))),
      stop: () => abort(),
    });
    const started = c.start();
    await c.stop(new AbortController().signal);
    await assert.rejects(started, /aborted/);
    assert.equal(c.status().state, 'STOPPED');
    const never = asComponent('readonlyserver', {});
    await never.stop(new AbortController().signal);
    assert.equal(never.status().state, 'STOPPED');
  });

  test('a failed stop reads FAILED and does not reject', async () => {
    const c = asComponent('volumemanager', { stop: () => Promise.reject(new Error('busy')) });
    await c.start();
    await c.stop(new AbortController().signal);
    assert.deepEqual([c.status().state, c.status().error], ['FAILED', 'busy']);
  });
});

describe('loopComponent', () => {
  test('runs the loop on start, and on stop aborts it and waits for it to return', async () => {
    let ended = false;
    const c = loopComponent('nodeinformer', async (signal) => {
      await new Promise((r) => signal.addEventListener('abort', r));
      await flush(2);
      ended = true;
    });
    await c.start();
    assert.equal(c.status().state, 'RUNNING');
    await c.stop(new AbortController().signal);
    assert.ok(ended, 'stop resolved before the loop returned');
    assert.equal(c.status().state, 'STOPPED');
  });
});

describe('ComponentRunner', () => {
  test('starts in order and stops in reverse', async () => {
    const events: string[] = [];
    const runner = new ComponentRunner();
    assert.equal(await runner.startAll([recorder(events, 'a'), recorder(events, 'b')]), true);
    assert.equal(await runner.startAll([recorder(events, 'c')]), true);
    const report = await runner.stop(5000);
    assert.deepEqual(events, [
      'start a',
      'start b',
      'start c',
      'stop c',
      'stopped c',
      'stop b',
      'stopped b',
      'stop a',
      'stopped a',
    ]);
    assert.deepEqual(report.leftBehind, []);
    assert.deepEqual(
      runner.statuses().map((s) => `${s.name} ${s.state}`),
      ['a STOPPED', 'b STOPPED', 'c STOPPED'],
    );
  });

  test('one deadline for all: a slow stop is left behind and the rest still stop, at once', async () => {
    const clock = new FakeClock();
    const events: string[] = [];
    const runner = new ComponentRunner({ clock });
    await runner.startAll([
      recorder(events, 'runtime', { clock }),
      recorder(events, 'podworkers', { clock, stopMs: 120_000 }),
      recorder(events, 'sources', { clock, stopMs: 1000 }),
    ]);
    const stopping = runner.stop(5000);
    await flush();
    clock.advance(1000); // sources stop
    await flush();
    clock.advance(4000); // the deadline passes while the pod workers still stop
    const report = await stopping;
    assert.deepEqual(report.leftBehind, ['podworkers']);
    assert.equal(report.elapsedMs, 5000);
    assert.ok(events.includes('stopped runtime'), 'the runtime was not stopped after the deadline');
    assert.ok(!events.includes('stopped podworkers'));
  });

  test('a stop during a start ends the start quietly and stops what began', async () => {
    const events: string[] = [];
    let abort!: () => void;
    const runtime: Component = asComponent('runtime', {
      start: () => new Promise<void>((_, reject) => (abort = () => reject(new Error('aborted')))),
      stop: () => {
        events.push('stop runtime');
        abort();
      },
    });
    const runner = new ComponentRunner();
    const starting = runner.startAll([recorder(events, 'healthz'), runtime, recorder(events, 'never')]);
    await flush();
    await runner.stop(5000);
    assert.equal(await starting, false);
    assert.deepEqual(events, ['start healthz', 'stop runtime', 'stop healthz', 'stopped healthz']);
    assert.equal(await runner.startAll([recorder(events, 'later')]), false);
  });

  test('a failed start rejects startAll', async () => {
    const runner = new ComponentRunner();
    await assert.rejects(
      runner.startAll([asComponent('volumemanager', { start: () => Promise.reject(new Error('no root')) })]),
      /no root/,
    );
  });
});
