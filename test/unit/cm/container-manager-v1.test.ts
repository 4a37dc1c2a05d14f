/**
 * The container manager on a temp folder laid out like a cgroup v1 machine (combined cpu,cpuacct
 * mount with its links, hugetlb, the systemd named hierarchy, and two hierarchies it does not
 * manage): the exact files and values it writes for the node, the QoS tiers and each QoS class.
 */
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import {
  createContainerManager,
  type ContainerManager,
  type ContainerManagerConfig,
} from '../../../src/cm/container-manager.js';
import { TempCgroupTree, V1_MEMORY_UNLIMITED } from '../../../src/cm/testing/temp-cgroup-fs.js';
import type { Pod } from '../../../src/api/core-v1.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { bestEffortPod, burstablePod, capacity, config, guaranteedPod, MiB } from './fixtures.js';

const GiB = 1024 * MiB;
const UNBOUNDED = (1n << 62n).toString();

const MOUNTS = ['cpu,cpuacct', 'cpuset', 'memory', 'pids', 'hugetlb', 'blkio', 'devices', 'systemd'];
const LINKS = { cpu: 'cpu,cpuacct', cpuacct: 'cpu,cpuacct' };

function restoreLogs(): void {
  setLogSink((line) => process.stderr.write(line + '\n'));
}

