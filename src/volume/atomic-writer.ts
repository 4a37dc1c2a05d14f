/**
 * Writes a set of files into a directory so that a reader always sees either the whole old set or
 * the whole new one (upstream: pkg/volume/util/atomic_writer.go). The layout:
 *
 *   <target>/..2024_01_02_03_04_05.1234567890/<files>   one timestamped folder per write
 *   <target>/..data -> ..2024_01_02_03_04_05.1234567890  swapped with rename(2), which is atomic
 *   <target>/<top-level name> -> ..data/<name>       what the user sees
 *
 * A write that changes nothing leaves the folder alone, so a container watching ..data (as
 * configMap reloaders do) is woken only by real changes.
 */
import { randomInt } from 'node:crypto';
import path from 'node:path';
import { realClock, type Clock } from '../lib/clock.js';
import { promiseFileCalls, type FileCalls } from '../lib/memory-fs.js';
import { logger } from '../lib/log.js';

const log = logger('volume');

export const DATA_DIR_NAME = '..data';
const NEW_DATA_DIR_NAME = '..data_tmp';
/** Upstream's limits on a projected path and on each of its elements. */
const MAX_PATH_LENGTH = 4096;
const MAX_FILE_NAME_LENGTH = 255;

/** One file of a volume's payload. */
export interface FileProjection {
  data: Buffer;
  /** Permission bits, 0..0777. */
  mode: number;
  /** The file's owner when set (projected tokens for a pod whose containers all run as one user). */
  fsUser?: number;
}

export type Payload = Map<string, FileProjection>;

/**
 * Checks a payload path as upstream's validatePath does: relative, no `..` element, not starting
 * with `..` (those names are the writer's own), within the length limits.
 */
export function validatePath(targetPath: string): void {
  if (targetPath === '') throw new Error(`invalid path: must not be empty: "${targetPath}"`);
  if (path.posix.isAbsolute(targetPath))
    throw new Error(`invalid path: must be relative path: ${targetPath}`);
  if (targetPath.length > MAX_PATH_LENGTH) {
    throw new Error(`invalid path: must be less than or equal to ${MAX_PATH_LENGTH} characters`);
  }
  const items = targetPath.split('/');
  for (const item of items) {
    if (item === '..') throw new Error(`invalid path: must not contain '..': ${targetPath}`);
    if (item.length > MAX_FILE_NAME_LENGTH) {
      throw new Error(
        `invalid path: filenames must be less than or equal to ${MAX_FILE_NAME_LENGTH} characters`,
      );
    }
  }
  const first = items[0] ?? '';
  if (first.startsWith('..') && first.length > 2) {
    throw new Error(`invalid path: must not start with '..': ${targetPath}`);
  }
}

