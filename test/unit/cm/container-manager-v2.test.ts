/**
 * The container manager on a temp folder laid out like a cgroup v2 machine: controllers handed down
 * through cgroup.subtree_control, weights instead of shares, cpu.max instead of the CFS files.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { createContainerManager, type ContainerManager } from '../../../src/cm/container-manager.js';
import { detectCgroupSubsystems } from '../../../src/cm/cgroup-subsystems.js';
import { TempCgroupTree } from '../../../src/cm/testing/temp-cgroup-fs.js';
import type { Pod } from '../../../src/api/core-v1.js';
import { setLogSink } from '../../../src/lib/log.js';
import { bestEffortPod, burstablePod, capacity, config, guaranteedPod, MiB } from './fixtures.js';

const GiB = 1024 * MiB;
const CONTROLLERS = ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids', 'rdma'];

describe('container manager on cgroup v2', () => {
  let tree: TempCgroupTree;
  let cm: ContainerManager;
  let active: Pod[];

  let nodeEvents: string[];

  async function make(overrides = {}, controllers = CONTROLLERS): Promise<void> {
    tree = await TempCgroupTree.create({ version: 'v2', controllers, hugePageUnits: ['2MB'] });
    nodeEvents = [];
    cm = await createContainerManager({
      nodeName: 'node-cm',
      recorder: {
        eventFor: (ref, type, reason, message) =>
          nodeEvents.push(`${ref.kind}/${ref.name}/${ref.uid} ${type} ${reason} ${message}`),
      },
      config: config(overrides),
      fs: tree.fs,
      cgroupMountRoot: tree.root,
      capacity,
      killProcess: () => assert.fail('nothing should be killed'),
    });
  }

  beforeEach(() => {
    active = [];
    setLogSink(() => undefined);
  });

  afterEach(async () => {
    cm?.stop();
    setLogSink((line) => process.stderr.write(line + '\n'));
    await tree?.cleanup();
  });

  test('detection: cgroup.controllers at the root means v2', async () => {
    await make();
    assert.deepEqual(await detectCgroupSubsystems(tree.fs, tree.root), {
      version: 'v2',
      root: tree.root,
      controllers: CONTROLLERS,
    });
  });

  test('start hands the controllers down and sets weights, memory.max and pids.max', async () => {
    await make();
    active = [burstablePod('b-1'), burstablePod('b-2')];
    await cm.start(() => active);
    // Every level above a cgroup it makes hands its children all it has, as libcontainer's fs2 does.
    assert.equal(await tree.read('cgroup.subtree_control'), CONTROLLERS.join(' '));
    assert.equal(await tree.read('kubepods/cgroup.subtree_control'), CONTROLLERS.join(' '));
    assert.equal(await tree.read('kubepods/burstable/cgroup.controllers'), CONTROLLERS.join(' '));
    // 3328 shares → weight 127; 600m → 614 shares → weight 24; the minimum → 1.
    assert.equal(await tree.read('kubepods/cpu.weight'), '127');
    assert.equal(await tree.read('kubepods/memory.max'), String(6.5 * GiB));
    assert.equal(await tree.read('kubepods/pids.max'), '31768');
    assert.equal(await tree.read('kubepods/hugetlb.2MB.max'), '0');
    assert.equal(await tree.read('kubepods/burstable/cpu.weight'), '24');
    assert.equal(await tree.read('kubepods/besteffort/cpu.weight'), '1');
    assert.equal(await tree.read('kubepods/besteffort/hugetlb.2MB.max'), (1n << 62n).toString());
    assert.equal(await tree.read('kubepods/besteffort/memory.max'), 'max');
    assert.equal(await tree.read('kubepods/besteffort/cpu.max'), 'max 100000');
    assert.equal(cm.status().cgroupVersion, 'v2');
    // Upstream's enforceNodeAllocatableCgroups, once kubepods has its limits.
    assert.deepEqual(nodeEvents, [
      'Node/node-cm/node-cm Normal NodeAllocatableEnforced Updated Node Allocatable limit across pods',
    ]);
  });

  test('each QoS class of pod gets the files and values upstream writes on v2', async () => {
    await make();
    await cm.start(() => active);
    const g = guaranteedPod();
    const b = burstablePod();
    const e = bestEffortPod();
    active.push(g, b, e);
    for (const p of [g, b, e]) await cm.ensurePodCgroup(p);

    assert.equal(await tree.read('kubepods/podguaranteed-0001/cpu.weight'), '39');
    assert.equal(await tree.read('kubepods/podguaranteed-0001/cpu.max'), '100000 100000');
    assert.equal(await tree.read('kubepods/podguaranteed-0001/memory.max'), String(256 * MiB));
    assert.equal(await tree.read('kubepods/podguaranteed-0001/pids.max'), '1024');
    assert.equal(await tree.read('kubepods/podguaranteed-0001/hugetlb.2MB.max'), '0');

    assert.equal(await tree.read('kubepods/burstable/podburstable-0001/cpu.weight'), '12');
    assert.equal(await tree.read('kubepods/burstable/podburstable-0001/cpu.max'), '70000 100000');
    assert.equal(await tree.read('kubepods/burstable/podburstable-0001/memory.max'), 'max');

    assert.equal(await tree.read('kubepods/besteffort/podbesteffort-0001/cpu.weight'), '1');
    assert.equal(await tree.read('kubepods/besteffort/podbesteffort-0001/cpu.max'), 'max 100000');
    assert.equal(await tree.read('kubepods/besteffort/podbesteffort-0001/pids.max'), '1024');

    // The pod's own cgroup hands nothing down yet: the runtime does that when it makes the containers'.
    assert.equal(await tree.read('kubepods/burstable/podburstable-0001/cgroup.subtree_control'), '');
    for (const p of [g, b, e]) assert.equal(await cm.exists(p), true);
    assert.equal(await tree.read('kubepods/burstable/cpu.weight'), '12');
  });

  test('cpuCFSQuota off: cpu.max has no quota but keeps the period', async () => {
    await make({ cpuCFSQuota: false });
    await cm.start(() => active);
    await cm.ensurePodCgroup(guaranteedPod());
    assert.equal(await tree.read('kubepods/podguaranteed-0001/cpu.max'), 'max 100000');
  });

  test('a pod cgroup without the controllers it needs does not count as existing', async () => {
    await make();
    await cm.start(() => active);
    const p = burstablePod();
    await cm.ensurePodCgroup(p);
    await tree.fs.writeFile(`${tree.root}/kubepods/burstable/podburstable-0001/cgroup.controllers`, 'cpu');
    assert.equal(await cm.exists(p), false);
  });

  test('remove and orphan cleanup work on the single tree', async () => {
    await make();
    await cm.start(() => active);
    for (const p of [guaranteedPod('g-1'), burstablePod('b-1'), bestEffortPod('e-1')])
      await cm.ensurePodCgroup(p);
    assert.equal(await cm.removePodCgroup('g-1'), true);
    assert.equal(await tree.exists('kubepods/podg-1'), false);
    assert.deepEqual((await cm.cleanupOrphanedPodCgroups((uid) => uid === 'e-1')).sort(), ['b-1']);
    assert.equal(await tree.exists('kubepods/burstable/podb-1'), false);
    assert.ok(await tree.exists('kubepods/besteffort/pode-1'));
  });

  test('a controller the root lacks is reported missing and its files are not written', async () => {
    await make({}, ['cpu', 'memory']);
    await cm.start(() => active);
    await cm.ensurePodCgroup(guaranteedPod());
    assert.equal(await tree.exists('kubepods/podguaranteed-0001/pids.max'), false);
    assert.equal(await tree.read('kubepods/podguaranteed-0001/memory.max'), String(256 * MiB));
    const missing = cm
      .status()
      .controllers.filter((c) => c.state === 'missing')
      .map((c) => c.name);
    assert.deepEqual(missing.sort(), ['cpuset', 'hugetlb', 'pids']);
  });
});
