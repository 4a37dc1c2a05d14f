/**
 * subPath mounts without the symlink escapes of CVE-2017-1002101 and CVE-2021-25741 (upstream:
 * pkg/volume/util/subpath/subpath_linux.go). A container can put symlinks in its volume; if the
 * runtime were handed `<volume>/<subPath>` it would follow them to anywhere on the host, and a
 * container could swap a checked path for a symlink between the check and the mount. So:
 *
 * 1. resolve the path once and refuse it unless it stays within the volume;
 * 2. open it one element at a time from the volume's root, each with O_NOFOLLOW, so no symlink is
 *    followed even if one appears after step 1;
 * 3. bind-mount the opened file (`/proc/<kubelet pid>/fd/<fd>`, which nobody else can change) onto a
 *    kubelet-owned target under `volume-subpaths/`, and hand the runtime that target.
 *
 * Node has no openat(2): opening `/proc/self/fd/<dirfd>/<name>` is the same call, since the magic
 * link resolves to the open folder and <name> is a single element.
 */
import { constants, type Dirent } from 'node:fs';
import {
  chmod,
  lstat,
  mkdir,
  open,
  readdir,
  realpath,
  rmdir,
  stat,
  unlink,
  writeFile,
  type FileHandle,
} from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { isMountPoint, isWithin, type Mounter } from './mounter.js';

const log = logger('volume');

/** Linux's O_PATH: a handle to a file without opening it for reading (no blocking on FIFOs, no device side effects). */
const O_PATH = 0o10000000;
const NOFOLLOW_FLAGS = O_PATH | constants.O_NOFOLLOW;

export interface Subpath {
  /** The index of the mount in the container's volumeMounts. */
  volumeMountIndex: number;
  /** `<volume path>/<subPath>`, as asked for. */
  path: string;
  volumeName: string;
  volumePath: string;
  podDir: string;
  containerName: string;
}

function fdPath(fh: FileHandle): string {
  return `/proc/self/fd/${fh.fd}`;
}

/**
 * Opens pathname (absolute, under base) with no symlink followed on the way from base; the caller
 * closes the handle. base itself must already be free of symlinks (resolved by the caller).
 */
export async function safeOpen(pathname: string, base: string): Promise<FileHandle> {
  if (!isWithin(pathname, base)) throw new Error(`path ${pathname} is outside of allowed base ${base}`);
  const segments = path
    .relative(base, pathname)
    .split(path.sep)
    .filter((s) => s !== '' && s !== '.');
  let parent = await open(base, NOFOLLOW_FLAGS);
  let current = base;
  try {
    await rejectSymlink(parent, base);
    for (const seg of segments) {
      current = path.join(current, seg);
      if (!isWithin(current, base)) throw new Error(`path ${current} is outside of allowed base ${base}`);
      log.v(5, 'Opening path', { path: current });
      let child: FileHandle;
      try {
        child = await open(path.join(fdPath(parent), seg), NOFOLLOW_FLAGS);
      } catch (err) {
        throw new Error(`cannot open ${current}: ${errorMessage(err)}`);
      }
      await parent.close();
      parent = child;
      await rejectSymlink(parent, current);
    }
    return parent;
  } catch (err) {
    await parent.close().catch(() => undefined);
    throw err;
  }
}

/** O_PATH|O_NOFOLLOW opens a symlink itself rather than failing: the type tells. */
async function rejectSymlink(fh: FileHandle, p: string): Promise<void> {
  let st;
  try {
    st = await fh.stat();
  } catch (err) {
    throw new Error(`error running fstat on ${p} with ${errorMessage(err)}`);
  }
  if (st.isSymbolicLink()) throw new Error(`unexpected symlink found ${p}`);
}

/**
 * Makes `<base>/<subPath>` and any missing parents, each created and entered without following a
 * symlink, each given mode (the volume's own, so a subPath folder is as usable as the volume).
 */
