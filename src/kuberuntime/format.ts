/** Renderings that upstream's messages use, so that users and tools see the same strings. */
import type { Pod } from '../api/core-v1.js';

/** upstream format.Pod: `name_namespace(uid)`. */
export function formatPod(pod: Pod): string {
  return formatPodRef(pod.metadata.name ?? '', pod.metadata.namespace ?? '', pod.metadata.uid ?? '');
}

export function formatPodRef(name: string, namespace: string, uid: string): string {
  return `${name}_${namespace}(${uid})`;
}

/** Go's time.Duration.String for a duration in milliseconds: `10s`, `1m20s`, `5m0s`, `1h0m0s`, `500ms`. */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${trimFraction(rest)}ms`;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = `${trimFraction(rest / 1000)}s`;
  if (hours > 0) return `${sign}${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${sign}${minutes}m${seconds}`;
  return `${sign}${seconds}`;
}

function trimFraction(n: number): string {
  return n.toFixed(9).replace(/\.?0+$/, '');
}
