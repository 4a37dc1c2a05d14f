import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Pod, PodStatus } from '../../../src/api/core-v1.js';
import { EvictionManager } from '../../../src/eviction/eviction-manager.js';
import {
  evictionMessage,
  makeSignalObservations,
  rankMemoryPressure,
  thresholdsMet,
} from '../../../src/eviction/helpers.js';
import { getThresholdQuantity, parseThresholdConfig } from '../../../src/eviction/threshold.js';
import { FakeClock } from '../../../src/lib/clock.js';
import type { PodStats, Summary } from '../../../src/stats/summary-types.js';

const Mi = 1024 * 1024;
const Gi = 1024 * Mi;

function pod(
  name: string,
  opts: {
    memRequest?: string;
    priority?: number;
    volumes?: Pod['spec']['volumes'];
    ephemeralLimit?: string;
  } = {},
): Pod {
  return {
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      annotations: { 'kubernetes.io/config.source': 'api' },
    },
    spec: {
      priority: opts.priority,
      volumes: opts.volumes,
      containers: [
        {
          name: 'c',
          image: 'busybox',
          resources: {
            ...(opts.memRequest ? { requests: { memory: opts.memRequest } } : {}),
            ...(opts.ephemeralLimit ? { limits: { 'ephemeral-storage': opts.ephemeralLimit } } : {}),
          },
        },
      ],
    },
  };
}

function podStats(p: Pod, memWs: number, extra: Partial<PodStats> = {}): PodStats {
  return {
    podRef: { name: p.metadata.name ?? '', namespace: 'ns', uid: p.metadata.uid ?? '' },
    startTime: 0,
    memory: { time: 0, workingSetBytes: memWs },
    containers: [{ name: 'c', startTime: 0, memory: { time: 0, workingSetBytes: memWs } }],
    ...extra,
  };
}

function summary(availableBytes: number, pods: PodStats[], timeMs: number): Summary {
  return {
    node: {
      nodeName: 'n',
      startTime: 0,
      memory: { time: timeMs, availableBytes, workingSetBytes: 8 * Gi - availableBytes },
      fs: { time: timeMs, availableBytes: 50 * Gi, capacityBytes: 100 * Gi, inodes: 1000, inodesFree: 900 },
    },
    pods,
  };
}

describe('thresholds', () => {
  test('parse as upstream: percentages as float32, 0% ignored, soft needs a grace period, minReclaim attached', () => {
    const t = parseThresholdConfig({
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'imagefs.available': '0%' },
      evictionSoft: { 'memory.available': '1Gi' },
      evictionSoftGracePeriodMs: { 'memory.available': 30_000 },
      evictionMinimumReclaim: { 'memory.available': '50Mi' },
      enforceNodeAllocatable: ['pods'],
    });
    assert.deepEqual(
      t.map((x) => [x.signal, x.gracePeriodMs]),
      [
        ['memory.available', 0],
        ['nodefs.available', 0],
        ['memory.available', 30_000],
        ['allocatableMemory.available', 0],
      ],
    );
    assert.equal(t[0]?.minReclaim?.quantity?.value, 50 * Mi);
    assert.equal(getThresholdQuantity(t[1]!.value, 1000), 100);
    assert.throws(
      () =>
        parseThresholdConfig({
          evictionHard: {},
          evictionSoft: { 'memory.available': '1Gi' },
          evictionSoftGracePeriodMs: {},
          evictionMinimumReclaim: {},
          enforceNodeAllocatable: [],
        }),
      /grace period must be specified for the soft eviction threshold memory.available/,
    );
    assert.throws(
      () =>
        parseThresholdConfig({
          evictionHard: { 'disk.available': '1Gi' },
          evictionSoft: {},
          evictionSoftGracePeriodMs: {},
          evictionMinimumReclaim: {},
          enforceNodeAllocatable: [],
        }),
      /unsupported eviction signal disk.available/,
    );
  });

  test('a met threshold holds until available passes value + minimum reclaim', () => {
    const [t] = parseThresholdConfig({
      evictionHard: { 'memory.available': '100Mi' },
      evictionSoft: {},
      evictionSoftGracePeriodMs: {},
      evictionMinimumReclaim: { 'memory.available': '100Mi' },
      enforceNodeAllocatable: [],
    });
    const { observations } = makeSignalObservations(summary(150 * Mi, [], 1));
    assert.equal(thresholdsMet([t!], observations, false).length, 0);
    assert.equal(thresholdsMet([t!], observations, true).length, 1);
  });
});

