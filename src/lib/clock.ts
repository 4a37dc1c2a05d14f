/** Time and timers, passed in so that loops can be tested without sleeping. */
export interface Clock {
  now(): number; // milliseconds since the epoch
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /** Resolves after ms, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * Milliseconds from an arbitrary start, never stepped by the wall clock: for durations. Not
 * `performance.now()`: the first touch of the `performance` global loads perf_hooks and eight
 * modules behind it (0.35 MiB of RSS).
 */
export function monotonicMs(): number {
  const [seconds, nanoseconds] = process.hrtime();
  return seconds * 1e3 + nanoseconds / 1e6;
}

export interface TimerHandle {
  readonly id: number;
}

// Node's setTimeout fires at once for delays over 2^31-1 ms; clamp so long back-offs stay long.
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

class RealClock implements Clock {
  private nextId = 1;
  private readonly timers = new Map<number, NodeJS.Timeout>();

  now(): number {
    return Date.now();
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    const t = setTimeout(
      () => {
        this.timers.delete(id);
        fn();
      },
      Math.min(Math.max(ms, 0), MAX_TIMEOUT_MS),
    );
    this.timers.set(id, t);
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    const t = this.timers.get(handle.id);
    if (t) clearTimeout(t);
    this.timers.delete(handle.id);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal);
  }
}

function sleepWith(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export const realClock: Clock = new RealClock();

/** A clock that moves only when told to; timers fire in order of their due time. */
export class FakeClock implements Clock {
  private current: number;
  private nextId = 1;
  private readonly pending = new Map<number, { due: number; fn: () => void }>();

  constructor(startMs = 1_700_000_000_000) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.pending.set(id, { due: this.current + Math.max(ms, 0), fn });
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    this.pending.delete(handle.id);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal);
  }

  /** Moves time forward, firing each timer that falls due on the way. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let nextId: number | undefined;
      let nextDue = Infinity;
      for (const [id, t] of this.pending) {
        if (t.due <= target && t.due < nextDue) {
          nextDue = t.due;
          nextId = id;
        }
      }
      if (nextId === undefined) break;
      const timer = this.pending.get(nextId)!;
      this.pending.delete(nextId);
      this.current = timer.due;
      timer.fn();
    }
    this.current = target;
  }

  pendingTimers(): number {
    return this.pending.size;
  }
}
