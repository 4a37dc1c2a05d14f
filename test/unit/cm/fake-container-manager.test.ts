/** The fake names pod cgroups as the real one does with the cgroupfs driver, and keeps the same contract. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createContainerManager, type ContainerManager } from '../../../src/cm/container-manager.js';
import { FakeContainerManager } from '../../../src/cm/testing/fake-container-manager.js';
import { TempCgroupTree } from '../../../src/cm/testing/temp-cgroup-fs.js';
import { setLogSink } from '../../../src/lib/log.js';
import { bestEffortPod, burstablePod, capacity, config, guaranteedPod } from './fixtures.js';

async function contract(cm: ContainerManager): Promise<void> {
  const pods = [guaranteedPod('g-1'), burstablePod('b-1'), bestEffortPod('e-1')];
  await cm.start(() => pods);
  for (const p of pods) {
    assert.equal(await cm.exists(p), false);
    await cm.ensurePodCgroup(p);
    assert.equal(await cm.exists(p), true);
  }
  assert.equal(await cm.removePodCgroup('g-1'), true);
  assert.equal(await cm.exists(pods[0]!), false);
  assert.equal(await cm.removePodCgroup('g-1'), true);
  assert.deepEqual(await cm.cleanupOrphanedPodCgroups((uid) => uid === 'e-1'), ['b-1']);
  assert.equal(await cm.exists(pods[2]!), true);
  assert.equal(cm.status().state, 'RUNNING');
  cm.stop();
  assert.equal(cm.status().state, 'STOPPED');
}

test('fake and real agree on names and on the contract', async () => {
  setLogSink(() => undefined);
  const tree = await TempCgroupTree.create({ version: 'v1', mounts: ['cpu', 'cpuset', 'memory', 'pids'] });
  try {
    for (const root of ['', '/custom']) {
      if (root)
        for (const m of ['cpu', 'cpuset', 'memory', 'pids']) await tree.fs.mkdir(`${tree.root}/${m}${root}`);
      const real = await createContainerManager({
        config: config({ cgroupRoot: root }),
        fs: tree.fs,
        cgroupMountRoot: tree.root,
        capacity,
      });
      const fake = new FakeContainerManager(root);
      for (const p of [guaranteedPod(), burstablePod(), bestEffortPod()]) {
        assert.equal(fake.podCgroupParent(p), real.podCgroupParent(p));
      }
      await contract(real);
      await contract(fake);
    }
  } finally {
    setLogSink((line) => process.stderr.write(line + '\n'));
    await tree.cleanup();
  }
});

test('the fake can fail ensurePodCgroup and hold a busy cgroup', async () => {
  const fake = new FakeContainerManager();
  await fake.start(() => []);
  fake.ensureError = new Error('no space');
  await assert.rejects(fake.ensurePodCgroup(guaranteedPod()), /no space/);
  fake.ensureError = undefined;
  await fake.ensurePodCgroup(guaranteedPod());
  fake.busy.add('guaranteed-0001');
  assert.equal(await fake.removePodCgroup('guaranteed-0001'), false);
  assert.deepEqual(
    fake.calls.map((c) => c.method),
    ['start', 'ensurePodCgroup', 'ensurePodCgroup', 'removePodCgroup'],
  );
});
