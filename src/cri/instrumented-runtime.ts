/**
 * The kubelet's runtime operation metrics (upstream: kuberuntime instrumented_services.go):
 * kubelet_runtime_operations_total, kubelet_runtime_operations_errors_total and
 * kubelet_runtime_operations_duration_seconds, by operation_type, for every CRI call.
 */
import { monotonicMs } from '../lib/clock.js';
import { exponentialBuckets, type MetricsRegistry } from '../lib/metrics.js';
import type { ImageService, RuntimeService } from './types.js';

/** Upstream's operation_type values are the CRI method names in snake_case (`list_podsandbox`, `start_container`, …). */
const OPERATION_NAMES: Record<string, string> = {
  version: 'version',
  runPodSandbox: 'run_podsandbox',
  stopPodSandbox: 'stop_podsandbox',
  removePodSandbox: 'remove_podsandbox',
  podSandboxStatus: 'podsandbox_status',
  listPodSandbox: 'list_podsandbox',
  createContainer: 'create_container',
  startContainer: 'start_container',
  stopContainer: 'stop_container',
  removeContainer: 'remove_container',
  listContainers: 'list_containers',
  containerStatus: 'container_status',
  updateContainerResources: 'update_container',
  reopenContainerLog: 'reopen_container_log',
  execSync: 'exec_sync',
  exec: 'exec',
  attach: 'attach',
  portForward: 'port_forward',
  containerStats: 'container_stats',
  listContainerStats: 'list_container_stats',
  status: 'status',
  updateRuntimeConfig: 'update_runtime_config',
  listImages: 'list_images',
  imageStatus: 'image_status',
  pullImage: 'pull_image',
  removeImage: 'remove_image',
  imageFsInfo: 'image_fs_info',
};

/** Wraps service so that each CRI method call is counted and timed in registry. */
export function instrumentCri<T extends RuntimeService | ImageService>(
  service: T,
  registry: MetricsRegistry,
): T {
  const total = registry.counter(
    'kubelet_runtime_operations_total',
    '[ALPHA] Cumulative number of runtime operations by operation type.',
    ['operation_type'],
  );
  const errors = registry.counter(
    'kubelet_runtime_operations_errors_total',
    '[ALPHA] Cumulative number of runtime operation errors by operation type.',
    ['operation_type'],
  );
  const duration = registry.histogram(
    'kubelet_runtime_operations_duration_seconds',
    '[ALPHA] Duration in seconds of runtime operations. Broken down by operation type.',
    ['operation_type'],
    // Upstream's buckets, 5 ms to 12 min: an image pull's minutes land in buckets of their own.
    exponentialBuckets(0.005, 2.5, 14),
  );
  // Upstream keeps these two beside the generic ones too (instrumented_services.go), by runtime handler.
  const sandboxDuration = registry.histogram(
    'kubelet_run_podsandbox_duration_seconds',
    '[ALPHA] Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.',
    ['runtime_handler'],
  );
  const sandboxErrors = registry.counter(
    'kubelet_run_podsandbox_errors_total',
    '[ALPHA] Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.',
    ['runtime_handler'],
  );
  // One wrapper per method, made at its first call, not a new closure at every call.
  const wrappers = new Map<string, { of: unknown; wrapper: (...args: unknown[]) => Promise<unknown> }>();
  return new Proxy(service, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      const operation = typeof prop === 'string' ? OPERATION_NAMES[prop] : undefined;
      if (typeof value !== 'function' || operation === undefined) return value;
      const known = wrappers.get(prop as string);
      if (known?.of === value) return known.wrapper;
      const labels = { operation_type: operation };
      const wrapper = async (...args: unknown[]) => {
        const startMs = monotonicMs();
        total.inc(labels);
        const handler = prop === 'runPodSandbox' ? { runtime_handler: String(args[1] ?? '') } : undefined;
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (err) {
          errors.inc(labels);
          if (handler) sandboxErrors.inc(handler);
          throw err;
        } finally {
          const seconds = (monotonicMs() - startMs) / 1000;
          duration.observe(labels, seconds);
          if (handler) sandboxDuration.observe(handler, seconds);
        }
      };
      wrappers.set(prop as string, { of: value, wrapper });
      return wrapper;
    },
  });
}
