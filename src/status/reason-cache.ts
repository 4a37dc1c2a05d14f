/**
 * Why each container last failed to start (upstream: the kubelet's ReasonCache), so that the pod
 * status can show a container as waiting with CrashLoopBackOff, ErrImagePull, … until a start
 * succeeds. Bounded: the least recently written entries go first.
 */
import type { PodSyncResult } from '../kuberuntime/types.js';
import type { ContainerWaitingReason } from './generate-api-pod-status.js';

/** Upstream's maxReasonCacheEntries. */
export const DEFAULT_MAX_REASON_CACHE_ENTRIES = 1000;

export class ReasonCache {
  /** Keyed by `<uid>_<container name>`; Map order is write order, which makes the eviction LRU-by-write. */
  private readonly entries = new Map<string, ContainerWaitingReason & { uid: string; name: string }>();

  constructor(private readonly maxEntries = DEFAULT_MAX_REASON_CACHE_ENTRIES) {}

  /** Records the StartContainer failures of a sync and forgets the containers that started. */
  update(uid: string, result: PodSyncResult): void {
    for (const r of result.results) {
      if (r.action !== 'StartContainer') continue;
      if (r.reason) this.add(uid, r.target, r.reason, r.message ?? '');
      else this.remove(uid, r.target);
    }
  }

  add(uid: string, name: string, reason: string, message: string): void {
    const key = `${uid}_${name}`;
    this.entries.delete(key);
    this.entries.set(key, { uid, name, reason, message });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  get(uid: string, name: string): ContainerWaitingReason | undefined {
    const e = this.entries.get(`${uid}_${name}`);
    return e ? { reason: e.reason, message: e.message } : undefined;
  }

  remove(uid: string, name: string): void {
    this.entries.delete(`${uid}_${name}`);
  }

  /** The pod's entries by container name, as generateAPIPodStatus takes them. */
  forPod(uid: string): Map<string, ContainerWaitingReason> {
    const out = new Map<string, ContainerWaitingReason>();
    for (const e of this.entries.values())
      if (e.uid === uid) out.set(e.name, { reason: e.reason, message: e.message });
    return out;
  }

  get size(): number {
    return this.entries.size;
  }
}
