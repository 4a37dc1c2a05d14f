import type { EventType, ObjectReference } from '../api/core-v1.js';

/**
 * Where node events go (upstream: record.EventRecorder with the kubelet's nodeRef); the events
 * package's ApiEventRecorder is one.
 */
export interface NodeEventRecorder {
  eventFor(ref: ObjectReference, type: EventType, reason: string, message: string): void;
}

/** upstream's kl.nodeRef: the node's UID in events is its name, not the API object's UID. */
export function nodeRef(nodeName: string): ObjectReference {
  return { kind: 'Node', name: nodeName, uid: nodeName, namespace: '' };
}
