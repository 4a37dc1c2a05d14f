/**
 * A bounded FIFO with one consumer in mind, shaped after a buffered Go channel: the producer never
 * blocks (trySend reports a full buffer), the consumer awaits items with an AbortSignal.
 */
export class BoundedChannel<T> {
  private readonly items: T[] = [];
  private readonly readers = new Set<() => void>();

  constructor(readonly capacity: number) {
    if (!(capacity > 0)) throw new RangeError(`capacity must be positive, got ${capacity}`);
  }

  get size(): number {
    return this.items.length;
  }

  /** Queues item unless the buffer is full; returns whether it was queued. */
  trySend(item: T): boolean {
    if (this.items.length >= this.capacity) return false;
    this.items.push(item);
    for (const wake of [...this.readers]) wake();
    return true;
  }

  tryReceive(): T | undefined {
    return this.items.shift();
  }

  /**
   * Resolves when an item is waiting, without taking it: a loop selecting over several sources
   * can race these and then take from whichever is ready, losing nothing to the losers.
   */
  ready(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.items.length > 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.readers.delete(wake);
        reject(signal?.reason);
      };
      const wake = () => {
        this.readers.delete(wake);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.readers.add(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Takes the next item, waiting for one if need be. */
  async receive(signal?: AbortSignal): Promise<T> {
    for (;;) {
      if (this.items.length > 0) return this.items.shift() as T;
      await this.ready(signal);
    }
  }
}
