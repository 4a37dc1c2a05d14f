/**
 * One configured credential provider (upstream pluginProvider.Provide): asked only for images its
 * `matchImages` cover, answered from its cache while the plugin's last answer lasts, otherwise by
 * running the plugin once for all concurrent asks about the same image. A plugin that fails gives
 * no credentials (logged); the pull goes on without them.
 */
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { Plugin } from './exec-plugin.js';
import type { CredentialProviderResponse, DockerConfig } from './plugin-api.js';
import { urlsMatch } from './url-match.js';

const log = logger('credentialprovider');

/** The cache key of a `Global` answer (upstream globalCacheKey). */
export const GLOBAL_CACHE_KEY = 'global';
/** How often entries nobody asks for again are dropped once expired (upstream cachePurgeInterval). */
export const CACHE_PURGE_INTERVAL_MS = 15 * 60_000;

/** A source of registry credentials for an image, as the node's keyring asks its providers. */
export interface DockerConfigProvider {
  readonly name: string;
  provide(image: string): Promise<DockerConfig>;
}

export interface PluginProviderOptions {
  name: string;
  matchImages: readonly string[];
  /** For answers without a cacheDuration; 0 caches them not at all. */
  defaultCacheDurationMs: number;
  plugin: Plugin;
  clock: Pick<Clock, 'now'>;
}

interface CacheEntry {
  credentials: DockerConfig;
  expiresAtMs: number;
}

export class PluginProvider implements DockerConfigProvider {
  readonly name: string;
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inFlight = new Map<string, Promise<CredentialProviderResponse>>();
  private lastPurgeMs: number;

  constructor(private readonly opts: PluginProviderOptions) {
    this.name = opts.name;
    this.lastPurgeMs = opts.clock.now();
  }

  /** The credentials for an image (a repository: `registry.io/team/app`); {} when none. */
  async provide(image: string): Promise<DockerConfig> {
    if (!this.isImageAllowed(image)) return {};
    const cached = this.getCachedCredentials(image);
    if (cached) return cached;

    let response: CredentialProviderResponse;
    try {
      response = await this.execOnce(image);
    } catch (err) {
      log.error('Failed getting credential from external registry credential provider', {
        provider: this.name,
        image,
        err: errorMessage(err),
      });
      return {};
    }

    let cacheKey: string;
    switch (response.cacheKeyType) {
      case 'Image':
        cacheKey = image;
        break;
      case 'Registry':
        cacheKey = registryOf(image);
        break;
      case 'Global':
        cacheKey = GLOBAL_CACHE_KEY;
        break;
      default:
        log.error('credential provider plugin did not return a valid cacheKeyType', {
          provider: this.name,
          cacheKeyType: response.cacheKeyType,
        });
        return {};
    }
    const credentials = { ...response.auth };
    // An explicit 0 means never cache; no duration at all means the provider's default.
    const durationMs = response.cacheDurationMs ?? this.opts.defaultCacheDurationMs;
    if (durationMs !== 0)
      this.cache.set(cacheKey, { credentials, expiresAtMs: this.opts.clock.now() + durationMs });
    return credentials;
  }

  /** The keys held, expired ones included until a read or a purge drops them (for tests and status). */
  cacheKeys(): string[] {
    return [...this.cache.keys()];
  }

  /** Image, then its registry, then the global entry: the first one not expired. */
  getCachedCredentials(image: string): DockerConfig | undefined {
    const now = this.opts.clock.now();
    if (now > this.lastPurgeMs + CACHE_PURGE_INTERVAL_MS) {
      for (const [key, entry] of this.cache) if (now > entry.expiresAtMs) this.cache.delete(key);
      this.lastPurgeMs = now;
    }
    for (const key of [image, registryOf(image), GLOBAL_CACHE_KEY]) {
      const entry = this.cache.get(key);
      if (!entry) continue;
      if (now > entry.expiresAtMs) {
        this.cache.delete(key);
        continue;
      }
      return entry.credentials;
    }
    return undefined;
  }

  /** Sets an entry directly, as upstream's tests fill its cache. */
  addCacheEntry(key: string, credentials: DockerConfig, expiresAtMs: number): void {
    this.cache.set(key, { credentials, expiresAtMs });
  }

  /**
   * One run for all concurrent asks about the same image (upstream's singleflight). Keyed by image,
   * as upstream: the cache key type is not known before the answer, so concurrent asks for two
   * images of one registry still run the plugin twice.
   */
  private execOnce(image: string): Promise<CredentialProviderResponse> {
    const running = this.inFlight.get(image);
    if (running) return running;
    const run = this.opts.plugin.execPlugin(image).finally(() => this.inFlight.delete(image));
    this.inFlight.set(image, run);
    return run;
  }

  private isImageAllowed(image: string): boolean {
    return this.opts.matchImages.some((pattern) => urlsMatch(pattern, image));
  }
}

/** The registry of an image, port included: what precedes its first `/` (upstream parseRegistry). */
export function registryOf(image: string): string {
  const slash = image.indexOf('/');
  return slash < 0 ? image : image.slice(0, slash);
}
