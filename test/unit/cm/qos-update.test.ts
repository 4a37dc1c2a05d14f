/** The Burstable tier follows its pods: at pod start and stop, and once a minute on the clock. */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { createContainerManager } from '../../../src/cm/container-manager.js';
import { TempCgroupTree } from '../../../src/cm/testing/temp-cgroup-fs.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { waitFor } from '../../helpers/wait.js';
import { bestEffortPod, burstablePod, capacity, config, container, guaranteedPod, pod } from './fixtures.js';

/** A container manager over a temp v1 tree, on a clock the test moves. */
async function managerOnFakeClock() {
  const tree = await TempCgroupTree.create({ version: 'v1', mounts: ['cpu', 'cpuset', 'memory', 'pids'] });
  const clock = new FakeClock();
  const cm = await createContainerManager({
    config: config(),
    fs: tree.fs,
    cgroupMountRoot: tree.root,
    capacity,
    clock,
  });
  return { tree, clock, cm };
}

test('the Burstable tier is updated every minute from the active pods, and stops with the manager', async () => {
  setLogSink(() => undefined);
  const { tree, clock, cm } = await managerOnFakeClock();
  let active: Pod[] = [guaranteedPod(), bestEffortPod()];
  try {
    await cm.start(() => active);
    const shares = () => tree.read('cpu/kubepods/burstable/cpu.shares');
    assert.equal(await shares(), '2'); // no Burstable pod: the minimum

    // A pod whose init container asks for more than its app containers counts with the larger.
    active = [
      burstablePod('b-1'),
      pod('b-2', [container('a', { cpu: '100m' })], [container('i', { cpu: '1' })]),
    ];
    const startedMs = clock.now();
    clock.advance(59_999);
    assert.equal(cm.status().lastQOSUpdate?.atMs, startedMs); // not due yet
    clock.advance(1);
    await waitFor('the periodic QoS update', () => cm.status().lastQOSUpdate?.atMs === clock.now(), 5000, 5);
    assert.equal(await shares(), '1331'); // 300m + 1000m
    assert.equal(cm.status().lastQOSUpdate?.burstableCpuShares, 1331);
    assert.equal(cm.status().lastQOSUpdate?.atMs, clock.now());

    active = [];
    await cm.updateQOSCgroups();
    assert.equal(await shares(), '2');

    // The next round was scheduled once the last one finished; stop() cancels it.
    await waitFor('the next round to be scheduled', () => clock.pendingTimers() === 1, 5000, 5);
    cm.stop();
    assert.equal(clock.pendingTimers(), 0);
    active = [burstablePod('b-3')];
    clock.advance(120_000);
    assert.equal(await shares(), '2');
    assert.equal(cm.status().state, 'STOPPED');
  } finally {
    cm.stop();
    setLogSink((line) => process.stderr.write(line + '\n'));
    await tree.cleanup();
  }
});

test('an update that changes nothing writes nothing; the periodic one writes every value again', async () => {
  setLogSink(() => undefined);
  const { tree, clock, cm } = await managerOnFakeClock();
  let active: Pod[] = [burstablePod('b-1')];
  try {
    await cm.start(() => active);
    const writes: string[] = [];
    const writeFile = tree.fs.writeFile.bind(tree.fs);
    tree.fs.writeFile = (file, data) => {
      writes.push(file.slice(tree.root.length + 1));
      return writeFile(file, data);
    };
    // A BestEffort pod comes: the tiers' values stay as they are, so neither file is written.
    active = [...active, bestEffortPod('be-1')];
    await cm.updateQOSCgroups();
    assert.equal(writes.length, 0, writes.join(', '));
    // A second Burstable pod changes the Burstable tier's shares: both tiers are written.
    active = [...active, burstablePod('b-2')];
    await cm.updateQOSCgroups();
    assert.equal(await tree.read('cpu/kubepods/burstable/cpu.shares'), '614');
    assert.ok(writes.includes('cpu/kubepods/burstable/cpu.shares'));
    assert.ok(writes.includes('cpu/kubepods/besteffort/cpu.shares'));

    // A write that fails after the other tier took its value: the next update writes again, even
    // one that comes back to the values written before the failure.
    tree.fs.writeFile = (file, data) => {
      if (file.endsWith('besteffort/cpu.shares'))
        return Promise.reject(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
      return writeFile(file, data);
    };
    active = [burstablePod('b-1'), burstablePod('b-2'), burstablePod('b-3')];
    await assert.rejects(cm.updateQOSCgroups());
    assert.equal(await tree.read('cpu/kubepods/burstable/cpu.shares'), '921');
    tree.fs.writeFile = writeFile;
    active = [burstablePod('b-1'), burstablePod('b-2')];
    await cm.updateQOSCgroups();
    assert.equal(await tree.read('cpu/kubepods/burstable/cpu.shares'), '614');

    // Changed behind the kubelet's back: set right by the next periodic update, not by a pod's.
    await tree.fs.writeFile(path.join(tree.root, 'cpu/kubepods/besteffort/cpu.shares'), '1024');
    await cm.updateQOSCgroups();
    assert.equal(await tree.read('cpu/kubepods/besteffort/cpu.shares'), '1024');
    clock.advance(60_000);
    await waitFor(
      'the periodic QoS update',
      async () => (await tree.read('cpu/kubepods/besteffort/cpu.shares')) === '2',
      5000,
      5,
    );
  } finally {
    cm.stop();
    setLogSink((line) => process.stderr.write(line + '\n'));
    await tree.cleanup();
  }
});
