/**
 * fsGroup: a volume's files are given the pod's group, and its folders the setgid bit so new files
 * inherit it (upstream: pkg/volume/volume_linux.go SetVolumeOwnership), and the user a projected
 * token is written for (upstream: FsUserFrom).
 */
import { constants } from 'node:fs';
import { chmod, chown, lchown, open, readdir, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Pod } from '../api/core-v1.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('volume');

const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const S_ISGID = 0o2000;
/** Upstream warns when a walk takes longer than this: a volume with many files makes pods slow to start. */
const SLOW_OWNERSHIP_WARNING_MS = 30_000;

export type FSGroupChangePolicy = 'OnRootMismatch' | 'Always';

/**
 * Gives every file under dir the group fsGroup and the group's read (and, unless readOnly, write)
 * bits; folders also get group execute and setgid. Symlinks are re-owned but never chmod-ed: that
 * would change their target. With OnRootMismatch, nothing is done when the root already looks right.
 *
 * A pod that shares a writable volume can swap any name in it for a symlink while the walk runs, so
 * nothing is changed by name: each entry is opened with O_PATH|O_NOFOLLOW relative to its folder's
 * descriptor (a symlink opens as itself, never its target), and its owner and mode are changed through
 * that descriptor. O_PATH rather than a read open: opening a device node runs its driver, and a FIFO
 * would block.
 */
export async function setVolumeOwnership(
  dir: string,
  fsGroup: number | undefined,
  opts: { readOnly: boolean; policy?: FSGroupChangePolicy; clock?: Clock },
): Promise<void> {
  if (fsGroup === undefined) return;
  if (opts.policy === 'OnRootMismatch' && !(await requiresPermissionChange(dir, fsGroup, opts.readOnly))) {
    log.v(3, 'Skipping permission and ownership change for volume', { path: dir });
    return;
  }
  const timer = opts.clock?.setTimeout(
    () =>
      log.warn(
        'Setting volume ownership with fsGroup set is slow; the volume may have a lot of files, see https://github.com/kubernetes/kubernetes/issues/69699',
        { path: dir },
      ),
    SLOW_OWNERSHIP_WARNING_MS,
  );
  try {
    await walkDeep({ name: dir, shown: dir }, (entry) => changeFilePermission(entry, fsGroup, opts.readOnly));
  } finally {
    if (timer) opts.clock?.clearTimeout(timer);
  }
}

/** Linux's O_PATH: a handle on the file itself, without opening it for reading. */
const O_PATH = 0o10000000;

/** A name as the walk opens it (relative to its folder's descriptor) and as logs show it. */
interface EntryName {
  /** `/proc/self/fd/<folder fd>/<name>`, or the volume's own path for the root. */
  name: string;
  shown: string;
}

interface OpenEntry extends EntryName {
  fh: FileHandle;
  mode: number;
  isDir: boolean;
  isSymlink: boolean;
}

function fdPath(fh: FileHandle): string {
  return `/proc/self/fd/${fh.fd}`;
}

async function changeFilePermission(entry: OpenEntry, fsGroup: number, readOnly: boolean): Promise<void> {
  try {
    // The link itself, by its name in a folder we hold open: a swap there stays inside the volume.
    if (entry.isSymlink) await lchown(entry.name, -1, fsGroup);
    else await chown(fdPath(entry.fh), -1, fsGroup);
  } catch (err) {
    log.error('Lchown failed', { path: entry.shown, err: errorMessage(err) });
  }
  if (entry.isSymlink) return;
  let mask = readOnly ? RO_MASK : RW_MASK;
  if (entry.isDir) mask |= S_ISGID | EXEC_MASK;
  try {
    // The magic link leads to the very inode opened, whatever its name points to by now.
    await chmod(fdPath(entry.fh), (entry.mode & 0o7777) | mask);
  } catch (err) {
    log.error('chmod failed', { path: entry.shown, err: errorMessage(err) });
  }
}

/**
 * Children first, then the folder itself, as upstream's walkDeep; the type is read from the open
 * descriptor, so a folder swapped for a link after it was listed is never entered.
 */
async function walkDeep(at: EntryName, fn: (entry: OpenEntry) => Promise<void>): Promise<void> {
  const fh = await open(at.name, O_PATH | constants.O_NOFOLLOW);
  try {
    const st = await fh.stat();
    const entry = { ...at, fh, mode: st.mode, isDir: st.isDirectory(), isSymlink: st.isSymbolicLink() };
    if (entry.isDir) {
      for (const child of await readdir(fdPath(fh)))
        await walkDeep({ name: path.join(fdPath(fh), child), shown: path.join(at.shown, child) }, fn);
    }
    await fn(entry);
  } finally {
    await fh.close();
  }
}

/** OnRootMismatch: a change is needed unless the root has the group, the bits and setgid already. */
async function requiresPermissionChange(
  rootDir: string,
  fsGroup: number,
  readOnly: boolean,
): Promise<boolean> {
  let st;
  try {
    st = await stat(rootDir);
  } catch (err) {
    log.error(
      'Performing recursive ownership change on rootDir because reading permissions of root volume failed',
      {
        path: rootDir,
        err: errorMessage(err),
      },
    );
    return true;
  }
  if (st.gid !== fsGroup) return true;
  if (!st.isDirectory()) return true;
  const want = (readOnly ? RO_MASK : RW_MASK) | EXEC_MASK;
  return (st.mode & want) !== want || (st.mode & S_ISGID) === 0;
}

/**
 * The user every container of the pod runs as, when they all name the same one; undefined when any
 * does not say (upstream: FsUserFrom, init and regular containers).
 */
export function fsUserFrom(pod: Pod): number | undefined {
  let fsUser: number | undefined;
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    const runAsUser = c.securityContext?.runAsUser ?? pod.spec.securityContext?.runAsUser;
    if (runAsUser === undefined) return undefined;
    if (fsUser !== undefined && fsUser !== runAsUser) return undefined;
    fsUser = runAsUser;
  }
  return fsUser;
}
