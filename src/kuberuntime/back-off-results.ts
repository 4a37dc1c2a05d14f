/**
 * What a sync that stopped at back-offs means for the pod's next sync. Waiting out a back-off is not
 * a sync error (upstream: ErrCrashLoopBackOff and ErrImagePullBackOff are left out of the sync error),
 * so the pod is not retried at the error back-off; it is looked at again when its first back-off runs out.
 */
import type { SyncResult } from './types.js';

const BACK_OFF_REASONS: ReadonlySet<string> = new Set(['CrashLoopBackOff', 'ImagePullBackOff']);

/**
 * Added to a back-off's expiry: the CRI's nanosecond exit times are read in milliseconds, and a sync
 * that came a hair early would find the container still in back-off and record one more BackOff.
 */
export const BACK_OFF_EXPIRY_MARGIN_MS = 100;

export function isBackOffReason(reason: string): boolean {
  return BACK_OFF_REASONS.has(reason);
}

/** Steps that failed for a reason other than a back-off: these make the sync an error. */
export function hardFailures(results: readonly SyncResult[]): SyncResult[] {
  return results.filter((r) => r.reason !== undefined && !isBackOffReason(r.reason));
}

/** The delay until the earliest back-off among results runs out, with the margin; undefined when none is in back-off. */
export function backOffRequeueMs(results: readonly SyncResult[]): number | undefined {
  let earliestMs: number | undefined;
  for (const r of results) {
    if (r.reason === undefined || !isBackOffReason(r.reason) || r.retryAfterMs === undefined) continue;
    earliestMs = Math.min(earliestMs ?? Infinity, Math.max(0, r.retryAfterMs));
  }
  return earliestMs === undefined ? undefined : earliestMs + BACK_OFF_EXPIRY_MARGIN_MS;
}

/** The steps that change what runs in the runtime when they succeed. */
const RUNTIME_CHANGING_ACTIONS: ReadonlySet<SyncResult['action']> = new Set([
  'StartContainer',
  'KillContainer',
  'CreatePodSandbox',
  'KillPodSandbox',
]);

/**
 * Whether a sync that stopped at back-offs left the runtime as it found it (it started, stopped and
 * created nothing), so the pod status it was given still describes the runtime.
 */
export function leftRuntimeUnchanged(results: readonly SyncResult[]): boolean {
  return !results.some((r) => r.reason === undefined && RUNTIME_CHANGING_ACTIONS.has(r.action));
}

/**
 * Whether a sync that stopped at back-offs should report its crash loop at once: nothing but the
 * first back-off's end syncs the pod again, so while the runtime is as the sync's starting status
 * read it, CrashLoopBackOff is shown now rather than when the back-off is over. An image pull
 * back-off is left to the next sync, as upstream: the pull's ErrImagePull stays readable until then.
 */
export function reportCrashLoopNow(results: readonly SyncResult[]): boolean {
  return results.some((r) => r.reason === 'CrashLoopBackOff') && leftRuntimeUnchanged(results);
}
