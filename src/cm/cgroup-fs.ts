/**
 * The file system calls the cgroup code makes, behind a small interface: the real one bounds every
 * call with a deadline, and tests give a temp folder that behaves like cgroupfs (see
 * testing/temp-cgroup-fs.ts).
 */
import { CallWatchdog } from '../lib/call-watchdog.js';
import { close, constants, open, write } from 'node:fs';
import { mkdir, readdir, realpath, rmdir, stat } from 'node:fs/promises';
import { readSmallTextFile } from '../lib/read-small-file.js';

export interface CgroupDirEntry {
  name: string;
  /** A directory, or a symbolic link (v1 mounts like cpu → cpu,cpuacct). */
  isDirectoryOrLink: boolean;
}

export interface CgroupFs {
  readFile(file: string): Promise<string>;
  /** Writes into an existing file: a cgroup's interface files are never created by writing. */
  writeFile(file: string, data: string): Promise<void>;
  /** Creates one directory level; resolves false when it was already there. */
  mkdir(dir: string): Promise<boolean>;
  rmdir(dir: string): Promise<void>;
  readdir(dir: string): Promise<CgroupDirEntry[]>;
  exists(p: string): Promise<boolean>;
  realpath(p: string): Promise<string>;
}

/** Each call on cgroupfs answers in microseconds; one that takes this long is stuck, not slow. */
export const DEFAULT_CGROUP_FS_TIMEOUT_MS = 10_000;

export function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
    ? err.code
    : undefined;
}

// O_TRUNC is a no-op on cgroupfs but makes a plain folder (the tests') hold exactly what was written.
const WRITE_FLAGS = constants.O_WRONLY | constants.O_TRUNC;

export function realCgroupFs(timeoutMs = DEFAULT_CGROUP_FS_TIMEOUT_MS): CgroupFs {
  const watchdog = new CallWatchdog(Math.max(10, Math.min(1000, timeoutMs / 4)));
  const bounded = <T>(p: Promise<T>, ms: number, what: string): Promise<T> => watchdog.bounded(p, ms, what);
  return {
    readFile: (file) => bounded(readSmallTextFile(file), timeoutMs, `read ${file}`),
    writeFile: (file, data) => bounded(writeSmallFile(file, data), timeoutMs, `write ${file}`),
    mkdir: (dir) =>
      bounded(
        mkdir(dir, { mode: 0o755 }).then(
          () => true,
          (err: unknown) => {
            if (errnoCode(err) === 'EEXIST') return false;
            throw err;
          },
        ),
        timeoutMs,
        `mkdir ${dir}`,
      ),
    rmdir: (dir) => bounded(rmdir(dir), timeoutMs, `rmdir ${dir}`),
    readdir: async (dir) => {
      const entries = await bounded(readdir(dir, { withFileTypes: true }), timeoutMs, `readdir ${dir}`);
      return entries.map((e) => ({ name: e.name, isDirectoryOrLink: e.isDirectory() || e.isSymbolicLink() }));
    },
    exists: (p) =>
      bounded(
        stat(p).then(
          () => true,
          (err: unknown) => {
            if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return false;
            throw err;
          },
        ),
        timeoutMs,
        `stat ${p}`,
      ),
    realpath: (p) => bounded(realpath(p), timeoutMs, `realpath ${p}`),
  };
}

/**
 * Open, one write and close with callbacks: the same three calls as fs/promises' writeFile, without
 * its FileHandle and bookkeeping on the main thread (a pod start writes a handful of these). A
 * cgroup file takes a value in one write or refuses it.
 */
function writeSmallFile(file: string, data: string): Promise<void> {
  return new Promise((resolve, reject) => {
    open(file, WRITE_FLAGS, (openErr, fd) => {
      if (openErr) return reject(openErr);
      write(fd, data, (writeErr, written) => {
        close(fd, (closeErr) => {
          if (writeErr ?? closeErr) return reject(writeErr ?? closeErr);
          if (written !== Buffer.byteLength(data))
            return reject(
              new Error(`short write to ${file}: ${written} of ${Buffer.byteLength(data)} bytes`),
            );
          resolve();
        });
      });
    });
  });
}
