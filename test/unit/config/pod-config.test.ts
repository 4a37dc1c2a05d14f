import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';

import type { Pod } from '../../../src/api/core-v1.js';
import { PodConfig, rfc3339Nano } from '../../../src/config/pod-config.js';
import type { PodUpdate } from '../../../src/config/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import type { Logger } from '../../../src/lib/log.js';

const quietLog: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  v: () => undefined,
  enabled: () => false,
};

function pod(name: string, uid = `uid-${name}`, image = 'busybox'): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid, annotations: { 'kubernetes.io/config.hash': uid } },
    spec: { containers: [{ name: 'c', image }] },
    status: { phase: 'Pending' },
  };
}

function summary(updates: PodUpdate[]): string[] {
  return updates.map((u) => `${u.source} ${u.op} [${u.pods.map((p) => p.metadata.name).join(',')}]`);
}

describe('PodConfig', () => {
  let clock: FakeClock;
  let config: PodConfig;
  let seen: PodUpdate[];

  beforeEach(() => {
    clock = new FakeClock(Date.UTC(2024, 0, 2, 3, 4, 5, 600));
    config = new PodConfig({ clock, log: quietLog });
    seen = [];
    config.onUpdate((u) => seen.push(u));
  });

  test('a first SET adds its pods, stamped with source and first-seen time', () => {
    config.channel('file')({ op: 'SET', pods: [pod('a'), pod('b')] });
    assert.deepEqual(summary(seen), ['file ADD [a,b]']);
    const a = seen[0]!.pods[0]!;
    assert.equal(a.metadata.annotations?.['kubernetes.io/config.source'], 'file');
    assert.equal(a.metadata.annotations?.['kubernetes.io/config.seen'], '2024-01-02T03:04:05.6Z');
  });

  test('an empty first SET still tells the consumer the source is there (empty ADD)', () => {
    config.channel('file')({ op: 'SET', pods: [] });
    assert.deepEqual(summary(seen), ['file ADD []']);
    config.channel('file')({ op: 'SET', pods: [] });
    assert.equal(seen.length, 1, 'later empty SETs are silent');
  });

  test('later SETs are diffed: REMOVE, ADD, UPDATE in that order; unchanged pods are silent', () => {
    const send = config.channel('file');
    send({ op: 'SET', pods: [pod('a'), pod('b'), pod('c')] });
    seen.length = 0;
    const b2 = pod('b', 'uid-b', 'busybox:2');
    send({ op: 'SET', pods: [pod('a'), b2, pod('d')] });
    assert.deepEqual(summary(seen), ['file REMOVE [c]', 'file ADD [d]', 'file UPDATE [b]']);
    assert.equal(seen[2]!.pods[0]!.spec.containers[0]!.image, 'busybox:2');
  });

  test('first-seen and source annotations never count as a change, and first-seen is kept', () => {
    const send = config.channel('http');
    send({ op: 'SET', pods: [pod('a')] });
    const firstSeen = seen[0]!.pods[0]!.metadata.annotations?.['kubernetes.io/config.seen'];
    clock.advance(60_000);
    const again = pod('a');
    again.metadata.annotations!['kubernetes.io/config.seen'] = 'later';
    again.metadata.annotations!['kubernetes.io/config.source'] = 'file';
    send({ op: 'SET', pods: [again] });
    assert.equal(seen.length, 1);

    const relabelled = pod('a');
    relabelled.metadata.labels = { tier: 'web' };
    send({ op: 'SET', pods: [relabelled] });
    assert.deepEqual(summary(seen), ['http ADD [a]', 'http UPDATE [a]']);
    const updated = seen[1]!.pods[0]!;
    assert.equal(updated.metadata.annotations?.['kubernetes.io/config.seen'], firstSeen);
    assert.equal(updated.metadata.annotations?.['kubernetes.io/config.source'], 'http');
    assert.deepEqual(updated.metadata.labels, { tier: 'web' });
  });

  test('a change of an annotation of its own is an UPDATE', () => {
    const send = config.channel('file');
    send({ op: 'SET', pods: [pod('a')] });
    const annotated = pod('a');
    annotated.metadata.annotations!['example.com/owner'] = 'me';
    send({ op: 'SET', pods: [annotated] });
    assert.deepEqual(summary(seen), ['file ADD [a]', 'file UPDATE [a]']);
  });

  test('a status-only change is a RECONCILE', () => {
    const send = config.channel('api');
    send({ op: 'SET', pods: [pod('a')] });
    const running = pod('a');
    running.status = { phase: 'Running' };
    send({ op: 'SET', pods: [running] });
    assert.deepEqual(summary(seen), ['api ADD [a]', 'api RECONCILE [a]']);
    assert.equal(seen[1]!.pods[0]!.status?.phase, 'Running');
  });

  test('a graceful deletion from the API source is a DELETE', () => {
    const send = config.channel('api');
    send({ op: 'ADD', pods: [pod('a')] });
    const deleting = pod('a');
    deleting.metadata.deletionTimestamp = '2024-01-02T03:05:00Z';
    deleting.metadata.deletionGracePeriodSeconds = 30;
    send({ op: 'UPDATE', pods: [deleting] });
    assert.deepEqual(summary(seen), ['api ADD [a]', 'api DELETE [a]']);
    assert.equal(seen[1]!.pods[0]!.metadata.deletionGracePeriodSeconds, 30);
    send({ op: 'REMOVE', pods: [pod('a')] });
    assert.deepEqual(summary(seen).slice(2), ['api REMOVE [a]']);
    send({ op: 'REMOVE', pods: [pod('a')] });
    assert.equal(seen.length, 3, 'removing an unknown pod is a no-op');
  });

  test('incremental ADD of a known pod is compared like any other update', () => {
    const send = config.channel('api');
    send({ op: 'ADD', pods: [pod('a')] });
    send({ op: 'ADD', pods: [pod('a')] });
    assert.deepEqual(summary(seen), ['api ADD [a]']);
  });

  test('an edited static pod has a new UID: REMOVE the old, ADD the new', () => {
    const send = config.channel('file');
    send({ op: 'SET', pods: [pod('web', 'uid-1')] });
    send({ op: 'SET', pods: [pod('web', 'uid-2', 'busybox:2')] });
    assert.deepEqual(summary(seen), ['file ADD [web]', 'file REMOVE [web]', 'file ADD [web]']);
    assert.equal(seen[1]!.pods[0]!.metadata.uid, 'uid-1');
    assert.equal(seen[2]!.pods[0]!.metadata.uid, 'uid-2');
  });

  test('within one source, the first of two pods with one name wins', () => {
    config.channel('file')({ op: 'SET', pods: [pod('a', 'uid-1'), pod('a', 'uid-2')] });
    assert.deepEqual(
      seen[0]!.pods.map((p) => p.metadata.uid),
      ['uid-1'],
    );
  });

  test('sources are kept apart', () => {
    config.channel('file')({ op: 'SET', pods: [pod('a')] });
    config.channel('http')({ op: 'SET', pods: [pod('b')] });
    config.channel('http')({ op: 'SET', pods: [] });
    assert.deepEqual(summary(seen), ['file ADD [a]', 'http ADD [b]', 'http REMOVE [b]']);
    assert.deepEqual(
      config.mergedState().map((p) => p.metadata.name),
      ['a'],
    );
  });

  test('consumers get copies: mutating an update does not change what PodConfig holds', () => {
    const send = config.channel('file');
    const original = pod('a');
    send({ op: 'SET', pods: [original] });
    seen[0]!.pods[0]!.spec.containers[0]!.image = 'mutated';
    original.spec.containers[0]!.image = 'mutated-too';
    send({ op: 'SET', pods: [pod('a')] });
    assert.equal(seen.length, 1, 'no spurious UPDATE');
    assert.equal(config.mergedState()[0]!.spec.containers[0]!.image, 'busybox');
  });

  test('what a source sends later is copied too: its status-only and spec changes do not share objects with it', () => {
    const send = config.channel('api');
    send({ op: 'SET', pods: [pod('a')] });
    const statusOnly = pod('a');
    statusOnly.status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] };
    send({ op: 'SET', pods: [statusOnly] });
    assert.deepEqual(summary(seen), ['api ADD [a]', 'api RECONCILE [a]']);
    statusOnly.status.conditions![0]!.status = 'False';
    statusOnly.status.phase = 'Failed';
    const held = config.mergedState()[0]!;
    assert.equal(held.status?.phase, 'Running');
    assert.equal(held.status?.conditions?.[0]?.status, 'True');

    const respec = pod('a', 'uid-a', 'busybox:2');
    respec.status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] };
    send({ op: 'SET', pods: [respec] });
    assert.deepEqual(summary(seen).slice(2), ['api UPDATE [a]']);
    respec.spec.containers[0]!.image = 'mutated';
    respec.metadata.annotations!['kubernetes.io/config.hash'] = 'mutated';
    const updated = config.mergedState()[0]!;
    assert.equal(updated.spec.containers[0]!.image, 'busybox:2');
    assert.equal(updated.metadata.annotations?.['kubernetes.io/config.hash'], 'uid-a');
    assert.equal(updated.metadata.annotations?.['kubernetes.io/config.source'], 'api');
    assert.equal(
      updated.metadata.annotations?.['kubernetes.io/config.seen'],
      '2024-01-02T03:04:05.6Z',
      'first-seen is kept',
    );
  });

  test('seenAllSources: every registered source must have sent a SET', () => {
    const file = config.channel('file');
    const api = config.channel('api');
    assert.equal(config.seenAllSources(), false);
    file({ op: 'SET', pods: [] });
    assert.equal(config.seenAllSources(), false);
    api({ op: 'ADD', pods: [pod('a')] });
    assert.equal(config.seenAllSources(), false, 'an increment is not a SET');
    api({ op: 'SET', pods: [pod('a')] });
    assert.equal(config.seenAllSources(), true);
    assert.equal(config.seenAllSources(new Set(['file'])), false, 'the consumer has not seen api yet');
    assert.equal(config.seenAllSources(new Set(['file', 'api'])), true);
  });

  test('a listener that throws does not stop the others', () => {
    const other: PodUpdate[] = [];
    config.onUpdate(() => {
      throw new Error('boom');
    });
    config.onUpdate((u) => other.push(u));
    config.channel('file')({ op: 'SET', pods: [pod('a')] });
    assert.equal(other.length, 1);
    assert.equal(seen.length, 1);
  });

  test('updates() iterates in order and ends on stop()', async () => {
    const it = config.updates();
    const send = config.channel('file');
    send({ op: 'SET', pods: [pod('a')] });
    send({ op: 'SET', pods: [pod('b')] });
    const got: string[] = [];
    const consumer = (async () => {
      for await (const u of it) got.push(`${u.op} ${u.pods.map((p) => p.metadata.name).join(',')}`);
    })();
    await new Promise((r) => setImmediate(r));
    config.stop();
    await consumer;
    assert.deepEqual(got, ['ADD a', 'REMOVE a', 'ADD b']);
    send({ op: 'SET', pods: [pod('c')] });
    assert.equal(seen.length, 3, 'nothing is delivered after stop');
  });

  test('updates() ends when its signal aborts', async () => {
    const ac = new AbortController();
    const it = config.updates(ac.signal);
    const next = it.next();
    ac.abort();
    assert.deepEqual(await next, { value: undefined, done: true });
  });
});

