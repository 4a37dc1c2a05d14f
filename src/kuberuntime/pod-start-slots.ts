/**
 * A bound on how many pods the kubelet starts at once: from RunPodSandbox to the start of the
 * pod's containers in that sync. Upstream starts every pod as soon as its worker gets to it; with
 * 100 pods at once on a 2-core node, containerd then works on all 100 sandboxes side by side and
 * the first pod runs about as late as the last. With 8 at a time the same node had the median pod
 * running in half the time and all 100 a little sooner (docs/benchmarks.md, "Pod starts in slots").
 *
 * A slot is a bound, never a lock. It is given back before an image pull (which has its own bound),
 * and it lapses after POD_START_SLOT_LAPSE_MS, so a start that hangs (a CNI plugin, a slow runtime)
 * holds up the pods behind it by that much at most. Under a runtime slower than that for every
 * start, the lapses let another `limit` starts in every 5 s: the bound then loosens towards
 * upstream's all-at-once rather than queueing pods for minutes. The node's own pods never wait:
 * those of system-critical priority, or static ones whose priorityClassName says so (a control
 * plane's manifests, which no API server has given a priority).
 */
import type { Pod } from '../api/core-v1.js';
import { isStaticPod, SYSTEM_CRITICAL_PRIORITY } from '../api/pod-source.js';
import type { Clock } from '../lib/clock.js';
import { logger } from '../lib/log.js';
import { Slots } from '../lib/slots.js';
import { formatPod } from './format.js';

const log = logger('kuberuntime');

/** How long one pod start may hold its slot. A start takes 1–2 s on a busy 2-core node. */
export const POD_START_SLOT_LAPSE_MS = 5_000;

/** The default bound: 4 starts per CPU (8 on 2 cores, where a floor of 4 or 16 at a time was no faster). */
export function defaultMaxParallelPodStarts(cpus: number): number {
  return 4 * Math.max(1, cpus);
}

const CRITICAL_PRIORITY_CLASSES = new Set(['system-node-critical', 'system-cluster-critical']);

function isNodeCritical(pod: Pod): boolean {
  if ((pod.spec.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY) return true;
  return isStaticPod(pod) && CRITICAL_PRIORITY_CLASSES.has(pod.spec.priorityClassName ?? '');
}

export class PodStartSlots {
  private readonly slots: Slots;

  constructor(
    readonly limit: number,
    private readonly clock: Clock,
    private readonly lapseMs = POD_START_SLOT_LAPSE_MS,
  ) {
    this.slots = new Slots(limit);
  }

  /** Pods whose start waits for a slot now. */
  get waiting(): number {
    return this.slots.queued;
  }

  /**
   * Waits for a slot for the pod's start; resolves with its release (safe to call twice), or
   * rejects if the signal aborts first (the pod is being stopped).
   */
  async acquire(pod: Pod, signal?: AbortSignal): Promise<() => void> {
    if (isNodeCritical(pod)) return () => {};
    if (this.slots.inUse >= this.limit)
      log.v(4, 'Pod start waits for a slot', {
        pod: formatPod(pod),
        starting: this.slots.inUse,
        waiting: this.slots.queued,
      });
    const release = await this.slots.acquire(signal);
    const lapse = this.clock.setTimeout(() => {
      log.v(4, 'Pod start outlived its slot; the next pod goes ahead', {
        pod: formatPod(pod),
        afterMs: this.lapseMs,
      });
      release();
    }, this.lapseMs);
    return () => {
      this.clock.clearTimeout(lapse);
      release();
    };
  }
}
