/**
 * A process's CPU time and memory as Linux accounts them, read from /proc: what `ps` and `top`
 * would show for the kubelet, without sampling in between.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

/** Kernel ticks per second for /proc/<pid>/stat times; 100 on every common Linux build. */
const CLOCK_TICKS_PER_S = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of the process (its own threads, not reaped children), in seconds; 10 ms resolution. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat(5) are utime and stime; fields[0] here is field 3.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / CLOCK_TICKS_PER_S;
}

function statusKiB(pid: number, key: string): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(status);
  if (!match) throw new Error(`/proc/${pid}/status has no ${key}`);
  return Number(match[1]);
}

export function rssBytes(pid: number): number {
  return statusKiB(pid, 'VmRSS') * 1024;
}

/** The resident set's high-water mark since the process started, or since resetPeakRss. */
export function peakRssBytes(pid: number): number {
  return statusKiB(pid, 'VmHWM') * 1024;
}

/**
 * Resets VmHWM to the current RSS (writing 5 to clear_refs, Linux 4.0+), so that a peak can be
 * measured over one phase rather than the process's life. Returns false where that is not allowed.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
