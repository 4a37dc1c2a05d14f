/**
 * The shutdown manager over a fake logind (unit tests of one component; the real D-Bus client runs
 * against a real dbus-daemon in test/integration/node-shutdown.test.ts). Cases after upstream's
 * TestManager: grace periods per group and pod, groups in order within their budgets, the lock's
 * life, admission, the InhibitDelayMaxSec override, the state file.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Pod, PodStatus } from '../../../src/api/core-v1.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { MetricsRegistry } from '../../../src/lib/metrics.js';
import type { DbusInhibiter } from '../../../src/nodeshutdown/logind-dbus.js';
import {
  newShutdownManager,
  nodeShutdownPodStatus,
  type ShutdownManagerConfig,
} from '../../../src/nodeshutdown/shutdown-manager.js';

class FakeInhibiter implements DbusInhibiter {
  delayMs = 300_000;
  delayAfterReloadMs: number | undefined;
  overridden: number[] = [];
  reloads = 0;
  nextFd = 100;
  held = new Set<number>();
  taken: number[] = [];
  onEvent: ((b: boolean) => void) | undefined;
  closed = false;
  async currentInhibitDelayMs() {
    return this.delayMs;
  }
  async inhibitShutdown() {
    const fd = this.nextFd++;
    this.held.add(fd);
    this.taken.push(fd);
    return fd;
  }
  releaseInhibitLock(lock: number) {
    if (!this.held.delete(lock)) throw new Error(`lock ${lock} not held`);
  }
  async reloadLogindConf() {
    this.reloads++;
    if (this.delayAfterReloadMs !== undefined) this.delayMs = this.delayAfterReloadMs;
  }
  async monitorShutdown(onEvent: (b: boolean) => void) {
    this.onEvent = onEvent;
  }
  async overrideInhibitDelay(ms: number) {
    this.overridden.push(ms);
  }
  close() {
    this.closed = true;
  }
}

function pod(name: string, priority: number | undefined, terminationGracePeriodSeconds?: number): Pod {
  return {
    metadata: { name, namespace: 'ns', uid: name },
    spec: {
      containers: [{ name: 'c', image: 'busybox' }],
      ...(priority === undefined ? {} : { priority }),
      ...(terminationGracePeriodSeconds === undefined ? {} : { terminationGracePeriodSeconds }),
    },
    status: { phase: 'Running' },
  } as Pod;
}

/** Waits (in real time, bounded) until cond holds: the manager writes its state file in between. */
async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setTimeout(r, 2));
  assert.ok(cond(), `timed out waiting for ${what}`);
}
/** Lets pending I/O and promise callbacks run. */
const settle = () => new Promise((r) => setTimeout(r, 30));

