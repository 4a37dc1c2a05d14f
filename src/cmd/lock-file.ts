/**
 * --lock-file and --exit-on-lock-contention (upstream cmd/kubelet/app/server.go run() with
 * pkg/util/flock): an exclusive flock on the file, held until the process exits, so a second
 * kubelet with the same file waits instead of starting; with --exit-on-lock-contention the holder
 * exits once another process wants the lock, so a new kubelet can take over the node.
 *
 * Node.js has no flock(2): the file is opened here and util-linux's flock(1) locks that open file
 * (passed to it as fd 3). A flock belongs to the open file, not the process that asked for it, so
 * the lock stays with this process's descriptor after flock(1) exits, and goes with it when this
 * process ends, however it ends.
 *
 * Contention: upstream watches the file for inotify open (and delete) events; Node's fs.watch asks
 * inotify for neither. Instead /proc/locks is read every second: a process blocked on this file's
 * lock is listed there (`->`), which is what a contending kubelet does once its open is done. A
 * removed or replaced lock file counts as contention too, as upstream's IN_DELETE_SELF.
 */
import { spawn } from 'node:child_process';
import { constants, openSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('kubelet');

/** How often /proc/locks is read for a process waiting on the lock. */
export const LOCK_CONTENTION_POLL_MS = 1000;

export interface HeldLock {
  readonly path: string;
  /** The file's device (as /proc/locks prints it, `major:minor` in hex) and inode. */
  readonly device: string;
  readonly inode: bigint;
}

/**
 * Takes the exclusive lock, waiting while another process holds it (as upstream's flock.Acquire).
 * `onWait` is told once when the lock is held elsewhere; an abort of `signal` ends the wait.
 */
export async function acquireLockFile(
  path: string,
  opts: { signal?: AbortSignal; onWait?: () => void; flockBinary?: string } = {},
): Promise<HeldLock> {
  // Kept open for the life of the process: closing it would release the lock.
  const fd = openSync(path, constants.O_CREAT | constants.O_RDWR, 0o600);
  const flock = opts.flockBinary ?? 'flock';
  if (!(await runFlock(flock, fd, ['--exclusive', '--nonblock'], opts.signal))) {
    opts.onWait?.();
    await runFlock(flock, fd, ['--exclusive'], opts.signal);
  }
  const st = statSync(path, { bigint: true });
  return { path, device: deviceText(st.dev), inode: st.ino };
}

/** true once locked, false when --nonblock found it held; rejects on anything else. */
function runFlock(
  flock: string,
  fd: number,
  args: string[],
  signal: AbortSignal | undefined,
): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn(flock, [...args, '3'], { stdio: ['ignore', 'ignore', 'pipe', fd], signal });
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      if (stderr.length < 4096) stderr += b.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(true);
      else if (code === 1 && args.includes('--nonblock')) resolve(false);
      else reject(new Error(`${flock} ${args.join(' ')} failed (exit ${code}): ${stderr.trim()}`));
    });
  });
}

/** /proc/locks's `%02x:%02x` of a dev_t (glibc's major/minor split). */
function deviceText(dev: bigint): string {
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  return `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}`;
}

/** Whether /proc/locks lists a process blocked on a flock of this file (a `->` line). */
export function hasLockWaiter(procLocks: string, lock: Pick<HeldLock, 'device' | 'inode'>): boolean {
  const file = `${lock.device}:${lock.inode}`;
  return procLocks.split('\n').some((line) => {
    const fields = line.trim().split(/\s+/);
    return fields[1] === '->' && fields[2] === 'FLOCK' && fields[6] === file;
  });
}

/**
 * Calls onContention once when a process waits for the lock or the file is removed or replaced;
 * returns a stop function. Reads of /proc/locks that fail are logged and retried.
 */
export function watchForLockContention(
  lock: HeldLock,
  clock: Clock,
  onContention: (reason: string) => void,
  readProcLocks: () => Promise<string> = () => readFile('/proc/locks', 'utf8'),
): () => void {
  let stopped = false;
  let timer: ReturnType<Clock['setTimeout']> | undefined;
  const check = async (): Promise<string | undefined> => {
    const st = await stat(lock.path, { bigint: true }).catch(() => undefined);
    if (!st || st.ino !== lock.inode) return 'the lock file was removed or replaced';
    if (hasLockWaiter(await readProcLocks(), lock)) return 'another process is waiting for the lock';
    return undefined;
  };
  const tick = () => {
    check().then(
      (reason) => {
        if (stopped) return;
        if (reason !== undefined) {
          stopped = true;
          onContention(reason);
          return;
        }
        timer = clock.setTimeout(tick, LOCK_CONTENTION_POLL_MS);
      },
      (err: unknown) => {
        if (stopped) return;
        log.error('Unable to watch lockfile', { path: lock.path, err: errorMessage(err) });
        timer = clock.setTimeout(tick, LOCK_CONTENTION_POLL_MS);
      },
    );
  };
  timer = clock.setTimeout(tick, LOCK_CONTENTION_POLL_MS);
  return () => {
    stopped = true;
    if (timer) clock.clearTimeout(timer);
  };
}
