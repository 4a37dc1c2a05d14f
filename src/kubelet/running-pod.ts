/** The runtime's view of a pod in the shapes the kubelet's servers serve. */
import type { Pod } from '../api/core-v1.js';
import type { RunningPod } from '../kuberuntime/types.js';

/** A runtime pod as the bare v1.Pod that upstream's /runningpods/ serves. */
export function runningPodToPod(rp: RunningPod): Pod {
  return {
    metadata: { name: rp.name, namespace: rp.namespace, uid: rp.uid },
    spec: { containers: rp.containers.map((c) => ({ name: c.name, image: c.image })) },
  };
}
