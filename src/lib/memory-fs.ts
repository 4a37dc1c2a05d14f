/**
 * File calls for memory-backed file systems (cgroupfs, tmpfs, procfs, sysfs), made synchronously.
 *
 * Why: there a call never waits on a disk and the kernel answers in a few µs, while the same call
 * through fs/promises costs the process 15–130 µs of CPU (a promise, a libuv pool thread woken, the
 * completion back on the main thread; bench/pod-file-work.ts). A pod start makes dozens of them.
 *
 * What is given up: a deadline. A synchronous call cannot be abandoned; one that hangs in the kernel
 * (a cgroup_mutex held by a stuck removal) stops the event loop, where an asynchronous one would take
 * a pool thread, and the pool's four threads, which every file call of the process shares, soon
 * after. A call that held the loop longer than SLOW_CALL_MS is logged with its name once it returns.
 *
 * Files on disks (the pods' folders, logs) stay on fs/promises: a call there may wait on I/O.
 * `promiseFileCalls` has the same shape, for code that works on either kind.
 */
import {
  chmodSync,
  chownSync,
  closeSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
  type Dirent,
  type Stats,
} from 'node:fs';
import * as fsp from 'node:fs/promises';
import { monotonicMs } from './clock.js';
import { logger } from './log.js';
import { readSmallFileSync, readSmallTextFile } from './read-small-file.js';

const log = logger('memory_fs');

/** A call on a memory file system that takes this long held every other piece of work back. */
export const SLOW_CALL_MS = 100;

/** The calls the kubelet makes on either kind of file system, with fs/promises' meaning and errors. */
export interface FileCalls {
  stat(p: string): Promise<Stats>;
  lstat(p: string): Promise<Stats>;
  readlink(p: string): Promise<string>;
  realpath(p: string): Promise<string>;
  readdir(p: string): Promise<Dirent[]>;
  readFile(p: string): Promise<Buffer>;
  /** A small file whose size stat may not know (cgroupfs, procfs), as text (read-small-file.ts). */
  readText(p: string): Promise<string>;
  /** Creates or replaces the file; mode (masked by the umask) when it is created. */
  writeFile(p: string, data: Buffer | string, opts: { mode: number }): Promise<void>;
  /**
   * Writes data into the existing file with flags (O_WRONLY|O_TRUNC for a cgroup's files: never
   * created by writing) in one write; a short write fails.
   */
  writeInto(p: string, data: string, flags: number): Promise<void>;
  mkdir(p: string, opts: { mode: number; recursive?: boolean }): Promise<void>;
  chmod(p: string, mode: number): Promise<void>;
  chown(p: string, uid: number, gid: number): Promise<void>;
  symlink(target: string, p: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(p: string): Promise<void>;
  rmdir(p: string): Promise<void>;
  rm(p: string, opts: { recursive?: boolean; force?: boolean }): Promise<void>;
}

function shortWrite(p: string, written: number, data: string): Error {
  return new Error(`short write to ${p}: ${written} of ${Buffer.byteLength(data)} bytes`);
}

function writeIntoSync(p: string, data: string, flags: number): void {
  const fd = openSync(p, flags);
  let written = 0;
  let failure: unknown;
  try {
    written = writeSync(fd, data);
  } catch (err) {
    failure = err;
  }
  try {
    closeSync(fd);
  } catch (err) {
    // The write's own error says more than the close's.
    failure ??= err;
  }
  if (failure !== undefined) throw failure;
  if (written !== Buffer.byteLength(data)) throw shortWrite(p, written, data);
}

/**
 * Synchronous calls in fs/promises' shape: each resolves or rejects once the system call has
 * returned. One that held the event loop for slowCallMs or more is logged.
 */
export function createMemoryFileCalls(opts: { slowCallMs?: number } = {}): FileCalls {
  const slowCallMs = opts.slowCallMs ?? SLOW_CALL_MS;
  const timed = <T>(call: string, p: string, fn: () => T): T => {
    const startMs = monotonicMs();
    try {
      return fn();
    } finally {
      const ms = monotonicMs() - startMs;
      if (ms >= slowCallMs)
        log.warn('A call on a memory-backed file system held the event loop', {
          call,
          path: p,
          ms: Math.round(ms),
        });
    }
  };
  return {
    stat: async (p) => timed('stat', p, () => statSync(p)),
    lstat: async (p) => timed('lstat', p, () => lstatSync(p)),
    readlink: async (p) => timed('readlink', p, () => readlinkSync(p)),
    realpath: async (p) => timed('realpath', p, () => realpathSync.native(p)),
    readdir: async (p) => timed('readdir', p, () => readdirSync(p, { withFileTypes: true })),
    readFile: async (p) => timed('readFile', p, () => readFileSync(p)),
    readText: async (p) => timed('read', p, () => readSmallFileSync(p).toString('utf8')),
    writeFile: async (p, data, o) => timed('writeFile', p, () => writeFileSync(p, data, o)),
    writeInto: async (p, data, flags) => timed('write', p, () => writeIntoSync(p, data, flags)),
    mkdir: async (p, o) => void timed('mkdir', p, () => mkdirSync(p, o)),
    chmod: async (p, mode) => timed('chmod', p, () => chmodSync(p, mode)),
    chown: async (p, uid, gid) => timed('chown', p, () => chownSync(p, uid, gid)),
    symlink: async (target, p) => timed('symlink', p, () => symlinkSync(target, p)),
    rename: async (from, to) => timed('rename', to, () => renameSync(from, to)),
    unlink: async (p) => timed('unlink', p, () => unlinkSync(p)),
    rmdir: async (p) => timed('rmdir', p, () => rmdirSync(p)),
    rm: async (p, o) => timed('rm', p, () => rmSync(p, o)),
  };
}

export const memoryFileCalls: FileCalls = createMemoryFileCalls();

/** fs/promises itself, for files on disks. */
export const promiseFileCalls: FileCalls = {
  stat: (p) => fsp.stat(p),
  lstat: (p) => fsp.lstat(p),
  readlink: (p) => fsp.readlink(p),
  realpath: (p) => fsp.realpath(p),
  readdir: (p) => fsp.readdir(p, { withFileTypes: true }),
  readFile: (p) => fsp.readFile(p),
  readText: (p) => readSmallTextFile(p),
  writeFile: (p, data, opts) => fsp.writeFile(p, data, opts),
  writeInto: async (p, data, flags) => {
    const fh = await fsp.open(p, flags);
    let written = 0;
    let failure: unknown;
    try {
      ({ bytesWritten: written } = await fh.write(data));
    } catch (err) {
      failure = err;
    }
    await fh.close().catch((err: unknown) => {
      failure ??= err;
    });
    if (failure !== undefined) throw failure;
    if (written !== Buffer.byteLength(data)) throw shortWrite(p, written, data);
  },
  mkdir: async (p, opts) => void (await fsp.mkdir(p, opts)),
  chmod: (p, mode) => fsp.chmod(p, mode),
  chown: (p, uid, gid) => fsp.chown(p, uid, gid),
  symlink: (target, p) => fsp.symlink(target, p),
  rename: (from, to) => fsp.rename(from, to),
  unlink: (p) => fsp.unlink(p),
  rmdir: (p) => fsp.rmdir(p),
  rm: (p, opts) => fsp.rm(p, opts),
};
