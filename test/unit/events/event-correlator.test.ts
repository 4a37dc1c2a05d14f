/**
 * The EventCorrelator against the cases of upstream's client-go tools/record/events_cache_test.go
 * (TestEventCorrelator, TestEventAggregatorByReasonFunc, TestEventSpamFilter): same inputs, same
 * expected counts, messages and skips. Upstream drives time with an IntervalClock, whose every
 * Now() moves on by a fixed step; IntervalClock below does the same.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_AGGREGATE_INTERVAL_SECONDS,
  DEFAULT_AGGREGATE_MAX_EVENTS,
  DEFAULT_SPAM_BURST,
  EventCorrelator,
  eventTime,
} from '../../../src/events/event-correlator.js';
import type { CoreEvent } from '../../../src/events/event-types.js';
import type { ObjectReference } from '../../../src/api/core-v1.js';
import type { Clock, TimerHandle } from '../../../src/lib/clock.js';

class IntervalClock implements Clock {
  constructor(
    private current: number,
    private readonly stepMs: number,
  ) {}
  now(): number {
    this.current += this.stepMs;
    return this.current;
  }
  setTimeout(): TimerHandle {
    throw new Error('not used');
  }
  clearTimeout(): void {}
  sleep(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
}

function makeObjectReference(kind: string, name: string, namespace: string): ObjectReference {
  return {
    kind,
    name,
    namespace,
    uid: 'C934D34AFB20242',
    apiVersion: 'version',
    fieldPath: 'spec.containers{mycontainer}',
  };
}

function makeEvent(reason: string, message: string, involvedObject: ObjectReference): CoreEvent {
  const now = eventTime(Date.now());
  return {
    metadata: { name: `${involvedObject.name}.1`, namespace: involvedObject.namespace ?? '' },
    reason,
    message,
    involvedObject,
    source: { component: 'kubelet', host: 'kublet.node1' },
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    type: 'Normal',
  };
}

const copies = (n: number, e: CoreEvent): CoreEvent[] => Array.from({ length: n }, () => structuredClone(e));

function makeUniqueEvents(n: number): CoreEvent[] {
  return Array.from({ length: n }, (_, i) =>
    makeEvent(`reason-${i}`, `message-${i}`, makeObjectReference('Pod', `pod-${i}`, `ns-${i}`)),
  );
}

function makeSimilarEvents(n: number, template: CoreEvent, prefix: string): CoreEvent[] {
  return copies(n, template).map((e, i) => ({ ...e, message: `${prefix}-${i}-${e.message}` }));
}

describe('EventCorrelator (upstream events_cache_test.go)', () => {
  const firstEvent = makeEvent('first', 'i am first', makeObjectReference('Pod', 'my-pod', 'my-ns'));
  const duplicateEvent = makeEvent('duplicate', 'me again', makeObjectReference('Pod', 'my-pod', 'my-ns'));
  const uniqueEvent = makeEvent('unique', 'snowflake', makeObjectReference('Pod', 'my-pod', 'my-ns'));
  const similarEvent = makeEvent('similar', 'similar message', {
    ...makeObjectReference('Pod', 'my-pod', 'my-ns'),
    fieldPath: 'spec.containers{container1}',
  });
  const aggregateMessage = `(combined from similar events): ${similarEvent.message}`;
  const similarButDifferentContainerEvent: CoreEvent = {
    ...similarEvent,
    involvedObject: { ...similarEvent.involvedObject, fieldPath: 'spec.containers{container2}' },
  };

  const scenarios: Record<
    string,
    {
      previousEvents: CoreEvent[];
      newEvent: CoreEvent;
      expected?: { message: string; count: number; reason: string; fieldPath?: string };
      intervalSeconds: number;
      expectedSkip?: boolean;
    }
  > = {
    'create-a-single-event': {
      previousEvents: [],
      newEvent: firstEvent,
      expected: { message: 'i am first', count: 1, reason: 'first' },
      intervalSeconds: 5,
    },
    'the-same-event-should-just-count': {
      previousEvents: copies(1, duplicateEvent),
      newEvent: duplicateEvent,
      expected: { message: 'me again', count: 2, reason: 'duplicate' },
      intervalSeconds: 5,
    },
    'the-same-event-should-just-count-even-if-more-than-aggregate': {
      previousEvents: copies(DEFAULT_AGGREGATE_MAX_EVENTS, duplicateEvent),
      newEvent: duplicateEvent,
      expected: { message: 'me again', count: DEFAULT_AGGREGATE_MAX_EVENTS + 1, reason: 'duplicate' },
      intervalSeconds: 30,
    },
    'the-same-event-is-spam-if-happens-too-frequently': {
      previousEvents: copies(DEFAULT_SPAM_BURST + 1, duplicateEvent),
      newEvent: duplicateEvent,
      expectedSkip: true,
      intervalSeconds: 1,
    },
    'create-many-unique-events': {
      previousEvents: makeUniqueEvents(30),
      newEvent: uniqueEvent,
      expected: { message: 'snowflake', count: 1, reason: 'unique' },
      intervalSeconds: 5,
    },
    'similar-events-should-aggregate-event': {
      previousEvents: makeSimilarEvents(DEFAULT_AGGREGATE_MAX_EVENTS - 1, similarEvent, similarEvent.message),
      newEvent: similarEvent,
      expected: { message: aggregateMessage, count: 1, reason: 'similar' },
      intervalSeconds: 5,
    },
    'similar-events-many-times-should-count-the-aggregate': {
      previousEvents: makeSimilarEvents(DEFAULT_AGGREGATE_MAX_EVENTS, similarEvent, similarEvent.message),
      newEvent: similarEvent,
      expected: { message: aggregateMessage, count: 2, reason: 'similar' },
      intervalSeconds: 5,
    },
    'events-from-different-containers-do-not-aggregate': {
      previousEvents: copies(1, similarButDifferentContainerEvent),
      newEvent: similarEvent,
      expected: {
        message: 'similar message',
        count: 1,
        reason: 'similar',
        fieldPath: 'spec.containers{container1}',
      },
      intervalSeconds: 5,
    },
    'similar-events-whose-interval-is-greater-than-aggregate-interval-do-not-aggregate': {
      previousEvents: makeSimilarEvents(DEFAULT_AGGREGATE_MAX_EVENTS - 1, similarEvent, similarEvent.message),
      newEvent: similarEvent,
      expected: { message: 'similar message', count: 1, reason: 'similar' },
      intervalSeconds: DEFAULT_AGGREGATE_INTERVAL_SECONDS,
    },
  };

  for (const [name, s] of Object.entries(scenarios)) {
    it(name, () => {
      const clock = new IntervalClock(Date.UTC(2026, 10, 25, 0, 0, 0), s.intervalSeconds * 1000);
      const correlator = new EventCorrelator({ clock });
      const play = (e: CoreEvent) => {
        const now = eventTime(clock.now());
        return correlator.correlate({ ...structuredClone(e), firstTimestamp: now, lastTimestamp: now });
      };
      for (const prev of s.previousEvents) {
        const r = play(prev);
        // As upstream's test: what the server would return is fed back (name and count kept).
        if (!r.dropped) correlator.updateState(r.event);
      }
      const result = play(s.newEvent);
      assert.equal(result.dropped, s.expectedSkip ?? false);
      if (result.dropped || !s.expected) return;
      const e = result.event;
      assert.equal(e.message, s.expected.message);
      assert.equal(e.count, s.expected.count);
      assert.equal(e.reason, s.expected.reason);
      assert.equal(e.type, 'Normal');
      assert.deepEqual(e.source, { component: 'kubelet', host: 'kublet.node1' });
      if (s.expected.fieldPath) assert.equal(e.involvedObject.fieldPath, s.expected.fieldPath);
      assert.ok(e.metadata.name.startsWith(`${e.involvedObject.name}.`), e.metadata.name);
      // validateEvent: equal timestamps exactly when the event happened once.
      if (s.expected.count > 1) assert.notEqual(e.firstTimestamp, e.lastTimestamp);
      else assert.equal(e.firstTimestamp, e.lastTimestamp);
      // A repeat is sent as a strategic merge patch of count, lastTimestamp and message only.
      if (s.expected.count > 1) {
        assert.deepEqual(result.patch, {
          count: e.count,
          lastTimestamp: e.lastTimestamp,
          message: e.message,
        });
      } else {
        assert.equal(result.patch, undefined);
      }
    });
  }

  it('aggregates by source, object (not fieldPath), type, reason and reporting fields; not by message', () => {
    const clock = new IntervalClock(Date.UTC(2026, 10, 25), 1000);
    const c = new EventCorrelator({ clock, aggregateMaxEvents: 2 });
    const ref = makeObjectReference('Pod', 'pod1', 'other');
    assert.equal(c.correlate(makeEvent('end-of-world', 'it was fun', ref)).dropped, false);
    const second = c.correlate(makeEvent('end-of-world', 'it was awful', ref));
    assert.ok(!second.dropped);
    assert.equal(second.event.message, '(combined from similar events): it was awful');
    // Upstream's combined event carries no reporting fields and no eventTime.
    assert.equal(second.event.reportingComponent, '');
    assert.equal(second.event.reportingInstance, '');
    assert.equal(second.event.eventTime, null);
    const third = c.correlate(makeEvent('nevermind', 'it was a bug', ref));
    assert.ok(!third.dropped);
    assert.equal(third.event.message, 'it was a bug');
  });

  it('spam filter: the same object with another reason is spam after the burst (TestEventSpamFilter)', () => {
    const clock = new IntervalClock(Date.UTC(2026, 10, 25), 1000);
    const c = new EventCorrelator({ clock, spamBurst: 1 });
    const ref = makeObjectReference('Pod', 'my-pod', 'my-ns');
    const first = c.correlate(makeEvent('original', 'i am first', ref));
    assert.equal(first.dropped, false);
    if (!first.dropped) c.updateState(first.event);
    assert.equal(c.correlate(makeEvent('duplicate', 'me again', ref)).dropped, true);
    // Another object has a bucket of its own.
    assert.equal(c.correlate(makeEvent('duplicate', 'me again', { ...ref, name: 'other' })).dropped, false);
  });

  it('counts an event the spam filter drops, as upstream observes before it filters', () => {
    const clock = new IntervalClock(Date.UTC(2026, 10, 25), 1);
    const c = new EventCorrelator({ clock, spamBurst: 1 });
    const e = makeEvent('BackOff', 'again', makeObjectReference('Pod', 'p', 'ns'));
    const r1 = c.correlate(e);
    if (!r1.dropped) c.updateState(r1.event);
    assert.equal(c.correlate(e).dropped, true);
    // 300 s later the bucket has a token again; the count includes the dropped one.
    (clock as unknown as { current: number }).current += 300_000;
    const r3 = c.correlate(e);
    assert.ok(!r3.dropped);
    assert.equal(r3.event.count, 3);
  });

  it('leaves an empty message out of the patch (omitempty on both sides of the merge)', () => {
    const clock = new IntervalClock(Date.UTC(2026, 10, 25), 1000);
    const c = new EventCorrelator({ clock });
    const e = makeEvent('Quiet', '', makeObjectReference('Pod', 'p', 'ns'));
    const r1 = c.correlate(e);
    if (!r1.dropped) c.updateState(r1.event);
    const r2 = c.correlate(e);
    assert.ok(!r2.dropped);
    assert.deepEqual(r2.patch, { count: 2, lastTimestamp: r2.event.lastTimestamp });
  });

  it("names an event <object>.<hex of the clock's nanoseconds>, a sequence number in the last six digits", () => {
    const times = [0, 1, 999, 16_777_215, 16_777_216, Date.UTC(2026, 11, 7, 6, 5, 4, 321), 4_102_444_800_000];
    for (const ms of times) {
      let current = ms;
      const clock = { now: () => current } as unknown as Clock;
      const c = new EventCorrelator({ clock });
      for (let seq = 0; seq < 3; seq++) {
        const nanos = BigInt(ms) * 1_000_000n + BigInt(seq);
        assert.equal(c.eventName('web'), `web.${nanos.toString(16)}`, `at ${ms} ms, event ${seq}`);
      }
      current += 1;
      assert.equal(c.eventName('web'), `web.${(BigInt(ms + 1) * 1_000_000n + 3n).toString(16)}`);
    }
  });

  it('eventTime: whole seconds in UTC, a later second formatted anew', () => {
    const t = Date.UTC(2026, 11, 7, 6, 5, 4);
    assert.equal(eventTime(t + 999), '2026-12-07T06:05:04Z');
    assert.equal(eventTime(t), '2026-12-07T06:05:04Z');
    assert.equal(eventTime(t + 1000), '2026-12-07T06:05:05Z');
    assert.equal(eventTime(t - 1), '2026-12-07T06:05:03Z');
    assert.equal(eventTime(0), '1970-01-01T00:00:00Z');
  });
});
