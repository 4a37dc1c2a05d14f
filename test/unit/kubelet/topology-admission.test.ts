/**
 * Admission through the topology manager with the real static CPU manager as its hint provider, on a
 * fake sysfs of 2 sockets, 2 NUMA nodes (6 CPUs each) and hyperthreads.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { createCPUManager } from '../../../src/cm/cpumanager/cpu-manager.js';
import { CPUSet } from '../../../src/cm/cpumanager/cpu-set.js';
import { addTopologyHintProviders } from '../../../src/cm/topology-admission.js';
import { createTopologyManager } from '../../../src/cm/topologymanager/topology-manager.js';
import { AppArmorValidator } from '../../../src/kubelet/apparmor-validator.js';
import { PodAdmitter } from '../../../src/kubelet/pod-admitter.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { DUAL_SOCKET_HT, makeFakeSysfs } from '../cm/cpumanager/fake-sysfs.js';

function guaranteedPod(uid: string, cpu: string): Pod {
  const resources = { cpu, memory: '1Gi' };
  return {
    metadata: { name: uid, namespace: 'default', uid },
    spec: { containers: [{ name: 'c', image: 'i', resources: { requests: resources, limits: resources } }] },
  };
}

async function admitterFor(
  policyName: string,
  sysfsRoot: string,
  rootDir: string,
): Promise<{ admitter: PodAdmitter; cpusOf: (uid: string) => CPUSet }> {
  const topologyManager = await createTopologyManager({
    policyName,
    scopeName: 'container',
    policyOptions: {},
    sysfsRoot,
  });
  const cpuManager = await createCPUManager({
    policyName: 'static',
    policyOptions: {},
    reconcilePeriodMs: 10_000,
    reservedSystemCPUs: '',
    reservedCPU: ['1'],
    rootDir,
    sysfsRoot,
    clock: new FakeClock(),
    runtime: {
      listContainers: () => Promise.resolve([]),
      updateContainerResources: () => Promise.resolve(),
    },
    affinity: topologyManager,
  });
  assert.ok(cpuManager);
  addTopologyHintProviders(topologyManager, { cpuManager, deviceManager: noDevices });
  const admitted: Pod[] = [];
  const admitter = new PodAdmitter({
    topologyAdmission: topologyManager,
    appArmorValidator: new AppArmorValidator(false),
    getNode: () => ({
      metadata: { name: 'n', labels: { 'kubernetes.io/os': 'linux' } },
      status: { allocatable: { cpu: '12', memory: '64Gi', pods: '110' } },
    }),
    activePods: () => admitted,
  });
  return { admitter, cpusOf: (uid) => cpuManager.exclusiveCPUs(uid, 'c') };
}

/** A device manager with no devices: no hints, nothing to allocate. */
const noDevices = {
  getTopologyHints: () => undefined,
  getPodTopologyHints: () => undefined,
  allocate: () => undefined,
};

test('single-numa-node refuses a container that needs more CPUs than one NUMA node has, with TopologyAffinityError', async () => {
  const sysfs = await makeFakeSysfs(DUAL_SOCKET_HT);
  const rootDir = await mkdtemp(path.join(tmpdir(), 'topo-admit-'));
  try {
    const { admitter, cpusOf } = await admitterFor('single-numa-node', sysfs.root, rootDir);
    // Each NUMA node has 6 CPUs: 8 can only come from both.
    assert.deepEqual(admitter.admitPod(guaranteedPod('big', '8')), {
      admit: false,
      reason: 'TopologyAffinityError',
      message: 'Resources cannot be allocated with Topology locality',
    });
    assert.equal(cpusOf('big').size, 0, 'nothing was allocated');
    // 4 fit on one node: admitted, every CPU on one node (socket 0: even CPUs; socket 1: odd).
    assert.equal(admitter.admitPod(guaranteedPod('small', '4')).admit, true);
    const cpus = cpusOf('small').list();
    assert.equal(cpus.length, 4);
    assert.equal(new Set(cpus.map((c) => c % 2)).size, 1, `one NUMA node: ${cpus.join(',')}`);
  } finally {
    await sysfs.remove();
    await rm(rootDir, { recursive: true, force: true });
  }
});

test('restricted admits the 8-CPU container (both nodes is the narrowest that can hold it); none admits it as today', async () => {
  for (const policy of ['restricted', 'best-effort', 'none']) {
    const sysfs = await makeFakeSysfs(DUAL_SOCKET_HT);
    const rootDir = await mkdtemp(path.join(tmpdir(), 'topo-admit-'));
    try {
      const { admitter, cpusOf } = await admitterFor(policy, sysfs.root, rootDir);
      assert.equal(admitter.admitPod(guaranteedPod('big', '8')).admit, true, policy);
      assert.equal(cpusOf('big').size, 8, policy);
      // The CPU manager's own refusal keeps its upstream wording under every policy.
      assert.deepEqual(admitter.admitPod(guaranteedPod('more', '8')), {
        admit: false,
        reason:
          policy === 'none' || policy === 'best-effort'
            ? 'UnexpectedAdmissionError'
            : 'TopologyAffinityError',
        message:
          policy === 'none' || policy === 'best-effort'
            ? 'Allocate failed due to not enough cpus available to satisfy request, which is unexpected'
            : 'Resources cannot be allocated with Topology locality',
      });
    } finally {
      await sysfs.remove();
      await rm(rootDir, { recursive: true, force: true });
    }
  }
});
