/**
 * The pod startup latency SLI (sig-scalability's "Pod startup latency"), as upstream's
 * podStartupLatencyTracker measures it for API pods: from the pod's creationTimestamp to the moment
 * the kubelet sees, on its API watch, a status with every container running, less the time spent
 * pulling images (first pull started to last pull finished). Three series, under upstream's names:
 * kubelet_pod_start_sli_duration_seconds, kubelet_pod_start_total_duration_seconds (pulls
 * included) and kubelet_first_network_pod_start_sli_duration_seconds (the first pod on the pod
 * network, which carries the CNI's start-up).
 *
 * Only pods first seen before they had a startTime are tracked: pods that were already running
 * when the kubelet (re)started say nothing about how fast it starts pods. Static pods have no watch:
 * their mirror pods are measured instead, from the mirror pod's creation, as upstream does.
 */
import type { Pod } from '../api/core-v1.js';
import type { Clock } from '../lib/clock.js';
import { logger } from '../lib/log.js';
import type { Gauge, Histogram, MetricsRegistry } from '../lib/metrics.js';

const log = logger('kubelet');

/** Upstream's podStartupDurationBuckets, shared with kubelet_pod_start_duration_seconds. */
export const POD_STARTUP_DURATION_BUCKETS = [
  0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700,
  3600,
];

interface PerPodState {
  firstStartedPullingMs?: number;
  lastFinishedPullingMs?: number;
  /** When the API server first took a status of this kubelet's with every container running. */
  observedRunningMs?: number;
  recorded: boolean;
}

/**
 * Every container has been started at least once (upstream hasPodStartedSLO). A status with no
 * container statuses at all says nothing yet, where upstream's loop over none would say "started".
 */
function hasPodStarted(pod: Pod): boolean {
  const statuses = pod.status?.containerStatuses ?? [];
  if (statuses.length === 0 && pod.spec.containers.length > 0) return false;
  return statuses.every((cs) => cs.state?.running?.startedAt !== undefined);
}

function rfc3339(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

export class PodStartupLatencyTracker {
  private readonly pods = new Map<string, PerPodState>();
  private firstNetworkPodSeen = false;
  private readonly sli: Histogram;
  private readonly total: Histogram;
  private readonly firstNetworkPod: Gauge;

  constructor(
    registry: MetricsRegistry,
    private readonly clock: Clock,
  ) {
    // Registered unlabelled, the three show 0 and empty buckets until a start is measured.
    const measured =
      'measured from pod creation timestamp to when all its containers are reported as started and observed via watch';
    this.sli = registry.histogram(
      'kubelet_pod_start_sli_duration_seconds',
      `[ALPHA] Duration in seconds to start a pod, excluding time to pull images and run init containers, ${measured}`,
      [],
      POD_STARTUP_DURATION_BUCKETS,
    );
    this.total = registry.histogram(
      'kubelet_pod_start_total_duration_seconds',
      `[ALPHA] Duration in seconds to start a pod since creation, including time to pull images and run init containers, ${measured}`,
      [],
      POD_STARTUP_DURATION_BUCKETS,
    );
    this.firstNetworkPod = registry.gauge(
      'kubelet_first_network_pod_start_sli_duration_seconds',
      `[INTERNAL] Duration in seconds to start the first network pod, excluding time to pull images and run init containers, ${measured}`,
    );
  }

  /** The API source delivered this pod (any change, status included) at whenMs. */
  observedPodOnWatch(pod: Pod, whenMs: number): void {
    const uid = pod.metadata.uid ?? '';
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') {
      this.pods.delete(uid);
      return;
    }
    const state = this.pods.get(uid);
    if (!state) {
      // Only pods this kubelet has not started yet: a running pod after a restart is not a start.
      if (!pod.status?.startTime) this.pods.set(uid, { recorded: false });
      return;
    }
    if (state.observedRunningMs === undefined || state.recorded || !hasPodStarted(pod)) return;

    const created = Date.parse(pod.metadata.creationTimestamp ?? '');
    if (Number.isNaN(created)) return;
    const startingMs = whenMs - created;
    const pullingMs =
      state.firstStartedPullingMs !== undefined && state.lastFinishedPullingMs !== undefined
        ? state.lastFinishedPullingMs - state.firstStartedPullingMs
        : 0;
    const sliSeconds = (startingMs - pullingMs) / 1000;
    log.info('Observed pod startup duration', {
      pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
      podStartSLOduration: sliSeconds,
      podStartE2EDuration: `${startingMs}ms`,
      podCreationTimestamp: pod.metadata.creationTimestamp,
      firstStartedPulling: rfc3339(state.firstStartedPullingMs),
      lastFinishedPulling: rfc3339(state.lastFinishedPullingMs),
      observedRunningTime: rfc3339(state.observedRunningMs),
      watchObservedRunningTime: rfc3339(whenMs),
    });
    this.sli.observe(undefined, sliSeconds);
    this.total.observe(undefined, startingMs / 1000);
    state.recorded = true;
    if (!pod.spec.hostNetwork && !this.firstNetworkPodSeen) {
      this.firstNetworkPod.set(undefined, sliSeconds);
      this.firstNetworkPodSeen = true;
    }
  }

  recordImageStartedPulling(uid: string): void {
    const state = this.pods.get(uid);
    if (state && state.firstStartedPullingMs === undefined) state.firstStartedPullingMs = this.clock.now();
  }

  recordImageFinishedPulling(uid: string): void {
    const state = this.pods.get(uid);
    if (state) state.lastFinishedPullingMs = this.clock.now();
  }

  /**
   * The API server took a status patch for the pod (the pod as it answered): the first one with
   * every container running marks the start.
   */
  recordStatusUpdated(pod: Pod): void {
    const state = this.pods.get(pod.metadata.uid ?? '');
    if (!state || state.recorded || state.observedRunningMs !== undefined) return;
    if (hasPodStarted(pod)) state.observedRunningMs = this.clock.now();
  }

  deletePodStartupState(uid: string): void {
    this.pods.delete(uid);
  }

  /** Pods being tracked (for tests and leak checks). */
  get tracked(): number {
    return this.pods.size;
  }
}
