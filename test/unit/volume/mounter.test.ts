/**
 * SystemMounter against the real kernel: which memory filesystem is mounted at a path, and mounts
 * through the mount helper at paths no shell must read. The tests mount tmpfs (mount(2)), so they
 * need root; they skip themselves without it.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { MountHelper } from '../../../src/volume/mount-helper.js';
import {
  isMountPoint,
  promiseMountMediumFileCalls,
  SystemMounter,
  type MountMediumFileCalls,
} from '../../../src/volume/mounter.js';

const needsRoot = process.getuid?.() === 0 ? false : 'needs root (mount(2))';

describe('SystemMounter.memoryFilesystemAt', { skip: needsRoot }, () => {
  const mounter = new SystemMounter();
  let dir = '';
  const mounted: string[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tsk-mounter-'));
  });
  after(async () => {
    for (const m of mounted.reverse()) await mounter.unmount(m).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  test('a tmpfs mounted at the path', async () => {
    const target = path.join(dir, 'mem');
    await mkdir(target);
    await mounter.mount('tmpfs', target, 'tmpfs', ['size=1m']);
    mounted.push(target);
    assert.equal(await mounter.memoryFilesystemAt(target), 'tmpfs');
    // Spelled with a trailing slash and a `..`, it is the same mount point.
    assert.equal(await mounter.memoryFilesystemAt(`${target}/sub/../`), 'tmpfs');
  });

  test('a folder inside a tmpfs is not one mounted at that folder', async () => {
    const inner = path.join(dir, 'mem', 'inner');
    await mkdir(inner);
    assert.equal(await mounter.memoryFilesystemAt(inner), undefined);
  });

  test('a bind mount of the same tmpfs, which has its parent device, is found in the table', async () => {
    const source = path.join(dir, 'mem', 'source');
    const target = path.join(dir, 'mem', 'bound');
    await mkdir(source);
    await mkdir(target);
    await mounter.mount(source, target, '', ['bind']);
    mounted.push(target);
    assert.equal(await mounter.memoryFilesystemAt(target), 'tmpfs');
  });

  test('a plain folder and a missing path have none', async () => {
    const plain = path.join(dir, 'plain');
    await mkdir(plain);
    assert.equal(await mounter.memoryFilesystemAt(plain), undefined);
    assert.equal(await mounter.memoryFilesystemAt(path.join(dir, 'missing')), undefined);
  });
});

describe('SystemMounter.memoryFilesystemAt, asked again', { skip: needsRoot }, () => {
  const made: string[] = [];
  const files: MountMediumFileCalls = {
    lstat: (p) => (made.push('lstat'), promiseMountMediumFileCalls.lstat(p)),
    stat: (p) => (made.push('stat'), promiseMountMediumFileCalls.stat(p)),
    statfs: (p) => (made.push('statfs'), promiseMountMediumFileCalls.statfs(p)),
    realpath: (p) => (made.push('realpath'), promiseMountMediumFileCalls.realpath(p)),
  };
  const mounter = new SystemMounter(undefined, undefined, undefined, files);
  let dir = '';
  let target = '';

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tsk-mounter-again-'));
    target = path.join(dir, 'mem');
    await mkdir(target);
  });
  after(async () => {
    while ((await mounter.list()).some((m) => m.mountPoint === target))
      await mounter.unmount(target).catch(() => undefined);
    await mounter.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('a tmpfs still mounted where it was found is answered by one lstat', async () => {
    await mounter.mount('tmpfs', target, 'tmpfs', ['size=1m']);
    assert.equal(await mounter.memoryFilesystemAt(target), 'tmpfs');
    made.length = 0;
    assert.equal(await mounter.memoryFilesystemAt(target), 'tmpfs');
    assert.deepEqual(made, ['lstat']);
  });

  test('a tmpfs unmounted underneath (not through the mounter) is seen at the next call', async () => {
    execFileSync('umount', [target]);
    assert.equal(await mounter.memoryFilesystemAt(target), undefined);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', target]);
    assert.equal(await mounter.memoryFilesystemAt(target), 'tmpfs');
  });

  test('a mount point removed underneath, and a plain folder made in its place, have none', async () => {
    execFileSync('umount', [target]);
    await rm(target, { recursive: true });
    assert.equal(await mounter.memoryFilesystemAt(target), undefined);
    await mkdir(target);
    assert.equal(await mounter.memoryFilesystemAt(target), undefined);
  });

  test('after an unmount through the mounter, a new tmpfs there is found in full', async () => {
    await mounter.mount('tmpfs', target, 'tmpfs', ['size=1m']);
    assert.equal(await mounter.memoryFilesystemAt(target), 'tmpfs');
    await mounter.unmount(target);
    made.length = 0;
    assert.equal(await mounter.memoryFilesystemAt(target), undefined);
    assert.ok(!made.includes('lstat'), `calls: ${made.join(', ')}`);
  });
});

describe('SystemMounter through the mount helper', { skip: needsRoot }, () => {
  const helper = new MountHelper();
  const mounter = new SystemMounter(undefined, undefined, helper);
  let dir = '';

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tsk-mounter-helper-'));
  });
  after(async () => {
    for (const m of (await mounter.list()).reverse())
      if (m.mountPoint.startsWith(dir)) await mounter.unmount(m.mountPoint).catch(() => undefined);
    await mounter.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('a tmpfs at a path of quotes, a newline, $(), backticks and a semicolon is mounted there and unmounted', async () => {
    // A path element holds no slash: the canary would be made in the helper's folder, the kubelet's.
    const name = `tsk-mounter-pwned-${process.pid}`;
    const canary = path.join(process.cwd(), name);
    const target = path.join(dir, `it's "x"\n$(touch ${name}) \`touch ${name}\`; touch ${name} -o ro`);
    await mkdir(target);
    await mounter.mount('tmpfs', target, 'tmpfs', ['size=1m', 'mode=0750']);
    assert.equal(await mounter.memoryFilesystemAt(target), 'tmpfs');
    assert.equal(await isMountPoint(mounter, target), true);
    await mounter.unmount(target);
    assert.equal(await mounter.memoryFilesystemAt(target), undefined);
    assert.equal(existsSync(canary), false, 'a part of the path ran as a command');
    assert.equal(helper.pids().length, 1);
  });

  test("mount's and umount's own error text is in the error, as upstream words it", async () => {
    const missing = path.join(dir, 'missing');
    await assert.rejects(mounter.mount('tmpfs', missing, 'tmpfs', ['size=1m']), (err: Error) => {
      assert.match(err.message, /^mount failed: exit status 32\nMounting command: mount\n/);
      assert.match(err.message, new RegExp(`Mounting arguments: -t tmpfs -o size=1m tmpfs ${missing}\n`));
      assert.match(err.message, /Output: mount: .*missing: mount point does not exist/);
      return true;
    });
    const plain = path.join(dir, 'plain');
    await mkdir(plain);
    await assert.rejects(mounter.unmount(plain), (err: Error) => {
      assert.match(
        err.message,
        /^unmount failed: exit status 32\nUnmounting arguments: .*plain\nOutput: umount: .*not mounted/,
      );
      return true;
    });
  });
});

describe('SystemMounter.memoryFilesystemAt, after a tmpfs it mounted itself', { skip: needsRoot }, () => {
  const made: string[] = [];
  const files: MountMediumFileCalls = {
    lstat: (p) => (made.push('lstat'), promiseMountMediumFileCalls.lstat(p)),
    stat: (p) => (made.push('stat'), promiseMountMediumFileCalls.stat(p)),
    statfs: (p) => (made.push('statfs'), promiseMountMediumFileCalls.statfs(p)),
    realpath: (p) => (made.push('realpath'), promiseMountMediumFileCalls.realpath(p)),
  };
  const mounter = new SystemMounter(undefined, undefined, undefined, files);
  let dir = '';

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tsk-mounter-own-'));
  });
  after(async () => {
    for (const m of (await mounter.list()).reverse())
      if (m.mountPoint.startsWith(dir)) await mounter.unmount(m.mountPoint).catch(() => undefined);
    await mounter.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('is answered by one lstat, and is seen gone once unmounted underneath', async () => {
    const target = path.join(dir, 'mem');
    await mkdir(target);
    await mounter.mount('tmpfs', target, 'tmpfs', ['size=1m']);
    made.length = 0;
    assert.equal(await mounter.memoryFilesystemAt(target), 'tmpfs');
    assert.deepEqual(made, ['lstat']);
    execFileSync('umount', [target]);
    assert.equal(await mounter.memoryFilesystemAt(target), undefined);
  });

  test('through a symlink as the last element, it is looked at in full each time', async () => {
    const real = path.join(dir, 'real');
    const link = path.join(dir, 'link');
    await mkdir(real);
    await symlink(real, link);
    await mounter.mount('tmpfs', link, 'tmpfs', ['size=1m']);
    made.length = 0;
    assert.equal(await mounter.memoryFilesystemAt(link), 'tmpfs');
    assert.ok(made.includes('statfs'), `calls: ${made.join(', ')}`);
    execFileSync('umount', [real]);
    assert.equal(await mounter.memoryFilesystemAt(link), undefined);
  });

  test('a bind mount is not taken for a memory filesystem it mounted', async () => {
    const source = path.join(dir, 'plain-source');
    const target = path.join(dir, 'plain-target');
    await mkdir(source);
    await mkdir(target);
    await mounter.mount(source, target, '', ['bind']);
    assert.equal(await mounter.memoryFilesystemAt(target), undefined);
  });
});
