import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { realCgroupFs } from '../../../src/cm/cgroup-fs.js';
import { promiseFileCalls } from '../../../src/lib/memory-fs.js';

let tmp = '';
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'cgroup-fs-'));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const kinds = [
  ['synchronous calls (the default)', realCgroupFs()],
  ['fs/promises', realCgroupFs(promiseFileCalls)],
] as const;

for (const [kind, fs] of kinds) {
  describe(`realCgroupFs, ${kind}`, () => {
    it('answers as the cgroup code expects: mkdir made or found, exists, files written in place, entries', async () => {
      const root = await mkdtemp(path.join(tmp, 'root-'));
      const cg = path.join(root, 'pod1');
      assert.equal(await fs.mkdir(cg), true);
      assert.equal(await fs.mkdir(cg), false);
      await assert.rejects(fs.mkdir(path.join(root, 'missing', 'child')), { code: 'ENOENT' });
      assert.equal(await fs.exists(cg), true);
      assert.equal(await fs.exists(path.join(root, 'missing')), false);

      const shares = path.join(cg, 'cpu.shares');
      await writeFile(shares, '1024\n');
      await fs.writeFile(shares, '2');
      assert.equal(await readFile(shares, 'utf8'), '2');
      assert.equal(await fs.readFile(shares), '2');
      // A cgroup's interface files are never made by writing.
      await assert.rejects(fs.writeFile(path.join(cg, 'cpu.none'), '2'), { code: 'ENOENT' });
      // A file in place of a folder: not there, rather than an error.
      assert.equal(await fs.exists(path.join(shares, 'x')), false);

      await mkdir(path.join(root, 'cpu,cpuacct'));
      await symlink('cpu,cpuacct', path.join(root, 'cpu'));
      const entries = (await fs.readdir(root)).sort((a, b) => a.name.localeCompare(b.name));
      assert.deepEqual(entries, [
        { name: 'cpu', isDirectoryOrLink: true },
        { name: 'cpu,cpuacct', isDirectoryOrLink: true },
        { name: 'pod1', isDirectoryOrLink: true },
      ]);
      assert.equal(await fs.realpath(path.join(root, 'cpu')), path.join(root, 'cpu,cpuacct'));

      await assert.rejects(fs.rmdir(cg), { code: 'ENOTEMPTY' });
      await rm(shares);
      await fs.rmdir(cg);
      assert.equal(await fs.exists(cg), false);
    });
  });
}
