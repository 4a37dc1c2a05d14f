/**
 * Keeps a local copy of one kind of object in step with the API server (upstream: client-go's
 * cache.Reflector feeding a store): list, then watch from the list's resourceVersion with bookmarks,
 * and again and again until stopped.
 *
 * - A watch that ends (the server's timeoutSeconds) is reopened from the last resourceVersion seen.
 * - 410 Gone (HTTP, or an ERROR event with code 410) means that version is no longer served: relist.
 *   A list that itself gets 410 for its resourceVersion is retried at once as a consistent read.
 * - Any other failure backs off exponentially with jitter (800 ms doubling to 30 s, forgotten after
 *   two quiet minutes, as client-go's backoff manager). A watch that cannot connect is retried from the
 *   same resourceVersion: after an outage the server can usually resume it without a relist.
 * - Failures are logged once when the reflector goes from healthy to failing, and once on recovery;
 *   the attempts in between only at --v=4.
 */
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger, type Logger } from '../lib/log.js';
import { KubeApiError, type ApiResult, type Status } from './api-status.js';
import type {
  KubeObject,
  ListOptions,
  ObjectList,
  ResourceRef,
  WatchOptions,
  WatchStream,
} from './rest-client.js';

/** What a reflector needs of a client: RestClient satisfies it. */
export interface ListerWatcher {
  list<T extends KubeObject>(ref: ResourceRef, options?: ListOptions): Promise<ApiResult<ObjectList<T>>>;
  watch<T extends KubeObject>(ref: ResourceRef, options: WatchOptions): Promise<ApiResult<WatchStream<T>>>;
}

/** Called in order, from one task; the objects are the store's own: read them, do not change them. */
export interface ReflectorHandlers<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
  /** After each list (the first and every relist), with every object the store now holds. */
  onSync?(objects: T[]): void;
}

export interface ReflectorOptions<T> {
  client: ListerWatcher;
  /** The collection: apiVersion, resource, and a namespace or none for all. */
  ref: Omit<ResourceRef, 'name' | 'subresource'>;
  labelSelector?: string;
  fieldSelector?: string;
  handlers?: ReflectorHandlers<T>;
  clock?: Clock;
  log?: Logger;
  /** Names the reflector in logs, e.g. `pods spec.nodeName=node-1`. */
  name?: string;
  /** Items per list page (client-go: 500); a list from the watch cache ignores it. */
  pageSize?: number;
  /** Each watch asks for a timeout between this and twice this (client-go: 5 min). */
  minWatchTimeoutSeconds?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A random number in [0, 1): injected for tests. */
  random?: () => number;
}

export type ReflectorState = 'NEW' | 'LISTING' | 'WATCHING' | 'BACKOFF' | 'STOPPED';

export interface ReflectorStatus {
  state: ReflectorState;
  synced: boolean;
  lastSyncResourceVersion: string;
  objects: number;
  lists: number;
  watches: number;
  /** The last failure while the reflector is failing; undefined while it is healthy. */
  lastError: string | undefined;
}

const DEFAULT_PAGE_SIZE = 500;
const DEFAULT_MIN_WATCH_TIMEOUT_SECONDS = 300;
const DEFAULT_INITIAL_BACKOFF_MS = 800;
const DEFAULT_MAX_BACKOFF_MS = 30_000;
/** client-go's backoff manager forgets past failures after this long without one. */
const BACKOFF_RESET_MS = 120_000;
/** A watch that ends this soon without an event is a failure, not a timeout (client-go: "very short watch"). */
const SHORT_WATCH_MS = 1000;

/** namespace/name, or name for cluster-scoped objects (upstream: MetaNamespaceKeyFunc). */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

/** The watch's resourceVersion is too old (410 Gone): the reflector relists. */
class Expired extends KubeletError {
  constructor() {
    super('WATCH_EXPIRED', 'resource version expired');
  }
}

export class Reflector<T extends KubeObject> {
  private readonly opts: ReflectorOptions<T>;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly name: string;
  private readonly random: () => number;
  private readonly store = new Map<string, T>();
  private state: ReflectorState = 'NEW';
  private synced = false;
  private lastRV = '';
  /** The last list's resourceVersion could not be served: the next list reads the latest state. */
  private rvUnavailable = false;
  private lists = 0;
  private watches = 0;
  private failing: string | undefined;
  private backoffAttempt = 0;
  private lastBackoffMs = 0;

  constructor(opts: ReflectorOptions<T>) {
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
    this.log = opts.log ?? logger('reflector');
    this.random = opts.random ?? Math.random;
    const sel = [opts.fieldSelector, opts.labelSelector].filter((s) => s).join(',');
    this.name = opts.name ?? `${opts.ref.resource}${sel ? ` ${sel}` : ''}`;
  }

