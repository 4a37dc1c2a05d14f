/**
 * Mounting and unmounting through mount(8) and umount(8), and the mount table read from
 * /proc/self/mountinfo (upstream: k8s.io/mount-utils). Every command runs with a deadline, through
 * the mount helper (mount-helper.ts) rather than a fork of the kubelet; the table is read
 * asynchronously, never on a hot path more than once per operation.
 */
import type { BigIntStats } from 'node:fs';
import { lstat, readdir, realpath, rmdir, stat, statfs, unlink } from 'node:fs/promises';
import { readSmallTextFile } from '../lib/read-small-file.js';
import path from 'node:path';
import { logger } from '../lib/log.js';
import { BoundedMap } from '../lib/bounded-map.js';
import { MountHelper, type CommandRunner } from './mount-helper.js';

const log = logger('volume');

/** How long a mount or unmount may take before the kubelet gives up on it. */
export const MOUNT_COMMAND_TIMEOUT_MS = 60_000;

/** One line of /proc/self/mountinfo. */
export interface MountInfo {
  id: number;
  parentId: number;
  /** `major:minor` of the filesystem. */
  device: string;
  /** The path inside the filesystem that is mounted (a bind mount's source). */
  root: string;
  mountPoint: string;
  options: string[];
  /** `shared:N`, `master:N`, `propagate_from:N`, `unbindable`. */
  optionalFields: string[];
  fsType: string;
  source: string;
  superOptions: string[];
}

export interface Mounter {
  /** mount -t fstype -o options source target (plus mount(8) flags such as --no-canonicalize). */
  mount(source: string, target: string, fsType: string, options: string[], flags?: string[]): Promise<void>;
  unmount(target: string): Promise<void>;
  /** The mount table of the kubelet's mount namespace. */
  list(): Promise<MountInfo[]>;
  /** `tmpfs` or `hugetlbfs` when one is mounted at exactly p (an emptyDir's medium), else undefined. */
  memoryFilesystemAt(p: string): Promise<MemoryFilesystem | undefined>;
  /** Stops what the mounter keeps running (the mount helper); a later command starts it again. */
  close?(): Promise<void>;
}

export type MemoryFilesystem = 'tmpfs' | 'hugetlbfs';

// statfs(2)'s f_type of the two (linux/magic.h).
const MEMORY_FILESYSTEM_MAGIC = new Map<number, MemoryFilesystem>([
  [0x01021994, 'tmpfs'],
  [0x958458f6, 'hugetlbfs'],
]);

/** The file calls memoryFilesystemAt makes (bigint stats: an inode number is compared exactly). */
export interface MountMediumFileCalls {
  lstat(p: string): Promise<BigIntStats>;
  stat(p: string): Promise<BigIntStats>;
  statfs(p: string): Promise<{ type: number }>;
  realpath(p: string): Promise<string>;
}

export const promiseMountMediumFileCalls: MountMediumFileCalls = {
  lstat: (p) => lstat(p, { bigint: true }),
  stat: (p) => stat(p, { bigint: true }),
  statfs: (p) => statfs(p),
  realpath: (p) => realpath(p),
};

/** A memory filesystem found mounted at a path, by the identity of the mount's root folder. */
interface KnownMemoryMount {
  dev: bigint;
  ino: bigint;
  type: MemoryFilesystem;
}

/** mount(8) options with which the target's mount is not a new one of the filesystem asked for. */
const NOT_A_NEW_MOUNT = new Set(['bind', 'rbind', 'remount', 'move']);

/** Bounds the memory of mounts that went away without an unmount through the mounter. */
const MAX_KNOWN_MEMORY_MOUNTS = 4096;

