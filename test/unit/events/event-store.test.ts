import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { nodeRef } from '../../../src/api/node.js';
import { EventStore, fanOutRecorder, StoreEventRecorder } from '../../../src/events/event-store.js';
import type { CoreEvent } from '../../../src/events/event-types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { captureLog, printed } from '../k8s/capture-log.js';

function pod(name: string, uid = `uid-${name}`): Pod {
  return {
    metadata: { name, namespace: 'default', uid },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
  } as Pod;
}

describe('EventStore', () => {
  it('lists newest first and keeps only the last N', () => {
    const clock = new FakeClock();
    const store = new EventStore(3);
    const rec = new StoreEventRecorder({ store, nodeName: 'n1', clock });
    for (let i = 0; i < 5; i++) {
      rec.event(pod(`p${i}`), '', 'Normal', 'Started', `started ${i}`);
      clock.advance(1000);
    }
    assert.equal(store.size, 3);
    assert.deepEqual(
      store.list().map((e) => e.involvedObject.name),
      ['p4', 'p3', 'p2'],
    );
  });

  it('folds a repeat into the earlier event: count up, newest again', () => {
    const clock = new FakeClock();
    const store = new EventStore();
    const rec = new StoreEventRecorder({ store, nodeName: 'n1', clock });
    const web = pod('web');
    rec.event(web, 'spec.containers{app}', 'Warning', 'BackOff', 'Back-off restarting failed container');
    clock.advance(10_000);
    rec.event(pod('other'), '', 'Normal', 'Scheduled', 'x');
    clock.advance(10_000);
    rec.event(web, 'spec.containers{app}', 'Warning', 'BackOff', 'Back-off restarting failed container');
    const [first, second] = store.list();
    assert.equal(store.size, 2);
    assert.equal(first?.involvedObject.name, 'web');
    assert.equal(first?.count, 2);
    assert.notEqual(first?.firstTimestamp, first?.lastTimestamp);
    assert.equal(second?.involvedObject.name, 'other');
  });

  it('filters by object', () => {
    const store = new EventStore();
    const rec = new StoreEventRecorder({ store, nodeName: 'n1', clock: new FakeClock() });
    rec.event(pod('a'), '', 'Normal', 'Pulled', 'a1');
    rec.event(pod('b'), '', 'Normal', 'Pulled', 'b1');
    rec.eventFor(nodeRef('n1'), 'Normal', 'Starting', 'Starting kubelet.');
    assert.deepEqual(
      store.list({ namespace: 'default', name: 'a' }).map((e) => e.message),
      ['a1'],
    );
    assert.deepEqual(
      store.list({ kind: 'Node' }).map((e) => e.reason),
      ['Starting'],
    );
    assert.equal(store.list({ uid: 'uid-b' }).length, 1);
  });

  it('tells subscribers until they unsubscribe; a throwing one does not stop the rest', () => {
    const store = new EventStore();
    const rec = new StoreEventRecorder({ store, nodeName: 'n1', clock: new FakeClock() });
    const seen: CoreEvent[] = [];
    store.subscribe(() => {
      throw new Error('boom');
    });
    const stop = store.subscribe((e) => seen.push(e));
    rec.event(pod('a'), '', 'Normal', 'Pulled', 'one');
    stop();
    rec.event(pod('a'), '', 'Normal', 'Pulled', 'two');
    assert.deepEqual(
      seen.map((e) => e.message),
      ['one'],
    );
    assert.equal(store.size, 2);
  });

  it('writes the CoreEvent shape upstream writes', () => {
    const store = new EventStore();
    const clock = new FakeClock(Date.parse('2026-01-02T03:04:05.678Z'));
    new StoreEventRecorder({ store, nodeName: 'n1', clock }).event(
      pod('web'),
      'spec.containers{app}',
      'Normal',
      'Created',
      'Created container app',
    );
    const e = store.list()[0]!;
    assert.equal(e.metadata.namespace, 'default');
    assert.match(e.metadata.name, /^web\.[0-9a-f]+$/);
    assert.deepEqual(e.involvedObject, {
      kind: 'Pod',
      namespace: 'default',
      name: 'web',
      uid: 'uid-web',
      apiVersion: 'v1',
      fieldPath: 'spec.containers{app}',
    });
    assert.deepEqual(e.source, { component: 'kubelet', host: 'n1' });
    assert.equal(e.firstTimestamp, '2026-01-02T03:04:05Z');
    assert.equal(e.count, 1);
  });
});

describe('StoreEventRecorder logging and fan-out', () => {
  it('standalone: one "Event occurred" line per event at --v=0', () => {
    const log = captureLog();
    const store = new EventStore();
    const rec = new StoreEventRecorder({
      store,
      nodeName: 'n1',
      clock: new FakeClock(),
      logVerbosity: 0,
      log,
    });
    rec.event(pod('web'), 'spec.containers{app}', 'Warning', 'BackOff', 'Back-off restarting');
    const lines = printed(log);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.msg, 'Event occurred');
    assert.deepEqual(
      { object: lines[0]?.kv?.object, type: lines[0]?.kv?.type, reason: lines[0]?.kv?.reason },
      { object: 'default/web', type: 'Warning', reason: 'BackOff' },
    );
    assert.equal(lines[0]?.kv?.message, 'Back-off restarting');
  });

  it('without a verbosity it logs nothing (the API recorder logs in cluster mode)', () => {
    const log = captureLog();
    const rec = new StoreEventRecorder({ store: new EventStore(), nodeName: 'n1', log });
    rec.event(pod('web'), '', 'Normal', 'Started', 'x');
    assert.equal(log.lines.length, 0);
  });

  it('fans every event out to each recorder', () => {
    const a = new EventStore();
    const b = new EventStore();
    const rec = fanOutRecorder(
      new StoreEventRecorder({ store: a, nodeName: 'n1' }),
      new StoreEventRecorder({ store: b, nodeName: 'n1' }),
    );
    rec.event(pod('web'), '', 'Normal', 'Started', 'x');
    rec.eventFor(nodeRef('n1'), 'Normal', 'NodeReady', 'y');
    assert.equal(a.size, 2);
    assert.equal(b.size, 2);
  });
});
