/**
 * Where a pod came from, read off the annotations the config sources put on it (upstream:
 * pkg/kubelet/types/pod_update.go). Every layer asks these questions, so they live here, once.
 */
import type { Pod } from './core-v1.js';

/** Annotation keys upstream sets on pods from the file and http sources. */
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_HASH_ANNOTATION = 'kubernetes.io/config.hash';
export const CONFIG_SEEN_ANNOTATION = 'kubernetes.io/config.seen';
export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** The priority of `system-cluster-critical` and above (upstream: scheduling.SystemCriticalPriority). */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** Pods from the file and http sources, which have no API object of their own (upstream: kubetypes.IsStaticPod). */
export function isStaticPod(pod: Pod): boolean {
  const source = pod.metadata.annotations?.[CONFIG_SOURCE_ANNOTATION];
  return source !== undefined && source !== 'api';
}

/** The API's copy of a static pod, which the kubelet reports to but never runs (upstream: kubetypes.IsMirrorPod). */
export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined;
}

/**
 * Static pods, mirror pods and pods of system-critical priority are the node's own: admission may
 * preempt for them and the OOM killer spares them like Guaranteed ones (upstream: kubetypes.IsCriticalPod).
 */
export function isCriticalPod(pod: Pod): boolean {
  if (isStaticPod(pod) || isMirrorPod(pod)) return true;
  return pod.spec.priority !== undefined && pod.spec.priority >= SYSTEM_CRITICAL_PRIORITY;
}
