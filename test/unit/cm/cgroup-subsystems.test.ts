import assert from 'node:assert/strict';
import { test } from 'node:test';
import { detectCgroupSubsystems, v1MountPoints } from '../../../src/cm/cgroup-subsystems.js';
import { TempCgroupTree } from '../../../src/cm/testing/temp-cgroup-fs.js';

test('v1: one entry per hierarchy, combined mounts split, the shortest path kept, hybrid cgroup2 noted apart', async () => {
  const tree = await TempCgroupTree.create({
    version: 'v1',
    mounts: ['cpu,cpuacct', 'net_cls,net_prio', 'memory', 'systemd'],
    links: { cpu: 'cpu,cpuacct', cpuacct: 'cpu,cpuacct', net_cls: 'net_cls,net_prio' },
  });
  try {
    const s = await detectCgroupSubsystems(tree.fs, tree.root);
    assert.equal(s.version, 'v1');
    assert.deepEqual(
      s.version === 'v1' && s.hierarchies.map((h) => [h.mountPoint.slice(tree.root.length), h.subsystems]),
      [
        ['/cpu', ['cpu', 'cpuacct']],
        ['/memory', ['memory']],
        ['/net_cls', ['net_cls', 'net_prio']],
        ['/systemd', ['name=systemd']],
      ],
    );
    const mounts = v1MountPoints(s);
    assert.equal(mounts.get('cpuacct'), `${tree.root}/cpu`);
    assert.equal(mounts.get('name=systemd'), `${tree.root}/systemd`);
    assert.equal(mounts.has('unified'), false);
    assert.equal(s.version === 'v1' && s.hybridUnified, `${tree.root}/unified`);
  } finally {
    await tree.cleanup();
  }
});

test('no cgroup mount at all is an error, not an empty layout', async () => {
  const tree = await TempCgroupTree.create({ version: 'v1', mounts: [] });
  try {
    await assert.rejects(detectCgroupSubsystems(tree.fs, tree.root), /no cgroup mounts found/);
  } finally {
    await tree.cleanup();
  }
});

test('this machine: the real /sys/fs/cgroup is detected', async (t) => {
  const { realCgroupFs } = await import('../../../src/cm/cgroup-fs.js');
  const fs = realCgroupFs();
  if (!(await fs.exists('/sys/fs/cgroup'))) return t.skip('no /sys/fs/cgroup');
  const s = await detectCgroupSubsystems(fs);
  if (s.version === 'v2') assert.ok(s.controllers.length > 0);
  else assert.ok(v1MountPoints(s).has('cpu'), JSON.stringify(s));
});