/** Decodes mountinfo's octal escapes (`\040` for a space). */
function unescapeOctal(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

export function parseMountInfo(text: string): MountInfo[] {
  const out: MountInfo[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const fields = line.split(' ');
    const sep = fields.indexOf('-', 6);
    if (sep < 0 || fields.length < sep + 3) continue;
    out.push({
      id: Number(fields[0]),
      parentId: Number(fields[1]),
      device: fields[2] ?? '',
      root: unescapeOctal(fields[3] ?? ''),
      mountPoint: unescapeOctal(fields[4] ?? ''),
      options: (fields[5] ?? '').split(','),
      optionalFields: fields.slice(6, sep),
      fsType: fields[sep + 1] ?? '',
      source: unescapeOctal(fields[sep + 2] ?? ''),
      superOptions: (fields[sep + 3] ?? '').split(','),
    });
  }
  return out;
}

/** The real thing: mount(8) and umount(8) from util-linux. */
export class SystemMounter implements Mounter {
  /** By resolved path: what memoryFilesystemAt found mounted there last time. */
  private readonly knownMemoryMounts = new BoundedMap<string, KnownMemoryMount>(MAX_KNOWN_MEMORY_MOUNTS);

  constructor(
    private readonly timeoutMs = MOUNT_COMMAND_TIMEOUT_MS,
    private readonly mountInfoPath = '/proc/self/mountinfo',
    private readonly runner: CommandRunner = new MountHelper(),
    private readonly files: MountMediumFileCalls = promiseMountMediumFileCalls,
  ) {}

  close(): Promise<void> {
    return this.runner.close();
  }

  async mount(
    source: string,
    target: string,
    fsType: string,
    options: string[],
    flags: string[] = [],
  ): Promise<void> {
    const args = [...flags];
    if (fsType !== '') args.push('-t', fsType);
    if (options.length > 0) args.push('-o', options.join(','));
    // An empty source is for propagation changes (mount --make-rshared target), which take none.
    if (source !== '') args.push(source);
    args.push(target);
    log.v(4, 'Mounting', { command: 'mount', args });
    try {
      await this.runner.run('mount', args, this.timeoutMs);
    } catch (err) {
      // Upstream's wording, so the event reads the same.
      const e = err as Error & { output?: string; exitStatus?: number; killed?: boolean };
      throw new Error(
        `mount failed: ${describeExit(e)}\nMounting command: mount\nMounting arguments: ${args.join(' ')}\nOutput: ${e.output ?? ''}`,
      );
    }
    const type = fsType === 'tmpfs' || fsType === 'hugetlbfs' ? fsType : undefined;
    if (type !== undefined && !options.some((o) => NOT_A_NEW_MOUNT.has(o)))
      await this.learnMount(target, type);
  }

  /**
   * Notes the root folder of a memory filesystem just mounted at target, so that memoryFilesystemAt
   * answers the next question about it (the pod's next sync) with one lstat rather than four calls.
   * A target whose last element is a symlink is left to the full look: lstat names the link there.
   */
  private async learnMount(target: string, type: MemoryFilesystem): Promise<void> {
    const key = path.resolve(target);
    const st = await this.files.lstat(key).catch(() => undefined);
    if (st?.isDirectory()) this.knownMemoryMounts.set(key, { dev: st.dev, ino: st.ino, type });
  }

  async unmount(target: string): Promise<void> {
    log.v(4, 'Unmounting', { target });
    this.knownMemoryMounts.delete(path.resolve(target));
    try {
      await this.runner.run('umount', [target], this.timeoutMs);
    } catch (err) {
      const e = err as Error & { output?: string; exitStatus?: number; killed?: boolean };
      throw new Error(
        `unmount failed: ${describeExit(e)}\nUnmounting arguments: ${target}\nOutput: ${e.output ?? ''}`,
      );
    }
  }

  async list(): Promise<MountInfo[]> {
    return parseMountInfo(await readSmallTextFile(this.mountInfoPath));
  }

  /**
   * From statfs and stat, as upstream's GetMountMedium, rather than the mount table: the table grows
   * with every pod (and every other mount on the machine) and the kernel writes it out whole on each
   * read, which a pod's projected volume asked for on every sync. Only a path on a memory filesystem
   * that has its parent's device (a bind mount of the same filesystem looks so) needs the table.
   *
   * A path found to be a mount point of its own, or where this mounter mounted a memory filesystem
   * itself, is answered next time by one lstat: while the same filesystem stays mounted there, the
   * path still names that mount's root folder (a device and inode pair names one live file on the
   * machine). Unmounted, the path names the folder beneath the mount, on another device; removed, it
   * names nothing; either way it is looked at again in full.
   */
  async memoryFilesystemAt(p: string): Promise<MemoryFilesystem | undefined> {
    const key = path.resolve(p);
    const known = this.knownMemoryMounts.get(key);
    if (known !== undefined) {
      const now = await this.files.lstat(key).catch(() => undefined);
      if (now !== undefined && now.dev === known.dev && now.ino === known.ino) return known.type;
      this.knownMemoryMounts.delete(key);
    }
    let target: string;
    let canonicalAsSpelled = false;
    try {
      target = await this.files.realpath(p);
      canonicalAsSpelled = target === key;
    } catch {
      target = key;
    }
    let type: MemoryFilesystem | undefined;
    try {
      type = MEMORY_FILESYSTEM_MAGIC.get((await this.files.statfs(target)).type);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    // Neither filesystem at p nor anywhere it could come from: nothing of the two is mounted at p.
    if (type === undefined) return undefined;
    const [self, parent] = await Promise.all([
      this.files.stat(target),
      this.files.stat(path.dirname(target)),
    ]);
    if (self.dev === parent.dev) return memoryFilesystemIn(await this.list(), target);
    // Only a path without symlinks: then lstat of it names what stat of the canonical path named.
    if (canonicalAsSpelled) this.knownMemoryMounts.set(key, { dev: self.dev, ino: self.ino, type });
    return type;
  }
}

/** What the table says is mounted at exactly the canonical path target, if it is tmpfs or hugetlbfs. */
export function memoryFilesystemIn(table: MountInfo[], target: string): MemoryFilesystem | undefined {
  let found: MountInfo | undefined;
  // The last of equal mount points is the one on top.
  for (const m of table) if (m.mountPoint === target) found = m;
  return found?.fsType === 'tmpfs' || found?.fsType === 'hugetlbfs' ? found.fsType : undefined;
}

function describeExit(e: Error & { exitStatus?: number; killed?: boolean }): string {
  if (e.killed) return 'timed out';
  return e.exitStatus !== undefined ? `exit status ${e.exitStatus}` : e.message;
}

/** The canonical form of p as the mount table spells it; p itself when it does not exist. */
async function canonical(p: string): Promise<string> {
  try {
    return await realpath(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * True when p is a mount point. The table is the only reliable answer: a bind mount from the same
 * filesystem has the same device as its parent, so comparing st_dev (upstream's "likely") misses it.
 */
export async function isMountPoint(mounter: Mounter, p: string, table?: MountInfo[]): Promise<boolean> {
  const target = await canonical(p);
  return (table ?? (await mounter.list())).some((m) => m.mountPoint === target);
}

/** The mount that p lives on: the longest mount point that is p or one of its parents. */
export function mountOf(table: MountInfo[], canonicalPath: string): MountInfo | undefined {
  let best: MountInfo | undefined;
  for (const m of table) {
    if (!isWithin(canonicalPath, m.mountPoint)) continue;
    // The last of equal mount points is the one on top.
    if (!best || m.mountPoint.length >= best.mountPoint.length) best = m;
  }
  return best;
}

/** True when child is base or lies under it (upstream: PathWithinBase, on cleaned absolute paths). */
export function isWithin(child: string, base: string): boolean {
  const rel = path.relative(base, child);
  // `..data` and `..2024_…` are names inside base; only a `..` element leaves it.
  return rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

/**
 * Makes the kubelet's root directory a shared mount (mount --bind dir dir; mount --make-rshared dir),
 * so mounts under it can propagate to containers that ask for HostToContainer or Bidirectional
 * (upstream: MakeRShared at start). Does nothing when it already is on a shared mount.
 */
export async function makeRShared(mounter: Mounter, dir: string): Promise<void> {
  const target = await canonical(dir);
  const table = await mounter.list();
  const m = mountOf(table, target);
  if (m && m.optionalFields.some((f) => f.startsWith('shared:'))) {
    log.v(4, 'Directory is already on a shared mount', { path: target });
    return;
  }
  log.v(2, 'Bind-mounting with shared mount propagation', { path: target });
  // rbind: mounts already under dir (pods of an earlier run) stay visible through the new mount.
  const nested = table.filter((m) => m.mountPoint !== target && isWithin(m.mountPoint, target));
  if (nested.length > 0) {
    log.warn('Mounts exist under the directory made shared; their old copies stay beneath it', {
      path: target,
      mounts: nested.length,
    });
  }
  await mounter.mount(target, target, '', ['rbind']);
  await mounter.mount('', target, '', [], ['--make-rshared']);
}

/**
 * Removes p and everything under it, but never anything that is, or is under, a mount point other
 * than p's own filesystem: a forgotten bind mount must not cost a host its data (upstream:
 * RemoveAllOneFilesystem, which only catches mounts of other devices; the table catches bind mounts too).
 */
export async function removeAllOneFilesystem(mounter: Mounter, p: string): Promise<void> {
  let target: string;
  try {
    target = await realpath(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const nested = (await mounter.list()).filter((m) => isWithin(m.mountPoint, target));
  if (nested.length > 0) {
    throw new Error(
      `cannot remove ${p}: ${nested.map((m) => m.mountPoint).join(', ')} ${nested.length === 1 ? 'is' : 'are'} still mounted`,
    );
  }
  await removeTree(target);
}

async function removeTree(p: string): Promise<void> {
  let st;
  try {
    st = await lstat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!st.isDirectory()) {
    await unlink(p).catch(ignoreENOENT);
    return;
  }
  for (const name of await readdir(p)) await removeTree(path.join(p, name));
  await rmdir(p).catch(ignoreENOENT);
}

function ignoreENOENT(err: unknown): void {
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
}
