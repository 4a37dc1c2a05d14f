/** Step 1 of buildKubelet: the CRI clients every later part calls, counted and timed. */
import type { ImageService, RuntimeService } from '../cri/types.js';
import { instrumentCri } from '../cri/instrumented-runtime.js';
import { PodStartupLatencyTracker } from '../kubelet/pod-startup-latency-tracker.js';
import type { Clock } from '../lib/clock.js';
import { PodCIDRUpdater } from '../kuberuntime/pod-cidr.js';
import { MetricsRegistry } from '../lib/metrics.js';
import type { ConnectedRuntime } from './build-context.js';

export interface RuntimeClients {
  /** The kubelet's own /metrics registry. */
  readonly metrics: MetricsRegistry;
  readonly runtime: RuntimeService;
  readonly images: ImageService;
  readonly runtimeName: string;
  readonly runtimeVersion: string;
  /** The pod startup latency SLI (kubelet_pod_start_sli_duration_seconds and its kin). */
  readonly podStartupLatency: PodStartupLatencyTracker;
  /** The pod CIDR handed to the runtime: from the configuration at start, from the Node's spec in a cluster. */
  readonly podCIDR: PodCIDRUpdater;
}

export function buildRuntimeClients(connection: ConnectedRuntime, clock: Clock): RuntimeClients {
  // Every CRI call the kubelet makes is counted and timed (kubelet_runtime_operations_*).
  const metrics = new MetricsRegistry();
  const runtime = instrumentCri(connection.runtime, metrics);
  return {
    metrics,
    runtime,
    images: instrumentCri(connection.images, metrics),
    runtimeName: connection.version.runtimeName,
    runtimeVersion: connection.version.runtimeVersion,
    // It measures API pods (it needs a watch); its series exist in any mode, as upstream's.
    podStartupLatency: new PodStartupLatencyTracker(metrics, clock),
    podCIDR: new PodCIDRUpdater(runtime),
  };
}
