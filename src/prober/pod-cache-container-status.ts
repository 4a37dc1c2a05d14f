/**
 * The probe workers' view of their containers, read from the PLEG's pod cache: the newest container
 * of each name with its ID, state and start time, and the pod's IP. The cache is what the pod workers
 * sync from, so a restarted container is seen here within one relist.
 */
import { findContainerStatusByName } from '../kuberuntime/compute-pod-actions.js';
import type { PodCache } from '../pleg/pod-cache.js';
import type { GetContainerStatus } from './worker.js';

export function podCacheContainerStatus(cache: Pick<PodCache, 'get'>): GetContainerStatus {
  return (podUid, containerName) => {
    const { status } = cache.get(podUid);
    const c = findContainerStatusByName(status, containerName);
    if (!c) return undefined;
    return {
      containerId: c.containerID,
      state: c.state,
      startedAtMs: c.startedAtMs,
      podIP: status.ips[0] ?? '',
    };
  };
}
