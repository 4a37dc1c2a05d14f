/**
 * The kubelet's event recorder in cluster mode (upstream: record.EventBroadcaster recording to the
 * API server): events are queued (1000 at most; more are dropped and that is logged once), then
 * written by one task, in order, through the EventCorrelator: a repeat of an event PATCHes its count,
 * a flood is aggregated and rate limited per object. A write that gets no answer is retried up to 12
 * times, 10 s apart (the first wait random, so kubelets that lost the server do not come back together);
 * a write the server refuses is not retried.
 *
 * Events go through their own client, whose rate limit is eventRecordQPS/eventBurst.
 */
import type { Pod } from '../api/core-v1.js';
import type { ApiResult, Status } from '../k8s/api-status.js';
import { isKubeApiError } from '../k8s/api-status.js';
import type { RestClient } from '../k8s/rest-client.js';
import { goJson, type Json } from '../k8s/strategic-merge-patch.js';
import type { EventRecorder } from '../kuberuntime/event-recorder.js';
import type { EventType } from '../api/core-v1.js';
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger, type Logger } from '../lib/log.js';
import { EventCorrelator, eventTime, type EventCorrelatorOptions } from './event-correlator.js';
import type { CoreEvent } from './event-types.js';
import type { ObjectReference } from '../api/core-v1.js';
import { nodeRef } from '../api/node.js';

export const MAX_QUEUED_EVENTS = 1000;
export const MAX_TRIES_PER_EVENT = 12;
export const EVENT_RETRY_SLEEP_MS = 10_000;
/** Upstream's kubelet logs every event at this verbosity (eventBroadcaster.StartStructuredLogging(3)). */
export const EVENT_LOG_VERBOSITY = 3;

/** Records events about any object; the pod form is the one kuberuntime uses. */
export interface ObjectEventRecorder extends EventRecorder {
  eventFor(ref: ObjectReference, type: EventType, reason: string, message: string): void;
}

/** The calls the recorder makes: RestClient satisfies it. */
export type EventClient = Pick<RestClient, 'create' | 'patch'>;

export interface ApiEventRecorderOptions {
  /** A client of its own, limited to eventRecordQPS/eventBurst. */
  client: EventClient;
  /** source.host and reportingInstance. */
  nodeName: string;
  /** source.component and reportingComponent (upstream: "kubelet"). */
  component?: string;
  clock?: Clock;
  log?: Logger;
  maxQueuedEvents?: number;
  maxTriesPerEvent?: number;
  retrySleepMs?: number;
  correlator?: Omit<EventCorrelatorOptions, 'clock'>;
  /** A random number in [0, 1), for the first retry's wait; injected for tests. */
  random?: () => number;
}

/** The reference upstream's ref.GetReference / GetPartialReference make for a pod (and a part of it). */
export function podReference(pod: Pod, fieldPath = ''): ObjectReference {
  const ref: ObjectReference = {
    kind: 'Pod',
    namespace: pod.metadata.namespace ?? '',
    name: pod.metadata.name ?? '',
    uid: pod.metadata.uid ?? '',
    apiVersion: 'v1',
  };
  if (pod.metadata.resourceVersion) ref.resourceVersion = pod.metadata.resourceVersion;
  if (fieldPath) ref.fieldPath = fieldPath;
  return ref;
}

/** Who records an event, what it is called and when: the parts makeEvent does not take from the event. */
export interface EventOrigin {
  name: string;
  /** firstTimestamp and lastTimestamp (RFC 3339 seconds). */
  time: string;
  component: string;
  host: string;
}

/** A new event about ref, as upstream's recorder makes one (tools/record makeEvent, generateEvent). */
export function makeEvent(
  ref: ObjectReference,
  type: EventType,
  reason: string,
  message: string,
  origin: EventOrigin,
): CoreEvent {
  return {
    metadata: { name: origin.name, namespace: ref.namespace || 'default' },
    involvedObject: withoutEmptyFields(ref),
    reason,
    message,
    source: { component: origin.component, host: origin.host },
    firstTimestamp: origin.time,
    lastTimestamp: origin.time,
    count: 1,
    type,
    eventTime: null,
    reportingComponent: origin.component,
    reportingInstance: origin.host,
  };
}

/** Go leaves empty fields out of an ObjectReference (omitempty). */
function withoutEmptyFields(ref: ObjectReference): ObjectReference {
  const out: Record<string, unknown> = {};
  for (const key in ref) {
    const value = ref[key as keyof ObjectReference];
    if (value !== undefined && value !== '') out[key] = value;
  }
  return out as ObjectReference;
}

/** The key-values of upstream's "Event occurred" line (StartStructuredLogging). */
export function eventLogFields(
  ref: ObjectReference,
  type: EventType,
  reason: string,
  message: string,
): Record<string, string | undefined> {
  return {
    object: `${ref.namespace ? `${ref.namespace}/` : ''}${ref.name ?? ''}`,
    fieldPath: ref.fieldPath,
    kind: ref.kind,
    apiVersion: ref.apiVersion,
    type,
    reason,
    message,
  };
}

