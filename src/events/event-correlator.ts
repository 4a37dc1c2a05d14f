/**
 * Upstream's EventCorrelator (client-go tools/record/events_cache.go), which keeps a kubelet from
 * flooding the API server with events:
 * - aggregation: more than 10 distinct messages for the same object, type and reason within 10 min
 *   become one event "(combined from similar events): <message>";
 * - observation: an event seen before (same object, field, type, reason, message) is not created
 *   again: the existing one gets count+1 and a new lastTimestamp by a PATCH;
 * - spam filter: a token bucket per source and object (burst 25, one more every 5 min) drops the rest.
 * The caches are bounded LRUs (4096 entries), as upstream's.
 */
import type { Clock } from '../lib/clock.js';
import { TokenBucketRateLimiter } from '../lib/token-bucket.js';
import type { CoreEvent } from './event-types.js';

export const DEFAULT_SPAM_BURST = 25;
export const DEFAULT_SPAM_QPS = 1 / 300;
export const DEFAULT_AGGREGATE_MAX_EVENTS = 10;
export const DEFAULT_AGGREGATE_INTERVAL_SECONDS = 600;
export const MAX_LRU_CACHE_ENTRIES = 4096;

export interface EventCorrelatorOptions {
  clock: Clock;
  spamBurst?: number;
  spamQps?: number;
  aggregateMaxEvents?: number;
  aggregateIntervalSeconds?: number;
  cacheSize?: number;
}

export type CorrelateResult =
  /**
   * The spam filter keeps it from the API server; event is what it would have been (its count is
   * the one the next event of its kind carries), for the node's own store.
   */
  | { dropped: true; event: CoreEvent }
  /** patch is set when the event updates an existing one (count > 1). */
  | { dropped: false; event: CoreEvent; patch: Record<string, unknown> | undefined };

/** A map that forgets its least recently used entry beyond maxEntries (upstream: k8s.io/utils/lru). */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly maxEntries: number) {}

  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.maxEntries) this.map.delete(this.map.keys().next().value as string);
  }
}

interface AggregateRecord {
  localKeys: Set<string>;
  lastTimestampMs: number;
}

interface EventLog {
  count: number;
  firstTimestamp: string;
  name: string;
  resourceVersion: string | undefined;
}

export function eventKey(e: CoreEvent): string {
  const o = e.involvedObject;
  return [
    e.source.component,
    e.source.host,
    o.kind,
    o.namespace,
    o.name,
    o.fieldPath,
    o.uid,
    o.apiVersion,
    e.type,
    e.reason,
    e.message,
  ].join('');
}

function spamKey(e: CoreEvent): string {
  const o = e.involvedObject;
  return [e.source.component, e.source.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion].join('');
}

function aggregateKey(e: CoreEvent): string {
  const o = e.involvedObject;
  return [
    e.source.component,
    e.source.host,
    o.kind,
    o.namespace,
    o.name,
    o.uid,
    o.apiVersion,
    e.type,
    e.reason,
    e.reportingComponent,
    e.reportingInstance,
  ].join('');
}

// The last second eventTime formatted: a pod start records its events in bursts within a second,
// each formatted 3 times (both recorders, the aggregation).
let formattedSecond = NaN;
let formatted = '';

/** metav1.Time: RFC 3339, whole seconds, UTC. */
export function eventTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== formattedSecond) {
    formatted = new Date(second * 1000).toISOString().replace('.000Z', 'Z');
    formattedSecond = second;
  }
  return formatted;
}

export class EventCorrelator {
  private readonly clock: Clock;
  private readonly spamBurst: number;
  private readonly spamQps: number;
  private readonly maxEvents: number;
  private readonly maxIntervalMs: number;
  private readonly spam: Lru<TokenBucketRateLimiter>;
  private readonly aggregates: Lru<AggregateRecord>;
  private readonly logs: Lru<EventLog>;
  private nameSeq = 0;