describe('ranking and messages', () => {
  test('memory: pods over their requests first, then lower priority, then usage above requests', () => {
    const a = pod('a', { memRequest: '1Gi' }); // under its request
    const b = pod('b', { priority: 10 }); // over (no request), higher priority
    const c = pod('c'); // over, usage 100Mi
    const d = pod('d'); // over, usage 300Mi
    const stats = new Map([
      [a, podStats(a, 500 * Mi)],
      [b, podStats(b, 900 * Mi)],
      [c, podStats(c, 100 * Mi)],
      [d, podStats(d, 300 * Mi)],
    ]);
    const pods = [a, b, c, d];
    rankMemoryPressure(pods, (p) => stats.get(p));
    assert.deepEqual(
      pods.map((p) => p.metadata.name),
      ['d', 'c', 'b', 'a'],
    );
  });

  test('the message names the resource, the threshold and the containers over their requests', () => {
    const p = pod('x', { memRequest: '64Mi' });
    const t = parseThresholdConfig({
      evictionHard: { 'memory.available': '100Mi' },
      evictionSoft: {},
      evictionSoftGracePeriodMs: {},
      evictionMinimumReclaim: {},
      enforceNodeAllocatable: [],
    });
    const s = summary(50 * Mi, [podStats(p, 200 * Mi)], 1);
    const { observations, statsFunc } = makeSignalObservations(s);
    assert.equal(
      evictionMessage('memory', p, statsFunc, t, observations),
      'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 200Mi, request is 64Mi, has larger consumption of memory. ',
    );
  });
});

