/**
 * spec.activeDeadlineSeconds (upstream: pkg/kubelet/active_deadline.go): once a pod has been active
 * on the node longer than its deadline, measured from its status's startTime, the sync loop syncs
 * it, and its status turns Failed with reason DeadlineExceeded, which ends it as a terminal pod.
 */
import type { DeepReadonly } from '../lib/deep-readonly.js';
import type { Pod, PodStatus } from '../api/core-v1.js';
import type { Clock } from '../lib/clock.js';

export const DEADLINE_EXCEEDED_REASON = 'DeadlineExceeded';
export const DEADLINE_EXCEEDED_MESSAGE = 'Pod was active on the node longer than the specified deadline';

export interface ShouldEvictResponse {
  evict: boolean;
  reason?: string;
  message?: string;
}

/** Upstream's PodSyncLoopHandler and PodSyncHandler in one, as its activeDeadlineHandler is. */
export class ActiveDeadlineHandler {
  constructor(
    private readonly clock: Clock,
    /** The status the kubelet last generated for the pod (the status manager's); pod.status when none. */
    private readonly podStatus: (uid: string) => DeepReadonly<PodStatus> | undefined,
    private readonly onEvict: (pod: Pod, reason: string, message: string) => void = () => undefined,
  ) {}

  /** The sync loop syncs a pod past its deadline on its next tick (upstream ShouldSync). */
  shouldSync(pod: Pod): boolean {
    return this.pastActiveDeadline(pod);
  }

  /** Past its deadline the pod is to be failed; the event is recorded each time, as upstream does. */
  shouldEvict(pod: Pod): ShouldEvictResponse {
    if (!this.pastActiveDeadline(pod)) return { evict: false };
    this.onEvict(pod, DEADLINE_EXCEEDED_REASON, DEADLINE_EXCEEDED_MESSAGE);
    return { evict: true, reason: DEADLINE_EXCEEDED_REASON, message: DEADLINE_EXCEEDED_MESSAGE };
  }

  private pastActiveDeadline(pod: Pod): boolean {
    const deadlineSeconds = pod.spec.activeDeadlineSeconds;
    if (deadlineSeconds === undefined || deadlineSeconds === null) return false;
    const status = this.podStatus(pod.metadata.uid ?? '') ?? pod.status;
    const startMs = status?.startTime ? Date.parse(status.startTime) : Number.NaN;
    // Not started yet: no deadline runs.
    if (Number.isNaN(startMs)) return false;
    return this.clock.now() - startMs >= deadlineSeconds * 1000;
  }
}
