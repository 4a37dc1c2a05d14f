/**
 * Which cgroup hierarchies the machine has (upstream: GetCgroupSubsystems). cgroup v2 when the root
 * holds cgroup.controllers (one unified tree); else v1, one mount per controller or group of
 * controllers, found by listing the root. A hybrid machine's cgroup2 mount (`unified`) is noted
 * apart: it limits nothing, but runc puts containers there too, so their parents must be removed
 * from it as well.
 */
import path from 'node:path';
import { CgroupError } from './cgroup-error.js';
import type { CgroupFs } from './cgroup-fs.js';
import { compareStrings } from '../lib/compare.js';

export const DEFAULT_CGROUP_MOUNT_ROOT = '/sys/fs/cgroup';

export interface CgroupV1Hierarchy {
  /** Where it is mounted; the shortest of the paths that lead to it (upstream picks the shortest too). */
  mountPoint: string;
  /** 'cpu', 'cpuacct', …; the named systemd hierarchy is 'name=systemd', as libcontainer calls it. */
  subsystems: string[];
}

export type CgroupSubsystems =
  | { version: 'v1'; root: string; hierarchies: CgroupV1Hierarchy[]; hybridUnified?: string }
  | { version: 'v2'; root: string; controllers: string[] };

export async function isCgroup2UnifiedMode(fs: CgroupFs, root = DEFAULT_CGROUP_MOUNT_ROOT): Promise<boolean> {
  return fs.exists(path.join(root, 'cgroup.controllers'));
}

export async function detectCgroupSubsystems(
  fs: CgroupFs,
  root = DEFAULT_CGROUP_MOUNT_ROOT,
): Promise<CgroupSubsystems> {
  if (await isCgroup2UnifiedMode(fs, root)) {
    const controllers = (await fs.readFile(path.join(root, 'cgroup.controllers'))).trim().split(/\s+/);
    return { version: 'v2', root, controllers: controllers.filter((c) => c !== '') };
  }
  let entries;
  try {
    entries = await fs.readdir(root);
  } catch (err) {
    throw new CgroupError(`cannot list the cgroup mounts under ${root}`, { cause: err });
  }
  const byRealPath = new Map<string, CgroupV1Hierarchy>();
  let hybridUnified: string | undefined;
  for (const e of entries) {
    if (!e.isDirectoryOrLink) continue;
    const dir = path.join(root, e.name);
    if (!(await fs.exists(path.join(dir, 'cgroup.procs')))) continue;
    if (await fs.exists(path.join(dir, 'cgroup.controllers'))) {
      hybridUnified = dir;
      continue;
    }
    const real = await fs.realpath(dir);
    const known = byRealPath.get(real);
    if (known) {
      if (dir.length < known.mountPoint.length) known.mountPoint = dir;
      continue;
    }
    const subsystems = path
      .basename(real)
      .split(',')
      .map((s) => (s === 'systemd' ? 'name=systemd' : s));
    byRealPath.set(real, { mountPoint: dir, subsystems });
  }
  const hierarchies = [...byRealPath.values()].sort((a, b) => compareStrings(a.mountPoint, b.mountPoint));
  if (hierarchies.length === 0) throw new CgroupError(`no cgroup mounts found under ${root}`);
  return { version: 'v1', root, hierarchies, ...(hybridUnified ? { hybridUnified } : {}) };
}

/** subsystem → mount point, for v1. */
export function v1MountPoints(subsystems: CgroupSubsystems): Map<string, string> {
  const out = new Map<string, string>();
  if (subsystems.version !== 'v1') return out;
  for (const h of subsystems.hierarchies) for (const s of h.subsystems) out.set(s, h.mountPoint);
  return out;
}
