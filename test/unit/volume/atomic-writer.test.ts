import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { FakeClock } from '../../../src/lib/clock.js';
import { memoryFileCalls, promiseFileCalls, type FileCalls } from '../../../src/lib/memory-fs.js';
import { AtomicWriter, validatePath, type Payload } from '../../../src/volume/atomic-writer.js';

let tmp = '';
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'atomic-writer-'));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

let n = 0;
async function target(): Promise<string> {
  const dir = path.join(tmp, `t${n++}`);
  await mkdir(dir);
  return dir;
}

function payload(files: Record<string, string | [string, number]>): Payload {
  return new Map(
    Object.entries(files).map(([p, v]) => {
      const [data, mode] = typeof v === 'string' ? [v, 0o644] : v;
      return [p, { data: Buffer.from(data), mode }];
    }),
  );
}

/** A thread that reads x and y through ..data until stopped, counting reads and reads that disagree. */
function startReader(dir: string): { stop: () => Promise<{ reads: number; torn: number }> } {
  const worker = new Worker(
    `
    const { parentPort, workerData } = require('node:worker_threads');
    const fs = require('node:fs');
    const path = require('node:path');
    let stop = false, reads = 0, torn = 0;
    parentPort.on('message', () => { stop = true; });
    function loop() {
      const until = Date.now() + 5;
      while (Date.now() < until) {
        try {
          // Resolve ..data once, then read both files through that one folder, as a reader that opens ..data does.
          const ts = fs.readlinkSync(path.join(workerData.dir, '..data'));
          const x = fs.readFileSync(path.join(workerData.dir, ts, 'x'), 'utf8');
          const y = fs.readFileSync(path.join(workerData.dir, ts, 'y'), 'utf8');
          if (x !== y) torn++;
          reads++;
        } catch (err) {
          // The folder may be removed after it was resolved; that is not a torn read.
          if (err.code !== 'ENOENT') throw err;
        }
      }
      if (stop) parentPort.postMessage({ reads, torn });
      else setImmediate(loop);
    }
    loop();
    `,
    { eval: true, workerData: { dir } },
  );
  const result = new Promise<{ reads: number; torn: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the reader did not answer within 10 s')), 10_000);
    worker.once('message', (m: { reads: number; torn: number }) => {
      clearTimeout(timer);
      resolve(m);
    });
    worker.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
  return {
    stop: async () => {
      worker.postMessage('stop');
      try {
        return await result;
      } finally {
        await worker.terminate();
      }
    },
  };
}

const kinds: [string, FileCalls][] = [
  ['fs/promises', promiseFileCalls],
  ['synchronous calls (a tmpfs volume)', memoryFileCalls],
];

for (const [kind, files] of kinds) {
  describe(`AtomicWriter, ${kind}`, () => {
    test('first write: a timestamped folder, ..data pointing at it, user-visible links into ..data', async () => {
      const dir = await target();
      const clock = new FakeClock(Date.UTC(2024, 0, 2, 3, 4, 5));
      const w = new AtomicWriter(dir, 'test', { clock, files });
      assert.equal(await w.write(payload({ a: 'A', 'sub/b': ['B', 0o600] })), true);

      const ts = await readlink(path.join(dir, '..data'));
      assert.match(ts, /^\.\.2024_01_02_03_04_05\./);
      assert.equal((await stat(path.join(dir, ts))).mode & 0o777, 0o755);
      assert.equal(await readlink(path.join(dir, 'a')), '..data/a');
      assert.equal(await readlink(path.join(dir, 'sub')), '..data/sub');
      assert.equal(await readFile(path.join(dir, 'a'), 'utf8'), 'A');
      assert.equal(await readFile(path.join(dir, 'sub/b'), 'utf8'), 'B');
      assert.equal((await stat(path.join(dir, 'a'))).mode & 0o777, 0o644);
      assert.equal((await stat(path.join(dir, 'sub/b'))).mode & 0o777, 0o600);
      assert.deepEqual((await readdir(dir)).sort(), ['..data', ts, 'a', 'sub'].sort());
    });

    test("the timestamped folder's suffix is decimal digits, as Go's os.MkdirTemp makes it", async () => {
      const dir = await target();
      const clock = new FakeClock(Date.UTC(2024, 0, 2, 3, 4, 5));
      const w = new AtomicWriter(dir, 'test', { clock, files });
      const names = new Set<string>();
      for (let i = 0; i < 5; i++) {
        await w.write(payload({ a: `A${i}` }));
        const ts = await readlink(path.join(dir, '..data'));
        // A uint32 in decimal: 1 to 10 digits, no leading zero unless it is 0.
        assert.match(ts, /^\.\.2024_01_02_03_04_05\.(0|[1-9][0-9]{0,9})$/);
        assert.ok(Number(ts.split('.').pop()) < 2 ** 32);
        names.add(ts);
      }
      assert.equal(names.size, 5);
    });

    test('an unchanged payload writes nothing; a changed one swaps ..data and removes the old folder', async () => {
      const dir = await target();
      const clock = new FakeClock(Date.UTC(2024, 0, 2, 3, 4, 5));
      const w = new AtomicWriter(dir, 'test', { clock, files });
      await w.write(payload({ a: 'A', b: 'B' }));
      const first = await readlink(path.join(dir, '..data'));

      clock.advance(1000);
      assert.equal(await w.write(payload({ a: 'A', b: 'B' })), false);
      assert.equal(await readlink(path.join(dir, '..data')), first);

      clock.advance(1000);
      assert.equal(await w.write(payload({ a: 'A2' })), true);
      const second = await readlink(path.join(dir, '..data'));
      assert.notEqual(second, first);
      assert.match(second, /^\.\.2024_01_02_03_04_07\./);
      await assert.rejects(lstat(path.join(dir, first)), { code: 'ENOENT' });
      // b is gone from the volume: its user-visible link was pruned.
      await assert.rejects(lstat(path.join(dir, 'b')), { code: 'ENOENT' });
      assert.equal(await readFile(path.join(dir, 'a'), 'utf8'), 'A2');
      assert.deepEqual((await readdir(dir)).sort(), ['..data', second, 'a'].sort());
    });

    test('a missing user-visible link is made again even when the data is unchanged', async () => {
      const dir = await target();
      const w = new AtomicWriter(dir, 'test', { files });
      await w.write(payload({ a: 'A' }));
      await rm(path.join(dir, 'a'));
      assert.equal(await w.write(payload({ a: 'A' })), false);
      assert.equal(await readFile(path.join(dir, 'a'), 'utf8'), 'A');
    });

    test('setPerms runs on the new folder before it is visible', async () => {
      const dir = await target();
      const w = new AtomicWriter(dir, 'test', { files });
      const seen: { ts: string; visible: boolean }[] = [];
      await w.write(payload({ a: 'A' }), async (ts) => {
        const visible = await readlink(path.join(dir, '..data')).then(
          (l) => l === ts,
          () => false,
        );
        seen.push({ ts, visible });
      });
      assert.equal(seen.length, 1);
      assert.equal(seen[0]?.visible, false);
      assert.equal(await readlink(path.join(dir, '..data')), seen[0]?.ts);
    });

    test('a failed write leaves the old data in place and no new folder behind', async () => {
      const dir = await target();
      const w = new AtomicWriter(dir, 'test', { files });
      await w.write(payload({ a: 'A' }));
      const before = (await readdir(dir)).sort();
      await assert.rejects(
        w.write(payload({ a: 'A2' }), () => Promise.reject(new Error('chown failed'))),
        /chown failed/,
      );
      assert.deepEqual((await readdir(dir)).sort(), before);
      assert.equal(await readFile(path.join(dir, 'a'), 'utf8'), 'A');
    });

    test('paths are validated as upstream: relative, no .., not starting with .., bounded', async () => {
      assert.throws(() => validatePath(''), /invalid path: must not be empty/);
      assert.throws(() => validatePath('/etc/passwd'), /invalid path: must be relative path: \/etc\/passwd/);
      assert.throws(
        () => validatePath('a/../../b'),
        /invalid path: must not contain '\.\.': a\/\.\.\/\.\.\/b/,
      );
      assert.throws(() => validatePath('..data'), /invalid path: must not start with '\.\.': \.\.data/);
      assert.throws(
        () => validatePath('x'.repeat(256)),
        /filenames must be less than or equal to 255 characters/,
      );
      assert.throws(() => validatePath('a/'.repeat(2049)), /must be less than or equal to 4096 characters/);
      validatePath('a/b/c');
      validatePath('.hidden');
      const dir = await target();
      const w = new AtomicWriter(dir, 'test', { files });
      await assert.rejects(w.write(payload({ '../escape': 'x' })), /must not contain '\.\.'/);
      assert.deepEqual(await readdir(dir), []);
    });

    test('paths are cleaned: a//b/./c is a/b/c', async () => {
      const dir = await target();
      const w = new AtomicWriter(dir, 'test', { files });
      await w.write(payload({ 'a//b/./c': 'C' }));
      assert.equal(await readFile(path.join(dir, 'a/b/c'), 'utf8'), 'C');
    });

    test('a file added to the payload is written; one that became a dangling link fails the write', async () => {
      const dir = await target();
      const w = new AtomicWriter(dir, 'test', { files });
      await w.write(payload({ a: 'A' }));
      assert.equal(await w.write(payload({ a: 'A', b: 'B' })), true);
      assert.equal(await readFile(path.join(dir, 'b'), 'utf8'), 'B');
      // Only a path that is not there at all asks for a write, as upstream's shouldWriteFile.
      const ts = await readlink(path.join(dir, '..data'));
      await rm(path.join(dir, ts, 'b'));
      await symlink('nowhere', path.join(dir, ts, 'b'));
      await assert.rejects(w.write(payload({ a: 'A', b: 'B' })), { code: 'ENOENT' });
      assert.equal(await readlink(path.join(dir, '..data')), ts);
    });

    test('a reader sees the old set or the new one, never a mix', async () => {
      const dir = await target();
      const w = new AtomicWriter(dir, 'test', { files });
      await w.write(payload({ x: '0', y: '0' }));
      // The reader is a thread of its own: a writer whose calls are synchronous never yields to one
      // on the event loop in the middle of a write.
      const reader = startReader(dir);
      for (let i = 1; i <= 30; i++) await w.write(payload({ x: String(i), y: String(i) }));
      const { reads, torn } = await reader.stop();
      assert.equal(torn, 0);
      assert.ok(reads > 0);
    });
  });
}

describe('AtomicWriter, into a folder its caller has just made (a new volume)', () => {
  /** memoryFileCalls, with each call's name noted. */
  function counting(): { files: FileCalls; made: string[] } {
    const made: string[] = [];
    const files = Object.fromEntries(
      Object.entries(memoryFileCalls).map(([name, call]) => [
        name,
        (...args: unknown[]) => (made.push(name), (call as (...a: unknown[]) => unknown)(...args)),
      ]),
    ) as unknown as FileCalls;
    return { files, made };
  }

  test('makes what a first write makes, without looking for an old payload or links that cannot be there', async () => {
    const clock = new FakeClock(Date.UTC(2024, 0, 2, 3, 4, 5));
    const files = payload({ a: 'A', 'sub/b': ['B', 0o600] });
    const usual = await target();
    await new AtomicWriter(usual, 'test', { clock, files: memoryFileCalls }).write(files);
    const fresh = await target();
    const { files: calls, made } = counting();
    assert.equal(
      await new AtomicWriter(fresh, 'test', { clock, files: calls }).write(files, undefined, {
        targetIsNew: true,
      }),
      true,
    );
    for (const name of ['readlink', 'readFile', 'lstat', 'rm'])
      assert.ok(!made.includes(name), `${name} was called: ${made.join(', ')}`);
    assert.deepEqual(
      made.filter((name) => name === 'readdir'),
      ['readdir'],
      'one listing says the folder is empty',
    );

    // The same layout, names and modes as the usual first write.
    const tree = async (dir: string) => {
      const ts = await readlink(path.join(dir, '..data'));
      return {
        names: (await readdir(dir)).map((e) => (e === ts ? '<ts>' : e)).sort(),
        tsMode: (await stat(path.join(dir, ts))).mode & 0o777,
        links: [await readlink(path.join(dir, 'a')), await readlink(path.join(dir, 'sub'))],
        a: [await readFile(path.join(dir, 'a'), 'utf8'), (await stat(path.join(dir, 'a'))).mode & 0o777],
        b: [
          await readFile(path.join(dir, 'sub/b'), 'utf8'),
          (await stat(path.join(dir, 'sub/b'))).mode & 0o777,
        ],
      };
    };
    assert.deepEqual(await tree(fresh), await tree(usual));
    assert.deepEqual(await tree(fresh), {
      names: ['..data', '<ts>', 'a', 'sub'],
      tsMode: 0o755,
      links: ['..data/a', '..data/sub'],
      a: ['A', 0o644],
      b: ['B', 0o600],
    });
  });

  test('a folder said to be new that holds an earlier payload gets the usual write', async () => {
    const dir = await target();
    const w = new AtomicWriter(dir, 'test', { files: memoryFileCalls });
    await w.write(payload({ a: 'A', gone: 'G' }));
    const first = await readlink(path.join(dir, '..data'));
    assert.equal(await w.write(payload({ a: 'A2' }), undefined, { targetIsNew: true }), true);
    const second = await readlink(path.join(dir, '..data'));
    assert.notEqual(second, first);
    assert.equal(await readFile(path.join(dir, 'a'), 'utf8'), 'A2');
    assert.deepEqual((await readdir(dir)).sort(), ['..data', second, 'a'].sort());
  });

  test('a later write into it is the usual one: an unchanged payload changes nothing', async () => {
    const dir = await target();
    const w = new AtomicWriter(dir, 'test', { files: memoryFileCalls });
    await w.write(payload({ a: 'A' }), undefined, { targetIsNew: true });
    const first = await readlink(path.join(dir, '..data'));
    assert.equal(await w.write(payload({ a: 'A' })), false);
    assert.equal(await readlink(path.join(dir, '..data')), first);
  });
});
