/**
 * The file system calls the cgroup code makes, behind a small interface: the real one calls the
 * kernel synchronously, and tests give a temp folder that behaves like cgroupfs (see
 * testing/temp-cgroup-fs.ts).
 */
import { constants } from 'node:fs';
import { memoryFileCalls, type FileCalls } from '../lib/memory-fs.js';

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

export function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
    ? err.code
    : undefined;
}

// O_TRUNC is a no-op on cgroupfs but makes a plain folder (the tests') hold exactly what was written.
const WRITE_FLAGS = constants.O_WRONLY | constants.O_TRUNC;

/**
 * cgroupfs is memory-backed: its calls are made synchronously (lib/memory-fs.ts says why, and what a
 * stuck call then costs). A pod start makes about thirty of them on cgroup v1.
 */
export function realCgroupFs(files: FileCalls = memoryFileCalls): CgroupFs {
  return {
    readFile: (file) => files.readText(file),
    writeFile: (file, data) => files.writeInto(file, data, WRITE_FLAGS),
    mkdir: (dir) =>
      files.mkdir(dir, { mode: 0o755 }).then(
        () => true,
        (err: unknown) => {
          if (errnoCode(err) === 'EEXIST') return false;
          throw err;
        },
      ),
    rmdir: (dir) => files.rmdir(dir),
    readdir: async (dir) =>
      (await files.readdir(dir)).map((e) => ({
        name: e.name,
        isDirectoryOrLink: e.isDirectory() || e.isSymbolicLink(),
      })),
    exists: (p) =>
      files.stat(p).then(
        () => true,
        (err: unknown) => {
          if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return false;
          throw err;
        },
      ),
    realpath: (p) => files.realpath(p),
  };
}
