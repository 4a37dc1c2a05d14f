/**
 * The chaos harness's own bookkeeping (test/chaos/chaos.ts): a harness that missed a loss would
 * pass a broken kubelet, so what it counts is checked here without any runtime.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import {
  ChaosObserver,
  chaosFormFromEnv,
  chaosPod,
  formatTally,
  hostileManifests,
  HOSTILE_POD_NAMES,
  losses,
  SHORT_FORM,
  type NodeSnapshot,
  type PodSnapshot,
} from '../../chaos/chaos.js';

describe('chaosFormFromEnv', () => {
  test('the short form by default; each variable overrides one count', () => {
    assert.deepEqual(chaosFormFromEnv({}), SHORT_FORM);
    assert.deepEqual(chaosFormFromEnv({ CHAOS_PODS: '100', CHAOS_OUTAGE_S: '300' }), {
      ...SHORT_FORM,
      pods: 100,
      outageSeconds: 300,
    });
  });

  test('a count that is not a whole number in range is an error naming the variable', () => {
    assert.throws(() => chaosFormFromEnv({ CHAOS_PODS: '0' }), /CHAOS_PODS=0/);
    assert.throws(() => chaosFormFromEnv({ CHAOS_KUBELET_KILLS: '-1' }), /CHAOS_KUBELET_KILLS/);
    assert.throws(() => chaosFormFromEnv({ CHAOS_OUTAGE_S: '2.5' }), /CHAOS_OUTAGE_S/);
  });
});

describe('chaosPod', () => {
  test('every third pod keeps data in an emptyDir; probes on every fourth and the ones between', () => {
    const data = chaosPod('ns', 0, 'seed-0');
    assert.deepEqual(data.spec.volumes, [{ name: 'data', emptyDir: {} }]);
    assert.ok(data.spec.containers[0]?.livenessProbe);
    assert.deepEqual(data.spec.containers[0]?.env, [{ name: 'SEED', value: 'seed-0' }]);
    const plain = chaosPod('ns', 1, 'seed-1');
    assert.deepEqual(plain.spec.volumes, []);
    assert.equal(plain.spec.containers[0]?.livenessProbe, undefined);
    assert.ok(chaosPod('ns', 2, 's').spec.containers[0]?.readinessProbe);
    assert.equal(chaosPod('ns', 7, 's').metadata.name, 'chaos-007');
  });
});

describe('the tally', () => {
  const seeds = ['chaos-000-x', 'chaos-001-x', 'chaos-002-x', 'chaos-003-x'];
  const observer = new ChaosObserver(undefined as never, 'ns', () => Promise.resolve([]), '/nowhere', seeds);
  const pod = (id: string, extra: Partial<PodSnapshot> = {}): PodSnapshot => ({
    uid: `uid-${id}`,
    healthy: true,
    containerId: id,
    restartCount: 0,
    seed: undefined,
    problem: '',
    ...extra,
  });
  const seed = { content: 'chaos-000-x', ino: 1, mtimeMs: 10 };
  const baseline: NodeSnapshot = new Map([
    ['chaos-000', pod('a', { seed })],
    ['chaos-001', pod('b')],
    ['chaos-002', pod('c')],
    ['chaos-003', pod('d', { seed: { ...seed, content: 'chaos-003-x' } })],
  ]);

  test('an unchanged node is no loss', () => {
    const t = observer.tally('same', baseline, baseline, true, 1000);
    assert.deepEqual(losses(t), []);
    assert.match(
      formatTally(t),
      /Running pods 4\/4 \| container IDs changed 0 \| restarts 0 \| emptyDir files changed 0/,
    );
  });

  test('a pod gone, a container replaced, a restart and a file written anew are each counted', () => {
    const now: NodeSnapshot = new Map([
      // The same content in a new file: the pod was made again.
      ['chaos-000', pod('a', { seed: { ...seed, ino: 2 } })],
      ['chaos-001', pod('b2', { restartCount: 2 })],
      ['chaos-002', pod('c', { healthy: false, problem: 'not ready' })],
    ]);
    const t = observer.tally('faults', baseline, now, false, 5000);
    assert.equal(t.running, 2);
    assert.equal(t.containerIdsChanged, 2, 'b replaced, d gone');
    assert.equal(t.restarts, 2);
    assert.equal(t.emptyDirFilesChanged, 2, 'chaos-000 rewritten, chaos-003 gone');
    assert.deepEqual(losses(t), [
      'the node did not settle',
      '2 pod(s) not running',
      '2 container ID(s) changed',
      '2 restart(s)',
      '2 emptyDir file(s) changed',
    ]);
  });

  test('a data file that does not hold its seed is a problem of the baseline', () => {
    const wrong: NodeSnapshot = new Map(baseline);
    wrong.set('chaos-003', pod('d', { seed: { ...seed, content: 'other' } }));
    assert.deepEqual(observer.seedProblems(baseline), []);
    assert.equal(observer.seedProblems(wrong).length, 1);
  });
});

test('the hostile manifests parse to what they claim, and sort before the chaos pods', () => {
  const docs = Object.values(hostileManifests('ns')).map(
    (text) => parse(text) as { metadata: { name: string; uid?: string }; spec: Record<string, unknown> },
  );
  const byName = new Map(docs.map((d) => [d.metadata.name, d]));
  assert.deepEqual([...byName.keys()].sort(), [...HOSTILE_POD_NAMES].sort());
  for (const name of byName.keys()) assert.ok(name < 'chaos-', name);
  const container = (name: string) =>
    (byName.get(name)?.spec.containers as Array<Record<string, unknown>> | undefined)?.[0] ?? {};
  assert.equal(
    (container('bad-negative-period').livenessProbe as { periodSeconds: number }).periodSeconds,
    -1,
  );
  assert.equal(
    (container('bad-memory-lots').resources as { limits: { memory: string } }).limits.memory,
    'lots',
  );
  assert.equal(byName.get('bad-uid')?.metadata.uid, '../../x');
  assert.equal(container('bad-command-string').command, 'sleep 3600');
});
