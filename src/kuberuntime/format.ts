/** Renderings that upstream's messages use, so that users and tools see the same strings. */
import type { Pod } from '../api/core-v1.js';

/** upstream format.Pod: `name_namespace(uid)`. */
export function formatPod(pod: Pod): string {
  return formatPodRef(pod.metadata.name ?? '', pod.metadata.namespace ?? '', pod.metadata.uid ?? '');
}

export function formatPodRef(name: string, namespace: string, uid: string): string {
  return `${name}_${namespace}(${uid})`;
}

/** namespace/name, for logs; safe on any object, as it names pods in the messages of their failures. */
export function podRef(pod: Pod): string {
  const meta = (pod as Partial<Pod>).metadata;
  return `${String(meta?.namespace ?? '')}/${String(meta?.name ?? '')}`;
}
