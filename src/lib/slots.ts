/**
 * At most `limit` holders at once, the others waiting in the order they came: a FIFO semaphore
 * whose release is safe to call twice (the image puller's parallel pulls, the runtime's pod starts).
 */
export class Slots {
  private active = 0;
  private readonly waiting: { grant: () => void }[] = [];

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new Error(`slots: limit must be a positive integer, got ${limit}`);
  }

  /** Holders now. */
  get inUse(): number {
    return this.active;
  }

  /** Callers waiting for a slot now. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with a release function once a slot is free; rejects if signal aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    // A released slot passes straight to the next waiter, so a newcomer cannot take it in between.
    const release = (): void => {
      const next = this.waiting.shift();
      if (next) next.grant();
      else this.active--;
    };
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve(once(release));
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(once(release));
        },
      };
      const onAbort = (): void => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(abortReason(signal));
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }
}

function abortReason(signal: AbortSignal | undefined): Error {
  return signal?.reason instanceof Error ? signal.reason : new Error('aborted');
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
