/**
 * Service account tokens for projected volumes, from the TokenRequest API, cached and refreshed
 * before they run out (upstream: pkg/kubelet/token/token_manager.go): a token is renewed once 80 %
 * of its lifetime has passed, or once it is 24 h old, each less a random jitter of up to 10 s so
 * that many pods do not renew at the same instant. A renewal that fails keeps the old token for as
 * long as it is valid.
 */
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { TokenRequest } from './volume-types.js';

const log = logger('volume');

const MAX_TTL_MS = 24 * 60 * 60 * 1000;
const MAX_JITTER_SECONDS = 10;
/** Expired tokens are dropped from the cache at most this often (upstream: gcPeriod). */
const GC_PERIOD_MS = 60_000;

export type GetToken = (
  namespace: string,
  serviceAccountName: string,
  request: TokenRequest,
  signal?: AbortSignal,
) => Promise<TokenRequest>;

export interface TokenManagerOptions {
  getToken: GetToken;
  clock?: Clock;
  /** [0, 1), for the jitter; tests pass a constant. */
  random?: () => number;
}

export class TokenManager {
  private readonly getToken: GetToken;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly cache = new Map<string, TokenRequest>();
  private lastGcMs = 0;

  constructor(opts: TokenManagerOptions) {
    this.getToken = opts.getToken;
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
  }

  /**
   * The cached token while it needs no refresh; else a new one. When asking fails, the old one
   * while it has not expired.
   */
  async getServiceAccountToken(
    namespace: string,
    name: string,
    request: TokenRequest,
    signal?: AbortSignal,
  ): Promise<TokenRequest> {
    const key = keyFunc(name, namespace, request);
    const cached = this.cache.get(key);
    // After the lookup, so an expired token of this very key is reported as expired, not as missing.
    this.gcIfDue();
    if (cached && !this.requiresRefresh(cached)) return cached;
    let fresh: TokenRequest;
    try {
      fresh = await this.getToken(namespace, name, request, signal);
    } catch (err) {
      if (!cached) throw new Error(`failed to fetch token: ${errorMessage(err)}`, { cause: err });
      if (this.expired(cached)) {
        throw new Error(`token ${key} expired and refresh failed: ${errorMessage(err)}`, { cause: err });
      }
      log.error("Couldn't update token", { cacheKey: key, err: errorMessage(err) });
      return cached;
    }
    // The server echoes the spec it granted; what it leaves out, the request said.
    fresh = { ...fresh, spec: { ...request.spec, ...(fresh.spec ?? {}) } };
    this.cache.set(key, fresh);
    return fresh;
  }

  /** Forgets a pod's tokens once its volumes are gone (upstream: DeleteServiceAccountToken). */
  deleteServiceAccountToken(podUid: string): void {
    for (const [k, tr] of this.cache) if (tr.spec.boundObjectRef?.uid === podUid) this.cache.delete(k);
  }

  /** How many tokens are cached (for tests and status). */
  get size(): number {
    return this.cache.size;
  }

  private gcIfDue(): void {
    const now = this.clock.now();
    if (now - this.lastGcMs < GC_PERIOD_MS) return;
    this.lastGcMs = now;
    for (const [k, tr] of this.cache) if (this.expired(tr)) this.cache.delete(k);
  }

  private expired(tr: TokenRequest): boolean {
    return this.clock.now() > expirationMs(tr);
  }

  /** Older than 80 % of its lifetime, or than 24 h, less the jitter (upstream: requiresRefresh). */
  requiresRefresh(tr: TokenRequest): boolean {
    const expirationSeconds = tr.spec.expirationSeconds;
    if (expirationSeconds === undefined) {
      log.error('Expiration seconds was nil for token request', { audiences: tr.spec.audiences });
      return false;
    }
    const now = this.clock.now();
    const exp = expirationMs(tr);
    const iat = exp - expirationSeconds * 1000;
    // Whole seconds, as upstream's Duration truncation gives.
    const jitterMs = Math.floor(this.random() * MAX_JITTER_SECONDS) * 1000;
    if (now > iat + MAX_TTL_MS - jitterMs) return true;
    // Integer arithmetic on seconds, as upstream's (expirationSeconds*20)/100.
    const refreshWindowMs = Math.floor((expirationSeconds * 20) / 100) * 1000;
    return now > exp - refreshWindowMs - jitterMs;
  }
}

function expirationMs(tr: TokenRequest): number {
  const ts = tr.status?.expirationTimestamp;
  const ms = ts ? Date.parse(ts) : NaN;
  return Number.isNaN(ms) ? 0 : ms;
}

/** What identifies a token: service account, namespace, audiences, lifetime and bound object; nothing secret. */
export function keyFunc(name: string, namespace: string, tr: TokenRequest): string {
  const ref = tr.spec.boundObjectRef ?? {};
  return JSON.stringify([
    name,
    namespace,
    tr.spec.audiences ?? [],
    tr.spec.expirationSeconds ?? 0,
    ref.apiVersion ?? '',
    ref.kind ?? '',
    ref.name ?? '',
    ref.uid ?? '',
  ]);
}
