/**
 * Upstream's PLEG metrics (pkg/kubelet/metrics), under its names and help:
 * kubelet_pleg_relist_duration_seconds and kubelet_pleg_relist_interval_seconds, observed by the
 * generic PLEG's relist hooks; kubelet_pleg_last_seen_seconds (for alerts such as
 * `time() - kubelet_pleg_last_seen_seconds > 180`) and kubelet_pleg_discard_events, read from the
 * PLEG's own counters when scraped.
 */
import { DEFAULT_BUCKETS_SECONDS, type MetricFamily, type MetricsRegistry } from '../lib/metrics.js';
import type { PlegMetrics } from './generic-pleg.js';

export interface PlegRelistHooks {
  /** Each relist's duration, successful or not. */
  onRelist(durationMs: number): void;
  /** At each relist's start, the time since the last successful relist began. */
  onRelistStart(sinceLastRelistMs: number): void;
}

/** Registers the four families; the hooks go to the generic PLEG, metrics() is the PLEG's own. */
export function registerPlegMetrics(registry: MetricsRegistry, metrics: () => PlegMetrics): PlegRelistHooks {
  const duration = registry.histogram(
    'kubelet_pleg_relist_duration_seconds',
    '[ALPHA] Duration in seconds for relisting pods in PLEG.',
    [],
    DEFAULT_BUCKETS_SECONDS,
  );
  const interval = registry.histogram(
    'kubelet_pleg_relist_interval_seconds',
    '[ALPHA] Interval in seconds between relisting in PLEG.',
    [],
    DEFAULT_BUCKETS_SECONDS,
  );
  registry.addCollector((): MetricFamily[] => {
    const m = metrics();
    return [
      {
        name: 'kubelet_pleg_last_seen_seconds',
        help: '[ALPHA] Timestamp in seconds when PLEG was last seen active.',
        type: 'gauge',
        // Whole seconds, as upstream's relistTime.Unix(); 0 until the first successful relist.
        samples: [{ value: Math.floor(m.lastRelistTimeMs / 1000) }],
      },
      {
        name: 'kubelet_pleg_discard_events',
        help: '[ALPHA] The number of discard events in PLEG.',
        type: 'counter',
        samples: [{ value: m.discardedEvents }],
      },
    ];
  });
  return {
    onRelist: (ms) => duration.observe(undefined, ms / 1000),
    onRelistStart: (ms) => interval.observe(undefined, ms / 1000),
  };
}
