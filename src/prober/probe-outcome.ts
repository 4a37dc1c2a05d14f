/** What one run of a probe handler found (upstream: pkg/probe's Result with its output and error). */

/** Upstream probe.Result's values: a warning is a success the user should hear about. */
export type ProbeOutcomeResult = 'success' | 'warning' | 'failure' | 'unknown';

export interface ProbeOutcome {
  result: ProbeOutcomeResult;
  /** What the user sees after "<Kind> probe failed: ". */
  output: string;
  /** The probe could not be run at all (a bad port, the runtime unreachable): its result is thrown away. */
  error?: Error;
}

/** Upstream reads at most 10 KiB of a probe's output or response body (exec maxReadLength, http maxRespBodyLength). */
export const MAX_READ_LENGTH_BYTES = 10 * 1024;
