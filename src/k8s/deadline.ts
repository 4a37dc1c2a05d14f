import type { Clock } from '../lib/clock.js';

/** Why a call was cut short by its own deadline rather than by its caller. */
export class DeadlineExceededError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`deadline of ${timeoutMs}ms exceeded`);
    this.name = 'DeadlineExceededError';
  }
}

export interface Deadline {
  signal: AbortSignal;
  /** Stops the timer and lets go of the parent; call once the work is done. */
  dispose(): void;
}

/** An AbortSignal that aborts after timeoutMs on clock, or when parent aborts, whichever comes first. */
export function withDeadline(clock: Clock, timeoutMs: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent?.reason);
  if (parent?.aborted) controller.abort(parent.reason);
  else parent?.addEventListener('abort', onParentAbort, { once: true });
  const timer = clock.setTimeout(() => controller.abort(new DeadlineExceededError(timeoutMs)), timeoutMs);
  return {
    signal: controller.signal,
    dispose: () => {
      clock.clearTimeout(timer);
      parent?.removeEventListener('abort', onParentAbort);
    },
  };
}
