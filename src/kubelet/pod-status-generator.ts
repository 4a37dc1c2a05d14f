/**
 * The API status the kubelet writes for a pod (upstream: Kubelet.generateAPIPodStatus with the pod
 * sync handlers' ShouldEvict, and the status function of a pod being killed laid over it).
 */
import type { Pod, PodStatus } from '../api/core-v1.js';
import { podRef } from '../kuberuntime/format.js';
import type { KubePodStatus } from '../kuberuntime/types.js';
import type { Clock } from '../lib/clock.js';
import { mutableCopy } from '../lib/deep-readonly.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { generateAPIPodStatus } from '../status/generate-api-pod-status.js';
import type { ReasonCache } from '../status/reason-cache.js';
import type { ActiveDeadlineHandler } from './active-deadline.js';
import type { KubeletOptions } from './kubelet-options.js';

const log = logger('kubelet');

export type PodStatusFn = (status: PodStatus) => PodStatus;

export interface PodStatusGeneratorOptions extends Pick<
  KubeletOptions,
  'statusManager' | 'prober' | 'statusHostIPs'
> {
  clock: Clock;
  /** Why each container last failed to start, so the next status shows why it waits. */
  reasonCache: ReasonCache;
  activeDeadline: ActiveDeadlineHandler;
}

export class PodStatusGenerator {
  /**
   * What the kubelet itself decided about the status of pods it stops (upstream: the kill's
   * PodStatusFunc), laid over every status generated for them, so that a preempted pod stays
   * Failed/Preempting even when its containers exit 0.
   */
  readonly statusFns = new Map<string, PodStatusFn>();

  constructor(private readonly opts: PodStatusGeneratorOptions) {}

  /** Keeps the kill's status function for the pod, and sets the pod's status through it now. */
  setStatusFn(pod: Pod, statusFn: PodStatusFn): void {
    const uid = pod.metadata.uid ?? '';
    this.statusFns.set(uid, statusFn);
    this.opts.statusManager.setPodStatus(
      pod,
      statusFn(mutableCopy<PodStatus>(this.opts.statusManager.getPodStatus(uid) ?? pod.status ?? {})),
    );
  }

  /**
   * The pod's API status. A pod whose status cannot be made keeps its last one (logged), so that it
   * can still be synced, stopped and cleaned up like any other.
   */
  generate(pod: Pod, podStatus: KubePodStatus, podIsTerminal: boolean): PodStatus {
    try {
      return this.generatePodStatus(pod, podStatus, podIsTerminal);
    } catch (err) {
      log.error('Failed to generate pod status', { pod: podRef(pod), err: errorMessage(err) });
      return mutableCopy<PodStatus>(
        this.opts.statusManager.getPodStatus(pod.metadata.uid ?? '') ?? pod.status ?? {},
      );
    }
  }

  private generatePodStatus(pod: Pod, podStatus: KubePodStatus, podIsTerminal: boolean): PodStatus {
    const uid = pod.metadata.uid ?? '';
    const status = generateAPIPodStatus({
      pod,
      podStatus,
      oldPodStatus: this.opts.statusManager.getPodStatus(uid),
      podIsTerminal,
      nowMs: this.opts.clock.now(),
      waitingReasons: this.opts.reasonCache.forPod(uid),
      probeResults: this.opts.prober?.statusProbeResults,
      hostIPs: this.opts.statusHostIPs,
    });
    // An internal module that wants the pod gone fails it (upstream: the PodSyncHandlers' ShouldEvict
    // in generateAPIPodStatus), unless the API already shows it finished otherwise.
    const apiPhase = pod.status?.phase;
    if (apiPhase !== 'Succeeded' && apiPhase !== 'Failed') {
      const evict = this.opts.activeDeadline.shouldEvict(pod);
      if (evict.evict)
        Object.assign(status, { phase: 'Failed', reason: evict.reason, message: evict.message });
    }
    const statusFn = this.statusFns.get(uid);
    return statusFn ? statusFn(status) : status;
  }
}
