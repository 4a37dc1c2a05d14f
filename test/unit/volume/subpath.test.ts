/**
 * subPath safety against a real temporary folder: symlinks that lead out of a volume (CVE-2017-1002101),
 * and a symlink swapped in after the check (CVE-2021-25741), must never reach the runtime. The bind
 * mount tests need root (mount(2)); they skip themselves without it.
 */
import assert from 'node:assert/strict';
import {
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isMountPoint, SystemMounter } from '../../../src/volume/mounter.js';
import { FakeMounter } from '../../../src/volume/testing/fake-mounter.js';
import { cleanSubPaths, prepareSafeSubpath, safeMakeDir, safeOpen } from '../../../src/volume/subpath.js';

const isRoot = process.getuid?.() === 0;
let tmp = '';
let outside = '';
let vol = '';
let podDir = '';

before(async () => {
  tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'subpath-')));
  outside = path.join(tmp, 'outside');
  vol = path.join(tmp, 'vol');
  podDir = path.join(tmp, 'pod');
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret'), 'host secret');
  await mkdir(path.join(vol, 'real/deeper'), { recursive: true });
  await writeFile(path.join(vol, 'real/file'), 'in volume');
  await symlink(outside, path.join(vol, 'escape-abs'));
  await symlink('../outside', path.join(vol, 'escape-rel'));
  await symlink('real', path.join(vol, 'inside-link'));
  await mkdir(podDir);
});

after(async () => {
  if (isRoot) {
    // Never leave a test's bind mount behind.
    const m = new SystemMounter();
    for (const mi of (await m.list()).reverse())
      if (mi.mountPoint.startsWith(tmp)) await m.unmount(mi.mountPoint);
  }
  await rm(tmp, { recursive: true, force: true });
});

describe('safeOpen', () => {
  test('opens a path under the base one element at a time', async () => {
    const fh = await safeOpen(path.join(vol, 'real/file'), vol);
    assert.ok((await fh.stat()).isFile());
    await fh.close();
  });

  test('refuses a symlink anywhere on the way, even one that stays inside', async () => {
    await assert.rejects(
      safeOpen(path.join(vol, 'escape-abs/secret'), vol),
      /unexpected symlink found .*escape-abs/,
    );
    await assert.rejects(
      safeOpen(path.join(vol, 'escape-rel'), vol),
      /unexpected symlink found .*escape-rel/,
    );
    await assert.rejects(safeOpen(path.join(vol, 'inside-link/file'), vol), /unexpected symlink found/);
  });

  test('refuses a path outside the base', async () => {
    await assert.rejects(safeOpen(path.join(outside, 'secret'), vol), /is outside of allowed base/);
    await assert.rejects(safeOpen(path.join(vol, '../outside/secret'), vol), /is outside of allowed base/);
  });
});

describe('safeMakeDir', () => {
  test('makes missing folders with the given mode, whatever the umask', async () => {
    await safeMakeDir('made/a/b', vol, 0o777);
    for (const p of ['made', 'made/a', 'made/a/b']) {
      const st = await stat(path.join(vol, p));
      assert.ok(st.isDirectory());
      assert.equal(st.mode & 0o777, 0o777, p);
    }
    // Existing folders are fine.
    await safeMakeDir('made/a', vol, 0o777);
  });

  test('will not make a folder through a symlink that leads out of the volume', async () => {
    await assert.rejects(safeMakeDir('escape-abs/planted', vol, 0o755), /outside of allowed base/);
    await assert.rejects(lstat(path.join(outside, 'planted')), { code: 'ENOENT' });
  });

  test('a file in the way is an error', async () => {
    await assert.rejects(safeMakeDir('real/file', vol, 0o755), /not a directory/);
  });
});

describe('prepareSafeSubpath', () => {
  const mounter = new SystemMounter();
  const sub = (p: string, index: number) => ({
    volumeMountIndex: index,
    path: path.join(vol, p),
    volumeName: 'vol',
    volumePath: vol,
    podDir,
    containerName: 'c',
  });
  const target = (index: number) => path.join(podDir, 'volume-subpaths', 'vol', 'c', String(index));

  test('CVE-2017-1002101: a symlink that resolves outside the volume is refused before anything is mounted', async () => {
    await assert.rejects(
      prepareSafeSubpath(mounter, sub('escape-abs', 0), target(0)),
      /not within volume path/,
    );
    await assert.rejects(
      prepareSafeSubpath(mounter, sub('escape-rel', 1), target(1)),
      /not within volume path/,
    );
    await assert.rejects(
      prepareSafeSubpath(mounter, sub('escape-rel/secret', 2), target(2)),
      /not within volume path/,
    );
    for (const i of [0, 1, 2]) await assert.rejects(lstat(target(i)), { code: 'ENOENT' });
  });

  test('a missing subPath is an error', async () => {
    await assert.rejects(prepareSafeSubpath(mounter, sub('nope', 3), target(3)), /error resolving symlinks/);
  });

  test(
    'CVE-2021-25741: a folder and a file are bind-mounted onto kubelet-owned targets; a symlink inside the volume is followed once, at check time',
    { skip: !isRoot && 'needs root for mount(2)' },
    async () => {
      const dirTarget = await prepareSafeSubpath(mounter, sub('inside-link', 4), target(4));
      assert.equal(dirTarget, target(4));
      assert.ok(await isMountPoint(mounter, dirTarget));
      assert.equal(await readFile(path.join(dirTarget, 'file'), 'utf8'), 'in volume');

      const fileTarget = await prepareSafeSubpath(mounter, sub('real/file', 5), target(5));
      assert.ok((await stat(fileTarget)).isFile());
      assert.equal(await readFile(fileTarget, 'utf8'), 'in volume');

      // The same subPath again (a restarted container) reuses the mount rather than stacking another.
      await prepareSafeSubpath(mounter, sub('real/file', 5), target(5));
      const mounts = (await mounter.list()).filter((m) => m.mountPoint === target(5));
      assert.equal(mounts.length, 1);

      // What the container sees is the file that was checked, even if the path becomes a symlink later.
      await rm(path.join(vol, 'real/file'));
      await symlink(path.join(outside, 'secret'), path.join(vol, 'real/file'));
      assert.equal(await readFile(fileTarget, 'utf8'), 'in volume');
      await rm(path.join(vol, 'real/file'));
      await writeFile(path.join(vol, 'real/file'), 'in volume');

      await cleanSubPaths(mounter, path.join(podDir, 'volume-subpaths'), 'vol');
      assert.equal(await isMountPoint(mounter, dirTarget), false);
      await assert.rejects(lstat(path.join(podDir, 'volume-subpaths', 'vol')), { code: 'ENOENT' });
      assert.deepEqual(await readdir(path.join(vol, 'real')), ['deeper', 'file']);
    },
  );
});