describe('ShutdownManager', () => {
  let dir = '';
  let clock: FakeClock;
  let fake: FakeInhibiter;
  let kills: { name: string; grace: number; atMs: number; status: PodStatus; finish: () => void }[];
  let events: string[];
  let syncs: number;
  let finishAtOnce: boolean;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodeshutdown-unit-'));
    clock = new FakeClock();
    fake = new FakeInhibiter();
    kills = [];
    events = [];
    syncs = 0;
    finishAtOnce = true;
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  function config(over: Partial<ShutdownManagerConfig>, pods: Pod[]): ShutdownManagerConfig {
    return {
      featureGates: {},
      shutdownGracePeriodMs: 30_000,
      shutdownGracePeriodCriticalPodsMs: 10_000,
      shutdownGracePeriodByPodPriority: [],
      stateDirectory: dir,
      clock,
      getPods: () => pods,
      killPod: (p, grace, statusFn) =>
        new Promise<void>((resolve) => {
          kills.push({
            name: p.metadata.name ?? '',
            grace,
            atMs: clock.now(),
            status: statusFn(p.status ?? {}),
            finish: resolve,
          });
          if (finishAtOnce) resolve();
        }),
      syncNodeStatus: () => syncs++,
      recordNodeEvent: (type, reason, message) => events.push(`${type} ${reason} ${message}`),
      connect: async () => fake,
      handleSigusr1: false,
      ...over,
    };
  }

  test('disabled by the gate or without a grace period', () => {
    assert.equal(
      newShutdownManager(config({ featureGates: { GracefulNodeShutdown: false } }, [])),
      undefined,
    );
    assert.equal(
      newShutdownManager(config({ shutdownGracePeriodMs: 0, shutdownGracePeriodCriticalPodsMs: 0 }, [])),
      undefined,
    );
  });

  test('shutdownGracePeriodByPodPriority wins over shutdownGracePeriod, unless its gate is off', () => {
    const byPriority = [
      { priority: 100, shutdownGracePeriodSeconds: 3 },
      { priority: 10, shutdownGracePeriodSeconds: 2 },
    ];
    const m = newShutdownManager(config({ shutdownGracePeriodByPodPriority: byPriority }, []));
    assert.deepEqual(m?.periods, [
      { priority: 10, shutdownGracePeriodSeconds: 2 },
      { priority: 100, shutdownGracePeriodSeconds: 3 },
    ]);
    const off = newShutdownManager(
      config(
        {
          shutdownGracePeriodByPodPriority: byPriority,
          featureGates: { GracefulNodeShutdownBasedOnPodPriority: false },
        },
        [],
      ),
    );
    assert.deepEqual(off?.periods, [
      { priority: 0, shutdownGracePeriodSeconds: 20 },
      { priority: 2_000_000_000, shutdownGracePeriodSeconds: 10 },
    ]);
  });

  test('a shutdown stops the groups in order with their grace periods, then releases the lock', async () => {
    const pods = [
      pod('normal', 0, 30),
      pod('normal-short', undefined, 5),
      pod('critical', 2_000_000_000, 30),
      pod('critical-short', 2_000_001_000, 2),
    ];
    const m = newShutdownManager(config({}, pods))!;
    await m.start();
    assert.equal(fake.held.size, 1, 'the lock is taken at start');
    assert.deepEqual(m.admit(pods[0]!), { admit: true });
    fake.onEvent!(true);
    await until('the shutdown to begin', () => m.shuttingDown);
    assert.deepEqual(m.admit(pods[0]!), {
      admit: false,
      reason: 'NodeShutdown',
      message: 'Pod was rejected as the node is shutting down.',
    });
    assert.equal(m.shutdownStatus(), 'node is shutting down');
    await until('the lock to be released', () => fake.held.size === 0);
    assert.deepEqual(
      kills.map((k) => [k.name, k.grace]),
      [
        ['normal', 20],
        ['normal-short', 5],
        ['critical', 10],
        ['critical-short', 2],
      ],
    );
    assert.equal(syncs, 1);
    assert.deepEqual(events, ['Normal NodeShutdown Shutdown manager detected shutdown event']);
    assert.equal(fake.held.size, 0, 'the lock is released once the pods are stopped');
    const s = kills[0]!.status;
    assert.equal(s.phase, 'Failed');
    assert.equal(s.reason, 'Terminated');
    assert.equal(s.message, 'Pod was terminated in response to imminent node shutdown.');
    assert.deepEqual(
      s.conditions?.map((c) => [c.type, c.status, c.reason, c.message]),
      [
        [
          'DisruptionTarget',
          'True',
          'TerminationByKubelet',
          'Pod was terminated in response to imminent node shutdown.',
        ],
      ],
    );
    const state = JSON.parse(await readFile(path.join(dir, 'graceful_node_shutdown_state'), 'utf8'));
    assert.equal(state.startTime, new Date(clock.now()).toISOString());
    assert.equal(state.endTime, new Date(clock.now()).toISOString());
    await m.stop();
  });

  test('a group that does not stop in time holds the next one back for its budget only', async () => {
    finishAtOnce = false;
    const pods = [pod('normal', 0), pod('critical', 2_000_000_000)];
    const m = newShutdownManager(config({}, pods))!;
    await m.start();
    fake.onEvent!(true);
    await until('the first kill', () => kills.length === 1);
    clock.advance(19_999);
    await settle();
    assert.deepEqual(
      kills.map((k) => k.name),
      ['normal'],
      'the low group still has time',
    );
    clock.advance(1);
    await until('the second kill', () => kills.length === 2);
    assert.deepEqual(
      kills.map((k) => k.name),
      ['normal', 'critical'],
    );
    assert.equal(kills[1]!.atMs - kills[0]!.atMs, 20_000);
    assert.equal(fake.held.size, 1, 'held until the last group is done');
    kills[1]!.finish();
    await until('the lock to be released', () => fake.held.size === 0);
    await m.stop();
  });

  test('a cancelled shutdown takes the lock again and admits pods', async () => {
    const m = newShutdownManager(config({}, []))!;
    await m.start();
    fake.onEvent!(true);
    await until('the lock to be released', () => fake.held.size === 0);
    fake.onEvent!(false);
    await until('the lock to be taken again', () => fake.held.size === 1);
    assert.equal(fake.taken.length, 2);
    assert.equal(m.shutdownStatus(), undefined);
    assert.deepEqual(m.admit(pod('x', 0)), { admit: true });
    assert.deepEqual(events, [
      'Normal NodeShutdown Shutdown manager detected shutdown event',
      'Normal NodeShutdown Shutdown manager detected shutdown cancellation',
    ]);
    await m.stop();
    assert.equal(fake.held.size, 0, 'stop lets go of the lock');
    assert.equal(fake.closed, true);
  });

  test('InhibitDelayMaxSec lower than the budget is raised through the drop-in and a reload', async () => {
    fake.delayMs = 5_000;
    fake.delayAfterReloadMs = 30_000;
    const m = newShutdownManager(config({}, []))!;
    await m.start();
    assert.deepEqual(fake.overridden, [30_000]);
    assert.equal(fake.reloads, 1);
    await m.stop();
  });

  test('a delay logind will not raise fails the start, naming both values', async () => {
    fake.delayMs = 5_000;
    const m = newShutdownManager(config({}, []))!;
    await assert.rejects(
      m.start(),
      /unable to update logind InhibitDelayMaxSec to 30s \(ShutdownGracePeriod\), current value of InhibitDelayMaxSec \(5s\)/,
    );
    assert.equal(fake.held.size, 0);
    assert.equal(fake.closed, true);
  });

  test('no logind: start rejects', async () => {
    const m = newShutdownManager(
      config({ connect: () => Promise.reject(new Error('cannot connect to the D-Bus')) }, []),
    )!;
    await assert.rejects(m.start(), /cannot connect to the D-Bus/);
    await m.stop();
  });

  test('the last shutdown is published at start from the state file', async () => {
    const metrics = new MetricsRegistry();
    const m = newShutdownManager(config({ metrics }, []))!;
    await m.start();
    fake.onEvent!(true);
    await until('the lock to be released', () => fake.held.size === 0);
    await m.stop();
    const again = new MetricsRegistry();
    clock.advance(60_000);
    const m2 = newShutdownManager(config({ metrics: again }, []))!;
    await m2.start();
    const text = await again.expose();
    assert.match(
      text,
      new RegExp(`kubelet_graceful_shutdown_start_time_seconds ${Math.floor((clock.now() - 60_000) / 1000)}`),
    );
    assert.match(
      text,
      new RegExp(`kubelet_graceful_shutdown_end_time_seconds ${Math.floor((clock.now() - 60_000) / 1000)}`),
    );
    await m2.stop();
  });

  test('a pod that already succeeded keeps its phase', () => {
    const s = nodeShutdownPodStatus({ phase: 'Succeeded' }, '2026-01-01T00:00:00Z');
    assert.equal(s.phase, 'Succeeded');
    assert.equal(s.reason, 'Terminated');
  });
});
