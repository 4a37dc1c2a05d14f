import type { Pod } from '../api/core-v1.js';

/** Where pods come from; the values are upstream's `kubernetes.io/config.source` annotation values. */
export type PodSource = 'file' | 'http' | 'api';

/**
 * What PodConfig hands the sync loop (upstream: kubetypes.PodOperation).
 * SET is a source's whole state; the merged stream the loop sees uses the other operations only.
 */
export type PodOperation = 'ADD' | 'UPDATE' | 'REMOVE' | 'DELETE' | 'RECONCILE';

export interface PodUpdate {
  op: PodOperation;
  source: PodSource;
  pods: Pod[];
}

/** Annotation keys upstream sets on pods from the file and http sources. */
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_HASH_ANNOTATION = 'kubernetes.io/config.hash';
export const CONFIG_SEEN_ANNOTATION = 'kubernetes.io/config.seen';
export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** Pods from the file and http sources, which have no API object of their own (upstream: kubetypes.IsStaticPod). */
export function isStaticPod(pod: Pod): boolean {
  const source = pod.metadata.annotations?.[CONFIG_SOURCE_ANNOTATION];
  return source !== undefined && source !== 'api';
}

/** The API's copy of a static pod, which the kubelet reports to but never runs (upstream: kubetypes.IsMirrorPod). */
export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined;
}
