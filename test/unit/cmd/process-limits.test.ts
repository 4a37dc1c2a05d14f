import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { applyOomScoreAdj, readOpenFilesLimit, setMaxOpenFiles } from '../../../src/cmd/process-limits.js';

// A process of our own to change, so the test runner's limits stay as they are.
let child: ReturnType<typeof spawn>;
before(() => {
  child = spawn('sleep', ['60'], { stdio: 'ignore' });
});
after(() => {
  child.kill('SIGKILL');
});

test('oomScoreAdj is written to the process', async () => {
  assert.equal(await applyOomScoreAdj(child.pid!, 500), undefined);
  assert.equal((await readFile(`/proc/${child.pid}/oom_score_adj`, 'utf8')).trim(), '500');
});

test('oomScoreAdj for a process that is gone is an error, not a throw', async () => {
  const err = await applyOomScoreAdj(2 ** 22 + 1, 500);
  assert.ok(err instanceof Error);
});

test('maxOpenFiles sets the soft and hard limit', async () => {
  assert.equal(await setMaxOpenFiles(child.pid!, 1000), undefined);
  assert.deepEqual(await readOpenFilesLimit(child.pid!), { soft: '1000', hard: '1000' });
  // Already so: nothing to do, and still no error.
  assert.equal(await setMaxOpenFiles(child.pid!, 1000), undefined);
});

test('maxOpenFiles above what the kernel allows is an error naming why', async () => {
  const nrOpen = Number((await readFile('/proc/sys/fs/nr_open', 'utf8')).trim());
  const err = await setMaxOpenFiles(child.pid!, nrOpen + 1);
  assert.ok(err instanceof Error);
  assert.match(err.message, /prlimit|limit|Operation not permitted/i);
  assert.deepEqual(await readOpenFilesLimit(child.pid!), { soft: '1000', hard: '1000' });
});
