import type { Clock } from './clock.js';

/**
 * Per-key exponential back-off, as the kubelet uses for crash loops and image pulls:
 * the delay starts at initialMs, doubles on each failure up to maxMs, and is forgotten
 * once a key has had no failure for resetAfterMs (upstream: twice the maximum).
 */
export class Backoff {
  private readonly entries = new Map<string, { delayMs: number; lastFailureMs: number }>();

  constructor(
    private readonly clock: Clock,
    readonly initialMs: number,
    readonly maxMs: number,
    readonly resetAfterMs = 2 * maxMs,
  ) {}

  /** Records a failure of key and returns the delay now in force. */
  next(key: string): number {
    const now = this.clock.now();
    const entry = this.entries.get(key);
    if (!entry || now - entry.lastFailureMs > this.resetAfterMs) {
      this.entries.set(key, { delayMs: this.initialMs, lastFailureMs: now });
      return this.initialMs;
    }
    entry.delayMs = Math.min(entry.delayMs * 2, this.maxMs);
    entry.lastFailureMs = now;
    return entry.delayMs;
  }

  /** The delay in force for key, or 0 when it has none. */
  get(key: string): number {
    return this.entries.get(key)?.delayMs ?? 0;
  }

  /** True while key's last failure is more recent than its delay, measured from eventTimeMs. */
  isInBackoffSince(key: string, eventTimeMs: number): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    if (this.clock.now() - eventTimeMs > this.resetAfterMs) return false;
    return this.clock.now() - eventTimeMs < entry.delayMs;
  }

  /** How long until isInBackoffSince(key, eventTimeMs) turns false; 0 when it already is. */
  remainingMs(key: string, eventTimeMs: number): number {
    if (!this.isInBackoffSince(key, eventTimeMs)) return 0;
    return eventTimeMs + this.get(key) - this.clock.now();
  }

  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Drops entries that have been quiet for longer than resetAfterMs. */
  gc(): void {
    const now = this.clock.now();
    for (const [key, e] of this.entries)
      if (now - e.lastFailureMs > this.resetAfterMs) this.entries.delete(key);
  }
}

/** Delay for attempt n (0-based) of a retry loop: doubling from initialMs up to maxMs, with up to jitter*delay added. */
export function retryDelayMs(attempt: number, initialMs: number, maxMs: number, jitter = 0.2): number {
  const base = Math.min(initialMs * 2 ** Math.min(attempt, 30), maxMs);
  return Math.round(base * (1 + Math.random() * jitter));
}
