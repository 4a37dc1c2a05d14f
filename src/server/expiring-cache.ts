import type { Clock } from '../lib/clock.js';

/**
 * Answers kept for a time, and one lookup in flight per key: a burst of requests with the same token
 * or the same access question makes one call to the API server, as upstream's caching authenticator
 * and authorizer do. Failures (thrown errors) are never kept.
 */
export class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAtMs: number }>();
  private readonly inFlight = new Map<string, Promise<V>>();

  constructor(
    private readonly clock: Clock,
    /** How long an answer is kept; 0 keeps nothing. */
    private readonly ttlMsFor: (value: V) => number,
    /** Entries are swept once the map grows past this, so unique keys cannot grow it without bound. */
    private readonly maxEntries = 4096,
  ) {}

  async get(key: string, load: () => Promise<V>): Promise<V> {
    const now = this.clock.now();
    const hit = this.entries.get(key);
    if (hit && hit.expiresAtMs > now) return hit.value;
    if (hit) this.entries.delete(key);
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const p = load().then(
      (value) => {
        this.inFlight.delete(key);
        const ttlMs = this.ttlMsFor(value);
        if (ttlMs > 0) this.store(key, value, this.clock.now() + ttlMs);
        return value;
      },
      (err: unknown) => {
        this.inFlight.delete(key);
        throw err;
      },
    );
    this.inFlight.set(key, p);
    return p;
  }

  size(): number {
    return this.entries.size;
  }

  private store(key: string, value: V, expiresAtMs: number): void {
    if (this.entries.size >= this.maxEntries) {
      const now = this.clock.now();
      for (const [k, e] of this.entries) if (e.expiresAtMs <= now) this.entries.delete(k);
      // Still full of live entries: drop the oldest inserted (Map keeps insertion order).
      while (this.entries.size >= this.maxEntries) {
        const oldest = this.entries.keys().next().value;
        if (oldest === undefined) break;
        this.entries.delete(oldest);
      }
    }
    this.entries.set(key, { value, expiresAtMs });
  }
}
