/**
 * The runtime manager's share of upstream's pod-start metrics (pkg/kubelet/metrics), under the
 * same names, labels and help, so that a dashboard or an alert written for the upstream kubelet
 * reads a tskubelet node unchanged: how many pods and containers it started, and how many starts
 * failed and why. (How long each RunPodSandbox took is timed with the other CRI calls, in
 * src/cri/instrumented-runtime.ts, as upstream times it in its instrumented services.)
 */
import type { Counter, MetricsRegistry } from '../lib/metrics.js';

/** Upstream's container_type label values. */
export type StartedContainerType = 'container' | 'init_container' | 'ephemeral_container';

export class PodStartMetrics {
  private readonly startedPods: Counter;
  private readonly startedPodsErrors: Counter;
  private readonly startedContainers: Counter;
  private readonly startedContainersErrors: Counter;

  constructor(registry: MetricsRegistry) {
    this.startedPods = registry.counter(
      'kubelet_started_pods_total',
      '[ALPHA] Cumulative number of pods started',
    );
    this.startedPodsErrors = registry.counter(
      'kubelet_started_pods_errors_total',
      '[ALPHA] Cumulative number of errors when starting pods',
    );
    this.startedContainers = registry.counter(
      'kubelet_started_containers_total',
      '[ALPHA] Cumulative number of containers started',
      ['container_type'],
    );
    this.startedContainersErrors = registry.counter(
      'kubelet_started_containers_errors_total',
      '[ALPHA] Cumulative number of errors when starting containers',
      ['container_type', 'code'],
    );
  }

  /** A sync is about to make the pod's sandbox. */
  podStarting(): void {
    this.startedPods.inc();
  }

  /** Its sandbox could not be made (not counted when the pod was being stopped meanwhile, as upstream). */
  podStartFailed(): void {
    this.startedPodsErrors.inc();
  }

  /** A container start is attempted (one in back-off is not). */
  containerStarting(type: StartedContainerType): void {
    this.startedContainers.inc({ container_type: type });
  }

  /** It failed; code is the start's reason (ErrImagePull, CreateContainerError, RunContainerError, …). */
  containerStartFailed(type: StartedContainerType, code: string): void {
    this.startedContainersErrors.inc({ container_type: type, code });
  }
}
