/**
 * The emptyDir wrapper's setUp on a real temporary root, with a fake mounter: when it asks what is
 * mounted at its folder, and the folder's mode whichever way the folder came to be.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { EmptyDirPlugin, setUpEmptyDir } from '../../../src/volume/empty-dir.js';
import { FakeMounter } from '../../../src/volume/testing/fake-mounter.js';
import type { MemoryFilesystem } from '../../../src/volume/mounter.js';
import type { MounterArgs, VolumeHost } from '../../../src/volume/volume-plugin.js';

/** A FakeMounter that notes each path it was asked the medium of. */
class MediumCountingMounter extends FakeMounter {
  readonly mediumAsked: string[] = [];
  override memoryFilesystemAt(p: string): Promise<MemoryFilesystem | undefined> {
    this.mediumAsked.push(p);
    return super.memoryFilesystemAt(p);
  }
}

let tmp = '';
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'volume-empty-dir-'));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

let n = 0;
function setup(): { host: VolumeHost; mounter: MediumCountingMounter } {
  const clock = new FakeClock(Date.UTC(2024, 0, 1));
  const mounter = new MediumCountingMounter();
  const host = {
    rootDir: path.join(tmp, `root${n++}`),
    nodeName: 'node-a',
    clock,
    mounter,
    nodeAllocatable: { cpu: '4', memory: '8Gi' },
    objectCacheTtlMs: 60_000,
  } as unknown as VolumeHost;
  return { host, mounter };
}

const pod: Pod = {
  metadata: { name: 'web', namespace: 'prod', uid: 'uid-1' },
  spec: { containers: [{ name: 'main', image: 'busybox' }] },
};

function args(): MounterArgs {
  return { remount: false, signal: new AbortController().signal };
}

function memoryVolume(host: VolumeHost) {
  return new EmptyDirPlugin(host).newMounter(
    { name: 'mem', volume: { name: 'mem', emptyDir: { medium: 'Memory' } }, readOnly: false },
    pod,
  );
}

async function mode(p: string): Promise<number> {
  return (await stat(p)).mode & 0o7777;
}

describe('emptyDir setUp', () => {
  test('a memory volume whose folder it made itself is mounted without asking what is mounted there', async () => {
    const { host, mounter } = setup();
    const m = memoryVolume(host);
    await m.setUp(args());
    assert.deepEqual(mounter.mediumAsked, [], 'nothing can be mounted on a folder just made');
    assert.deepEqual(
      mounter.calls.map((c) => [c.op, c.target, c.fsType]),
      [['mount', m.getPath(), 'tmpfs']],
    );
    // Nor is it chmod-ed: the tmpfs mounted over it hides it, and its root is what the pod sees.
    assert.equal(await mode(m.getPath()), 0o777 & ~process.umask());
  });

  test('a disk volume whose folder it made itself is 0777 whatever the umask', async () => {
    const { host } = setup();
    const m = new EmptyDirPlugin(host).newMounter(
      { name: 'scratch', volume: { name: 'scratch', emptyDir: {} }, readOnly: false },
      pod,
    );
    await m.setUp(args());
    assert.equal(await mode(m.getPath()), 0o777);
  });

  test('a folder that was there (a kubelet restarted before its ready note) is asked about, and a tmpfs found there is kept', async () => {
    const { host, mounter } = setup();
    const m = memoryVolume(host);
    await mkdir(m.getPath(), { recursive: true, mode: 0o700 });
    await chmod(m.getPath(), 0o700);
    await mounter.mount('tmpfs', m.getPath(), 'tmpfs', []);
    await m.setUp(args());
    assert.deepEqual(mounter.mediumAsked, [m.getPath()]);
    assert.equal(mounter.calls.filter((c) => c.op === 'mount').length, 1, 'not mounted a second time');
    assert.equal(await mode(m.getPath()), 0o777, 'a folder with other bits is set to 0777');
  });

  test('a folder that was there with nothing mounted is mounted', async () => {
    const { host, mounter } = setup();
    const m = memoryVolume(host);
    await mkdir(m.getPath(), { recursive: true });
    await m.setUp(args());
    assert.deepEqual(mounter.mediumAsked, [m.getPath()]);
    assert.equal(mounter.calls.filter((c) => c.op === 'mount').length, 1);
    assert.equal(await mode(m.getPath()), 0o777);
  });

  test('a second setUp, once ready, asks about the tmpfs and does not mount again', async () => {
    const { host, mounter } = setup();
    const m = memoryVolume(host);
    await m.setUp(args());
    await m.setUp({ ...args(), remount: true });
    assert.deepEqual(mounter.mediumAsked, [m.getPath()]);
    assert.equal(mounter.calls.filter((c) => c.op === 'mount').length, 1);
  });
});

describe('setUpEmptyDir says whether the folder is new', () => {
  const setUpArgs = (host: VolumeHost, medium: 'disk' | 'memory') => {
    const dir = path.join(host.rootDir, 'pods/uid-1/volumes/kubernetes.io~projected/v');
    const metaDir = path.join(host.rootDir, 'pods/uid-1/plugins/kubernetes.io~empty-dir/wrapped_v');
    return { dir, metaDir, medium, readOnly: true };
  };

  test('on a first setUp, on disk or in memory; not once ready', async () => {
    for (const medium of ['disk', 'memory'] as const) {
      const { host } = setup();
      assert.equal(await setUpEmptyDir(host, setUpArgs(host, medium), args()), true, medium);
      assert.equal(await setUpEmptyDir(host, setUpArgs(host, medium), args()), false, medium);
    }
  });

  test('not for a folder that was there on disk, nor one with its tmpfs still mounted; yes for a tmpfs mounted now', async () => {
    const { host } = setup();
    const disk = setUpArgs(host, 'disk');
    await mkdir(disk.dir, { recursive: true });
    assert.equal(await setUpEmptyDir(host, disk, args()), false);

    const kept = setup();
    const memory = setUpArgs(kept.host, 'memory');
    await mkdir(memory.dir, { recursive: true });
    await kept.mounter.mount('tmpfs', memory.dir, 'tmpfs', []);
    assert.equal(await setUpEmptyDir(kept.host, memory, args()), false);

    const lost = setup();
    const again = setUpArgs(lost.host, 'memory');
    await mkdir(again.dir, { recursive: true });
    assert.equal(await setUpEmptyDir(lost.host, again, args()), true);
  });
});
