/**
 * Node-level admission: whether a new pod may run here next to the pods already admitted
 * (upstream: lifecycle.PodAdmitHandler). Cluster mode adds resource fit, node affinity and taints.
 */
import type { Pod } from '../api/core-v1.js';

export type AdmitResult = { admit: true } | { admit: false; reason: string; message: string };

export interface AdmitLimits {
  maxPods: number;
}

export function admitPod(pod: Pod, activePods: readonly Pod[], limits: AdmitLimits): AdmitResult {
  // Upstream counts the pod itself: a node with maxPods 110 runs at most 110.
  if (limits.maxPods > 0 && activePods.length + 1 > limits.maxPods) {
    return {
      admit: false,
      reason: 'OutOfpods',
      message: `Node didn't have enough resource: pods, requested: 1, used: ${activePods.length}, capacity: ${limits.maxPods}`,
    };
  }
  const os = pod.spec.os?.name;
  if (os !== undefined && os !== 'linux') {
    return {
      admit: false,
      reason: 'PodOSNotSupported',
      message: `Failed to admit pod as the OS field doesn't match node OS`,
    };
  }
  return { admit: true };
}
