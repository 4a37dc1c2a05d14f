/** Conversions between the runtime's view of a pod and the shapes the kubelet passes around. */
import type { Pod } from '../api/core-v1.js';
import type { KubePodStatus, RunningPod } from '../kuberuntime/types.js';

/** What killPod needs from a pod status: its sandboxes and the containers that may still run (upstream: ConvertPodStatusToRunningPod). */
export function runningPodFromStatus(status: KubePodStatus): RunningPod {
  return {
    uid: status.uid,
    name: status.name,
    namespace: status.namespace,
    sandboxes: status.sandboxStatuses.map((s) => ({
      id: s.id,
      state: s.state === 'SANDBOX_READY' ? 'ready' : 'notready',
      createdAtMs: Math.floor(s.createdAt / 1e6),
    })),
    containers: status.containerStatuses
      .filter((c) => c.state === 'running' || c.state === 'created' || c.state === 'unknown')
      .map((c) => ({
        id: c.id,
        name: c.name,
        image: c.image,
        imageRef: c.imageRef,
        hash: c.hash,
        state: c.state,
      })),
  };
}

/** A runtime pod as the bare v1.Pod that upstream's /runningpods/ serves. */
export function runningPodToPod(rp: RunningPod): Pod {
  return {
    metadata: { name: rp.name, namespace: rp.namespace, uid: rp.uid },
    spec: { containers: rp.containers.map((c) => ({ name: c.name, image: c.image })) },
  };
}
