import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCodeCachedScript } from '../../../src/lib/code-cached-script.js';

// V8 keeps what a process compiled by its text and file name, and answers a second compile of both
// from there without reading the cache: each case compiles its text under a file name of its own.
describe('runCodeCachedScript', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'code-cached-script-'));
    await writeFile(path.join(dir, 'first.cjs'), answerScript(41));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** A script that evaluates to a module's body, as kubelet.cjs does outside Node's loader. */
  function answerScript(n: number): string {
    return `(function (module) {\n  'use strict';\n  function inner() { return ${n}; }\n  module.exports.value = inner();\n  module.exports.inner = inner;\n})\n`;
  }

  /** Runs `name` (in dir) as the body of a module: what it exports, and what became of its cache. */
  function run(name: string) {
    const { result, outcome } = runCodeCachedScript(path.join(dir, name), (body) => {
      const module = { exports: {} as { value?: unknown; inner?: () => unknown } };
      (body as (m: typeof module) => void)(module);
      return module.exports;
    });
    return { exports: result, outcome };
  }

  /** `name` with `text`, and beside it the cache written for first.cjs (the text of 41). */
  async function withFirstCache(name: string, text: string): Promise<void> {
    await writeFile(path.join(dir, name), text);
    await copyFile(path.join(dir, 'first.cjs.cache'), path.join(dir, `${name}.cache`));
  }

  it('compiles from source and writes the cache when there is none', async () => {
    const first = run('first.cjs');
    assert.equal(first.exports.value, 41);
    assert.deepEqual(first.outcome, { cache: 'missing', written: path.join(dir, 'first.cjs.cache') });
    // Renamed into place: no partial file is left.
    assert.deepEqual((await readdir(dir)).sort(), ['first.cjs', 'first.cjs.cache']);
  });

  it('runs the same text from the cache', async () => {
    await withFirstCache('same.cjs', answerScript(41));
    const same = run('same.cjs');
    assert.deepEqual(same.outcome, { cache: 'used' });
    assert.equal(same.exports.value, 41);
    assert.equal(same.exports.inner?.(), 41);
  });

  it('takes no cache made from another text of the same length (V8 checks only the length)', async () => {
    await withFirstCache('changed.cjs', answerScript(42));
    const changed = run('changed.cjs');
    assert.deepEqual(changed.outcome, { cache: 'stale', written: path.join(dir, 'changed.cjs.cache') });
    assert.equal(changed.exports.value, 42);
  });

  it('compiles from source when V8 refuses the cache, and leaves it', async () => {
    await withFirstCache('refused.cjs', answerScript(41));
    const cache = await readFile(path.join(dir, 'refused.cjs.cache'));
    // Our digest kept, V8's header zeroed: V8's own checks refuse it.
    cache.fill(0, 32, 64);
    await writeFile(path.join(dir, 'refused.cjs.cache'), cache);
    const refused = run('refused.cjs');
    assert.deepEqual(refused.outcome, { cache: 'rejected' });
    assert.equal(refused.exports.value, 41);
    assert.deepEqual(await readFile(path.join(dir, 'refused.cjs.cache')), cache);
  });

  it('runs without a cache where none can be written', async () => {
    await writeFile(path.join(dir, 'unwritable.cjs'), answerScript(43));
    // A folder where the cache should be: no file can be renamed onto it.
    await mkdir(path.join(dir, 'unwritable.cjs.cache'));
    const unwritable = run('unwritable.cjs');
    assert.equal(unwritable.exports.value, 43);
    assert.equal(unwritable.outcome.cache, 'missing');
    assert.match(unwritable.outcome.notWritten ?? '', /EISDIR/);
    assert.deepEqual(
      (await readdir(dir)).filter((f) => f.includes('partial')),
      [],
    );
  });
});
