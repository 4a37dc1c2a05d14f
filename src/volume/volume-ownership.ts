/**
 * fsGroup: a volume's files are given the pod's group, and its folders the setgid bit so new files
 * inherit it (upstream: pkg/volume/volume_linux.go SetVolumeOwnership), and the user a projected
 * token is written for (upstream: FsUserFrom).
 */
import { chmod, lchown, lstat, readdir, stat } from 'node:fs/promises';
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
    await walkDeep(dir, (p, isDir, isSymlink, mode) =>
      changeFilePermission(p, fsGroup, opts.readOnly, isDir, isSymlink, mode),
    );
  } finally {
    if (timer) opts.clock?.clearTimeout(timer);
  }
}

async function changeFilePermission(
  p: string,
  fsGroup: number,
  readOnly: boolean,
  isDir: boolean,
  isSymlink: boolean,
  mode: number,
): Promise<void> {
  try {
    await lchown(p, -1, fsGroup);
  } catch (err) {
    log.error('Lchown failed', { path: p, err: errorMessage(err) });
  }
  if (isSymlink) return;
  let mask = readOnly ? RO_MASK : RW_MASK;
  if (isDir) mask |= S_ISGID | EXEC_MASK;
  try {
    await chmod(p, (mode & 0o7777) | mask);
  } catch (err) {
    log.error('chmod failed', { path: p, err: errorMessage(err) });
  }
}

/** Children first, then the folder itself, as upstream's walkDeep. */
async function walkDeep(
  p: string,
  fn: (p: string, isDir: boolean, isSymlink: boolean, mode: number) => Promise<void>,
): Promise<void> {
  const st = await lstat(p);
  if (st.isDirectory()) {
    for (const name of await readdir(p)) await walkDeep(path.join(p, name), fn);
  }
  await fn(p, st.isDirectory(), st.isSymbolicLink(), st.mode);
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
