/**
 * Floors for the periods of the kubelet's loops. A loop whose period is 0, negative, NaN or a
 * nanosecond (from a config file, a flag or a pod spec that slipped past validation) would wake
 * without pause and starve everything else on the event loop; with a floor it always yields.
 */
import { logger } from './log.js';

const log = logger('loop-period');

/** The shortest period any loop may have: short enough for tests, long enough never to spin. */
export const MIN_LOOP_PERIOD_MS = 10;

/** Loops already warned about, so that one rescheduling at every period warns once. */
const warned = new Set<string>();

/**
 * periodMs when it is a finite number at least floorMs, else floorMs; a floored period is warned
 * about by name, once per loop name and period.
 */
export function loopPeriodMs(name: string, periodMs: number, floorMs = MIN_LOOP_PERIOD_MS): number {
  if (typeof periodMs === 'number' && Number.isFinite(periodMs) && periodMs >= floorMs) return periodMs;
  const key = `${name}\0${String(periodMs)}`;
  if (!warned.has(key)) {
    warned.add(key);
    log.warn('Loop period too short, using the floor', { loop: name, periodMs: String(periodMs), floorMs });
  }
  return floorMs;
}
