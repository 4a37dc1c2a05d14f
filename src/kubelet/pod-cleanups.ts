/**
 * The pod clean-ups of each housekeeping pass (upstream: HandlePodCleanups): workers and statuses of
 * pods no source wants, runtime pods nobody knows, orphaned mirror pods, pod folders and pod cgroups.
 * The kubelet runs it only once every source has reported (sourcesReady).
 */
import type { PodStatus } from '../api/core-v1.js';
import type { Runtime } from '../kuberuntime/types.js';
import type { Clock } from '../lib/clock.js';
import { logger } from '../lib/log.js';
import type { PodManager } from '../pod/pod-manager.js';
import type { PodWorkers } from '../podworkers/pod-workers.js';
import type { KubeletOptions } from './kubelet-options.js';

const log = logger('kubelet');

export interface PodCleanupDeps {
  podManager: PodManager;
  podWorkers: PodWorkers;
  runtime: Runtime;
  opts: Pick<
    KubeletOptions,
    'statusManager' | 'prober' | 'mirrorPods' | 'volumeManager' | 'containerManager'
  >;
  /** The kubelet's per-pod status functions: those of pods no longer wanted are dropped. */
  podStatusFns: Map<string, (status: PodStatus) => PodStatus>;
  clock: Clock;
  signal: AbortSignal;
}

export async function handlePodCleanups(deps: PodCleanupDeps): Promise<void> {
  const desired = deps.podManager.getPods().map((p) => p.metadata.uid ?? '');
  const workers = deps.podWorkers.syncKnownPods(desired);
  deps.opts.statusManager.removeOrphanedStatuses(new Set(desired));
  deps.opts.prober?.cleanupPods(desired);
  const desiredUids = new Set(desired);
  for (const uid of deps.podStatusFns.keys()) if (!desiredUids.has(uid)) deps.podStatusFns.delete(uid);

  // Pods the runtime runs that no worker knows: left over from before a restart, or removed while we were down.
  const runningPods = await deps.runtime.getPods(false);
  for (const rp of runningPods) {
    if (workers.has(rp.uid)) continue;
    log.v(2, 'Found a runtime pod no source wants: stopping it', {
      pod: `${rp.namespace}/${rp.name}`,
      podUID: rp.uid,
    });
    deps.podWorkers.updatePod({ updateType: 'kill', runningPod: rp, startTimeMs: deps.clock.now() });
  }
  // A mirror pod whose static pod is gone goes once that pod has stopped.
  await deps.opts.mirrorPods?.deleteOrphaned(
    (fullName) => deps.podManager.getPodByFullName(fullName),
    (fullName) => deps.podWorkers.isPodForMirrorPodTerminatingByFullName(fullName),
    deps.signal,
  );

  // Folders of pods that are gone and cannot be running (upstream: cleanupOrphanedPodDirs).
  const keep = new Set([...desired, ...runningPods.map((rp) => rp.uid)]);
  await deps.opts.volumeManager?.cleanupOrphanedPodDirs(
    (uid) => keep.has(uid) || deps.podWorkers.couldHaveRunningContainers(uid),
  );

  // Each pass, as upstream's HandlePodCleanups does: a pod cgroup goes once its pod cannot be running.
  await deps.opts.containerManager.cleanupOrphanedPodCgroups((uid) =>
    deps.podWorkers.couldHaveRunningContainers(uid),
  );
}