/** The payload with each path validated and cleaned (`a//b/./c` → `a/b/c`). */
export function validatePayload(payload: Payload): Payload {
  const clean: Payload = new Map();
  for (const [p, file] of payload) {
    validatePath(p);
    clean.set(path.posix.normalize(p).replace(/\/+$/, ''), file);
  }
  return clean;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** `..2006_01_02_15_04_05.`: the prefix of a timestamped folder, in UTC. */
function timestampPrefix(ms: number): string {
  const d = new Date(ms);
  return (
    `..${d.getUTCFullYear()}_${pad(d.getUTCMonth() + 1)}_${pad(d.getUTCDate())}_` +
    `${pad(d.getUTCHours())}_${pad(d.getUTCMinutes())}_${pad(d.getUTCSeconds())}.`
  );
}

/** Go's os.MkdirTemp gives up after this many names that already exist. */
const MKDIR_TEMP_ATTEMPTS = 10_000;

/**
 * Makes `<prefix><n>` with n a random uint32 in decimal, as Go's os.MkdirTemp names it (Node's
 * mkdtemp appends six letters instead, which users' tooling matching upstream's names would miss).
 */
async function mkdirTemp(files: FileCalls, prefix: string): Promise<string> {
  for (let attempt = 0; attempt < MKDIR_TEMP_ATTEMPTS; attempt++) {
    const dir = `${prefix}${randomInt(0, 2 ** 32)}`;
    try {
      await files.mkdir(dir, { mode: 0o700 });
      return dir;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  throw new Error(`mkdirTemp: no free name for ${prefix}* after ${MKDIR_TEMP_ATTEMPTS} attempts`);
}

function isENOENT(err: unknown): boolean {
  return (err as NodeJS.ErrnoException).code === 'ENOENT';
}

export interface AtomicWriterOptions {
  clock?: Clock;
  /**
   * How the writer reaches targetDir: memoryFileCalls when it is a tmpfs (a secret's or a projected
   * token's volume once mounted), fs/promises (the default) on a disk.
   */
  files?: FileCalls;
}

export class AtomicWriter {
  private readonly clock: Clock;
  private readonly files: FileCalls;

  constructor(
    readonly targetDir: string,
    /** Names the volume in logs: `pod ns/name volume x`. */
    readonly logContext: string,
    opts: AtomicWriterOptions = {},
  ) {
    this.clock = opts.clock ?? realClock;
    this.files = opts.files ?? promiseFileCalls;
  }

  /**
   * Writes payload; setPerms (fsGroup ownership) runs on the new folder's name before it becomes
   * visible. Returns whether anything on disk changed. targetIsNew: the caller has just made
   * targetDir (a volume's first setUp); one listing that finds it empty then stands for the looks
   * for an old payload, a `..data_tmp` and each link, which would each find nothing.
   */
  async write(
    payload: Payload,
    setPerms?: (tsDirName: string) => Promise<void>,
    opts: { targetIsNew?: boolean } = {},
  ): Promise<boolean> {
    const clean = validatePayload(payload);
    const files = this.files;
    const empty = opts.targetIsNew === true && (await files.readdir(this.targetDir)).length === 0;
    const dataDirPath = path.join(this.targetDir, DATA_DIR_NAME);

    let oldTsDir = '';
    try {
      if (!empty) oldTsDir = await files.readlink(dataDirPath);
    } catch (err) {
      if (!isENOENT(err)) throw err;
    }
    const oldTsPath = path.join(this.targetDir, oldTsDir);

    let pathsToRemove = new Set<string>();
    let shouldWrite = true;
    if (oldTsDir !== '') {
      pathsToRemove = await this.pathsToRemove(clean, oldTsPath);
      if (!(await shouldWritePayload(files, clean, oldTsPath)) && pathsToRemove.size === 0) {
        log.v(4, 'Write not required for data directory', { context: this.logContext, dir: oldTsDir });
        // Up to date; the user-visible links are still made below, in case one went missing.
        shouldWrite = false;
        oldTsDir = '';
      }
    }

    if (shouldWrite) {
      const tsDir = await mkdirTemp(files, path.join(this.targetDir, timestampPrefix(this.clock.now())));
      await files.chmod(tsDir, 0o755);
      const tsDirName = path.basename(tsDir);
      try {
        await writePayloadToDir(files, clean, tsDir);
        if (setPerms) await setPerms(tsDirName);
        const newDataDirPath = path.join(this.targetDir, NEW_DATA_DIR_NAME);
        // One left by a write that failed half way.
        if (!empty) await files.rm(newDataDirPath, { force: true });
        await files.symlink(tsDirName, newDataDirPath);
        try {
          // rename(2) over the old link is the atomic step.
          await files.rename(newDataDirPath, dataDirPath);
        } catch (err) {
          await files.unlink(newDataDirPath).catch(() => undefined);
          throw err;
        }
      } catch (err) {
        await files.rm(tsDir, { recursive: true, force: true }).catch(() => undefined);
        throw err;
      }
      log.v(4, 'Wrote new data to timestamped data directory', { context: this.logContext, dir: tsDirName });
    }

    await this.createUserVisibleFiles(clean, empty);
    await this.removeUserVisiblePaths(pathsToRemove);
    if (oldTsDir !== '') await files.rm(oldTsPath, { recursive: true, force: true });
    return shouldWrite;
  }

  /** The paths of the old folder that the new payload no longer has (files, and folders left empty). */
  private async pathsToRemove(payload: Payload, oldTsPath: string): Promise<Set<string>> {
    const current = new Set<string>();
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await this.files.readdir(dir);
      } catch (err) {
        if (isENOENT(err)) return;
        throw err;
      }
      for (const e of entries) {
        const r = rel === '' ? e.name : `${rel}/${e.name}`;
        current.add(r);
        if (e.isDirectory()) await walk(path.join(dir, e.name), r);
      }
    };
    await walk(oldTsPath, '');
    const wanted = new Set<string>();
    for (const file of payload.keys()) {
      // Every parent folder of a new file stays too.
      for (let p = file; p !== '' && p !== '.'; p = path.posix.dirname(p)) wanted.add(p);
    }
    return new Set([...current].filter((p) => !wanted.has(p)));
  }

  /** `<name> -> ..data/<name>` for each top-level name of the payload that has none yet. */
  private async createUserVisibleFiles(payload: Payload, noneYet: boolean): Promise<void> {
    const names = new Set([...payload.keys()].map((p) => p.split('/')[0] ?? p));
    for (const name of names) {
      const visible = path.join(this.targetDir, name);
      if (noneYet) {
        await this.files.symlink(path.join(DATA_DIR_NAME, name), visible);
        continue;
      }
      try {
        await this.files.readlink(visible);
      } catch (err) {
        if (!isENOENT(err)) throw err;
        await this.files.symlink(path.join(DATA_DIR_NAME, name), visible);
      }
    }
  }

  /** Only top-level names are links of their own; what lies below goes with the old folder. */
  private async removeUserVisiblePaths(paths: Set<string>): Promise<void> {
    let last: unknown;
    for (const p of paths) {
      if (p.includes('/')) continue;
      try {
        await this.files.unlink(path.join(this.targetDir, p));
      } catch (err) {
        log.error('Error pruning old user-visible path', {
          context: this.logContext,
          path: p,
          err: String(err),
        });
        last = err;
      }
    }
    if (last !== undefined) throw last;
  }
}

/** True when some file's content differs from the old folder's (modes cannot change: the spec is immutable). */
async function shouldWritePayload(files: FileCalls, payload: Payload, oldTsPath: string): Promise<boolean> {
  for (const [p, file] of payload) {
    const full = path.join(oldTsPath, p);
    let onDisk: Buffer;
    try {
      // The read says whether the file is there; an lstat first only for when it says not.
      onDisk = await files.readFile(full);
    } catch (err) {
      if (!isENOENT(err)) throw err;
      // Only a path that is not there at all asks for a write: a dangling link there is an error.
      await files.lstat(full).then(
        () => {
          throw err;
        },
        (lstatErr: unknown) => {
          if (!isENOENT(lstatErr)) throw lstatErr;
        },
      );
      return true;
    }
    if (!onDisk.equals(file.data)) return true;
  }
  return false;
}

async function writePayloadToDir(files: FileCalls, payload: Payload, dir: string): Promise<void> {
  for (const [p, file] of payload) {
    const full = path.join(dir, p);
    // The timestamped folder itself was just made: only a nested path needs its folders.
    const parent = path.dirname(full);
    if (parent !== dir) await files.mkdir(parent, { recursive: true, mode: 0o755 });
    await files.writeFile(full, file.data, { mode: file.mode });
    // The mode given to open(2) is masked by the umask; the spec's mode is what the user asked for.
    await files.chmod(full, file.mode);
    if (file.fsUser !== undefined) await files.chown(full, file.fsUser, -1);
  }
}
