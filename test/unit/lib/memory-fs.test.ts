import assert from 'node:assert/strict';
import { constants } from 'node:fs';
import { lstat, mkdtemp, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setLogSink } from '../../../src/lib/log.js';
import {
  createMemoryFileCalls,
  memoryFileCalls,
  promiseFileCalls,
  type FileCalls,
} from '../../../src/lib/memory-fs.js';

let tmp = '';
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'memory-fs-'));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** The error's code and message as fs/promises words them: callers match on both. */
async function failure(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { code: e.code, message: e.message };
  }
  throw new Error('expected the call to fail');
}

/** Everything one kind of calls does in a folder of its own, and what it saw, to compare the two kinds. */
async function exercise(files: FileCalls, dir: string): Promise<unknown[]> {
  const seen: unknown[] = [];
  const at = (p: string) => path.join(dir, p);
  await files.mkdir(at('a/b'), { recursive: true, mode: 0o750 });
  await files.mkdir(at('c'), { mode: 0o700 });
  seen.push((await stat(at('a/b'))).mode & 0o777, (await stat(at('c'))).mode & 0o777);
  seen.push(await failure(files.mkdir(at('c'), { mode: 0o700 })).then((f) => f.code));
  await files.writeFile(at('c/f'), Buffer.from('one'), { mode: 0o600 });
  await files.writeFile(at('c/f'), 'two', { mode: 0o644 });
  seen.push(await readFile(at('c/f'), 'utf8'), (await stat(at('c/f'))).mode & 0o777);
  seen.push((await files.readFile(at('c/f'))).toString(), await files.readText(at('c/f')));
  await files.writeInto(at('c/f'), 'x', constants.O_WRONLY | constants.O_TRUNC);
  seen.push(await readFile(at('c/f'), 'utf8'));
  seen.push(await failure(files.writeInto(at('c/none'), 'x', constants.O_WRONLY)));
  await files.chmod(at('c/f'), 0o640);
  await files.chown(at('c/f'), process.getuid?.() ?? 0, -1);
  seen.push((await stat(at('c/f'))).mode & 0o777);
  await files.symlink('f', at('c/l'));
  seen.push(await files.readlink(at('c/l')), (await files.lstat(at('c/l'))).isSymbolicLink());
  seen.push((await files.stat(at('c/l'))).isFile(), await files.realpath(at('c/l')));
  seen.push(await failure(files.readlink(at('c/f'))));
  await files.rename(at('c/l'), at('c/m'));
  seen.push(await readlink(at('c/m')));
  seen.push((await files.readdir(at('c'))).map((e) => [e.name, e.isFile(), e.isSymbolicLink()]).sort());
  await files.unlink(at('c/m'));
  seen.push(await failure(files.unlink(at('c/m'))));
  seen.push(await failure(files.stat(at('missing'))));
  seen.push(await failure(files.lstat(at('missing'))));
  seen.push(await failure(files.readFile(at('c'))).then((f) => f.code));
  seen.push(await failure(files.readText(at('missing'))));
  seen.push(await failure(files.realpath(at('missing'))));
  seen.push(await failure(files.rmdir(at('c'))).then((f) => f.code));
  await files.rm(at('missing'), { force: true });
  await files.rm(at('c'), { recursive: true, force: true });
  await files.rmdir(at('a/b'));
  seen.push(
    await failure(lstat(at('c'))).then((f) => f.code),
    await failure(lstat(at('a/b'))).then((f) => f.code),
  );
  return seen;
}

describe('memoryFileCalls', () => {
  it('does what fs/promises does, and fails with the same codes and messages', async () => {
    await writeFile(path.join(tmp, 'placeholder'), '');
    const viaPromises = await exercise(promiseFileCalls, await mkdtemp(path.join(tmp, 'p-')));
    const viaSync = await exercise(memoryFileCalls, await mkdtemp(path.join(tmp, 's-')));
    // The folders' names differ; everything else must not.
    const normalise = (v: unknown[]) => JSON.parse(JSON.stringify(v).replace(/\/[ps]-[A-Za-z0-9]{6}/g, '/X'));
    assert.deepEqual(normalise(viaSync), normalise(viaPromises));
  });

  it('logs a call that held the event loop too long, with its name and path', async () => {
    const lines: string[] = [];
    setLogSink((l) => lines.push(l));
    try {
      const files = createMemoryFileCalls({ slowCallMs: 0 });
      await files.stat(tmp);
      await failure(files.readlink(path.join(tmp, 'missing')));
    } finally {
      setLogSink((l) => process.stderr.write(`${l}\n`));
    }
    assert.equal(lines.length, 2);
    assert.match(lines[0]!, /A call on a memory-backed file system held the event loop/);
    assert.match(lines[0]!, new RegExp(`call="stat" path="${tmp}"`));
    assert.match(lines[1]!, /call="readlink"/);
  });

  it('logs nothing for calls below the threshold', async () => {
    const lines: string[] = [];
    setLogSink((l) => lines.push(l));
    try {
      await memoryFileCalls.stat(tmp);
    } finally {
      setLogSink((l) => process.stderr.write(`${l}\n`));
    }
    assert.deepEqual(lines, []);
  });
});
