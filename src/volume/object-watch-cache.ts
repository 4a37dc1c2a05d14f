/**
 * ConfigMaps or secrets kept in step by a watch of each object the pods ask for (upstream's
 * configMapAndSecretChangeDetectionStrategy "Watch", pkg/kubelet/util/manager/watch_based_manager.go):
 * the first read of an object starts a list+watch of that one object (a `metadata.name` field
 * selector, which the Node authorizer requires of a node), every later read is served from it, so
 * the pods sharing an object (every namespace's `kube-root-ca.crt`) cost one watch, not a GET each.
 *
 * - A read waits, bounded, for the object's first list; past the bound it fails as upstream words it.
 * - A watch no read has used for maxIdleMs stops; the next read starts it again (upstream: the same,
 *   after five sync periods).
 * - An immutable object cannot change: once read, its watch stops and the copy is kept.
 */
import { realClock, type Clock } from '../lib/clock.js';
import { KubeletError } from '../lib/errors.js';
import { Reflector, type ListerWatcher } from '../k8s/reflector.js';
import type { KubeObject } from '../k8s/rest-client.js';

export interface ObjectWatchCacheOptions {
  client: ListerWatcher;
  /** 'configmaps' or 'secrets'. */
  resource: string;
  clock?: Clock;
  /** How long a read waits for a new watch's first list. */
  syncTimeoutMs: number;
  maxIdleMs: number;
}

interface WatchedObject<T extends KubeObject> {
  reflector: Reflector<T>;
  stop: AbortController;
  synced: Promise<void>;
  lastReadMs: number;
  /** Set once the object was read and found immutable: its watch has stopped. */
  immutable?: T;
}

/** upstream's minimum idle time of a watch, whatever the sync period. */
export const MIN_WATCH_IDLE_MS = 60_000;

export class ObjectWatchCache<T extends KubeObject & { immutable?: boolean }> {
  private readonly opts: ObjectWatchCacheOptions;
  private readonly clock: Clock;
  private readonly maxIdleMs: number;
  private readonly watched = new Map<string, WatchedObject<T>>();
  private stopped = false;

  constructor(opts: ObjectWatchCacheOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
    this.maxIdleMs = Math.max(opts.maxIdleMs, MIN_WATCH_IDLE_MS);
  }

  /** The object as last seen by its watch, or undefined when it does not exist. */
  async get(namespace: string, name: string, signal?: AbortSignal): Promise<T | undefined> {
    if (this.stopped) throw new Error(`${this.opts.resource} cache stopped`);
    const now = this.clock.now();
    this.stopIdle(now);
    const key = `${namespace}/${name}`;
    let w = this.watched.get(key);
    if (!w) this.watched.set(key, (w = this.startWatch(namespace, name)));
    w.lastReadMs = now;
    if (w.immutable) return w.immutable;
    if (!w.reflector.hasSynced()) await this.waitForSync(w, signal);
    const obj = w.reflector.get(namespace, name);
    if (obj?.immutable === true) {
      w.immutable = obj;
      w.stop.abort();
    }
    return obj;
  }

  /** Stops every watch; reads fail from now on. */
  stop(): void {
    this.stopped = true;
    for (const w of this.watched.values()) w.stop.abort();
    this.watched.clear();
  }

  /** How many objects are watched now (for tests and status). */
  get size(): number {
    let n = 0;
    for (const w of this.watched.values()) if (!w.immutable) n++;
    return n;
  }

  private startWatch(namespace: string, name: string): WatchedObject<T> {
    let onSynced: () => void = () => undefined;
    const synced = new Promise<void>((resolve) => (onSynced = resolve));
    const reflector = new Reflector<T>({
      client: this.opts.client,
      ref: { resource: this.opts.resource, namespace },
      fieldSelector: `metadata.name=${name}`,
      name: `${this.opts.resource} ${namespace}/${name}`,
      clock: this.clock,
      handlers: { onSync: () => onSynced() },
    });
    const stop = new AbortController();
    void reflector.run(stop.signal);
    return { reflector, stop, synced, lastReadMs: this.clock.now() };
  }

  private async waitForSync(w: WatchedObject<T>, signal: AbortSignal | undefined): Promise<void> {
    const timedOut = new AbortController();
    const timer = this.clock.setTimeout(() => timedOut.abort(), this.opts.syncTimeoutMs);
    const abort = signal ? AbortSignal.any([signal, timedOut.signal]) : timedOut.signal;
    try {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(new Error('aborted'));
        if (abort.aborted) return onAbort();
        abort.addEventListener('abort', onAbort, { once: true });
        void w.synced.then(() => {
          abort.removeEventListener('abort', onAbort);
          resolve();
        });
      });
    } catch {
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      throw new KubeletError(
        'DEADLINE_EXCEEDED',
        `failed to sync ${this.opts.resource} cache: timed out waiting for the condition`,
      );
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  /** Watches no read has used for a while stop; their objects go with them. */
  private stopIdle(now: number): void {
    for (const [key, w] of this.watched) {
      if (now - w.lastReadMs <= this.maxIdleMs || !w.reflector.hasSynced()) continue;
      w.stop.abort();
      this.watched.delete(key);
    }
  }
}
