/**
 * --lock-file's flock and --exit-on-lock-contention's watch, against real flock(1) processes: the
 * lock is taken, a holder makes the taker wait (and an abort ends the wait), the lock stays after
 * flock(1) exits, and a process blocked on the lock, or the file's removal, is seen as contention.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { acquireLockFile, hasLockWaiter, watchForLockContention } from '../../../src/cmd/lock-file.js';
import { loadKubeletConfig } from '../../../src/cmd/load-kubelet-config.js';
import { realClock } from '../../../src/lib/clock.js';

let dir: string;
const children: ChildProcess[] = [];
before(() => (dir = mkdtempSync(join(tmpdir(), 'lock-file-'))));
after(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/**
 * `flock <args> <file> <cmd...>`, resolving once it has the lock (its command printed a line). Without a
 * fork, so killing the process releases the lock at once instead of when a forked sleep ends.
 */
function flockProcess(file: string, ...args: string[]): ChildProcess {
  const child = spawn('flock', ['--no-fork', ...args, file, 'sh', '-c', 'echo locked; exec sleep 60'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  children.push(child);
  return child;
}
const locked = (c: ChildProcess) => new Promise<void>((r) => c.stdout?.once('data', () => r()));
const exited = (c: ChildProcess) => new Promise<number | null>((r) => c.once('exit', (code) => r(code)));

function waitUntil(what: string, f: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (f()) return resolve();
      if (Date.now() - start > timeoutMs) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 50);
    };
    tick();
  });
}

test('/proc/locks: only a blocked flock (->) on the same device and inode is a waiter', () => {
  const text = [
    '1: FLOCK  ADVISORY  WRITE 100 fe:00:42 0 EOF',
    '1: -> FLOCK  ADVISORY  WRITE 200 fe:00:42 0 EOF',
    '2: POSIX  ADVISORY  WRITE 300 fe:00:43 0 EOF',
    '2: -> POSIX  ADVISORY  WRITE 301 fe:00:43 0 EOF',
  ].join('\n');
  assert.equal(hasLockWaiter(text, { device: 'fe:00', inode: 42n }), true);
  assert.equal(hasLockWaiter(text, { device: 'fe:01', inode: 42n }), false);
  assert.equal(hasLockWaiter(text, { device: 'fe:00', inode: 43n }), false, 'a POSIX lock is not ours');
  assert.equal(hasLockWaiter(text.split('\n')[0]!, { device: 'fe:00', inode: 42n }), false);
});

test('the lock is held after flock(1) exits: another taker cannot get it, and waits', async () => {
  const file = join(dir, 'held.lock');
  const lock = await acquireLockFile(file);
  assert.equal(lock.path, file);
  const other = spawn('flock', ['--exclusive', '--nonblock', file, 'true']);
  assert.equal(await exited(other), 1, 'a non-blocking taker is refused');
  const waiter = flockProcess(file, '--exclusive');
  const read = () => readFile('/proc/locks', 'utf8');
  let seen = false;
  for (let i = 0; i < 40 && !seen; i++) {
    seen = hasLockWaiter(await read(), lock);
    if (!seen) await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(seen, 'the blocked taker shows in /proc/locks');
  waiter.kill('SIGKILL');
});

test('a lock held elsewhere: onWait is told, the taker waits, and gets it once released; an abort ends a wait', async () => {
  const file = join(dir, 'wait.lock');
  const holder = flockProcess(file, '--exclusive');
  await locked(holder);
  let waited = 0;
  let got = false;
  const taking = acquireLockFile(file, { onWait: () => waited++ }).then((l) => {
    got = true;
    return l;
  });
  await waitUntil('onWait', () => waited === 1);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(got, false, 'still waiting while held');
  holder.kill('SIGKILL');
  await taking;
  assert.equal(waited, 1);

  const file2 = join(dir, 'abort.lock');
  const holder2 = flockProcess(file2, '--exclusive');
  await locked(holder2);
  const abort = new AbortController();
  const aborted = acquireLockFile(file2, { signal: abort.signal });
  await new Promise((r) => setTimeout(r, 200));
  abort.abort(new Error('stopping'));
  await assert.rejects(aborted);
  holder2.kill('SIGKILL');
});

test('contention: a process that blocks on the lock, or the file removed, calls back once', async () => {
  const file = join(dir, 'contention.lock');
  const lock = await acquireLockFile(file);
  const reasons: string[] = [];
  const stop = watchForLockContention(lock, realClock, (r) => reasons.push(r));
  await new Promise((r) => setTimeout(r, 1500));
  assert.deepEqual(reasons, [], 'nothing while nobody wants it');
  const contender = flockProcess(file, '--exclusive');
  await waitUntil('contention', () => reasons.length > 0);
  assert.deepEqual(reasons, ['another process is waiting for the lock']);
  stop();
  contender.kill('SIGKILL');

  const file2 = join(dir, 'removed.lock');
  const lock2 = await acquireLockFile(file2);
  const reasons2: string[] = [];
  const stop2 = watchForLockContention(lock2, realClock, (r) => reasons2.push(r));
  unlinkSync(file2);
  await waitUntil('removal', () => reasons2.length > 0);
  assert.deepEqual(reasons2, ['the lock file was removed or replaced']);
  stop2();
});

test('--exit-on-lock-contention without --lock-file is refused at start, in upstream words', async () => {
  await assert.rejects(loadKubeletConfig(['--exit-on-lock-contention'], { hostname: () => 'n' }), {
    message: 'cannot exit on lock file contention: no lock file specified',
  });
});
