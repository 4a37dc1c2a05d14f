/**
 * What the node's hardware and OS report about themselves, read the way cAdvisor reads them for the
 * upstream kubelet (MachineInfo, VersionInfo, RootFsInfo). Read once at start: none of it changes
 * while the kubelet runs, except that a reboot changes bootID (and restarts the kubelet too).
 */
import { readdir, readFile, statfs } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { errorMessage } from '../lib/errors.js';

export interface HugePagesInfo {
  pageSizeKiB: number;
  numPages: number;
}

export interface MachineInfo {
  numCores: number;
  memoryCapacityBytes: number;
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  /** PRETTY_NAME of /etc/os-release (cAdvisor's ContainerOsVersion). */
  osImage: string;
  hugePages: HugePagesInfo[];
}

/** The host's files and calls, passed in so tests can give a machine of their own. */
export interface MachineHost {
  readFile(file: string): Promise<string>;
  readdir(dir: string): Promise<string[]>;
  /** The filesystem holding dir: its total size in bytes. */
  fsCapacityBytes(dir: string): Promise<number>;
  numCpus(): number;
  kernelRelease(): string;
}

export const realMachineHost: MachineHost = {
  readFile: (file) => readFile(file, 'utf8'),
  readdir: (dir) => readdir(dir),
  fsCapacityBytes: async (dir) => {
    const s = await statfs(dir);
    return s.bsize * s.blocks;
  },
  numCpus: () => os.cpus().length,
  kernelRelease: () => os.release(),
};

async function readTrimmed(host: MachineHost, file: string): Promise<string | undefined> {
  try {
    return (await host.readFile(file)).trim();
  } catch {
    return undefined;
  }
}

/** MemTotal of /proc/meminfo in bytes (the kernel writes kB meaning KiB). */
export function parseMemTotalBytes(meminfo: string): number {
  const m = /^MemTotal:\s+(\d+)\s*kB/m.exec(meminfo);
  if (!m) throw new Error('MemTotal not found in /proc/meminfo');
  return Number(m[1]) * 1024;
}

/** PRETTY_NAME of an os-release file, unquoted; cAdvisor's fallback is "Linux". */
export function parseOsReleasePrettyName(text: string): string {
  for (const line of text.split('\n')) {
    const m = /^PRETTY_NAME=(.*)$/.exec(line.trim());
    if (!m) continue;
    let value = m[1]!.trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0]!)) {
      value = value.slice(1, -1);
    }
    return value;
  }
  return 'Linux';
}

/** Huge page pools of /sys/kernel/mm/hugepages (`hugepages-2048kB/nr_hugepages`). */
async function readHugePages(host: MachineHost): Promise<HugePagesInfo[]> {
  const dir = '/sys/kernel/mm/hugepages';
  let entries: string[];
  try {
    entries = await host.readdir(dir);
  } catch {
    return [];
  }
  const pools: HugePagesInfo[] = [];
  for (const entry of entries.sort()) {
    const m = /^hugepages-(\d+)kB$/.exec(entry);
    if (!m) continue;
    const count = await readTrimmed(host, path.join(dir, entry, 'nr_hugepages'));
    pools.push({ pageSizeKiB: Number(m[1]), numPages: Number(count ?? '0') || 0 });
  }
  return pools;
}

export async function readMachineInfo(host: MachineHost = realMachineHost): Promise<MachineInfo> {
  const meminfo = await host.readFile('/proc/meminfo');
  const machineID =
    (await readTrimmed(host, '/etc/machine-id')) ??
    (await readTrimmed(host, '/var/lib/dbus/machine-id')) ??
    '';
  // product_uuid is often readable by root only; the machine ID is the stable stand-in.
  const systemUUID = (await readTrimmed(host, '/sys/class/dmi/id/product_uuid')) || machineID;
  const osRelease =
    (await readTrimmed(host, '/etc/os-release')) ?? (await readTrimmed(host, '/usr/lib/os-release'));
  return {
    numCores: host.numCpus(),
    memoryCapacityBytes: parseMemTotalBytes(meminfo),
    machineID,
    systemUUID,
    bootID: (await readTrimmed(host, '/proc/sys/kernel/random/boot_id')) ?? '',
    kernelVersion: host.kernelRelease(),
    osImage: osRelease === undefined ? 'Linux' : parseOsReleasePrettyName(osRelease),
    hugePages: await readHugePages(host),
  };
}

/**
 * The size of the filesystem holding dir (cAdvisor's RootFsInfo for the kubelet's root dir). A dir
 * not made yet is measured at its nearest existing parent, which lives on the same filesystem.
 */
export async function rootFsCapacityBytes(dir: string, host: MachineHost = realMachineHost): Promise<number> {
  let current = path.resolve(dir);
  for (;;) {
    try {
      return await host.fsCapacityBytes(current);
    } catch (err) {
      const parent = path.dirname(current);
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || parent === current) {
        throw new Error(`statfs ${current}: ${errorMessage(err)}`, { cause: err });
      }
      current = parent;
    }
  }
}
