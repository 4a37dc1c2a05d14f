/**
 * kubelet_running_pods and kubelet_running_containers{container_state}, read from the runtime when
 * /metrics is scraped. Upstream counts them from its PLEG cache; asking CRI costs two list calls per
 * scrape and gives the same numbers.
 */
import type { ContainerState, RuntimeService } from '../cri/types.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { MetricFamily, MetricsRegistry } from '../lib/metrics.js';

const log = logger('server');

const STATE_LABEL: Record<ContainerState, string> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

/** Adds the collector to registry; a runtime that does not answer in timeoutMs leaves the two out of that scrape. */
export function addRuntimeStateMetrics(
  registry: MetricsRegistry,
  runtime: RuntimeService,
  timeoutMs = 10_000,
): void {
  registry.addCollector(async (): Promise<MetricFamily[]> => {
    try {
      const [sandboxes, containers] = await Promise.all([
        runtime.listPodSandbox({ state: 'SANDBOX_READY' }, { timeoutMs }),
        runtime.listContainers({}, { timeoutMs }),
      ]);
      const byState = new Map<string, number>();
      for (const c of containers)
        byState.set(STATE_LABEL[c.state], (byState.get(STATE_LABEL[c.state]) ?? 0) + 1);
      return [
        {
          name: 'kubelet_running_pods',
          help: '[ALPHA] Number of pods that have a running pod sandbox',
          type: 'gauge',
          samples: [{ value: sandboxes.length }],
        },
        {
          name: 'kubelet_running_containers',
          help: '[ALPHA] Number of containers currently running',
          type: 'gauge',
          samples: [...byState].map(([state, value]) => ({ labels: { container_state: state }, value })),
        },
      ];
    } catch (err) {
      log.v(2, 'Runtime state metrics unavailable', { err: errorMessage(err) });
      return [];
    }
  });
}
