import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Pod } from '../../../../src/api/core-v1.js';
import { createCPUManager, type CPUManagerConfig } from '../../../../src/cm/cpumanager/cpu-manager.js';
import type { Container as CriContainer, LinuxContainerResources } from '../../../../src/cri/types.js';
import { FakeClock } from '../../../../src/lib/clock.js';
import { DUAL_SOCKET_HT, makeFakeSysfs } from './fake-sysfs.js';

function pod(uid: string, cpu: string | undefined): Pod {
  const resources = cpu ? { requests: { cpu, memory: '1Gi' }, limits: { cpu, memory: '1Gi' } } : undefined;
  return {
    metadata: { name: uid, namespace: 'default', uid },
    spec: { containers: [{ name: 'c', image: 'i', resources }] },
  };
}

function running(id: string, uid: string): CriContainer {
  return {
    id,
    podSandboxId: 's',
    metadata: { name: 'c', attempt: 0 },
    image: { image: 'i' },
    imageRef: 'i',
    state: 'CONTAINER_RUNNING',
    createdAt: 0,
    labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': 'c' },
    annotations: {},
  } as CriContainer;
}

async function setup(): Promise<{
  config: CPUManagerConfig;
  updates: [string, string][];
  containers: CriContainer[];
  done: () => Promise<void>;
}> {
  const sysfs = await makeFakeSysfs(DUAL_SOCKET_HT);
  const rootDir = await mkdtemp(path.join(tmpdir(), 'cpumgr-'));
  const updates: [string, string][] = [];
  const containers: CriContainer[] = [];
  const config: CPUManagerConfig = {
    policyName: 'static',
    policyOptions: {},
    reconcilePeriodMs: 10_000,
    reservedSystemCPUs: '',
    reservedCPU: ['500m', '500m'],
    rootDir,
    sysfsRoot: sysfs.root,
    clock: new FakeClock(),
    runtime: {
      listContainers: () => Promise.resolve(containers),
      updateContainerResources: (id: string, r: LinuxContainerResources) => {
        updates.push([id, r.cpusetCpus]);
        return Promise.resolve();
      },
    },
  };
  return {
    config,
    updates,
    containers,
    done: async () => {
      await sysfs.remove();
      await rm(rootDir, { recursive: true, force: true });
    },
  };
}