describe('container manager on cgroup v1', () => {
  let tree: TempCgroupTree;
  let cm: ContainerManager;
  let active: Pod[];
  let killed: number[];
  let logs: string[];

  async function make(
    overrides: Partial<ContainerManagerConfig> = {},
    layout: Partial<{ mounts: string[]; readOnly: string[] }> = {},
    clock?: FakeClock,
  ): Promise<void> {
    tree = await TempCgroupTree.create({
      version: 'v1',
      mounts: layout.mounts ?? MOUNTS,
      links: (layout.mounts ?? MOUNTS).includes('cpu,cpuacct') ? LINKS : {},
      readOnly: layout.readOnly ?? [],
      hugePageUnits: ['2MB'],
    });
    cm = await createContainerManager({
      config: config(overrides),
      fs: tree.fs,
      cgroupMountRoot: tree.root,
      capacity,
      killProcess: (pid) => killed.push(pid),
      ...(clock ? { clock } : {}),
    });
  }

  beforeEach(() => {
    active = [];
    killed = [];
    logs = [];
    setLogSink((line) => logs.push(line));
  });

  afterEach(async () => {
    cm?.stop();
    restoreLogs();
    await tree?.cleanup();
  });

  test('start makes kubepods with the node allocatable limits and the two QoS tiers', async () => {
    await make();
    active = [burstablePod('b-1'), burstablePod('b-2'), guaranteedPod(), bestEffortPod()];
    await cm.start(() => active);

    // 4 cpus less 750m reserved = 3250m → 3328 shares; 8Gi less 1.5Gi; 32768 tasks less 1000.
    assert.equal(await tree.read('cpu,cpuacct/kubepods/cpu.shares'), '3328');
    assert.equal(await tree.read('memory/kubepods/memory.limit_in_bytes'), String(6.5 * GiB));
    assert.equal(await tree.read('pids/kubepods/pids.max'), '31768');
    assert.equal(await tree.read('hugetlb/kubepods/hugetlb.2MB.limit_in_bytes'), '0');
    // cpuset's new cgroups need CPUs and memory nodes before any task may join.
    assert.equal(await tree.read('cpuset/kubepods/cpuset.cpus'), '0-3');
    assert.equal(await tree.read('cpuset/kubepods/cpuset.mems'), '0');
    assert.equal(await tree.read('cpuset/kubepods/burstable/cpuset.cpus'), '0-3');

    assert.equal(await tree.read('cpu,cpuacct/kubepods/besteffort/cpu.shares'), '2');
    // Two Burstable pods of 300m each: 600m → 614 shares.
    assert.equal(await tree.read('cpu,cpuacct/kubepods/burstable/cpu.shares'), '614');
    for (const tier of ['burstable', 'besteffort']) {
      assert.equal(await tree.read(`hugetlb/kubepods/${tier}/hugetlb.2MB.limit_in_bytes`), UNBOUNDED);
      // No memory or pids limit on a tier.
      assert.equal(await tree.read(`memory/kubepods/${tier}/memory.limit_in_bytes`), V1_MEMORY_UNLIMITED);
      assert.equal(await tree.read(`pids/kubepods/${tier}/pids.max`), 'max');
      // Made in every hierarchy, managed or not, as libcontainer's Apply(-1) makes them.
      for (const mount of ['blkio', 'devices', 'systemd', 'cpuset'])
        assert.ok(await tree.exists(`${mount}/kubepods/${tier}`));
    }
    // The hybrid machine's cgroup2 mount gets the directories (runc puts containers there too) and no limits.
    assert.ok(await tree.exists('unified/kubepods/burstable'));
    assert.equal(await tree.exists('unified/kubepods/cpu.shares'), false);

    const status = cm.status();
    assert.equal(status.state, 'RUNNING');
    assert.equal(status.cgroupVersion, 'v1');
    assert.equal(status.nodeAllocatableCgroup, '/kubepods');
    assert.deepEqual(status.qosCgroups, {
      guaranteed: '/kubepods',
      burstable: '/kubepods/burstable',
      besteffort: '/kubepods/besteffort',
    });
    assert.ok(status.created.includes(`${tree.root}/memory/kubepods/burstable`));
    assert.deepEqual(status.lastQOSUpdate && { ...status.lastQOSUpdate, atMs: 0 }, {
      burstableCpuShares: 614,
      bestEffortCpuShares: 2,
      atMs: 0,
    });
    assert.ok(status.controllers.every((c) => c.state === 'ok'));
  });

  test('kubepods gets the whole machine when node allocatable is not enforced on pods', async () => {
    await make({ enforceNodeAllocatable: ['none'] });
    await cm.start(() => active);
    assert.equal(await tree.read('cpu,cpuacct/kubepods/cpu.shares'), '4096');
    assert.equal(await tree.read('memory/kubepods/memory.limit_in_bytes'), String(8 * GiB));
    assert.equal(await tree.read('pids/kubepods/pids.max'), '32768');
  });

  test('a Guaranteed pod sits in kubepods itself with shares, quota, memory and pids limits', async () => {
    await make();
    await cm.start(() => active);
    const p = guaranteedPod();
    assert.equal(cm.podCgroupParent(p), '/kubepods/podguaranteed-0001');
    assert.equal(await cm.exists(p), false);
    active.push(p);
    await cm.ensurePodCgroup(p);
    assert.equal(await cm.exists(p), true);
    const dir = 'kubepods/podguaranteed-0001';
    assert.equal(await tree.read(`cpu,cpuacct/${dir}/cpu.shares`), '1024');
    assert.equal(await tree.read(`cpu,cpuacct/${dir}/cpu.cfs_quota_us`), '100000');
    assert.equal(await tree.read(`cpu,cpuacct/${dir}/cpu.cfs_period_us`), '100000');
    assert.equal(await tree.read(`memory/${dir}/memory.limit_in_bytes`), String(256 * MiB));
    assert.equal(await tree.read(`pids/${dir}/pids.max`), '1024');
    assert.equal(await tree.read(`cpuset/${dir}/cpuset.cpus`), '0-3');
    // Huge pages the pod does not ask for are not its to use.
    assert.equal(await tree.read(`hugetlb/${dir}/hugetlb.2MB.limit_in_bytes`), '0');
  });

  test("a pod cgroup takes its tier's cpuset in one step; a tier left empty is filled on the way down", async () => {
    await make();
    await cm.start(() => active);
    const reads: string[] = [];
    const readFile = tree.fs.readFile.bind(tree.fs);
    tree.fs.readFile = (file) => {
      reads.push(file.slice(tree.root.length + 1));
      return readFile(file);
    };
    const first = bestEffortPod('be-1');
    await cm.ensurePodCgroup(first);
    assert.equal(await tree.read('cpuset/kubepods/besteffort/podbe-1/cpuset.cpus'), '0-3');
    assert.equal(await tree.read('cpuset/kubepods/besteffort/podbe-1/cpuset.mems'), '0');
    // Only the tier's two files: not every level's from the root down.
    assert.deepEqual(
      reads.filter((f) => f.startsWith('cpuset/')),
      ['cpuset/kubepods/besteffort/cpuset.cpus', 'cpuset/kubepods/besteffort/cpuset.mems'],
    );

    // A tier someone else left without CPUs: the walk fills it, then the pod's cgroup.
    await writeFile(path.join(tree.root, 'cpuset/kubepods/besteffort/cpuset.cpus'), '\n');
    const second = bestEffortPod('be-2');
    await cm.ensurePodCgroup(second);
    assert.equal(await tree.read('cpuset/kubepods/besteffort/cpuset.cpus'), '0-3');
    assert.equal(await tree.read('cpuset/kubepods/besteffort/podbe-2/cpuset.cpus'), '0-3');
    assert.equal(await tree.read('cpuset/kubepods/besteffort/podbe-2/cpuset.mems'), '0');
  });

  test('for 2 s after a full check a sync looks in one hierarchy; a pod cgroup removed behind its back is made again', async () => {
    const clock = new FakeClock();
    await make({}, {}, clock);
    await cm.start(() => active);
    const p = burstablePod('b-seen');
    active.push(p);
    await cm.ensurePodCgroup(p);
    const looked: string[] = [];
    const exists = tree.fs.exists.bind(tree.fs);
    tree.fs.exists = (file) => {
      looked.push(file.slice(tree.root.length + 1));
      return exists(file);
    };
    await cm.ensurePodCgroup(p);
    assert.deepEqual(looked, ['cpu/kubepods/burstable/podb-seen']); // the first hierarchy (cpu → cpu,cpuacct)

    // Gone from every hierarchy (an admin's rmdir): the next sync makes it again, limits and all.
    for (const mount of ['cpu,cpuacct', 'cpuset', 'memory', 'pids', 'hugetlb', 'blkio', 'devices', 'systemd'])
      await rm(path.join(tree.root, mount, 'kubepods/burstable/podb-seen'), { recursive: true });
    assert.equal(await cm.exists(p), false);
    await cm.ensurePodCgroup(p);
    assert.equal(await cm.exists(p), true);
    assert.equal(await tree.read('cpu,cpuacct/kubepods/burstable/podb-seen/cpu.shares'), '307');

    // Taken out of one other hierarchy only: unseen until the next full check, 2 s after the last.
    await rm(path.join(tree.root, 'memory/kubepods/burstable/podb-seen'), { recursive: true });
    assert.equal(await cm.exists(p), true);
    clock.advance(2000);
    assert.equal(await cm.exists(p), false);
    await cm.ensurePodCgroup(p);
    assert.equal(await tree.exists('memory/kubepods/burstable/podb-seen'), true);
  });

  test('a Burstable pod gets its quota, no memory limit, and the tier counts its request', async () => {
    await make();
    await cm.start(() => active);
    const p = burstablePod();
    active.push(p);
    await cm.ensurePodCgroup(p);
    const dir = 'kubepods/burstable/podburstable-0001';
    assert.equal(cm.podCgroupParent(p), `/${dir}`);
    assert.equal(await tree.read(`cpu,cpuacct/${dir}/cpu.shares`), '307');
    assert.equal(await tree.read(`cpu,cpuacct/${dir}/cpu.cfs_quota_us`), '70000');
    assert.equal(await tree.read(`memory/${dir}/memory.limit_in_bytes`), V1_MEMORY_UNLIMITED);
    assert.equal(await tree.read(`pids/${dir}/pids.max`), '1024');
    // The tier was brought up to date before the pod's cgroup was made.
    assert.equal(await tree.read('cpu,cpuacct/kubepods/burstable/cpu.shares'), '307');
  });

  test('a BestEffort pod gets the minimum shares and nothing else but the pids limit', async () => {
    await make({ podPidsLimit: -1 });
    await cm.start(() => active);
    const p = bestEffortPod();
    await cm.ensurePodCgroup(p);
    const dir = 'kubepods/besteffort/podbesteffort-0001';
    assert.equal(cm.podCgroupParent(p), `/${dir}`);
    assert.equal(await tree.read(`cpu,cpuacct/${dir}/cpu.shares`), '2');
    assert.equal(await tree.read(`cpu,cpuacct/${dir}/cpu.cfs_quota_us`), '-1');
    assert.equal(await tree.read(`memory/${dir}/memory.limit_in_bytes`), V1_MEMORY_UNLIMITED);
    assert.equal(await tree.read(`pids/${dir}/pids.max`), 'max');
  });

  test('an existing pod cgroup keeps the limits it was made with', async () => {
    await make();
    await cm.start(() => active);
    const p = burstablePod();
    await cm.ensurePodCgroup(p);
    await tree.fs.writeFile(
      `${tree.root}/cpu,cpuacct/kubepods/burstable/podburstable-0001/cpu.shares`,
      '999',
    );
    await cm.ensurePodCgroup(p);
    assert.equal(await tree.read('cpu,cpuacct/kubepods/burstable/podburstable-0001/cpu.shares'), '999');
  });

  test('removePodCgroup kills what is left, leaves a busy cgroup for later, and removes it once empty', async () => {
    await make();
    await cm.start(() => active);
    const p = burstablePod();
    active.push(p);
    await cm.ensurePodCgroup(p);
    const dir = 'kubepods/burstable/podburstable-0001';
    // A container cgroup the runtime left, with a task in it.
    await tree.fs.mkdir(`${tree.root}/cpu,cpuacct/${dir}/ctr1`);
    await tree.setProcs(`cpu,cpuacct/${dir}/ctr1`, [424242]);

    active = [];
    assert.equal(await cm.removePodCgroup('burstable-0001'), false);
    assert.deepEqual(killed, [424242]);
    assert.ok(await tree.exists(`cpu,cpuacct/${dir}/ctr1`));
    // The other hierarchies are already clean.
    assert.equal(await tree.exists(`memory/${dir}`), false);
    assert.equal(await tree.exists(`systemd/${dir}`), false);
    assert.equal(await tree.exists(`unified/${dir}`), false);

    await tree.setProcs(`cpu,cpuacct/${dir}/ctr1`, []);
    assert.equal(await cm.removePodCgroup('burstable-0001'), true);
    assert.equal(await tree.exists(`cpu,cpuacct/${dir}`), false);
    assert.equal(await cm.exists(p), false);
    assert.equal(await tree.read('cpu,cpuacct/kubepods/burstable/cpu.shares'), '2');
    // Nothing there: nothing to do.
    assert.equal(await cm.removePodCgroup('no-such-pod'), true);
  });

  test('a process that is already gone counts as killed', async () => {
    await make();
    await cm.start(() => active);
    const p = bestEffortPod();
    await cm.ensurePodCgroup(p);
    await tree.setProcs('pids/kubepods/besteffort/podbesteffort-0001', [7]);
    const attempts: number[] = [];
    const gone = Object.assign(new Error('kill ESRCH'), { code: 'ESRCH' });
    const cm2 = await createContainerManager({
      config: config(),
      fs: tree.fs,
      cgroupMountRoot: tree.root,
      capacity,
      killProcess: (pid) => {
        attempts.push(pid);
        throw gone;
      },
    });
    await cm2.start(() => []);
    await tree.setProcs('pids/kubepods/besteffort/podbesteffort-0001', []);
    assert.equal(await cm2.removePodCgroup('besteffort-0001'), true);
    assert.deepEqual(attempts, []); // emptied before the kill: nothing to kill
    await cm.ensurePodCgroup(p);
    await tree.setProcs('pids/kubepods/besteffort/podbesteffort-0001', [7]);
    assert.equal(await cm2.removePodCgroup('besteffort-0001'), false);
    assert.deepEqual(attempts, [7]); // one round: ESRCH is success
    cm2.stop();
  });

  test('cleanupOrphanedPodCgroups removes the pod cgroups nobody keeps, in every tier', async () => {
    await make();
    await cm.start(() => active);
    const pods = [
      guaranteedPod('g-keep'),
      guaranteedPod('g-orphan'),
      burstablePod('b-orphan'),
      bestEffortPod('e-keep'),
    ];
    for (const p of pods) await cm.ensurePodCgroup(p);
    // Something of the runtime's own beside the pods: not a pod cgroup, never touched.
    await tree.fs.mkdir(`${tree.root}/memory/kubepods/not-a-pod`);
    const keep = new Set(['g-keep', 'e-keep']);
    const removed = await cm.cleanupOrphanedPodCgroups((uid) => keep.has(uid));
    assert.deepEqual(removed.sort(), ['b-orphan', 'g-orphan']);
    assert.ok(await tree.exists('cpu,cpuacct/kubepods/podg-keep'));
    assert.ok(await tree.exists('cpu,cpuacct/kubepods/besteffort/pode-keep'));
    assert.equal(await tree.exists('cpu,cpuacct/kubepods/podg-orphan'), false);
    assert.equal(await tree.exists('devices/kubepods/burstable/podb-orphan'), false);
    assert.equal(await tree.exists('unified/kubepods/burstable/podb-orphan'), false);
    assert.ok(await tree.exists('memory/kubepods/not-a-pod'));
    assert.ok(await tree.exists('cpu,cpuacct/kubepods/burstable'));
  });

  test('a read-only controller is logged once and left out; the others still work', async () => {
    await make({}, { readOnly: ['pids'] });
    await cm.start(() => active);
    await cm.ensurePodCgroup(burstablePod('b-1'));
    await cm.ensurePodCgroup(burstablePod('b-2'));
    assert.equal(await tree.read('cpu,cpuacct/kubepods/burstable/podb-2/cpu.shares'), '307');
    assert.equal(await tree.exists('pids/kubepods'), false);
    const warnings = logs.filter((l) => l.includes('Cgroup controller is not writable'));
    assert.equal(warnings.length, 1, warnings.join('\n'));
    const pids = cm.status().controllers.find((c) => c.name === 'pids');
    assert.equal(pids?.state, 'read-only');
    assert.equal(await cm.exists(burstablePod('b-1')), true);
  });

  test('a missing controller is reported and skipped', async () => {
    await make({}, { mounts: ['cpu,cpuacct', 'cpuset', 'pids', 'systemd'] });
    await cm.start(() => active);
    const p = guaranteedPod();
    await cm.ensurePodCgroup(p);
    assert.equal(await tree.read('cpu,cpuacct/kubepods/podguaranteed-0001/cpu.shares'), '1024');
    const missing = cm
      .status()
      .controllers.filter((c) => c.state === 'missing')
      .map((c) => c.name);
    assert.deepEqual(missing.sort(), ['hugetlb', 'memory']);
    assert.equal(logs.filter((l) => l.includes('Cgroup controller is missing')).length, 1);
  });

  test('every managed controller read-only: start fails', async () => {
    await make({}, { mounts: ['cpu,cpuacct', 'memory'], readOnly: ['cpu,cpuacct', 'memory'] });
    await assert.rejects(
      cm.start(() => active),
      /no cgroup controller the kubelet manages is usable/,
    );
  });

  test('a cgroupRoot that does not exist fails start, as upstream does', async () => {
    await make({ cgroupRoot: '/not-there' });
    await assert.rejects(
      cm.start(() => active),
      /cgroup-root \/not-there doesn't exist/,
    );
  });

  test('under a cgroupRoot of its own, every name starts there', async () => {
    await make({ cgroupRoot: '/test-root' });
    for (const mount of MOUNTS) await tree.fs.mkdir(`${tree.root}/${mount}/test-root`);
    await cm.start(() => active);
    const p = burstablePod();
    assert.equal(cm.podCgroupParent(p), '/test-root/kubepods/burstable/podburstable-0001');
    await cm.ensurePodCgroup(p);
    assert.equal(
      await tree.read('cpu,cpuacct/test-root/kubepods/burstable/podburstable-0001/cpu.shares'),
      '307',
    );
    assert.equal(cm.status().nodeAllocatableCgroup, '/test-root/kubepods');
  });

  test('systemd driver: nested slices on disk, and orphans found by their slice names', async () => {
    await make({ cgroupDriver: 'systemd' });
    await cm.start(() => active);
    const p = burstablePod('1234-abcd');
    const parent = '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice';
    assert.equal(cm.podCgroupParent(p), parent);
    await cm.ensurePodCgroup(p);
    assert.equal(await tree.read(`cpu,cpuacct${parent}/cpu.shares`), '307');
    assert.equal(await tree.read('cpu,cpuacct/kubepods.slice/kubepods-besteffort.slice/cpu.shares'), '2');
    assert.equal(await tree.read('memory/kubepods.slice/memory.limit_in_bytes'), String(6.5 * GiB));
    const g = guaranteedPod('5678-ef');
    await cm.ensurePodCgroup(g);
    assert.ok(await tree.exists('memory/kubepods.slice/kubepods-pod5678_ef.slice'));
    assert.deepEqual((await cm.cleanupOrphanedPodCgroups(() => false)).sort(), ['1234-abcd', '5678-ef']);
    assert.equal(await tree.exists(`memory${parent}`), false);
    assert.equal(await cm.removePodCgroup('1234-abcd'), true);
  });

  test('cpuCFSQuota off: quota -1 for the Guaranteed pod, period still written', async () => {
    await make({ cpuCFSQuota: false });
    await cm.start(() => active);
    await cm.ensurePodCgroup(guaranteedPod());
    assert.equal(await tree.read('cpu,cpuacct/kubepods/podguaranteed-0001/cpu.cfs_quota_us'), '-1');
    assert.equal(await tree.read('cpu,cpuacct/kubepods/podguaranteed-0001/cpu.cfs_period_us'), '100000');
  });

  test('cgroupsPerQOS off: nothing is made and pods get no cgroup parent', async () => {
    await make({ cgroupsPerQOS: false });
    await cm.start(() => active);
    assert.equal(cm.podCgroupParent(guaranteedPod()), '');
    await cm.ensurePodCgroup(guaranteedPod());
    assert.equal(await tree.exists('cpu,cpuacct/kubepods'), false);
    assert.equal(cm.status().cgroupsPerQOS, false);
  });
});
