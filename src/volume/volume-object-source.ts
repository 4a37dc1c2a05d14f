/**
 * Where the volume plugins read API objects from: configMaps, secrets, claims, volumes, and service
 * account tokens (TokenRequest). In cluster mode it is the API server, with configMaps and secrets
 * read as configMapAndSecretChangeDetectionStrategy says (upstream's managers): "Watch" (the default)
 * from one watch per object, shared by the pods that use it (object-watch-cache.ts); "Cache" by GET,
 * a volume's first mount fresh and its refreshes at most one GET per object per TTL; "Get" by GET
 * every time. In standalone mode there is no server to ask.
 */
import { isKubeApiError } from '../k8s/api-status.js';
import { resourcePath, type RestClient } from '../k8s/rest-client.js';
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { ObjectWatchCache } from './object-watch-cache.js';
import type {
  ConfigMap,
  PersistentVolume,
  PersistentVolumeClaim,
  Secret,
  TokenRequest,
} from './volume-types.js';

export interface ObjectGetOptions {
  signal?: AbortSignal;
  /** A cached copy at most this old will do; 0 or absent asks the server. */
  maxAgeMs?: number;
}

export interface VolumeObjectSource {
  /** Ends what the source keeps running (watches); reads may fail afterwards. */
  stop?(): void;
  /** undefined when it does not exist. */
  getConfigMap(namespace: string, name: string, opts?: ObjectGetOptions): Promise<ConfigMap | undefined>;
  getSecret(namespace: string, name: string, opts?: ObjectGetOptions): Promise<Secret | undefined>;
  getPersistentVolumeClaim(
    namespace: string,
    name: string,
    opts?: ObjectGetOptions,
  ): Promise<PersistentVolumeClaim | undefined>;
  getPersistentVolume(name: string, opts?: ObjectGetOptions): Promise<PersistentVolume | undefined>;
  /** POST serviceaccounts/<name>/token; throws on any failure. */
  createToken(
    namespace: string,
    serviceAccountName: string,
    request: TokenRequest,
    opts?: ObjectGetOptions,
  ): Promise<TokenRequest>;
}

/** Standalone mode: nothing exists, and there is no one to ask for a token (upstream's wording). */
export const standaloneObjectSource: VolumeObjectSource = {
  getConfigMap: () => Promise.resolve(undefined),
  getSecret: () => Promise.resolve(undefined),
  getPersistentVolumeClaim: () =>
    Promise.reject(new Error('cannot get persistent volume claims when kubelet is in standalone mode')),
  getPersistentVolume: () =>
    Promise.reject(new Error('cannot get persistent volumes when kubelet is in standalone mode')),
  createToken: () => Promise.reject(new Error('cannot use TokenManager when kubelet is in standalone mode')),
};

/** Each API call's deadline: a mount waits on it, and a mount must not hang a pod's sync. */
const DEFAULT_CALL_TIMEOUT_MS = 10_000;
/** Cached objects older than this are dropped; the sweep runs at most once per period. */
const CACHE_MAX_AGE_MS = 10 * 60_000;
const CACHE_SWEEP_PERIOD_MS = 60_000;
/** Five default sync periods, as upstream. */
const DEFAULT_WATCH_IDLE_MS = 5 * 60_000;

interface CacheEntry<T> {
  object: T | undefined;
  fetchedAtMs: number;
}

/** configMapAndSecretChangeDetectionStrategy's values (KubeletConfiguration). */
export type ChangeDetectionStrategy = 'Watch' | 'Cache' | 'Get';

export interface ApiVolumeObjectSourceOptions {
  client: RestClient;
  clock?: Clock;
  callTimeoutMs?: number;
  /** Default "Cache". */
  strategy?: ChangeDetectionStrategy;
  /** "Watch": a watch no mount has read for this long stops (upstream: five sync periods). */
  watchIdleMs?: number;
}

export class ApiVolumeObjectSource implements VolumeObjectSource {
  private readonly client: RestClient;
  private readonly clock: Clock;
  private readonly callTimeoutMs: number;
  private readonly cache = new Map<string, CacheEntry<unknown>>();
  /** One GET per object at a time: the pods that share a configMap share its fetch. */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private lastSweepMs = 0;
  private readonly strategy: ChangeDetectionStrategy;
  private readonly watches:
    { configMaps: ObjectWatchCache<ConfigMap>; secrets: ObjectWatchCache<Secret> } | undefined;