describe('names that start with two dots', () => {
  test("..data and timestamped folders are inside the volume (an AtomicWriter volume's subPath)", async () => {
    const { isWithin } = await import('../../../src/volume/mounter.js');
    assert.equal(isWithin('/v/..data/key', '/v'), true);
    assert.equal(isWithin('/v/..2024_01_02.x/key', '/v'), true);
    assert.equal(isWithin('/v', '/v'), true);
    assert.equal(isWithin('/v/../x', '/v'), false);
    assert.equal(isWithin('/x', '/v'), false);
    assert.equal(isWithin('/vv/x', '/v'), false);
    await mkdir(path.join(vol, '..2024_01_02.abc'), { recursive: true });
    await writeFile(path.join(vol, '..2024_01_02.abc/key'), 'k');
    await symlink('..2024_01_02.abc', path.join(vol, '..data'));
    await symlink('..data/key', path.join(vol, 'key'));
    const fh = await safeOpen(path.join(vol, '..2024_01_02.abc/key'), vol);
    await fh.close();
  });

  test(
    'a subPath into a configMap-style volume binds the file behind the ..data link',
    { skip: !isRoot && 'needs root for mount(2)' },
    async () => {
      const mounter = new SystemMounter();
      const t = path.join(podDir, 'volume-subpaths', 'cm', 'c', '0');
      const out = await prepareSafeSubpath(
        mounter,
        {
          volumeMountIndex: 0,
          path: path.join(vol, 'key'),
          volumeName: 'cm',
          volumePath: vol,
          podDir,
          containerName: 'c',
        },
        t,
      );
      assert.equal(await readFile(out, 'utf8'), 'k');
      await cleanSubPaths(mounter, path.join(podDir, 'volume-subpaths'), 'cm');
    },
  );
});

describe('a mount table that cannot be read', () => {
  test('fails the subPath with a clear error instead of stacking a second bind mount on the first', async () => {
    const mounter = new FakeMounter();
    const t = path.join(podDir, 'volume-subpaths', 'unreadable', 'c', '0');
    const s = {
      volumeMountIndex: 0,
      path: path.join(vol, 'real/file'),
      volumeName: 'unreadable',
      volumePath: vol,
      podDir,
      containerName: 'c',
    };
    assert.equal(await prepareSafeSubpath(mounter, s, t), t);
    const list = mounter.list.bind(mounter);
    mounter.list = () => Promise.reject(new Error('open /proc/self/mountinfo: too many open files'));
    await assert.rejects(
      prepareSafeSubpath(mounter, s, t),
      /^Error: error checking path .*\/volume-subpaths\/unreadable\/c\/0 for mount: open \/proc\/self\/mountinfo: too many open files$/,
    );
    mounter.list = list;
    assert.equal(mounter.calls.filter((c) => c.op === 'mount').length, 1, 'one bind mount, never two');
    assert.equal((await mounter.list()).filter((m) => m.mountPoint === t).length, 1);
  });

  test('subPath cleanup says what it could not do rather than leaving folders behind quietly', async () => {
    const mounter = new FakeMounter();
    const subpaths = path.join(podDir, 'volume-subpaths-cleanup');
    await mkdir(path.join(subpaths, 'v', 'c', '0'), { recursive: true });
    mounter.list = () => Promise.reject(new Error('mountinfo unreadable'));
    await assert.rejects(cleanSubPaths(mounter, subpaths, 'v'), /mountinfo unreadable/);
    // A folder that will not go (here: a stray file beside the containers' folders) is an error, as upstream.
    await rm(path.join(subpaths, 'v'), { recursive: true });
    await mkdir(path.join(subpaths, 'v', 'c', '0'), { recursive: true });
    await writeFile(path.join(subpaths, 'v', 'stray'), '');
    await assert.rejects(
      cleanSubPaths(new FakeMounter(), subpaths, 'v'),
      /^Error: error deleting .*\/volume-subpaths-cleanup\/v: ENOTEMPTY/,
    );
    await assert.rejects(lstat(path.join(subpaths, 'v', 'c')), { code: 'ENOENT' }, 'what could go went');
  });
});
