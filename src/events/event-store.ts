/**
 * The node's own memory of its events: the last N (default 500) in a ring, newest first, so a person
 * can read them on the node page and with `tskubelet events` in every mode, standalone included
 * (where upstream's events go nowhere but the log).
 *
 * Events reach it through the same EventCorrelator as the API server's copies do, so it holds what
 * the API server would: a repeat carries the name of the event it repeats and replaces it, with the
 * correlator's count and lastTimestamp, and it becomes the newest again. The ring holds what a person
 * reads, not an archive.
 */
import type { EventType, ObjectReference } from '../api/core-v1.js';
import type { Pod } from '../api/core-v1.js';
import { nodeRef } from '../api/node.js';
import { realClock, type Clock } from '../lib/clock.js';
import { logger, type Logger } from '../lib/log.js';
import { EventCorrelator, eventTime, type EventCorrelatorOptions } from './event-correlator.js';
import {
  EVENT_LOG_VERBOSITY,
  eventLogFields,
  makeEvent,
  podReference,
  type ObjectEventRecorder,
} from './event-recorder.js';
import type { CoreEvent } from './event-types.js';

export const DEFAULT_EVENT_STORE_CAPACITY = 500;

/** Which events list() returns; every field given must match. */
export interface EventFilter {
  namespace?: string;
  name?: string;
  kind?: string;
  uid?: string;
}

export type EventListener = (event: CoreEvent) => void;

export class EventStore {
  /**
   * By namespace and name, oldest first (a Map keeps insertion order); a replacement deletes and
   * re-inserts, which moves the event to the end.
   */
  private readonly events = new Map<string, CoreEvent>();
  private readonly listeners = new Set<EventListener>();
  private readonly capacity: number;
  private serial = 0;

  constructor(capacity = DEFAULT_EVENT_STORE_CAPACITY) {
    this.capacity = Math.max(1, capacity);
  }

  /**
   * Stores event, in place of the one of the same name (the correlator gives a repeat the name of
   * the event it repeats, with the count raised), and tells every subscriber.
   */
  add(event: CoreEvent): CoreEvent {
    const key = `${event.metadata.namespace ?? ''}/${event.metadata.name}`;
    const stored = { ...event, metadata: { ...event.metadata, resourceVersion: String(++this.serial) } };
    this.events.delete(key);
    this.events.set(key, stored);
    for (const oldest of this.events.keys()) {
      if (this.events.size <= this.capacity) break;
      this.events.delete(oldest);
    }
    for (const fn of this.listeners) {
      try {
        fn(stored);
      } catch {
        // A listener's failure is its own; the store and the other listeners carry on.
      }
    }
    return stored;
  }

  /** Newest first (by when each was last seen); only those matching filter when given. */
  list(filter?: EventFilter): CoreEvent[] {
    const out: CoreEvent[] = [];
    for (const e of this.events.values()) {
      if (!filter || matches(e.involvedObject, filter)) out.push(e);
    }
    return out.reverse();
  }

  get size(): number {
    return this.events.size;
  }

  /** Calls fn with each event stored from now on; returns the call that stops it. */
  subscribe(fn: EventListener): () => void {
    this.listeners.add(fn);
    return () => {
      this.listeners.delete(fn);
    };
  }
}

function matches(ref: ObjectReference, f: EventFilter): boolean {
  return (
    (f.namespace === undefined || (ref.namespace ?? '') === f.namespace) &&
    (f.name === undefined || ref.name === f.name) &&
    (f.kind === undefined || ref.kind === f.kind) &&
    (f.uid === undefined || ref.uid === f.uid)
  );
}

export interface StoreEventRecorderOptions {
  store: EventStore;
  /** source.host and reportingInstance. */
  nodeName: string;
  component?: string;
  clock?: Clock;
  /**
   * Log the events (standalone mode; in cluster mode the API recorder logs them): each one at --v=3
   * as upstream's broadcaster (StartStructuredLogging(3)), and below --v=3 each new one once, as
   * the correlator first passes it, since without an API server the terminal is where a person
   * watches the node. A repeat only raises the count in the store.
   */
  logEvents?: boolean;
  log?: Logger;
  correlator?: Omit<EventCorrelatorOptions, 'clock'>;
}

/**
 * Records events into the store through an EventCorrelator of its own: the recorder of standalone
 * mode, and the node's copy beside the API server's in cluster mode. Unlike the API server's copy,
 * the store takes the events the spam filter holds back too, so its counts are whole.
 */
export class StoreEventRecorder implements ObjectEventRecorder {
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly component: string;
  private readonly correlator: EventCorrelator;

  constructor(private readonly opts: StoreEventRecorderOptions) {
    this.clock = opts.clock ?? realClock;
    this.log = opts.log ?? logger('events');
    this.component = opts.component ?? 'kubelet';
    this.correlator = new EventCorrelator({ clock: this.clock, ...opts.correlator });
  }

  event(pod: Pod, fieldPath: string, type: EventType, reason: string, message: string): void {
    this.eventFor(podReference(pod, fieldPath), type, reason, message);
  }

  nodeEvent(type: EventType, reason: string, message: string): void {
    this.eventFor(nodeRef(this.opts.nodeName), type, reason, message);
  }

  eventFor(ref: ObjectReference, type: EventType, reason: string, message: string): void {
    const event = makeEvent(ref, type, reason, message, {
      name: this.correlator.eventName(ref.name ?? ''),
      time: eventTime(this.clock.now()),
      component: this.component,
      host: this.opts.nodeName,
    });
    const result = this.correlator.correlate(event);
    this.opts.store.add(result.event);
    if (!this.opts.logEvents) return;
    if (this.log.enabled(EVENT_LOG_VERBOSITY)) {
      this.log.v(EVENT_LOG_VERBOSITY, 'Event occurred', eventLogFields(ref, type, reason, message));
    } else if (!result.dropped && result.event.count === 1) {
      const e = result.event;
      this.log.info('Event occurred', eventLogFields(e.involvedObject, e.type, e.reason, e.message));
    }
  }
}

/** Every event to each recorder, in order (cluster mode: the API server's and the node's store). */
export function fanOutRecorder(...recorders: ObjectEventRecorder[]): ObjectEventRecorder {
  return {
    event: (pod, fieldPath, type, reason, message) => {
      for (const r of recorders) r.event(pod, fieldPath, type, reason, message);
    },
    nodeEvent: (type, reason, message) => {
      for (const r of recorders) r.nodeEvent?.(type, reason, message);
    },
    eventFor: (ref, type, reason, message) => {
      for (const r of recorders) r.eventFor(ref, type, reason, message);
    },
  };
}