  constructor(opts: ApiVolumeObjectSourceOptions) {
    this.client = opts.client;
    this.clock = opts.clock ?? realClock;
    this.callTimeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.strategy = opts.strategy ?? 'Cache';
    if (this.strategy === 'Watch') {
      const common = {
        client: opts.client,
        clock: this.clock,
        syncTimeoutMs: this.callTimeoutMs,
        maxIdleMs: opts.watchIdleMs ?? DEFAULT_WATCH_IDLE_MS,
      };
      this.watches = {
        configMaps: new ObjectWatchCache<ConfigMap>({ ...common, resource: 'configmaps' }),
        secrets: new ObjectWatchCache<Secret>({ ...common, resource: 'secrets' }),
      };
    }
  }

  getConfigMap(namespace: string, name: string, opts: ObjectGetOptions = {}): Promise<ConfigMap | undefined> {
    if (this.watches) return this.watches.configMaps.get(namespace, name, opts.signal);
    return this.cachedGet<ConfigMap>('configmaps', namespace, name, opts);
  }

  getSecret(namespace: string, name: string, opts: ObjectGetOptions = {}): Promise<Secret | undefined> {
    if (this.watches) return this.watches.secrets.get(namespace, name, opts.signal);
    return this.cachedGet<Secret>('secrets', namespace, name, opts);
  }

  stop(): void {
    this.watches?.configMaps.stop();
    this.watches?.secrets.stop();
  }

  getPersistentVolumeClaim(
    namespace: string,
    name: string,
    opts: ObjectGetOptions = {},
  ): Promise<PersistentVolumeClaim | undefined> {
    return this.fetch<PersistentVolumeClaim>('persistentvolumeclaims', namespace, name, opts.signal);
  }

  getPersistentVolume(name: string, opts: ObjectGetOptions = {}): Promise<PersistentVolume | undefined> {
    return this.fetch<PersistentVolume>('persistentvolumes', undefined, name, opts.signal);
  }

  async createToken(
    namespace: string,
    serviceAccountName: string,
    request: TokenRequest,
    opts: ObjectGetOptions = {},
  ): Promise<TokenRequest> {
    const body = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', ...request };
    let result;
    try {
      result = await this.client.call<TokenRequest>(
        {
          method: 'POST',
          path: resourcePath({
            resource: 'serviceaccounts',
            namespace,
            name: serviceAccountName,
            subresource: 'token',
          }),
          body,
        },
        { signal: opts.signal, timeoutMs: this.callTimeoutMs },
      );
    } catch (err) {
      throw new Error(apiMessage(err), { cause: err });
    }
    if (!result.ok) throw new Error(result.status.message ?? result.reason);
    return result.object;
  }

  private async cachedGet<T>(
    resource: string,
    namespace: string,
    name: string,
    opts: ObjectGetOptions,
  ): Promise<T | undefined> {
    this.sweepIfDue();
    const k = key(resource, namespace, name);
    const hit = this.cache.get(k) as CacheEntry<T> | undefined;
    const maxAgeMs = this.strategy === 'Get' ? 0 : (opts.maxAgeMs ?? 0);
    if (hit && maxAgeMs > 0 && this.clock.now() - hit.fetchedAtMs <= maxAgeMs) return hit.object;
    let p = this.inFlight.get(k) as Promise<T | undefined> | undefined;
    if (!p) {
      const fetchedAtMs = this.clock.now();
      // Shared by every caller, so no one caller's signal may cut it; the call's deadline bounds it.
      p = this.fetch<T>(resource, namespace, name, undefined).then((object) => {
        this.cache.set(k, { object, fetchedAtMs });
        return object;
      });
      this.inFlight.set(k, p);
      void p.finally(() => this.inFlight.delete(k)).catch(() => undefined);
    }
    return p;
  }

  /** Objects no pod has asked for in a while are dropped, so the cache follows the pods, not history. */
  private sweepIfDue(): void {
    const now = this.clock.now();
    if (now - this.lastSweepMs < CACHE_SWEEP_PERIOD_MS) return;
    this.lastSweepMs = now;
    for (const [k, e] of this.cache) if (now - e.fetchedAtMs > CACHE_MAX_AGE_MS) this.cache.delete(k);
  }

  private async fetch<T>(
    resource: string,
    namespace: string | undefined,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<T | undefined> {
    let result;
    try {
      result = await this.client.get<T & { metadata?: object }>(
        { resource, namespace, name },
        { signal, timeoutMs: this.callTimeoutMs },
      );
    } catch (err) {
      throw new Error(apiMessage(err), { cause: err });
    }
    if (result.ok) return result.object;
    if (result.reason === 'NotFound') return undefined;
    throw new Error(result.status.message ?? result.reason);
  }
}

function key(resource: string, namespace: string, name: string): string {
  return `${resource}/${namespace}/${name}`;
}

/** What client-go would say: the server's Status message when there is one. */
function apiMessage(err: unknown): string {
  if (isKubeApiError(err)) return err.status?.message ?? err.message;
  return errorMessage(err);
}
