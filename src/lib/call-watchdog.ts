/**
 * Deadlines for many short calls with one interval timer rather than a timer each. Arming and
 * clearing a timer (or an AbortSignal.timeout) per call was a visible share of the kubelet's CPU
 * while pods start: a pod start makes dozens of cgroupfs and CRI calls, nearly all of which answer
 * in well under a millisecond. A call that overruns is told so within one tick of its deadline.
 */
export interface WatchedCall {
  /** The call finished: its deadline no longer matters. Returns false if it had expired already. */
  done(): boolean;
}

interface Pending {
  deadlineMs: number;
  onExpire: () => void;
}

export class CallWatchdog {
  private readonly pending = new Set<Pending>();
  private timer: NodeJS.Timeout | undefined;

  /** tickMs: how late an expiry may be noticed. */
  constructor(private readonly tickMs: number) {}

  /** Calls onExpire once timeoutMs from now, unless done() is called first. */
  watch(timeoutMs: number, onExpire: () => void): WatchedCall {
    const entry: Pending = { deadlineMs: Date.now() + timeoutMs, onExpire };
    this.pending.add(entry);
    // Unref'd: a deadline alone never keeps the process up; the call it watches does, if anything.
    this.timer ??= setInterval(() => this.expire(), this.tickMs).unref();
    return { done: () => this.pending.delete(entry) };
  }

  /** p, or an ETIMEDOUT error naming what when p has not settled within timeoutMs. */
  bounded<T>(p: Promise<T>, timeoutMs: number, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const call = this.watch(timeoutMs, () => {
        const err = new Error(`${what}: no answer within ${timeoutMs} ms`) as NodeJS.ErrnoException;
        err.code = 'ETIMEDOUT';
        reject(err);
      });
      p.then(
        (v) => {
          if (call.done()) resolve(v);
        },
        (e: unknown) => {
          if (call.done()) reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
  }

  private expire(): void {
    const now = Date.now();
    for (const entry of this.pending) {
      if (now < entry.deadlineMs) continue;
      this.pending.delete(entry);
      entry.onExpire();
    }
    // Stopped when nothing is pending, so that an idle kubelet has no such timer at all.
    if (this.pending.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