describe('EvictionManager', () => {
  function setUp(thresholds: Record<string, string>, pods: Pod[], transitionMs = 30_000) {
    const clock = new FakeClock();
    let current: Summary = summary(4 * Gi, [], clock.now());
    const killed: { pod: Pod; grace: number; status: PodStatus }[] = [];
    const events: string[] = [];
    const reclaimed: string[] = [];
    let afterReclaim: (() => void) | undefined;
    const m = new EvictionManager({
      nodeName: 'n',
      thresholds: parseThresholdConfig({
        evictionHard: thresholds,
        evictionSoft: {},
        evictionSoftGracePeriodMs: {},
        evictionMinimumReclaim: {},
        enforceNodeAllocatable: [],
      }),
      pressureTransitionPeriodMs: transitionMs,
      maxPodGracePeriodSeconds: 0,
      clock,
      summaryProvider: { getSummary: async () => current },
      hasDedicatedImageFs: async () => false,
      activePods: () => pods.filter((p) => !killed.some((k) => k.pod === p)),
      killPod: async (p, grace, statusFn) => {
        killed.push({ pod: p, grace, status: statusFn({ phase: 'Running' }) });
      },
      recorder: {
        event: (p, _f, type, reason, message) =>
          events.push(`${p.metadata.name} ${type} ${reason} ${message}`),
        eventFor: (ref, type, reason, message) =>
          events.push(`${ref.kind}/${ref.name} ${type} ${reason} ${message}`),
      },
      reclaimers: {
        deleteAllUnusedContainers: async () => void reclaimed.push('containers'),
        deleteUnusedImages: async () => {
          reclaimed.push('images');
          afterReclaim?.();
        },
      },
    });
    return {
      clock,
      m,
      killed,
      events,
      reclaimed,
      onReclaim: (f: () => void) => (afterReclaim = f),
      set: (avail: number, ps: PodStats[], fs?: Partial<NonNullable<Summary['node']['fs']>>) => {
        current = summary(avail, ps, clock.now());
        if (fs) current.node.fs = { ...current.node.fs!, ...fs };
      },
    };
  }

  test('memory pressure: condition, BestEffort refused, one pod evicted per pass, cleared after the transition period', async () => {
    const burstable = pod('burstable', { memRequest: '1Gi' });
    const hog = pod('hog');
    const h = setUp({ 'memory.available': '1Gi' }, [burstable, hog], 30_000);
    assert.equal((await h.m.synchronize()).length, 0);
    assert.equal(h.m.isUnderMemoryPressure(), false);
    assert.deepEqual(h.m.admit(pod('be')), { admit: true });

    h.clock.advance(10_000);
    h.set(512 * Mi, [podStats(burstable, 200 * Mi), podStats(hog, 2 * Gi)]);
    const evicted = await h.m.synchronize();
    assert.deepEqual(
      evicted.map((p) => p.metadata.name),
      ['hog'],
    );
    assert.equal(h.m.isUnderMemoryPressure(), true);
    assert.deepEqual(h.reclaimed, [], 'memory has no node-level reclaim');
    const k = h.killed[0]!;
    assert.equal(k.grace, 1);
    assert.equal(k.status.phase, 'Failed');
    assert.equal(k.status.reason, 'Evicted');
    assert.match(
      k.status.message ?? '',
      /^The node was low on resource: memory\. Threshold quantity: 1Gi, available: 512Mi\. Container c was using 2Gi, request is 0, has larger consumption of memory\. $/,
    );
    assert.equal(k.status.conditions?.[0]?.type, 'DisruptionTarget');
    assert.ok(h.events.includes('Node/n Warning EvictionThresholdMet Attempting to reclaim memory'));
    assert.ok(
      h.events.some((e) => e.startsWith('hog Warning Evicted The node was low on resource: memory.')),
    );

    assert.deepEqual(h.m.admit(pod('be')), {
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [MemoryPressure]. ',
    });
    assert.deepEqual(h.m.admit(pod('bu', { memRequest: '1Mi' })), { admit: true });

    h.clock.advance(10_000);
    h.set(3 * Gi, [podStats(burstable, 200 * Mi)]);
    assert.equal((await h.m.synchronize()).length, 0);
    assert.equal(h.m.isUnderMemoryPressure(), true, 'held for the transition period');
    h.clock.advance(25_000);
    h.set(3 * Gi, [podStats(burstable, 200 * Mi)]);
    await h.m.synchronize();
    assert.equal(h.m.isUnderMemoryPressure(), false);
  });

  test('disk pressure: node-level reclaim first; no eviction when it is enough', async () => {
    const p = pod('p');
    const h = setUp({ 'nodefs.available': '10Gi' }, [p]);
    h.set(4 * Gi, [podStats(p, Mi)], { availableBytes: 5 * Gi });
    // Reclaim frees enough: nothing is evicted.
    h.onReclaim(() => h.set(4 * Gi, [podStats(p, Mi)], { availableBytes: 20 * Gi }));
    assert.equal((await h.m.synchronize()).length, 0);
    assert.deepEqual(h.reclaimed, ['containers', 'images']);
    assert.equal(h.killed.length, 0);
    // Reclaim is not enough: the pod goes.
    h.clock.advance(10_000);
    h.onReclaim(() => undefined);
    h.set(4 * Gi, [podStats(p, Mi)], { availableBytes: 5 * Gi });
    assert.equal((await h.m.synchronize()).length, 1);
    assert.deepEqual(h.reclaimed, ['containers', 'images', 'containers', 'images']);
    assert.match(
      h.killed[0]!.status.message ?? '',
      /^The node was low on resource: ephemeral-storage\. Threshold quantity: 10Gi, available: 5Gi\. /,
    );
    assert.equal(h.m.isUnderDiskPressure(), true);
    assert.deepEqual(
      h.m.admit(pod('bu', { memRequest: '1Mi' })).admit,
      false,
      'disk pressure refuses every pod',
    );
  });

  test('local storage: an emptyDir past its sizeLimit and a pod past its ephemeral-storage limit', async () => {
    const e = pod('e', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '10Mi' } }] });
    const l = pod('l', { ephemeralLimit: '20Mi' });
    const ok = pod('ok', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '10Mi' } }] });
    const h = setUp({}, [e, l, ok]);
    h.set(4 * Gi, [
      podStats(e, Mi, { volume: [{ name: 'scratch', time: 0, usedBytes: 40 * Mi }] }),
      podStats(l, Mi, { 'ephemeral-storage': { time: 0, usedBytes: 30 * Mi } }),
      podStats(ok, Mi, { volume: [{ name: 'scratch', time: 0, usedBytes: 1 * Mi }] }),
    ]);
    const evicted = await h.m.synchronize();
    assert.deepEqual(
      evicted.map((p) => p.metadata.name),
      ['e', 'l'],
    );
    assert.equal(
      h.killed[0]!.status.message,
      'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". ',
    );
    assert.equal(
      h.killed[1]!.status.message,
      'Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. ',
    );
    assert.equal(h.killed[0]!.grace, 0);
    assert.equal(h.killed[0]!.status.conditions, undefined);
  });

  test('static pods are admitted and never evicted', async () => {
    const s = pod('static');
    s.metadata.annotations = { 'kubernetes.io/config.source': 'file' };
    const h = setUp({ 'memory.available': '1Gi' }, [s]);
    h.set(512 * Mi, [podStats(s, 2 * Gi)]);
    assert.equal((await h.m.synchronize()).length, 0);
    assert.equal(h.killed.length, 0);
    assert.deepEqual(h.m.admit(s), { admit: true });
  });
});