describe('rfc3339Nano', () => {
  test('trims trailing zeros of the fraction, as Go does', () => {
    assert.equal(rfc3339Nano(Date.UTC(2024, 0, 2, 3, 4, 5, 0)), '2024-01-02T03:04:05Z');
    assert.equal(rfc3339Nano(Date.UTC(2024, 0, 2, 3, 4, 5, 120)), '2024-01-02T03:04:05.12Z');
    assert.equal(rfc3339Nano(Date.UTC(2024, 0, 2, 3, 4, 5, 7)), '2024-01-02T03:04:05.007Z');
  });
});

test('every pod the API source delivers is told to the startup SLI observer, changed or not, mirror pods too; no file pod', () => {
  const clock = new FakeClock(Date.UTC(2024, 0, 2, 3, 4, 5, 600));
  const observed: string[] = [];
  const observing = new PodConfig({
    clock,
    log: quietLog,
    observePodOnWatch: (p, whenMs) => observed.push(`${p.metadata.name}@${whenMs - clock.now()}`),
  });
  const api = observing.channel('api');
  const a = pod('a');
  api({ op: 'SET', pods: [a] });
  api({ op: 'SET', pods: [a] });
  const mirror = pod('m');
  mirror.metadata.annotations = { ...mirror.metadata.annotations, 'kubernetes.io/config.mirror': 'h' };
  api({ op: 'UPDATE', pods: [mirror] });
  observing.channel('file')({ op: 'SET', pods: [pod('f')] });
  assert.deepEqual(observed, ['a@0', 'a@0', 'm@0']);
});
