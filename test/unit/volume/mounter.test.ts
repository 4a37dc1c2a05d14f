/**
 * SystemMounter against the real kernel: which memory filesystem is mounted at a path. The tests
 * mount tmpfs (mount(2)), so they need root; they skip themselves without it.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SystemMounter } from '../../../src/volume/mounter.js';

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
