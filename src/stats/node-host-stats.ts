/**
 * What the node's summary reads from the host rather than the runtime: boot time, memory
 * capacity, network interfaces, process counts and pid_max. The figures cAdvisor's root container
 * and machine info give the upstream kubelet.
 */
import { readSmallTextFile } from '../lib/read-small-file.js';
import type { InterfaceStats } from './summary-types.js';

/** USER_HZ, the unit of /proc/stat: 100 on every Linux the kubelet runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

async function readOptional(file: string): Promise<string | undefined> {
  return readSmallTextFile(file).catch(() => undefined);
}

/** /proc/stat's btime, ms since the epoch: the root container's start time. */
export async function bootTimeMs(): Promise<number | undefined> {
  const m = /^btime (\d+)$/m.exec((await readOptional('/proc/stat')) ?? '');
  return m ? Number(m[1]) * 1000 : undefined;
}

/** Busy CPU time of the whole machine in ns, for a node whose root cgroup cannot be read. */
export async function procStatCpuNanoSeconds(): Promise<number | undefined> {
  const line = ((await readOptional('/proc/stat')) ?? '').split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return undefined;
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  // Everything but idle (3) and iowait (4); guest time is already inside user and nice.
  const busy = f.slice(0, 8).reduce((a, v, i) => (i === 3 || i === 4 ? a : a + (v || 0)), 0);
  return (busy / CLOCK_TICKS_PER_SECOND) * 1e9;
}

export interface MemInfo {
  totalBytes: number;
  freeBytes: number;
  inactiveFileBytes: number;
}

export async function readMemInfo(): Promise<MemInfo | undefined> {
  const text = await readOptional('/proc/meminfo');
  if (!text) return undefined;
  const kb = (key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const totalBytes = kb('MemTotal');
  const freeBytes = kb('MemFree');
  if (totalBytes === undefined || freeBytes === undefined) return undefined;
  return { totalBytes, freeBytes, inactiveFileBytes: kb('Inactive\\(file\\)') ?? 0 };
}

/** Interfaces of a network namespace (`/proc/<pid>/net/dev`, or the host's), loopback left out. */
export async function readNetDev(file = '/proc/net/dev'): Promise<InterfaceStats[] | undefined> {
  const text = await readOptional(file);
  if (!text) return undefined;
  const out: InterfaceStats[] = [];
  for (const line of text.split('\n').slice(2)) {
    const [name, rest] = line.split(':');
    if (!name || rest === undefined) continue;
    const iface = name.trim();
    if (iface === 'lo') continue;
    const f = rest.trim().split(/\s+/).map(Number);
    // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets errs …
    out.push({ name: iface, rxBytes: f[0], rxErrors: f[2], txBytes: f[8], txErrors: f[10] });
  }
  return out;
}

export interface ProcessCounts {
  maxPid?: number;
  /** Threads on the machine (the kernel's count of scheduling entities, as sysinfo's procs). */
  current?: number;
}

export async function readProcessCounts(): Promise<ProcessCounts> {
  const [pidMax, loadavg] = await Promise.all([
    readOptional('/proc/sys/kernel/pid_max'),
    readOptional('/proc/loadavg'),
  ]);
  const total = loadavg?.split(/\s+/)[3]?.split('/')[1];
  return {
    maxPid: pidMax ? Number(pidMax.trim()) : undefined,
    current: total ? Number(total) : undefined,
  };
}
