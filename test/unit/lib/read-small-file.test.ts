import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  FileTooLargeError,
  readSmallFile,
  readSmallFileSync,
  readSmallTextFile,
} from '../../../src/lib/read-small-file.js';

/**
 * How many of this process's descriptors are open on file: the file itself, not a count of all of
 * them, which the test runner's own descriptors may change meanwhile.
 */
async function openOn(file: string): Promise<number> {
  let n = 0;
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target === file) n++;
  }
  return n;
}

describe('readSmallFile', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'read-small-file-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a file of any size, whatever the hint says', async () => {
    for (const size of [0, 1, 4095, 4096, 4097, 70_000, 300_001]) {
      const file = path.join(dir, `f${size}`);
      const data = Buffer.alloc(size);
      for (let i = 0; i < size; i++) data[i] = (i * 7) & 0xff;
      await writeFile(file, data);
      for (const sizeHint of [undefined, 0, 1, size, size + 10, Math.max(0, size - 1), 10 * size]) {
        const got = await readSmallFile(file, { sizeHint });
        assert.equal(got.length, size, `size ${size} hint ${sizeHint}`);
        assert.ok(got.equals(data), `size ${size} hint ${sizeHint}`);
      }
    }
  });

  it('reads procfs and cgroupfs-like files, whose stat size is 0, as readFile does', async () => {
    for (const file of ['/proc/self/status', '/proc/self/mountinfo', '/proc/meminfo']) {
      const text = await readSmallTextFile(file);
      assert.ok(text.length > 0, file);
      // The same lines as readFile: only figures that move (the process's own counters) may differ.
      assert.equal(text.split('\n')[0], (await readFile(file, 'utf8')).split('\n')[0], file);
    }
  });

  it('refuses a file longer than maxBytes, and takes one of exactly maxBytes', async () => {
    const file = path.join(dir, 'big');
    await writeFile(file, Buffer.alloc(10_000, 'a'));
    assert.equal((await readSmallFile(file, { maxBytes: 10_000 })).length, 10_000);
    assert.equal((await readSmallFile(file, { maxBytes: 10_000, sizeHint: 10_000 })).length, 10_000);
    for (const sizeHint of [undefined, 100, 9_999, 10_000]) {
      await assert.rejects(readSmallFile(file, { maxBytes: 9_999, sizeHint }), (err: unknown) => {
        assert.ok(err instanceof FileTooLargeError);
        assert.equal(err.maxBytes, 9_999);
        assert.match(err.message, /is larger than 9999 bytes/);
        return true;
      });
    }
  });

  it('stops reading an endless file at maxBytes', async () => {
    await assert.rejects(readSmallFile('/dev/zero', { maxBytes: 1_000_000 }), FileTooLargeError);
  });

  it("ends with the signal's reason when aborted, and closes the file", async () => {
    const file = path.join(dir, 'aborted');
    await writeFile(file, 'x');
    const before = await openOn('/dev/zero');
    const controller = new AbortController();
    controller.abort(new Error('stopping'));
    await assert.rejects(readSmallFile(file, { signal: controller.signal }), /stopping/);
    await assert.rejects(readSmallFile('/dev/zero', { maxBytes: 1000 }), FileTooLargeError);
    assert.equal(await openOn(file), 0);
    assert.equal(await openOn('/dev/zero'), before);
  });

  it("passes the file system's error on, with its code", async () => {
    await assert.rejects(readSmallFile(path.join(dir, 'missing')), { code: 'ENOENT' });
    await assert.rejects(readSmallFile(dir), { code: 'EISDIR' });
  });

  it('decodes UTF-8 text', async () => {
    const file = path.join(dir, 'text');
    await writeFile(file, 'grüße 🚀\n');
    assert.equal(await readSmallTextFile(file), 'grüße 🚀\n');
  });
});

describe('readSmallFileSync', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'read-small-file-sync-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads what readSmallFile reads, whatever the size and the hint', async () => {
    for (const size of [0, 1, 4095, 4096, 4097, 70_000]) {
      const file = path.join(dir, `f${size}`);
      const data = Buffer.alloc(size);
      for (let i = 0; i < size; i++) data[i] = (i * 7) & 0xff;
      await writeFile(file, data);
      for (const sizeHint of [undefined, 1, size, size + 10, Math.max(0, size - 1)]) {
        assert.ok(readSmallFileSync(file, { sizeHint }).equals(data), `size ${size} hint ${sizeHint}`);
      }
    }
    const cgroupLike = '/proc/self/mountinfo';
    assert.equal(
      readSmallFileSync(cgroupLike).toString('utf8').split('\n')[0],
      (await readSmallTextFile(cgroupLike)).split('\n')[0],
    );
  });

  it('refuses a file longer than maxBytes, closes what it opened, and passes errors on with their code', async () => {
    const before = await openOn('/dev/zero');
    assert.throws(() => readSmallFileSync('/dev/zero', { maxBytes: 1000 }), FileTooLargeError);
    assert.equal(await openOn('/dev/zero'), before);
    assert.throws(() => readSmallFileSync(path.join(dir, 'missing')), { code: 'ENOENT' });
    assert.throws(() => readSmallFileSync(dir), { code: 'EISDIR' });
  });
});
