/**
 * A process's CPU time and memory as Linux accounts them, read from /proc: what `ps` and `top`
 * would show for the kubelet, without sampling in between.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

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

/**
 * The CPU seconds of the children a process has waited for (cutime + cstime, fields 16 and 17):
 * what a kubelet spends in the `mount`, `umount` or `nsenter` it runs.
 */
export function reapedChildrenCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / clockTicks();
}

/**
 * The CPU seconds of a process's live descendants, each with the children it has waited for: a
 * helper the kubelet keeps running (the mount helper's /bin/sh) and the commands it ran, which
 * reapedChildrenCpuSeconds sees only once the helper has exited. A process that exits meanwhile is
 * left out (its time moves to its parent's reaped children).
 */
export function liveDescendantsCpuSeconds(pid: number): number {
  let total = 0;
  for (const child of childPids(pid)) {
    try {
      total += cpuSeconds(child) + reapedChildrenCpuSeconds(child) + liveDescendantsCpuSeconds(child);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return total;
}

function childPids(pid: number): number[] {
  const out: number[] = [];
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  // Each thread lists the children it started.
  for (const tid of tids) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' '))
        if (c.trim() !== '') out.push(Number(c));
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

export function cpuSeconds(pid: number): number {
  return readStat(`/proc/${pid}/stat`).cpuSeconds;
}

/**
 * The CPU time of the process's main thread (its thread ID is its PID): for node, the JavaScript;
 * the rest of cpuSeconds is V8's compiler and garbage-collector threads and libuv's file-system pool.
 */
export function mainThreadCpuSeconds(pid: number): number {
  return readStat(`/proc/${pid}/task/${pid}/stat`).cpuSeconds;
}

/**
 * The machine's busy CPU time so far, all cores together, in seconds: /proc/stat's `cpu` line less
 * idle, I/O wait and the time the hypervisor gave to other guests (steal). Two starts that kept the
 * machine busy for different times saw different loads (the kernel's own workers vary from run to run).
 */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  // user nice system idle iowait irq softirq steal (guest and guest_nice are inside user and nice).
  const [user, nice, system, , , irq, softirq] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user ?? NaN) + (nice ?? NaN) + (system ?? NaN) + (irq ?? NaN) + (softirq ?? NaN)) / clockTicks();
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
