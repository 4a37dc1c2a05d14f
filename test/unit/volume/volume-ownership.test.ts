/**
 * The fsGroup walk: a container that shares a writable volume can swap a file or a
 * folder for a symlink while the kubelet walks it. Whatever it swaps, and whenever, nothing outside
 * the volume changes owner or mode. The swap is made deterministic by doing it just before the walk
 * first acts on the name (opens, lists, chowns or chmods it), after it has learned what the name was.
 */
import assert from 'node:assert/strict';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  chownSync,
  chmodSync,
} from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, test } from 'node:test';
import { setVolumeOwnership } from '../../../src/volume/volume-ownership.js';

const isRoot = process.getuid?.() === 0;
const dir = mkdtempSync(join(tmpdir(), 'volume-ownership-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const FS_GROUP = 4321;
const ACTING = ['open', 'opendir', 'readdir', 'chmod', 'chown', 'lchown'] as const;

/** Runs fn with fs/promises calls on a name in swaps doing that swap first, once per name. */
async function withSwapsBeforeActing(
  swaps: Map<string, () => void>,
  fn: () => Promise<void>,
): Promise<string[]> {
  const fsp = createRequire(import.meta.url)('node:fs/promises') as Record<string, unknown>;
  const originals = new Map<string, unknown>();
  const done: string[] = [];
  for (const name of ACTING) {
    const original = fsp[name] as (...args: unknown[]) => unknown;
    originals.set(name, original);
    fsp[name] = (...args: unknown[]) => {
      const p = args[0];
      const swap = typeof p === 'string' ? swaps.get(basename(p)) : undefined;
      if (swap && !done.includes(basename(p as string))) {
        done.push(basename(p as string));
        swap();
      }
      return original.apply(fsp, args);
    };
  }
  syncBuiltinESMExports();
  try {
    await fn();
  } finally {
    for (const [name, original] of originals) fsp[name] = original;
    syncBuiltinESMExports();
  }
  return done;
}

test(
  'a symlink swapped into an fsGroup walk changes nothing outside the volume',
  { skip: isRoot ? false : 'needs root: chown to another group' },
  async () => {
    const outside = join(dir, 'outside');
    mkdirSync(join(outside, 'dir'), { recursive: true });
    const secret = join(outside, 'secret');
    writeFileSync(secret, 'key', { mode: 0o600 });
    writeFileSync(join(outside, 'dir', 'inner'), 'key', { mode: 0o600 });
    for (const p of [outside, join(outside, 'dir'), secret, join(outside, 'dir', 'inner')])
      chownSync(p, 0, 0);
    chmodSync(join(outside, 'dir'), 0o700);
    chmodSync(secret, 0o600);

    const vol = join(dir, 'vol');
    mkdirSync(join(vol, 'd'), { recursive: true });
    writeFileSync(join(vol, 'd', 'f'), 'data', { mode: 0o600 });
    writeFileSync(join(vol, 'x'), 'data', { mode: 0o600 });
    writeFileSync(join(vol, 'y'), 'data', { mode: 0o600 });
    const swaps = new Map<string, () => void>([
      [
        'x',
        () => {
          // rename(2) over the name: the swap is atomic, as a container would make it.
          symlinkSync(secret, join(vol, '.x-link'));
          renameSync(join(vol, '.x-link'), join(vol, 'x'));
        },
      ],
      [
        'd',
        () => {
          renameSync(join(vol, 'd'), join(dir, 'd-moved'));
          symlinkSync(join(outside, 'dir'), join(vol, 'd'));
        },
      ],
    ]);
    const swapped = await withSwapsBeforeActing(swaps, () =>
      setVolumeOwnership(vol, FS_GROUP, { readOnly: false }),
    );
    assert.deepEqual(swapped.sort(), ['d', 'x'], 'both swaps happened during the walk');

    for (const [p, mode] of [
      [secret, 0o600],
      [join(outside, 'dir'), 0o700],
      [join(outside, 'dir', 'inner'), 0o600],
    ] as const) {
      const st = statSync(p);
      assert.equal(st.gid, 0, `${p} changed group`);
      assert.equal(st.mode & 0o7777, mode, `${p} changed mode`);
    }
    // The volume itself got what fsGroup asks, the swapped-in links included (lchown, as upstream).
    assert.equal(statSync(join(vol, 'y')).gid, FS_GROUP);
    assert.equal(statSync(join(vol, 'y')).mode & 0o7777, 0o660);
    assert.equal(statSync(vol).mode & 0o7777, (statSync(vol).mode & 0o777) | 0o2000);
    assert.equal(lstatSync(join(vol, 'x')).gid, FS_GROUP);
    assert.equal(lstatSync(join(vol, 'd')).gid, FS_GROUP);
  },
);

test(
  'the walk as upstream: files get the group and rw (ro) bits, folders also x and setgid; a FIFO does not hold the walk',
  { skip: isRoot ? false : 'needs root: chown to another group' },
  async () => {
    const vol = join(dir, 'plain');
    mkdirSync(join(vol, 'a', 'b'), { recursive: true, mode: 0o700 });
    writeFileSync(join(vol, 'a', 'b', 'f'), 'x', { mode: 0o604 });
    symlinkSync('/etc/hostname', join(vol, 'link'));
    // A FIFO would block an open for reading; the walk must not wait on it.
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', ['-m', '0600', join(vol, 'fifo')]);
    const before = statSync('/etc/hostname');
    await setVolumeOwnership(vol, FS_GROUP, { readOnly: true });
    assert.equal(statSync(join(vol, 'a', 'b', 'f')).mode & 0o7777, 0o644);
    assert.equal(statSync(join(vol, 'a', 'b', 'f')).gid, FS_GROUP);
    assert.equal(statSync(join(vol, 'a', 'b')).mode & 0o7777, 0o2750);
    assert.equal(statSync(join(vol, 'fifo')).mode & 0o7777, 0o640);
    assert.equal(statSync(join(vol, 'fifo')).gid, FS_GROUP);
    assert.equal(lstatSync(join(vol, 'link')).gid, FS_GROUP);
    const afterwards = statSync('/etc/hostname');
    assert.equal(afterwards.mode, before.mode, 'a link is re-owned, never chmod-ed through');
    assert.equal(afterwards.gid, before.gid);
  },
);
