/**
 * The runtime's view of each pod, as the PLEG last read it (upstream: kubecontainer.Cache).
 * Pod workers wait here until the PLEG has looked at the runtime since their previous sync, so
 * that each decision is made on state at least as new as the last action taken.
 */
import type { KubePodStatus } from '../kuberuntime/types.js';

export interface PodCacheEntry {
  status: KubePodStatus;
  /** Set when the runtime could not be read for this pod: the status is then only what was known. */
  error?: Error;
  /** When the status was read (ms since the epoch); 0 for a pod the runtime has nothing of. */
  modifiedMs: number;
}

export interface PodCache {
  /** The latest entry; a pod the cache has never seen has an empty status (no sandboxes, no containers). */
  get(uid: string): PodCacheEntry;
  /**
   * Resolves once the cache holds a status for uid read strictly after minTimeMs, or once the cache
   * as a whole has been refreshed after minTimeMs (updateTime). Rejects with the signal's reason on abort.
   */
  getNewerThan(uid: string, minTimeMs: number, signal?: AbortSignal): Promise<PodCacheEntry>;
  /** Stores what was read at timestampMs; an older reading never replaces a newer one. */
  set(uid: string, status: KubePodStatus, error: Error | undefined, timestampMs: number): void;
  delete(uid: string): void;
  /** Declares every pod up to date as of timestampMs (the PLEG's relist start), waking waiters of pods without events. */
  updateTime(timestampMs: number): void;
}

interface Waiter {
  minTimeMs: number;
  askedAgain?: boolean;
  resolve: (entry: PodCacheEntry) => void;
}

function emptyStatus(uid: string): KubePodStatus {
  return {
    uid,
    name: '',
    namespace: '',
    ips: [],
    sandboxStatuses: [],
    containerStatuses: [],
    timestampMs: 0,
  };
}

export interface InMemoryPodCacheOptions {
  /**
   * Told when a pod worker has to wait for a reading of uid newer than minTimeMs (it synced after
   * the last relist began). When that sync was recent, the kubelet asks the PLEG to relist, so the
   * wait lasts one relist rather than up to a relist period: after a sync that started containers,
   * the next sync reports them running (see PROMPT_RELIST_WINDOW_MS in src/cmd/build-pod-runtime.ts).
   */
  onWait?: (uid: string, minTimeMs: number) => void;
}

export class InMemoryPodCache implements PodCache {
  private readonly pods = new Map<string, PodCacheEntry>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** undefined until the first updateTime: until then only per-pod readings can satisfy a waiter. */
  private globalTimestampMs: number | undefined;
  private readonly onWait: ((uid: string, minTimeMs: number) => void) | undefined;

  constructor(options: InMemoryPodCacheOptions = {}) {
    this.onWait = options.onWait;
  }

  get(uid: string): PodCacheEntry {
    return this.pods.get(uid) ?? { status: emptyStatus(uid), modifiedMs: 0 };
  }

  getNewerThan(uid: string, minTimeMs: number, signal?: AbortSignal): Promise<PodCacheEntry> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const ready = this.getIfNewerThan(uid, minTimeMs);
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      let set = this.waiters.get(uid);
      if (!set) {
        set = new Set();
        this.waiters.set(uid, set);
      }
      const waiters = set;
      const onAbort = () => {
        remove();
        reject(signal?.reason);
      };
      const remove = () => {
        waiters.delete(waiter);
        if (waiters.size === 0 && this.waiters.get(uid) === waiters) this.waiters.delete(uid);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        minTimeMs,
        resolve: (entry) => {
          remove();
          resolve(entry);
        },
      };
      waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.onWait?.(uid, minTimeMs);
    });
  }

  set(uid: string, status: KubePodStatus, error: Error | undefined, timestampMs: number): void {
    const existing = this.pods.get(uid);
    if (existing && existing.modifiedMs > timestampMs) return;
    this.pods.set(
      uid,
      error ? { status, error, modifiedMs: timestampMs } : { status, modifiedMs: timestampMs },
    );
    this.notify(uid);
  }

  delete(uid: string): void {
    this.pods.delete(uid);
  }

  updateTime(timestampMs: number): void {
    this.globalTimestampMs = timestampMs;
    for (const uid of [...this.waiters.keys()]) this.notify(uid);
    // A relist that began in the millisecond a sync ended satisfies no waiter of that sync: ask once more.
    for (const [uid, set] of this.waiters) {
      for (const waiter of set) {
        if (waiter.askedAgain || waiter.minTimeMs !== timestampMs) continue;
        waiter.askedAgain = true;
        this.onWait?.(uid, waiter.minTimeMs);
      }
    }
  }

  /** Number of pods with a stored status (for metrics and tests). */
  get size(): number {
    return this.pods.size;
  }

  private getIfNewerThan(uid: string, minTimeMs: number): PodCacheEntry | undefined {
    const entry = this.pods.get(uid);
    if (this.globalTimestampMs !== undefined && this.globalTimestampMs > minTimeMs) return this.get(uid);
    if (entry && entry.modifiedMs > minTimeMs) return entry;
    return undefined;
  }

  private notify(uid: string): void {
    const set = this.waiters.get(uid);
    if (!set) return;
    for (const waiter of [...set]) {
      const entry = this.getIfNewerThan(uid, waiter.minTimeMs);
      if (entry) waiter.resolve(entry);
    }
  }
}
