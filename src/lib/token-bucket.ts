/**
 * The one token bucket (upstream: flowcontrol.NewTokenBucketRateLimiter over x/time/rate): a bucket
 * of `burst` tokens, full at the start, refilled at `qps` per second. The API clients wait() on it,
 * image pulls (registryPullQPS) and the event spam filter only tryAccept() (upstream's passive form).
 * wait() reserves a token at once, so callers are served in the order they asked.
 */
import type { Clock } from './clock.js';

export interface RateLimiter {
  /** Takes a token if one is there now. */
  tryAccept(): boolean;
  /** Waits for a token; rejects with the signal's reason if it aborts first (the token goes back). */
  wait(signal?: AbortSignal): Promise<void>;
}

/** client-go's rest.DefaultQPS and DefaultBurst: what a QPS or burst of 0 means. */
export const DEFAULT_QPS = 5;
export const DEFAULT_BURST = 10;

export class TokenBucketRateLimiter implements RateLimiter {
  private tokens: number;
  private lastMs: number;

  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly clock: Clock,
  ) {
    if (!(qps > 0)) throw new RangeError(`qps must be positive, got ${qps}`);
    if (!(burst >= 1)) throw new RangeError(`burst must be at least 1, got ${burst}`);
    this.tokens = burst;
    this.lastMs = clock.now();
  }

  private refill(): void {
    const now = this.clock.now();
    if (now > this.lastMs) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.lastMs) * this.qps) / 1000);
      this.lastMs = now;
    }
  }

  tryAccept(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  wait(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    this.refill();
    // Reserve now, possibly going into debt: later callers queue behind this one.
    this.tokens -= 1;
    if (this.tokens >= 0) return Promise.resolve();
    const waitMs = Math.ceil((-this.tokens * 1000) / this.qps);
    return this.clock.sleep(waitMs, signal).catch((err: unknown) => {
      this.refill();
      this.tokens = Math.min(this.burst, this.tokens + 1);
      throw err;
    });
  }
}

/** No limit: for a QPS below zero, as client-go. */
export const unlimited: RateLimiter = {
  tryAccept: () => true,
  wait: (signal) => (signal?.aborted ? Promise.reject(signal.reason as Error) : Promise.resolve()),
};

/**
 * The limiter client-go builds from a rest.Config's QPS and Burst: 0 means its default (5 and 10),
 * a negative QPS means none.
 */
export function rateLimiterFor(qps: number, burst: number, clock: Clock): RateLimiter {
  if (qps < 0) return unlimited;
  return new TokenBucketRateLimiter(qps === 0 ? DEFAULT_QPS : qps, burst <= 0 ? DEFAULT_BURST : burst, clock);
}
