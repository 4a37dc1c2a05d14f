/**
 * The runtime manager's share of upstream's pod-start metrics (pkg/kubelet/metrics), under the
 * same names, labels and help, so that a dashboard or an alert written for the upstream kubelet
 * reads a tskubelet node unchanged: how many pods and containers it started, how many starts
 * failed and why, and how long the runtime took to make each sandbox.
 */
import { DEFAULT_BUCKETS_SECONDS, type MetricsRegistry } from '../lib/metrics.js';
import type { Counter, Histogram } from '../lib/metrics.js';

/** Upstream's container_type label values. */
export type StartedContainerType = 'container' | 'init_container' | 'ephemeral_container';

export class PodStartMetrics {
  private readonly startedPods: Counter;
  private readonly startedPodsErrors: Counter;
  private readonly runPodSandboxDuration: Histogram;
  private readonly runPodSandboxErrors: Counter;
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
    // Unlabelled counters show 0 before their first event, as client_golang's do.
    this.startedPods.inc(undefined, 0);
    this.startedPodsErrors.inc(undefined, 0);
    this.runPodSandboxDuration = registry.histogram(
      'kubelet_run_podsandbox_duration_seconds',
      '[ALPHA] Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.',
      ['runtime_handler'],
      DEFAULT_BUCKETS_SECONDS,
    );
    this.runPodSandboxErrors = registry.counter(
      'kubelet_run_podsandbox_errors_total',
      '[ALPHA] Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.',
      ['runtime_handler'],
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

  /** One RunPodSandbox call, however it ended. */
  sandboxRun(runtimeHandler: string, seconds: number, failed: boolean): void {
    const labels = { runtime_handler: runtimeHandler };
    this.runPodSandboxDuration.observe(labels, seconds);
    if (failed) this.runPodSandboxErrors.inc(labels);
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
