/**
 * enforceNodeAllocatable's system-reserved and kube-reserved: the reservations become the limits of
 * the cgroups named for those daemons, on a temp folder laid out like a cgroup v1 machine.
 */
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { createContainerManager, type ContainerManagerConfig } from '../../../src/cm/container-manager.js';
import { TempCgroupTree } from '../../../src/cm/testing/temp-cgroup-fs.js';
import { setLogSink } from '../../../src/lib/log.js';
import { capacity, config, MiB } from './fixtures.js';

const MOUNTS = ['cpu,cpuacct', 'cpuset', 'memory', 'pids', 'hugetlb', 'systemd'];

let tree: TempCgroupTree | undefined;
afterEach(async () => {
  setLogSink((line) => process.stderr.write(line + '\n'));
  await tree?.cleanup();
});

async function start(overrides: Partial<ContainerManagerConfig>, makeCgroups: string[]) {
  setLogSink(() => {});
  tree = await TempCgroupTree.create({
    version: 'v1',
    mounts: MOUNTS,
    links: { cpu: 'cpu,cpuacct', cpuacct: 'cpu,cpuacct' },
    readOnly: [],
    hugePageUnits: ['2MB'],
  });
  for (const cgroup of makeCgroups) {
    for (const mount of MOUNTS) await tree.fs.mkdir(`${tree.root}/${mount}${cgroup}`);
  }
  const events: string[] = [];
  const cm = await createContainerManager({
    config: config(overrides),
    fs: tree.fs,
    cgroupMountRoot: tree.root,
    capacity,
    nodeName: 'n1',
    recorder: { eventFor: (_ref, type, reason, message) => void events.push(`${type} ${reason} ${message}`) },
  });
  return { cm, events, tree };
}

test('system-reserved and kube-reserved limit their own cgroups with what is reserved', async () => {
  const { cm, events, tree } = await start(
    {
      enforceNodeAllocatable: ['pods', 'system-reserved', 'kube-reserved'],
      systemReservedCgroup: '/system.slice',
      kubeReservedCgroup: '/kube.slice',
    },
    ['/system.slice', '/kube.slice'],
  );
  await cm.start(() => []);
  cm.stop();
  // fixtures: systemReserved cpu 500m, memory 1Gi; kubeReserved cpu 250m, memory 512Mi, pid 1000.
  assert.equal(await tree.read('cpu,cpuacct/system.slice/cpu.shares'), '512');
  assert.equal(await tree.read('memory/system.slice/memory.limit_in_bytes'), String(1024 * MiB));
  assert.equal(await tree.read('cpu,cpuacct/kube.slice/cpu.shares'), '256');
  assert.equal(await tree.read('memory/kube.slice/memory.limit_in_bytes'), String(512 * MiB));
  assert.equal(await tree.read('pids/kube.slice/pids.max'), '1000');
  // What a reservation does not list is left alone (the temp tree's default, as the kernel's).
  assert.equal(await tree.read('pids/system.slice/pids.max'), 'max');
  assert.ok(
    events.includes('Normal NodeAllocatableEnforced Updated limits on system reserved cgroup /system.slice'),
  );
  assert.ok(
    events.includes('Normal NodeAllocatableEnforced Updated limits on kube reserved cgroup /kube.slice'),
  );
});

test('a reserved cgroup that does not exist stops the start with a Warning event, as upstream', async () => {
  const { cm, events } = await start(
    { enforceNodeAllocatable: ['pods', 'kube-reserved'], kubeReservedCgroup: '/kube.slice' },
    [],
  );
  await assert.rejects(
    cm.start(() => []),
    /Failed to enforce Kube Reserved Cgroup Limits on "\/kube.slice"/,
  );
  cm.stop();
  assert.ok(
    events.some((e) =>
      e.startsWith('Warning FailedNodeAllocatableEnforcement Failed to enforce Kube Reserved'),
    ),
  );
});

test('without the levels, the named cgroups are not touched', async () => {
  const { cm, tree } = await start(
    { systemReservedCgroup: '/system.slice', kubeReservedCgroup: '/kube.slice' },
    ['/system.slice'],
  );
  await cm.start(() => []);
  cm.stop();
  assert.equal(await tree.read('cpu,cpuacct/system.slice/cpu.shares'), '1024');
});
