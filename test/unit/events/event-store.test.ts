import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { nodeRef } from '../../../src/api/node.js';
import { EventStore, fanOutRecorder, StoreEventRecorder } from '../../../src/events/event-store.js';
import type { CoreEvent } from '../../../src/events/event-types.js';
import { makeKubeletEventRecorder } from '../../../src/events/kubelet-event-recorder.js';
import type { ObjectEventRecorder } from '../../../src/events/event-recorder.js';
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

describe('StoreEventRecorder: the correlator, the log and fan-out', () => {
  const backOff = 'Back-off restarting failed container app in pod web_default(uid-web)';

  it('standalone at --v=0: a new event is printed once, its repeats only raise the count', () => {
    const log = captureLog(0);
    const clock = new FakeClock(Date.parse('2026-01-02T03:04:05Z'));
    const store = new EventStore();
    const rec = new StoreEventRecorder({ store, nodeName: 'n1', clock, logEvents: true, log });
    for (let i = 0; i < 60; i++) {
      rec.eventFor(nodeRef('n1'), 'Warning', 'MissingClusterDNS', 'no cluster DNS');
      rec.event(pod('web'), 'spec.containers{app}', 'Warning', 'BackOff', backOff);
      clock.advance(1000);
    }
    const lines = printed(log);
    assert.deepEqual(
      lines.map((l) => [l.msg, l.kv?.object, l.kv?.reason, l.kv?.message]),
      [
        ['Event occurred', 'n1', 'MissingClusterDNS', 'no cluster DNS'],
        ['Event occurred', 'default/web', 'BackOff', backOff],
      ],
    );
    assert.equal(log.lines.length, 2, 'nothing at higher verbosities either');
    assert.deepEqual(
      store.list().map((e) => [e.reason, e.count]),
      [
        ['BackOff', 60],
        ['MissingClusterDNS', 60],
      ],
    );
    const dns = store.list({ kind: 'Node' })[0];
    assert.equal(dns?.firstTimestamp, '2026-01-02T03:04:05Z');
    assert.equal(dns?.lastTimestamp, '2026-01-02T03:05:04Z');
  });

  it("at --v=3 every event is logged, as upstream's broadcaster logs it, and nothing at --v=0", () => {
    const log = captureLog(3);
    const rec = new StoreEventRecorder({
      store: new EventStore(),
      nodeName: 'n1',
      clock: new FakeClock(),
      logEvents: true,
      log,
    });
    for (let i = 0; i < 3; i++) rec.event(pod('web'), 'spec.containers{app}', 'Warning', 'BackOff', backOff);
    assert.equal(printed(log).length, 0);
    assert.deepEqual(
      log.lines.map((l) => [l.verbosity, l.msg, l.kv?.fieldPath, l.kv?.reason]),
      Array(3).fill([3, 'Event occurred', 'spec.containers{app}', 'BackOff']),
    );
  });

  it('the spam filter keeps a source to 25 new events per object from the terminal, not from the store', () => {
    const log = captureLog(0);
    const store = new EventStore();
    const rec = new StoreEventRecorder({
      store,
      nodeName: 'n1',
      clock: new FakeClock(),
      logEvents: true,
      log,
    });
    for (let i = 0; i < 30; i++) rec.event(pod('web'), '', 'Normal', `Reason${i}`, 'm');
    assert.equal(printed(log).length, 25);
    assert.equal(store.size, 30);
  });

  it('keeps the count of repeats the spam filter holds back', () => {
    const clock = new FakeClock();
    const store = new EventStore();
    const rec = new StoreEventRecorder({ store, nodeName: 'n1', clock });
    for (let i = 0; i < 40; i++) {
      rec.event(pod('web'), 'spec.containers{app}', 'Warning', 'BackOff', backOff);
      clock.advance(100);
    }
    assert.equal(store.size, 1);
    assert.equal(store.list()[0]?.count, 40);
  });

  it('aggregates the 10th and later similar events into one "(combined from similar events)" event', () => {
    const log = captureLog(0);
    const store = new EventStore();
    const rec = new StoreEventRecorder({
      store,
      nodeName: 'n1',
      clock: new FakeClock(),
      logEvents: true,
      log,
    });
    for (let i = 1; i <= 12; i++) rec.event(pod('web'), '', 'Warning', 'Unhealthy', `probe failed ${i}`);
    const events = store.list();
    assert.equal(events.length, 10);
    assert.equal(events[0]?.message, '(combined from similar events): probe failed 12');
    assert.equal(events[0]?.count, 3);
    assert.equal(printed(log).length, 10, 'nine single events and the combined one, once');
  });

  it('without logEvents it logs nothing (the API recorder logs in cluster mode)', () => {
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

describe('makeKubeletEventRecorder', () => {
  it('standalone: the store and the log, and says no events go to an API server', () => {
    const log = captureLog(0);
    const store = new EventStore();
    const rec = makeKubeletEventRecorder({ store, nodeName: 'n1', clock: new FakeClock(), log });
    rec.event(pod('web'), '', 'Normal', 'Started', 'x');
    assert.deepEqual(
      printed(log).map((l) => l.msg),
      ['No api server defined - no events will be sent to API server', 'Event occurred'],
    );
    assert.equal(store.size, 1);
  });

  it('cluster: the API recorder and the store, which then logs nothing itself', () => {
    const log = captureLog(0);
    const store = new EventStore();
    const sent: string[] = [];
    const api: ObjectEventRecorder = {
      event: (_pod, _fieldPath, _type, reason) => sent.push(reason),
      eventFor: (_ref, _type, reason) => sent.push(reason),
    };
    const rec = makeKubeletEventRecorder({ store, nodeName: 'n1', clock: new FakeClock(), api, log });
    rec.event(pod('web'), '', 'Normal', 'Started', 'x');
    rec.eventFor(nodeRef('n1'), 'Normal', 'Starting', 'Starting kubelet.');
    assert.deepEqual(sent, ['Started', 'Starting']);
    assert.equal(store.size, 2);
    assert.equal(printed(log).length, 0);
  });
});
