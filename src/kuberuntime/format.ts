/** Renderings that upstream's messages use, so that users and tools see the same strings. */
import type { Pod } from '../api/core-v1.js';

/** upstream format.Pod: `name_namespace(uid)`. */
export function formatPod(pod: Pod): string {
  return formatPodRef(pod.metadata.name ?? '', pod.metadata.namespace ?? '', pod.metadata.uid ?? '');
}

export function formatPodRef(name: string, namespace: string, uid: string): string {
  return `${name}_${namespace}(${uid})`;
}
