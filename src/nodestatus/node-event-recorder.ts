import type { EventType, ObjectReference } from '../api/core-v1.js';

/**
 * Where node events go (upstream: record.EventRecorder with the kubelet's nodeRef); the events
 * package's ApiEventRecorder is one.
 */
export interface NodeEventRecorder {
  eventFor(ref: ObjectReference, type: EventType, reason: string, message: string): void;
}
