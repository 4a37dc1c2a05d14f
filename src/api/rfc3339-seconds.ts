/**
 * Time as the API serializes metav1.Time: RFC 3339 in UTC, truncated to whole seconds
 * (`2026-11-21T06:50:00Z`). Statuses compared with the API's copy must use the same precision.
 */
export function rfc3339Seconds(ms: number): string {
  const d = new Date(Math.floor(ms / 1000) * 1000);
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Milliseconds since the epoch for an API timestamp; undefined when absent or unparsable. */
export function parseRfc3339(text: string | null | undefined): number | undefined {
  if (!text) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}
