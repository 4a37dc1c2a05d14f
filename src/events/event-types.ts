/**
 * core/v1 Event, from the `kubernetes-types` package, with the fields the kubelet always writes
 * required (upstream's recorder fills every one of them).
 */
import type * as v1 from 'kubernetes-types/core/v1.js';
import type { EventType, ObjectReference } from '../api/core-v1.js';

export type EventSource = v1.EventSource;

export type CoreEvent = Omit<
  v1.Event,
  | 'metadata'
  | 'involvedObject'
  | 'reason'
  | 'message'
  | 'source'
  | 'firstTimestamp'
  | 'lastTimestamp'
  | 'count'
  | 'type'
  | 'eventTime'
  | 'apiVersion'
  | 'kind'
> & {
  apiVersion?: 'v1';
  kind?: 'Event';
  metadata: { name: string; namespace: string; resourceVersion?: string; uid?: string };
  involvedObject: ObjectReference;
  reason: string;
  message: string;
  source: EventSource;
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  type: EventType;
  /** MicroTime; null on events written through the core/v1 API, as upstream's recorder leaves it. */
  eventTime?: string | null;
};