export async function safeMakeDir(subPath: string, base: string, mode: number): Promise<void> {
  const pathname = path.join(base, subPath);
  if (!isWithin(pathname, base)) throw new Error(`path ${pathname} is outside of allowed base ${base}`);
  try {
    const st = await stat(pathname);
    if (st.isDirectory()) return;
    throw Object.assign(new Error(`mkdir ${pathname}: not a directory`), { code: 'ENOTDIR' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const { existing, toCreate } = await findExistingPrefix(base, pathname);
  const fullExisting = await realpath(existing);
  if (!isWithin(fullExisting, base))
    throw new Error(`path ${fullExisting} is outside of allowed base ${base}`);
  let parent = await safeOpen(fullExisting, base);
  let current = fullExisting;
  try {
    for (const dir of toCreate) {
      current = path.join(current, dir);
      try {
        await mkdir(path.join(fdPath(parent), dir), { mode });
      } catch (err) {
        throw new Error(`cannot create directory ${current}: ${errorMessage(err)}`);
      }
      const child = await open(path.join(fdPath(parent), dir), NOFOLLOW_FLAGS);
      await parent.close();
      parent = child;
      // A folder swapped for a symlink after mkdir is refused; one swapped for a file gets mounted as
      // that file, which the container could read anyway.
      await rejectSymlink(parent, current);
      // mkdir's mode went through the umask; the magic link chmods the folder we hold, not a name.
      await chmod(fdPath(parent), mode);
    }
  } finally {
    await parent.close().catch(() => undefined);
  }
}

/** The longest existing prefix of pathname under base (by lstat, symlinks included), and the rest. */
async function findExistingPrefix(
  base: string,
  pathname: string,
): Promise<{ existing: string; toCreate: string[] }> {
  const segments = path
    .relative(base, pathname)
    .split(path.sep)
    .filter((s) => s !== '');
  let current = base;
  for (let i = 0; i < segments.length; i++) {
    const next = path.join(current, segments[i] ?? '');
    try {
      await lstat(next);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        return { existing: current, toCreate: segments.slice(i) };
      throw err;
    }
    current = next;
  }
  return { existing: current, toCreate: [] };
}

/**
 * Bind-mounts the subPath onto its kubelet-owned target and returns that target, the path to give
 * the runtime (upstream: PrepareSafeSubpath / doBindSubPath). A target already holding the same
 * file is reused, so a restarted container gets the same mount.
 */
export async function prepareSafeSubpath(
  mounter: Mounter,
  subpath: Subpath,
  bindTarget: string,
): Promise<string> {
  let volumePath: string;
  let resolved: string;
  try {
    volumePath = await realpath(subpath.volumePath);
  } catch (err) {
    throw new Error(`error resolving symlinks in "${subpath.volumePath}": ${errorMessage(err)}`);
  }
  try {
    resolved = await realpath(subpath.path);
  } catch (err) {
    throw new Error(`error resolving symlinks in "${subpath.path}": ${errorMessage(err)}`);
  }
  if (!isWithin(resolved, volumePath)) {
    throw new Error(`subpath "${resolved}" not within volume path "${volumePath}"`);
  }
  let fh: FileHandle;
  try {
    fh = await safeOpen(resolved, volumePath);
  } catch (err) {
    throw new Error(`error opening subpath ${resolved}: ${errorMessage(err)}`);
  }
  try {
    let mounted: boolean;
    try {
      mounted = await isMountPoint(mounter, bindTarget);
    } catch (err) {
      // Taking "unknown" for "not mounted" would stack a second bind mount on a live one.
      throw new Error(`error checking path ${bindTarget} for mount: ${errorMessage(err)}`);
    }
    if (mounted) {
      if (await sameFile(fh, bindTarget)) {
        log.v(5, 'Skipping bind-mounting subpath: already mounted', { target: bindTarget });
        return bindTarget;
      }
      await mounter.unmount(bindTarget);
    }
    await mkdir(path.dirname(bindTarget), { recursive: true, mode: 0o750 });
    const st = await fh.stat();
    if (st.isDirectory()) {
      await mkdir(bindTarget, { mode: 0o750 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
    } else {
      // A file is a fine target for anything that is not a folder (file, device, socket, FIFO).
      await writeFile(bindTarget, '', { mode: 0o640, flag: 'a' });
    }
    const source = `/proc/${process.pid}/fd/${fh.fd}`;
    log.v(5, 'Bind mounting subpath', { source, target: bindTarget });
    try {
      // --no-canonicalize: mount(8) must not resolve the magic link back into a path a container could race.
      await mounter.mount(source, bindTarget, '', ['bind'], ['--no-canonicalize']);
    } catch (err) {
      await removeTarget(bindTarget).catch(() => undefined);
      throw new Error(`error mounting ${resolved}: ${errorMessage(err)}`);
    }
    log.v(3, 'Bound SubPath', { subPath: resolved, target: bindTarget });
    return bindTarget;
  } finally {
    await fh.close().catch(() => undefined);
  }
}

async function sameFile(fh: FileHandle, p: string): Promise<boolean> {
  const [a, b] = await Promise.all([fh.stat(), lstat(p)]);
  return a.dev === b.dev && a.ino === b.ino;
}

async function removeTarget(p: string): Promise<void> {
  const st = await lstat(p);
  if (st.isDirectory()) await rmdir(p);
  else await unlink(p);
}

/**
 * Unmounts and removes every subPath target of one volume of a pod (upstream: CleanSubPaths), before
 * the volume itself is torn down. A target that will not unmount, or a folder that will not go, stops
 * the cleanup with an error naming it (the caller reports it and tries again later).
 */
export async function cleanSubPaths(
  mounter: Mounter,
  subpathsDir: string,
  volumeName: string,
): Promise<void> {
  const volDir = path.join(subpathsDir, volumeName);
  let containers: Dirent[];
  try {
    containers = await readdir(volDir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new Error(`error reading ${volDir}: ${errorMessage(err)}`);
  }
  const table = await mounter.list();
  for (const c of containers) {
    if (!c.isDirectory()) {
      log.v(4, 'Container file is not a directory', { path: path.join(volDir, c.name) });
      continue;
    }
    const containerDir = path.join(volDir, c.name);
    let indexes: string[];
    try {
      indexes = await readdir(containerDir);
    } catch (err) {
      throw new Error(`error reading ${containerDir}: ${errorMessage(err)}`);
    }
    for (const index of indexes) {
      const target = path.join(containerDir, index);
      // Mounts may be stacked on one target (a retried bind): peel them all.
      for (let mounted = await isMountPoint(mounter, target, table); mounted;) {
        log.v(4, 'Unmounting subpath', { target });
        await mounter.unmount(target);
        mounted = await isMountPoint(mounter, target);
      }
      await removeTarget(target).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw new Error(`error deleting ${target}: ${errorMessage(err)}`);
      });
    }
    await removeFolder(containerDir);
  }
  await removeFolder(volDir);
}

async function removeFolder(dir: string): Promise<void> {
  try {
    await rmdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new Error(`error deleting ${dir}: ${errorMessage(err)}`);
  }
}

/**
 * Cleans the subPath targets of every volume of a pod (under `volume-subpaths`); returns what failed,
 * each failure also logged, so the caller reports it (an event) and leaves the volumes mounted.
 */
export async function cleanPodSubPaths(
  mounter: Mounter,
  subpathsDir: string,
  podUid: string,
): Promise<string[]> {
  let volumes: string[];
  try {
    volumes = await readdir(subpathsDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    log.error('Failed to read the subPath folder', {
      podUID: podUid,
      path: subpathsDir,
      err: errorMessage(err),
    });
    return [`UnmountVolume.TearDown failed for subPaths in ${subpathsDir} : ${errorMessage(err)}`];
  }
  const errors: string[] = [];
  for (const name of volumes) {
    try {
      await cleanSubPaths(mounter, subpathsDir, name);
    } catch (err) {
      log.error('Failed to clean up subPath mounts of the volume', {
        podUID: podUid,
        volume: name,
        err: errorMessage(err),
      });
      errors.push(`UnmountVolume.TearDown failed for subPaths of volume "${name}" : ${errorMessage(err)}`);
    }
  }
  return errors;
}
