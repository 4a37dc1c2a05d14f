import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { KubeletCgroupEnforcer } from '../../../src/cm/kubelet-cgroup.js';
import { TempCgroupTree, type TempCgroupLayout } from '../../../src/cm/testing/temp-cgroup-fs.js';

const PID = 4242;

/** A /proc with init's and the kubelet's pid namespaces and the kubelet's cgroup file. */
async function fakeProc(cgroupFile: string, ownNs = 'pid:[4026531836]', nsPid?: string): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'tskubelet-proc-'));
  await mkdir(path.join(root, '1/ns'), { recursive: true });
  await mkdir(path.join(root, `${PID}/ns`), { recursive: true });
  await symlink('pid:[4026531836]', path.join(root, '1/ns/pid'));
  await symlink(ownNs, path.join(root, `${PID}/ns/pid`));
  await writeFile(path.join(root, `${PID}/cgroup`), cgroupFile);
  if (nsPid !== undefined)
    await writeFile(path.join(root, `${PID}/status`), `Name:\tnode\nNSpid:\t${nsPid}\n`);
  return root;
}

const V1: TempCgroupLayout = {
  version: 'v1',
  mounts: ['cpu,cpuacct', 'cpuset', 'memory', 'pids', 'systemd'],
};
const V1_PROC =
  '5:pids:/user.slice\n4:memory:/user.slice\n3:cpuset:/\n2:cpu,cpuacct:/user.slice\n1:name=systemd:/user.slice\n0::/user.slice\n';

describe('KubeletCgroupEnforcer (--kubelet-cgroups)', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });
  async function setup(layout: TempCgroupLayout, procCgroup: string, ownNs?: string, nsPid?: string) {
    const tree = await TempCgroupTree.create(layout);
    const procRoot = await fakeProc(procCgroup, ownNs, nsPid);
    cleanups.push(
      () => tree.cleanup(),
      () => rm(procRoot, { recursive: true, force: true }),
    );
    const enforcer = await KubeletCgroupEnforcer.create({
      name: '/kube/kubelet',
      pid: PID,
      fs: tree.fs,
      cgroupMountRoot: tree.root,
      procRoot,
    });
    return { tree, enforcer };
  }

  test('cgroup v1: makes the cgroup in every hierarchy and writes the pid into each cgroup.procs', async () => {
    const { tree, enforcer } = await setup(V1, V1_PROC);
    await enforcer.ensure();
    for (const mount of [...(V1 as { mounts: string[] }).mounts, 'unified']) {
      assert.equal(await tree.read(`${mount}/kube/kubelet/cgroup.procs`), String(PID), mount);
    }
    // A cpuset cgroup without CPUs takes no task: it got its parent's.
    assert.equal(await tree.read('cpuset/kube/kubelet/cpuset.cpus'), '0-3');
  });

  test('cgroup v2: the unified tree', async () => {
    const { tree, enforcer } = await setup(
      { version: 'v2', controllers: ['cpu', 'memory', 'pids'] },
      '0::/user.slice\n',
    );
    await enforcer.ensure();
    assert.equal(await tree.read('kube/kubelet/cgroup.procs'), String(PID));
  });

  test('a process already in the cgroup is left alone', async () => {
    const { tree, enforcer } = await setup({ version: 'v2', controllers: ['cpu'] }, '0::/kube/kubelet\n');
    await enforcer.ensure();
    assert.equal(await tree.exists('kube/kubelet'), false);
  });

  test('a kubelet in another pid namespace (a container) is not moved', async () => {
    const { tree, enforcer } = await setup(V1, V1_PROC, 'pid:[4026532999]');
    await enforcer.ensure();
    assert.equal(await tree.exists('memory/kube'), false);
  });

  test('NSpid answers first: one pid there is the host namespace, two a container', async () => {
    const host = await setup(
      { version: 'v2', controllers: ['cpu'] },
      '0::/\n',
      'pid:[4026532999]',
      String(PID),
    );
    await host.enforcer.ensure();
    assert.equal(await host.tree.read('kube/kubelet/cgroup.procs'), String(PID));
    const inner = await setup({ version: 'v2', controllers: ['cpu'] }, '0::/\n', undefined, `${PID} 7`);
    await inner.enforcer.ensure();
    assert.equal(await inner.tree.exists('kube/kubelet'), false);
  });

  test("a failure is upstream's 'failed to move PID'", async () => {
    const { tree, enforcer } = await setup({ version: 'v2', controllers: ['cpu'] }, '0::/user.slice\n');
    await mkdir(path.join(tree.root, 'kube'));
    await writeFile(path.join(tree.root, 'kube', 'kubelet'), 'not a folder');
    await assert.rejects(
      enforcer.ensure(),
      /failed to move PID 4242 \(in "\/user.slice"\) to "\/kube\/kubelet"/,
    );
  });
});
