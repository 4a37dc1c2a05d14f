/**
 * Where the runtime manager reports events about a pod (upstream: record.EventRecorder with the
 * reasons of pkg/kubelet/events). The kubelet wires it to the API server; tests capture it.
 */
import type { EventType, Pod } from '../api/core-v1.js';

export interface EventRecorder {
  /**
   * fieldPath names the part of the pod the event is about: `spec.containers{name}`,
   * `spec.initContainers{name}`, or '' for the pod itself (upstream's ObjectReference.FieldPath).
   */
  event(pod: Pod, fieldPath: string, type: EventType, reason: string, message: string): void;
  /** An event about the node this kubelet runs (upstream's nodeRef); recorders without one drop it. */
  nodeEvent?(type: EventType, reason: string, message: string): void;
}

/** Upstream's event reasons (pkg/kubelet/events) that kuberuntime emits. */
export const EventReason = {
  CreatedContainer: 'Created',
  StartedContainer: 'Started',
  FailedToCreateContainer: 'Failed',
  FailedToStartContainer: 'Failed',
  KillingContainer: 'Killing',
  PreemptContainer: 'Preempting',
  BackOffStartContainer: 'BackOff',
  ExceededGracePeriod: 'ExceededGracePeriod',
  PullingImage: 'Pulling',
  PulledImage: 'Pulled',
  FailedToPullImage: 'Failed',
  FailedToInspectImage: 'InspectFailed',
  ErrImageNeverPullPolicy: 'ErrImageNeverPull',
  BackOffPullImage: 'BackOff',
  SandboxChanged: 'SandboxChanged',
  FailedCreatePodSandBox: 'FailedCreatePodSandBox',
  FailedStatusPodSandBox: 'FailedPodSandBoxStatus',
  FailedPostStartHook: 'FailedPostStartHook',
  FailedPreStopHook: 'FailedPreStopHook',
  MissingClusterDNS: 'MissingClusterDNS',
  DNSConfigForming: 'DNSConfigForming',
} as const;

/** upstream GenerateContainerRef's field path for a container of pod. */
export function containerFieldPath(pod: Pod, containerName: string): string {
  if (pod.spec.containers.some((c) => c.name === containerName)) return `spec.containers{${containerName}}`;
  if (pod.spec.initContainers?.some((c) => c.name === containerName))
    return `spec.initContainers{${containerName}}`;
  if (pod.spec.ephemeralContainers?.some((c) => (c as { name?: string }).name === containerName)) {
    return `spec.ephemeralContainers{${containerName}}`;
  }
  return '';
}

/** Drops every event: for callers with nowhere to send them. */
export const discardEvents: EventRecorder = { event: () => undefined };