  /** True once the first list has been stored and handed to onSync. */
  hasSynced(): boolean {
    return this.synced;
  }

  get lastSyncResourceVersion(): string {
    return this.lastRV;
  }

  /** The stored object by namespace and name (name alone for cluster-scoped objects). */
  get(namespace: string | undefined, name: string): T | undefined {
    return this.store.get(namespace ? `${namespace}/${name}` : name);
  }

  getByKey(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  status(): ReflectorStatus {
    return {
      state: this.state,
      synced: this.synced,
      lastSyncResourceVersion: this.lastRV,
      objects: this.store.size,
      lists: this.lists,
      watches: this.watches,
      lastError: this.failing,
    };
  }

  /** Lists and watches until signal aborts; resolves then, and never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.state !== 'NEW') throw new Error(`reflector ${this.name} already ran`);
    this.log.v(2, 'Starting reflector', { reflector: this.name });
    try {
      while (!signal.aborted) {
        try {
          await this.listAndReplace(signal);
        } catch (err) {
          if (signal.aborted) break;
          this.failed('list', err);
          await this.backoff(signal);
          continue;
        }
        await this.watchLoop(signal);
        if (!signal.aborted) await this.backoff(signal);
      }
    } catch (err) {
      if (!signal.aborted)
        this.log.error('Reflector stopped unexpectedly', { reflector: this.name, err: errorMessage(err) });
    } finally {
      this.state = 'STOPPED';
      this.log.v(2, 'Stopping reflector', { reflector: this.name });
    }
  }

  // ---- list -----------------------------------------------------------------------------------------

  private async listAndReplace(signal: AbortSignal): Promise<void> {
    this.state = 'LISTING';
    // client-go: the first list may be served from the watch cache ("0"); a relist asks for at least
    // what it has seen; after a 410 on that, the latest state ("").
    let rv = this.rvUnavailable ? '' : this.lastRV || '0';
    let result = await this.listPages(rv, signal);
    if (result === 'Gone') {
      this.log.v(4, 'Resource version of the relist is too old, listing the latest', {
        reflector: this.name,
        resourceVersion: rv,
      });
      this.rvUnavailable = true;
      rv = '';
      result = await this.listPages(rv, signal);
      if (result === 'Gone')
        throw new KubeApiError(`list of ${this.name}: 410 Gone for a consistent read`, {
          httpStatus: 410,
          reason: 'Gone',
        });
    }
    this.rvUnavailable = false;
    this.lists++;
    this.recovered();
    this.replace(result.items);
    this.lastRV = result.resourceVersion;
    this.synced = true;
    this.call('onSync', () => this.opts.handlers?.onSync?.(this.list()));
  }

  private async listPages(
    rv: string,
    signal: AbortSignal,
  ): Promise<{ items: T[]; resourceVersion: string } | 'Gone'> {
    const items: T[] = [];
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const r = await this.opts.client.list<T>(this.opts.ref, {
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        // With a continue token the version is the token's; a paged list's pages must agree.
        ...(continueToken ? { continue: continueToken } : { resourceVersion: rv }),
        limit: this.opts.pageSize ?? DEFAULT_PAGE_SIZE,
        signal,
      });
      if (!r.ok) {
        if (r.reason === 'Gone') return 'Gone';
        throw new KubeApiError(`list of ${this.name}: ${r.status.message ?? r.reason}`, {
          httpStatus: r.status.code ?? 0,
          reason: r.reason,
          status: r.status,
        });
      }
      items.push(...r.object.items);
      resourceVersion = r.object.metadata.resourceVersion ?? '';
      continueToken = r.object.metadata.continue || undefined;
    } while (continueToken && !signal.aborted);
    return { items, resourceVersion };
  }

  private replace(items: T[]): void {
    const fresh = new Map<string, T>();
    for (const item of items) fresh.set(objectKey(item), item);
    for (const [key, old] of this.store) {
      if (!fresh.has(key)) {
        this.store.delete(key);
        this.call('onDelete', () => this.opts.handlers?.onDelete?.(old));
      }
    }
    for (const [key, obj] of fresh) {
      const old = this.store.get(key);
      this.store.set(key, obj);
      if (!old) this.call('onAdd', () => this.opts.handlers?.onAdd?.(obj));
      else if (
        old.metadata?.resourceVersion !== obj.metadata?.resourceVersion ||
        old.metadata?.uid !== obj.metadata?.uid
      )
        this.call('onUpdate', () => this.opts.handlers?.onUpdate?.(old, obj));
    }
  }

  // ---- watch ----------------------------------------------------------------------------------------

  /** Watches until the state must be listed again (410, an error the watch cannot resume from) or signal aborts. */
  private async watchLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      this.state = 'WATCHING';
      const minSeconds = this.opts.minWatchTimeoutSeconds ?? DEFAULT_MIN_WATCH_TIMEOUT_SECONDS;
      const timeoutSeconds = Math.floor(minSeconds * (1 + this.random()));
      let opened: ApiResult<WatchStream<T>>;
      try {
        opened = await this.opts.client.watch<T>(this.opts.ref, {
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
          resourceVersion: this.lastRV,
          allowWatchBookmarks: true,
          timeoutSeconds,
          signal,
        });
      } catch (err) {
        if (signal.aborted) return;
        this.failed('watch', err);
        if (
          err instanceof KubeApiError &&
          (err.httpStatus === 0 || err.httpStatus === 429 || err.httpStatus >= 500)
        ) {
          // The server is away or busy, and what we have seen is still true: resume from it later.
          await this.backoff(signal);
          continue;
        }
        return;
      }
      if (!opened.ok) {
        this.log.v(4, 'Watch closed: resource version too old, relisting', {
          reflector: this.name,
          resourceVersion: this.lastRV,
        });
        return;
      }
      this.watches++;
      this.recovered();
      const startedMs = this.clock.now();
      let events = 0;
      try {
        for await (const event of opened.object) {
          if (signal.aborted) break;
          if (event.type === 'ERROR') {
            if (isGone(event.object)) throw new Expired();
            throw new KubeApiError(
              `watch of ${this.name}: ${event.object.message ?? event.object.reason ?? 'error event'}`,
              {
                httpStatus: event.object.code ?? 0,
                reason: event.object.reason ?? 'Unknown',
                status: event.object,
              },
            );
          }
          events++;
          this.apply(event.type, event.object);
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof Expired) {
          this.log.v(4, 'Watch closed with 410 Gone, relisting', {
            reflector: this.name,
            resourceVersion: this.lastRV,
          });
          return;
        }
        this.failed('watch', err);
        if (err instanceof KubeApiError && err.reason === 'Transport') {
          await this.backoff(signal);
          continue;
        }
        return;
      } finally {
        opened.object.close();
      }
      if (signal.aborted) return;
      if (events === 0 && this.clock.now() - startedMs < SHORT_WATCH_MS) {
        this.failed('watch', new Error('very short watch: the watch ended at once without an event'));
        await this.backoff(signal);
      }
    }
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK', obj: T): void {
    const rv = obj.metadata?.resourceVersion;
    if (type !== 'BOOKMARK') {
      const key = objectKey(obj);
      const old = this.store.get(key);
      if (type === 'DELETED') {
        this.store.delete(key);
        this.call('onDelete', () => this.opts.handlers?.onDelete?.(obj));
      } else {
        this.store.set(key, obj);
        if (old) this.call('onUpdate', () => this.opts.handlers?.onUpdate?.(old, obj));
        else this.call('onAdd', () => this.opts.handlers?.onAdd?.(obj));
      }
    }
    if (rv) this.lastRV = rv;
  }

  // ---- failure and back-off -------------------------------------------------------------------------

  private failed(what: 'list' | 'watch', err: unknown): void {
    const message = errorMessage(err);
    if (this.failing === undefined) {
      this.log.warn(`Failed to ${what} ${this.name}; retrying with back-off until it succeeds`, {
        reflector: this.name,
        err: message,
      });
    } else {
      this.log.v(4, `Failed to ${what} ${this.name}`, { reflector: this.name, err: message });
    }
    this.failing = message;
  }

  private recovered(): void {
    if (this.failing === undefined) return;
    this.log.info('Reflector reconnected to the API server', {
      reflector: this.name,
      resourceVersion: this.lastRV,
    });
    this.failing = undefined;
  }

  private async backoff(signal: AbortSignal): Promise<void> {
    const now = this.clock.now();
    if (now - this.lastBackoffMs > BACKOFF_RESET_MS) this.backoffAttempt = 0;
    this.lastBackoffMs = now;
    const initial = this.opts.initialBackoffMs ?? DEFAULT_INITIAL_BACKOFF_MS;
    const max = this.opts.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
    const base = Math.min(initial * 2 ** Math.min(this.backoffAttempt, 30), max);
    this.backoffAttempt++;
    // Between half and all of base: clients that lost the server together do not return together.
    const delayMs = Math.round(base * (0.5 + this.random() * 0.5));
    this.state = 'BACKOFF';
    try {
      await this.clock.sleep(delayMs, signal);
    } catch {
      // aborted: the loop sees the signal
    }
  }

  private call(handler: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.error('Reflector handler failed', { reflector: this.name, handler, err: errorMessage(err) });
    }
  }
}

function isGone(status: Status): boolean {
  return status.code === 410 || status.reason === 'Expired' || status.reason === 'Gone';
}
