/** core/v1 Event and ObjectReference, the fields a kubelet writes (upstream: k8s.io/api/core/v1). */

export interface ObjectReference {
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiVersion?: string;
  resourceVersion?: string;
  /** The part of the object the event is about, e.g. `spec.containers{app}`. */
  fieldPath?: string;
}

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
  type: 'Normal' | 'Warning';
  eventTime?: string | null;
  /** Upstream's ReportingController; the JSON name is reportingComponent. */
  reportingComponent?: string;
  reportingInstance?: string;
}
