/** makePodDataDirs against a real folder: what it makes, what one sync costs once they are there, and its errors. */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makePodDataDirs } from '../../../src/kubelet/pod-data-dirs.js';
import { promiseFileCalls, type FileCalls } from '../../../src/lib/memory-fs.js';

type Calls = Pick<FileCalls, 'readdir' | 'stat' | 'mkdir'>;

/** promiseFileCalls, with each call's name noted. */
function counting(): { files: Calls; made: string[] } {
  const made: string[] = [];
  return {
    made,
    files: {
      readdir: (p) => (made.push('readdir'), promiseFileCalls.readdir(p)),
      stat: (p) => (made.push('stat'), promiseFileCalls.stat(p)),
      mkdir: (p, o) => (made.push('mkdir'), promiseFileCalls.mkdir(p, o)),
    },
  };
}

describe('makePodDataDirs', () => {
  let root = '';
  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'tsk-pod-data-dirs-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const uid = '6f1c2a38-2b7e-4d3c-9a55-0d7b1f3e2c11';
  const podDir = () => path.join(root, 'pods', uid);

  test("the pod's first sync makes its folder, volumes and plugins", async () => {
    await makePodDataDirs(root, uid);
    assert.ok((await stat(path.join(podDir(), 'volumes'))).isDirectory());
    assert.ok((await stat(path.join(podDir(), 'plugins'))).isDirectory());
  });

  test('a sync that finds both there lists the pod folder once and makes no other call', async () => {
    const { files, made } = counting();
    await makePodDataDirs(root, uid, files);
    assert.deepEqual(made, ['readdir']);
  });

  test('a data dir removed underneath is made again on the next sync', async () => {
    await rm(path.join(podDir(), 'volumes'), { recursive: true });
    await makePodDataDirs(root, uid);
    assert.ok((await stat(path.join(podDir(), 'volumes'))).isDirectory());
  });

  test('a symlink to a folder serves, as stat follows it', async () => {
    const other = path.join(root, 'elsewhere');
    await mkdir(other);
    await rm(path.join(podDir(), 'plugins'), { recursive: true });
    await symlink(other, path.join(podDir(), 'plugins'));
    await makePodDataDirs(root, uid);
    assert.ok((await stat(path.join(podDir(), 'plugins'))).isDirectory());
    await rm(path.join(podDir(), 'plugins'));
  });

  test('a file in the way fails with the data dir named, and nothing is replaced', async () => {
    await writeFile(path.join(podDir(), 'plugins'), 'x');
    await assert.rejects(makePodDataDirs(root, uid), {
      code: 'ENOTDIR',
      message: `mkdir ${path.join(podDir(), 'plugins')}: not a directory`,
    });
    assert.ok((await stat(path.join(podDir(), 'plugins'))).isFile());
  });

  test('a UID that is not one is refused before any file call', async () => {
    const { files, made } = counting();
    await assert.rejects(makePodDataDirs(root, '../escape', files));
    assert.deepEqual(made, []);
  });
});

describe('makePodDataDirs at a pod first sync (likelyNew)', () => {
  let root = '';
  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'tsk-pod-data-dirs-new-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const uid = '0b8d5e52-7f1a-4c39-8e0d-3a6c2f9b1d47';
  const podDir = () => path.join(root, 'pods', uid);

  test('a new pod gets its folder, volumes and plugins from two mkdirs, without a listing first', async () => {
    const { files, made } = counting();
    await makePodDataDirs(root, uid, files, { likelyNew: true });
    assert.deepEqual(made, ['mkdir', 'mkdir']);
    assert.ok((await stat(path.join(podDir(), 'volumes'))).isDirectory());
    assert.ok((await stat(path.join(podDir(), 'plugins'))).isDirectory());
  });

  test('folders already there (a kubelet restarted) are kept', async () => {
    await writeFile(path.join(podDir(), 'volumes', 'kept'), 'x');
    await makePodDataDirs(root, uid, undefined, { likelyNew: true });
    assert.ok((await stat(path.join(podDir(), 'volumes', 'kept'))).isFile());
  });

  test('a file in the way fails as without the hint, and nothing is replaced', async () => {
    await rm(path.join(podDir(), 'plugins'), { recursive: true });
    await writeFile(path.join(podDir(), 'plugins'), 'x');
    await assert.rejects(makePodDataDirs(root, uid, undefined, { likelyNew: true }), {
      code: 'ENOTDIR',
      message: `mkdir ${path.join(podDir(), 'plugins')}: not a directory`,
    });
    assert.ok((await stat(path.join(podDir(), 'plugins'))).isFile());
  });

  test('a UID that is not one is refused before any file call', async () => {
    const { files, made } = counting();
    await assert.rejects(makePodDataDirs(root, '../escape', files, { likelyNew: true }));
    assert.deepEqual(made, []);
  });
});
