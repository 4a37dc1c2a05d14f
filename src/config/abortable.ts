import type { Clock } from '../lib/clock.js';

/**
 * An AbortSignal that aborts after timeoutMs on the given clock, or when parent aborts.
 * Call dispose() when the work is done so the timer does not linger.
 */
export function deadlineSignal(
  clock: Clock,
  timeoutMs: number,
  parent?: AbortSignal,
): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent?.reason);
  if (parent?.aborted) controller.abort(parent.reason);
  else parent?.addEventListener('abort', onParentAbort, { once: true });
  const timer = clock.setTimeout(() => controller.abort(new DeadlineError(timeoutMs)), timeoutMs);
  return {
    signal: controller.signal,
    dispose: () => {
      clock.clearTimeout(timer);
      parent?.removeEventListener('abort', onParentAbort);
    },
  };
}

export class DeadlineError extends Error {
  constructor(timeoutMs: number) {
    super(`deadline of ${timeoutMs}ms exceeded`);
    this.name = 'DeadlineError';
  }
}

/**
 * Settles with p, or rejects with the signal's reason as soon as it aborts. For calls that take no
 * signal themselves (fs.stat, fs.readdir): the call itself runs on, but nobody waits for it.
 */
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err as Error);
      },
    );
  });
}