  constructor(options: EventCorrelatorOptions) {
    this.clock = options.clock;
    this.spamBurst = options.spamBurst ?? DEFAULT_SPAM_BURST;
    this.spamQps = options.spamQps ?? DEFAULT_SPAM_QPS;
    this.maxEvents = options.aggregateMaxEvents ?? DEFAULT_AGGREGATE_MAX_EVENTS;
    this.maxIntervalMs = (options.aggregateIntervalSeconds ?? DEFAULT_AGGREGATE_INTERVAL_SECONDS) * 1000;
    const size = options.cacheSize ?? MAX_LRU_CACHE_ENTRIES;
    this.spam = new Lru(size);
    this.aggregates = new Lru(size);
    this.logs = new Lru(size);
  }

  /** `<name>.<hex nanoseconds>`, unique even for events within one millisecond. */
  eventName(objectName: string): string {
    const nanos = BigInt(this.clock.now()) * 1_000_000n + BigInt(this.nameSeq++ % 1_000_000);
    return `${objectName}.${nanos.toString(16)}`;
  }

  correlate(newEvent: CoreEvent): CorrelateResult {
    const { event: aggregated, key } = this.aggregate(newEvent);
    const { event, patch } = this.observe(aggregated, key);
    if (this.filtered(event)) return { dropped: true, event };
    return { dropped: false, event, patch };
  }

  /** Records what the server returned (name, resourceVersion, count) for the next observation. */
  updateState(event: CoreEvent): void {
    this.logs.set(eventKey(event), {
      count: event.count,
      firstTimestamp: event.firstTimestamp,
      name: event.metadata.name,
      resourceVersion: event.metadata.resourceVersion,
    });
  }

  private aggregate(newEvent: CoreEvent): { event: CoreEvent; key: string } {
    const nowMs = this.clock.now();
    const aggKey = aggregateKey(newEvent);
    let record = this.aggregates.get(aggKey);
    if (!record || nowMs - record.lastTimestampMs > this.maxIntervalMs) {
      record = { localKeys: new Set(), lastTimestampMs: 0 };
    }
    record.localKeys.add(newEvent.message);
    record.lastTimestampMs = nowMs;
    this.aggregates.set(aggKey, record);
    if (record.localKeys.size < this.maxEvents) return { event: newEvent, key: eventKey(newEvent) };
    // Keep the set from growing past the threshold (upstream drops an arbitrary one).
    record.localKeys.delete(record.localKeys.values().next().value as string);
    const now = eventTime(nowMs);
    const combined: CoreEvent = {
      metadata: {
        name: this.eventName(newEvent.involvedObject.name ?? ''),
        namespace: newEvent.metadata.namespace,
      },
      involvedObject: newEvent.involvedObject,
      reason: newEvent.reason,
      message: `(combined from similar events): ${newEvent.message}`,
      source: newEvent.source,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type: newEvent.type,
      // Upstream's combined event copies none of these: they go out empty (eventTime null).
      eventTime: null,
      reportingComponent: '',
      reportingInstance: '',
    };
    return { event: combined, key: aggKey };
  }

  private observe(
    newEvent: CoreEvent,
    key: string,
  ): { event: CoreEvent; patch: Record<string, unknown> | undefined } {
    const event: CoreEvent = { ...newEvent, metadata: { ...newEvent.metadata } };
    const last = this.logs.get(key);
    let patch: Record<string, unknown> | undefined;
    if (last && last.count > 0) {
      event.metadata.name = last.name;
      if (last.resourceVersion !== undefined) event.metadata.resourceVersion = last.resourceVersion;
      else delete event.metadata.resourceVersion;
      event.firstTimestamp = last.firstTimestamp;
      event.count = last.count + 1;
      // Upstream's two-way merge of the event against itself with count, lastTimestamp and message
      // cleared; an empty message is left out of both sides (omitempty), so not patched.
      patch = { count: event.count, lastTimestamp: event.lastTimestamp };
      if (event.message !== '') patch.message = event.message;
    }
    this.logs.set(key, {
      count: event.count,
      firstTimestamp: event.firstTimestamp,
      name: event.metadata.name,
      resourceVersion: event.metadata.resourceVersion,
    });
    return { event, patch };
  }

  private filtered(event: CoreEvent): boolean {
    const key = spamKey(event);
    let bucket = this.spam.get(key);
    if (!bucket) bucket = new TokenBucketRateLimiter(this.spamQps, this.spamBurst, this.clock);
    const accepted = bucket.tryAccept();
    this.spam.set(key, bucket);
    return !accepted;
  }
}
