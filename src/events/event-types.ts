/** core/v1 Event, the fields a kubelet writes (upstream: k8s.io/api/core/v1). */
import type { EventType, ObjectReference } from '../api/core-v1.js';

export interface EventSource {
  component?: string;
  host?: string;
}

export interface CoreEvent {
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
  eventTime?: string | null;
  /** Upstream's ReportingController; the JSON name is reportingComponent. */
  reportingComponent?: string;
  reportingInstance?: string;
}