test('allocate, reconcile through UpdateContainerResources, checkpoint, restart, and release', async () => {
  const { config, updates, containers, done } = await setup();
  try {
    const m = await createCPUManager(config);
    assert.ok(m);
    const gu = pod('gu', '2');
    const be = pod('be', undefined);
    let active = [gu, be];
    m.start(() => active);
    for (const p of [gu, be]) for (const c of p.spec.containers) m.allocate(p, c);
    // Reserved: one CPU (500m + 500m), the lowest core's first thread: 0. Exclusive: a whole core.
    assert.equal(m.policy.reservedCPUs.toString(), '0');
    assert.equal(m.cpusetFor('gu', 'c'), '2,8');
    assert.equal(m.cpusetFor('be', 'c'), '0-1,3-7,9-11');
    assert.equal(m.exclusiveCPUs('be', 'c').toString(), '');
    assert.deepEqual(m.getAllocatableCPUs(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    assert.deepEqual(m.getCPUs('gu', 'c'), [2, 8]);
    assert.deepEqual(m.getCPUs('be', 'c'), []);
    containers.push(running('id-gu', 'gu'), running('id-be', 'be'));
    await m.reconcile();
    assert.deepEqual(updates, [
      ['id-gu', '2,8'],
      ['id-be', '0-1,3-7,9-11'],
    ]);
    await m.reconcile();
    assert.equal(updates.length, 2, 'an unchanged cpuset is not sent again');
    await m.stop();
    const file = JSON.parse(await readFile(path.join(config.rootDir, 'cpu_manager_state'), 'utf8')) as Record<
      string,
      unknown
    >;
    assert.equal(file.policyName, 'static');
    assert.equal(file.defaultCpuSet, '0-1,3-7,9-11');
    assert.deepEqual(file.entries, { gu: { c: '2,8' } });

    // A restart reads the state back; the pod gone, its CPUs return to the shared pool.
    const again = await createCPUManager(config);
    assert.ok(again);
    assert.equal(again.cpusetFor('gu', 'c'), '2,8');
    active = [be];
    again.start(() => active);
    await again.reconcile();
    assert.equal(again.cpusetFor('gu', 'c'), '0-11');
    assert.deepEqual(updates.slice(2), [['id-be', '0-11']]);
    await again.stop();
  } finally {
    await done();
  }
});

test('refusals: another policy in the checkpoint, no CPU reserved, an unknown policy, a bad reservedSystemCPUs', async () => {
  const { config, done } = await setup();
  try {
    assert.equal(await createCPUManager({ ...config, policyName: 'none' }), undefined);
    // The none policy's state file would be refused by the static policy below.
    await rm(path.join(config.rootDir, 'cpu_manager_state'));
    await assert.rejects(createCPUManager({ ...config, policyName: 'dynamic' }), /unknown policy: "dynamic"/);
    await assert.rejects(
      createCPUManager({ ...config, reservedCPU: [undefined, '0'] }),
      /the static policy requires systemreserved.cpu \+ kubereserved.cpu to be greater than zero/,
    );
    await assert.rejects(
      createCPUManager({ ...config, reservedSystemCPUs: '40' }),
      /not a subset of online cpus/,
    );
    const m = await createCPUManager({ ...config, reservedSystemCPUs: '1,3', reservedCPU: [] });
    assert.equal(m?.policy.reservedCPUs.toString(), '1,3');
    await m?.stop();
    await writeFile(
      path.join(config.rootDir, 'cpu_manager_state'),
      '{"policyName":"none","defaultCpuSet":"","checksum":0}',
    );
    await assert.rejects(
      createCPUManager(config),
      /configured policy "static" differs from state checkpoint policy "none"/,
    );
  } finally {
    await done();
  }
});

test('policy options reach the policy with the feature gates and the topology manager policy', async () => {
  const { config, done } = await setup();
  try {
    const options = { 'distribute-cpus-across-numa': 'true' };
    await assert.rejects(createCPUManager({ ...config, policyOptions: options }), {
      message:
        'CPU Manager Policy Alpha-level Options not enabled, but option "distribute-cpus-across-numa" provided',
    });
    await assert.rejects(
      createCPUManager({
        ...config,
        policyOptions: options,
        featureGates: { CPUManagerPolicyOptions: false },
      }),
      {
        message:
          'CPU Manager policy options map[distribute-cpus-across-numa:true] require feature gates "CPUManager", "CPUManagerPolicyOptions" enabled',
      },
    );
    await assert.rejects(
      createCPUManager({
        ...config,
        policyOptions: { 'align-by-socket': 'true' },
        featureGates: { CPUManagerPolicyAlphaOptions: true },
        topologyManagerPolicy: 'single-numa-node',
      }),
      /incompatible with CPUManager align-by-socket policy option/,
    );
    const manager = await createCPUManager({
      ...config,
      policyOptions: options,
      featureGates: { CPUManagerPolicyAlphaOptions: true },
    });
    assert.equal(manager?.policy.options.distributeCPUsAcrossNUMA, true);
    await manager?.stop();
  } finally {
    await done();
  }
});

test("policy none keeps cpu_manager_state as upstream: written at start, another policy's file refused", async () => {
  const { config, done } = await setup();
  const file = path.join(config.rootDir, 'cpu_manager_state');
  try {
    assert.equal(await createCPUManager({ ...config, policyName: 'none' }), undefined);
    const written = await readFile(file, 'utf8');
    assert.equal(written, '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}');
    // Started again, the file is read back and kept.
    assert.equal(await createCPUManager({ ...config, policyName: 'none' }), undefined);
    assert.equal(await readFile(file, 'utf8'), written);
    // A node moved from static to none without draining is refused, in upstream's words.
    await rm(file);
    (await createCPUManager(config))?.stop();
    await assert.rejects(createCPUManager({ ...config, policyName: 'none' }), {
      message: `could not restore state from checkpoint: configured policy "none" differs from state checkpoint policy "static", please drain this node and delete the CPU manager checkpoint file "${file}" before restarting Kubelet`,
    });
    await writeFile(file, written);
    await assert.rejects(createCPUManager(config), {
      message: `could not restore state from checkpoint: configured policy "static" differs from state checkpoint policy "none", please drain this node and delete the CPU manager checkpoint file "${file}" before restarting Kubelet`,
    });
    await assert.rejects(createCPUManager({ ...config, policyName: 'none', policyOptions: { a: 'b' } }), {
      message: 'new none policy error: None policy: received unsupported options=map[a:b]',
    });
  } finally {
    await done();
  }
});
