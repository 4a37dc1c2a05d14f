/**
 * The one deadline of tskubelet: an AbortSignal that aborts when its time is up or its parent
 * aborts, whichever comes first, with one error class that says it was the deadline.
 */
import type { Clock } from './clock.js';
import { KubeletError } from './errors.js';

/** Why a call was cut short by its own deadline rather than by its caller. */
export class DeadlineExceededError extends KubeletError {
  constructor(readonly timeoutMs: number) {
    super('DEADLINE_EXCEEDED', `deadline of ${timeoutMs}ms exceeded`);
    this.name = 'DeadlineExceededError';
  }
}

export interface Deadline {
  signal: AbortSignal;
  /** Stops the timer and lets go of the parent; call once the work is done. */
  dispose(): void;
}

export interface ChildAbortController {
  controller: AbortController;
  /** Lets go of the parent; call once the work is done. */
  dispose(): void;
}

/**
 * An AbortController of its own that aborts, with the parent's reason, when parent aborts. Unlike
 * AbortSignal.any, the parent holds nothing of it once disposed.
 */
export function childAbortController(parent?: AbortSignal): ChildAbortController {
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent?.reason);
  if (parent?.aborted) controller.abort(parent.reason);
  else parent?.addEventListener('abort', onParentAbort, { once: true });
  return { controller, dispose: () => parent?.removeEventListener('abort', onParentAbort) };
}

/** An AbortSignal that aborts after timeoutMs on clock, or when parent aborts, whichever comes first. */
export function withDeadline(clock: Clock, timeoutMs: number, parent?: AbortSignal): Deadline {
  const child = childAbortController(parent);
  const timer = clock.setTimeout(
    () => child.controller.abort(new DeadlineExceededError(timeoutMs)),
    timeoutMs,
  );
  return {
    signal: child.controller.signal,
    dispose: () => {
      clock.clearTimeout(timer);
      child.dispose();
    },
  };
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
