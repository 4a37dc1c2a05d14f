/**
 * A process's CPU time and memory as Linux accounts them, read from /proc: what `ps` and `top`
 * would show for the kubelet, without sampling in between.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

/** Kernel ticks per second for /proc/<pid>/stat times; 100 on every common Linux build. Asked once, when first needed. */
let clockTicksPerS: number | undefined;
function clockTicks(): number {
  if (clockTicksPerS === undefined) {
    try {
      clockTicksPerS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicksPerS = 100;
    }
  }
  return clockTicksPerS;
}

/**
 * A stat(5) file's command name and utime + stime in seconds (10 ms resolution): a process's
 * (`/proc/<pid>/stat`, its own threads, not reaped children) or one thread's (`/proc/<pid>/task/<tid>/stat`).
 */
export function readStat(file: string): { name: string; cpuSeconds: number } {
  const stat = readFileSync(file, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  // Fields 14 and 15 of stat(5) are utime and stime; fields[0] here is field 3.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return { name: stat.slice(stat.indexOf('(') + 1, close), cpuSeconds: (utime + stime) / clockTicks() };
}

export function cpuSeconds(pid: number): number {
  return readStat(`/proc/${pid}/stat`).cpuSeconds;
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
