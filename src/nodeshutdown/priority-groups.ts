/**
 * How the shutdown grace period is shared among pods (upstream: nodeshutdown_manager_linux.go
 * migrateConfig, groupByPriority, periodRequested). Pods are stopped one priority group at a time,
 * lowest first, each group within its own number of seconds.
 */
import type { Pod } from '../api/core-v1.js';
import { SYSTEM_CRITICAL_PRIORITY } from '../api/pod-source.js';

/** One entry of shutdownGracePeriodByPodPriority. */
export interface ShutdownGracePeriodByPodPriority {
  priority: number;
  shutdownGracePeriodSeconds: number;
}

export interface PodShutdownGroup extends ShutdownGracePeriodByPodPriority {
  pods: Pod[];
}

/** scheduling.DefaultPriorityWhenNoDefaultClassExists. */
const DEFAULT_PRIORITY = 0;

/**
 * shutdownGracePeriod and shutdownGracePeriodCriticalPods as two groups: everything below the
 * system-critical priority gets the difference, critical pods the rest. Nothing when the grace
 * period is 0 (or the critical share exceeds it).
 */
export function migrateConfig(
  shutdownGracePeriodMs: number,
  shutdownGracePeriodCriticalPodsMs: number,
): ShutdownGracePeriodByPodPriority[] {
  if (shutdownGracePeriodMs === 0) return [];
  const defaultPriorityMs = shutdownGracePeriodMs - shutdownGracePeriodCriticalPodsMs;
  if (defaultPriorityMs < 0) return [];
  const criticalPriorityMs = shutdownGracePeriodMs - defaultPriorityMs;
  if (criticalPriorityMs < 0) return [];
  return [
    { priority: DEFAULT_PRIORITY, shutdownGracePeriodSeconds: Math.trunc(defaultPriorityMs / 1000) },
    { priority: SYSTEM_CRITICAL_PRIORITY, shutdownGracePeriodSeconds: Math.trunc(criticalPriorityMs / 1000) },
  ];
}

/**
 * One group per configured priority (sorted low to high), each pod in the group of the highest
 * priority not above its own; pods below every group go to the lowest, above every group to the
 * highest. A pod without spec.priority counts as 0.
 */
export function groupByPriority(
  periods: readonly ShutdownGracePeriodByPodPriority[],
  pods: readonly Pod[],
): PodShutdownGroup[] {
  const groups: PodShutdownGroup[] = periods.map((p) => ({ ...p, pods: [] }));
  if (groups.length === 0) return groups;
  for (const pod of pods) {
    const priority = pod.spec.priority ?? 0;
    // The first group whose priority is >= the pod's (sort.Search).
    let index = groups.findIndex((g) => g.priority >= priority);
    if (index === -1) index = groups.length - 1;
    else if (index > 0 && groups[index]!.priority > priority) index--;
    groups[index]!.pods.push(pod);
  }
  return groups;
}

/** The whole shutdown budget: what logind's InhibitDelayMaxSec must allow. */
export function periodRequestedMs(periods: readonly ShutdownGracePeriodByPodPriority[]): number {
  return periods.reduce((sum, p) => sum + p.shutdownGracePeriodSeconds, 0) * 1000;
}