export class ApiEventRecorder implements ObjectEventRecorder {
  private readonly opts: ApiEventRecorderOptions;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly correlator: EventCorrelator;
  private readonly component: string;
  private readonly queue: CoreEvent[] = [];
  private readonly stopController = new AbortController();
  private readonly idleWaiters: (() => void)[] = [];
  private worker: Promise<void> | undefined;
  private dropping = false;
  /** Writes are failing for want of an answer; logged once, until one goes through. */
  private failing = false;
  private stopped = false;

  constructor(opts: ApiEventRecorderOptions) {
    this.opts = opts;
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
    if (this.stopped) return;
    const now = eventTime(this.clock.now());
    const event = makeEvent(ref, type, reason, message, {
      name: this.correlator.eventName(ref.name ?? ''),
      time: now,
      component: this.component,
      host: this.opts.nodeName,
    });
    this.log.v(EVENT_LOG_VERBOSITY, 'Event occurred', eventLogFields(ref, type, reason, message));
    if (this.queue.length >= (this.opts.maxQueuedEvents ?? MAX_QUEUED_EVENTS)) {
      if (!this.dropping) {
        this.dropping = true;
        this.log.error(
          'Unable to record event: too many queued events, dropping events until the queue drains',
          {
            reason,
            object: ref.name,
          },
        );
      }
      return;
    }
    this.queue.push(event);
    this.worker ??= this.drain().finally(() => {
      this.worker = undefined;
      for (const w of this.idleWaiters.splice(0)) w();
    });
  }

  /** Resolves once every queued event has been written or given up on. */
  idle(): Promise<void> {
    return this.worker ? new Promise((resolve) => this.idleWaiters.push(resolve)) : Promise.resolve();
  }

  /** Stops writing: queued events are dropped, a write in flight is cut short. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    this.stopController.abort(new Error('event recorder stopped'));
    await this.worker;
  }

  private async drain(): Promise<void> {
    const signal = this.stopController.signal;
    while (!signal.aborted) {
      const next = this.queue.shift();
      if (!next) return;
      if (this.dropping && this.queue.length === 0) {
        this.dropping = false;
        this.log.info('Event queue drained, recording events again');
      }
      const result = this.correlator.correlate(next);
      if (result.dropped) continue;
      for (let tries = 0; ;) {
        if (await this.write(result.event, result.patch, signal)) break;
        if (++tries >= (this.opts.maxTriesPerEvent ?? MAX_TRIES_PER_EVENT)) {
          this.log.error('Unable to write event (retry limit exceeded!)', {
            reason: result.event.reason,
            name: result.event.metadata.name,
          });
          break;
        }
        const sleepMs = this.opts.retrySleepMs ?? EVENT_RETRY_SLEEP_MS;
        try {
          await this.clock.sleep(
            tries === 1 ? sleepMs * (this.opts.random ?? Math.random)() : sleepMs,
            signal,
          );
        } catch {
          return;
        }
      }
    }
  }

  /** One attempt (upstream: recordEvent); true when done with the event, written or refused. */
  private async write(
    event: CoreEvent,
    patch: Record<string, unknown> | undefined,
    signal: AbortSignal,
  ): Promise<boolean> {
    const ref = { resource: 'events', namespace: event.metadata.namespace };
    try {
      let result: ApiResult<CoreEvent> | undefined;
      if (patch && event.count > 1) {
        result = await this.opts.client.patch<CoreEvent>(
          { ...ref, name: event.metadata.name },
          'strategic',
          goJson(patch as Json),
          { signal },
        );
      }
      // The event to update may have expired (events live an hour): make it anew.
      if (!result || (!result.ok && result.reason === 'NotFound')) {
        const { resourceVersion: _rv, ...metadata } = event.metadata;
        result = await this.opts.client.create<CoreEvent>(ref, { ...event, metadata }, { signal });
      }
      if (this.failing) {
        this.failing = false;
        this.log.info('Writing events to the API server again');
      }
      if (result.ok) {
        this.correlator.updateState(result.object);
        return true;
      }
      // Upstream logs an AlreadyExists (or a terminating namespace) at V(5), any other refusal as an error.
      const kv = { reason: event.reason, err: result.status.message ?? result.reason };
      if (result.reason === 'AlreadyExists' || namespaceTerminating(result.status)) {
        this.log.v(5, 'Server rejected event (will not retry!)', kv);
      } else {
        this.log.error('Server rejected event (will not retry!)', kv);
      }
      return true;
    } catch (err) {
      if (signal.aborted) return true;
      if (isKubeApiError(err) && err.httpStatus !== 0) {
        const kv = { reason: event.reason, err: errorMessage(err) };
        if (namespaceTerminating(err.status)) this.log.v(5, 'Server rejected event (will not retry!)', kv);
        else this.log.error('Server rejected event (will not retry!)', kv);
        return true;
      }
      const kv = { reason: event.reason, err: errorMessage(err) };
      if (!this.failing) {
        this.failing = true;
        this.log.warn('Unable to write event (may retry after sleeping)', kv);
      } else {
        this.log.v(4, 'Unable to write event (may retry after sleeping)', kv);
      }
      return false;
    }
  }
}

/** Upstream's errors.HasStatusCause(err, v1.NamespaceTerminatingCause). */
function namespaceTerminating(status: Status | undefined): boolean {
  return status?.details?.causes?.some((c) => c.reason === 'NamespaceTerminating') ?? false;
}
