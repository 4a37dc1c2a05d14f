/**
 * The node's own memory of its events: the last N (default 500) in a ring, newest first, so a person
 * can read them on the node page and with `tskubelet events` in every mode, standalone included
 * (where upstream's events go nowhere but the log).
 *
 * A repeat of an event (same object, type, reason, message and source) is folded into the earlier
 * one, as the API server's copy is by the correlator: its count goes up, its lastTimestamp moves and
 * it becomes the newest again. The ring holds what a person reads, not an archive.
 */
import type { EventType, ObjectReference } from '../api/core-v1.js';
import type { Pod } from '../api/core-v1.js';
import { nodeRef } from '../api/node.js';
import { realClock, type Clock } from '../lib/clock.js';
import { logger, type Logger } from '../lib/log.js';
import { eventTime } from './event-correlator.js';
import { eventLogFields, makeEvent, podReference, type ObjectEventRecorder } from './event-recorder.js';
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
   * By fold key, oldest first (a Map keeps insertion order); a fold deletes and re-inserts, which
   * moves the event to the end. Keyed so that a new event finds its earlier copy without building the
   * key of every stored one.
   */
  private readonly events = new Map<string, CoreEvent>();
  private readonly listeners = new Set<EventListener>();
  private readonly capacity: number;
  private serial = 0;

  constructor(capacity = DEFAULT_EVENT_STORE_CAPACITY) {
    this.capacity = Math.max(1, capacity);
  }

  /** Stores event (or folds it into its earlier copy) and tells every subscriber. */
  add(event: CoreEvent): CoreEvent {
    const key = foldKey(event);
    const earlier = this.events.get(key);
    let stored: CoreEvent;
    if (earlier) {
      this.events.delete(key);
      stored = {
        ...earlier,
        count: earlier.count + Math.max(1, event.count),
        lastTimestamp: event.lastTimestamp,
        metadata: { ...earlier.metadata, resourceVersion: String(++this.serial) },
      };
    } else {
      stored = { ...event, metadata: { ...event.metadata, resourceVersion: String(++this.serial) } };
    }
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

/** What makes two events the same one (the correlator's key, less what cannot differ here). */
function foldKey(e: CoreEvent): string {
  const r = e.involvedObject;
  return [
    r.kind,
    r.namespace,
    r.name,
    r.uid,
    r.fieldPath,
    e.type,
    e.reason,
    e.message,
    e.source.component,
    e.source.host,
  ].join('\u0000');
}

export interface StoreEventRecorderOptions {
  store: EventStore;
  /** source.host and reportingInstance. */
  nodeName: string;
  component?: string;
  clock?: Clock;
  /**
   * Log each event at this verbosity (upstream's StartStructuredLogging line, "Event occurred"); no
   * line when undefined. Standalone logs at 0: without an API server the log is where events live on.
   */
  logVerbosity?: number;
  log?: Logger;
}

/** Records events into the store (and the log): the recorder of standalone mode. */
export class StoreEventRecorder implements ObjectEventRecorder {
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly component: string;
  private nameSerial = 0;

  constructor(private readonly opts: StoreEventRecorderOptions) {
    this.clock = opts.clock ?? realClock;
    this.log = opts.log ?? logger('events');
    this.component = opts.component ?? 'kubelet';
  }

  event(pod: Pod, fieldPath: string, type: EventType, reason: string, message: string): void {
    this.eventFor(podReference(pod, fieldPath), type, reason, message);
  }

  nodeEvent(type: EventType, reason: string, message: string): void {
    this.eventFor(nodeRef(this.opts.nodeName), type, reason, message);
  }

  eventFor(ref: ObjectReference, type: EventType, reason: string, message: string): void {
    const nowMs = this.clock.now();
    const now = eventTime(nowMs);
    const event = makeEvent(ref, type, reason, message, {
      // Upstream's name shape: <object>.<hex time>; a serial keeps two in one instant apart.
      name: `${ref.name ?? ''}.${(nowMs * 1000 + (this.nameSerial++ % 1000)).toString(16)}`,
      time: now,
      component: this.component,
      host: this.opts.nodeName,
    });
    this.opts.store.add(event);
    const level = this.opts.logVerbosity;
    if (level === undefined) return;
    const kv = eventLogFields(ref, type, reason, message);
    if (level <= 0) this.log.info('Event occurred', kv);
    else this.log.v(level, 'Event occurred', kv);
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
