/** Pods of each QoS class, a machine and a configuration for the cm tests. */
import type { Container, Pod } from '../../../src/api/core-v1.js';
import type { ContainerManagerConfig } from '../../../src/cm/container-manager.js';
import type { NodeCapacity } from '../../../src/cm/node-allocatable.js';

export const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** 4 cpus, 8Gi, 32768 tasks, a 2MB huge page pool with no pages. */
export const capacity: NodeCapacity = {
  cpuMilli: 4000,
  memoryBytes: BigInt(8 * GiB),
  pids: 32_768,
  hugePagesBytes: new Map([[2 * MiB, 0n]]),
};

export function config(overrides: Partial<ContainerManagerConfig> = {}): ContainerManagerConfig {
  return {
    cgroupDriver: 'cgroupfs',
    cgroupRoot: '',
    cgroupsPerQOS: true,
    cpuCFSQuota: true,
    cpuCFSQuotaPeriodMs: 100,
    podPidsLimit: 1024,
    enforceNodeAllocatable: ['pods'],
    systemReserved: { cpu: '500m', memory: '1Gi' },
    kubeReserved: { cpu: '250m', memory: '512Mi', pid: '1000' },
    // The machine's swap is not what these tests are about: swap.test.ts checks it.
    failSwapOn: false,
    systemReservedCgroup: '',
    kubeReservedCgroup: '',
    ...overrides,
  };
}

export function pod(uid: string, containers: Container[], initContainers: Container[] = []): Pod {
  return {
    metadata: { name: `p-${uid.slice(0, 8)}`, namespace: 'cm-test', uid },
    spec: { containers, ...(initContainers.length > 0 ? { initContainers } : {}) },
  };
}

export function container(
  name: string,
  requests: Record<string, string> = {},
  limits: Record<string, string> = {},
  restartPolicy?: 'Always',
): Container {
  return { name, resources: { requests, limits }, ...(restartPolicy ? { restartPolicy } : {}) };
}

/** Two containers and an init container that needs more than both: 1 cpu, 256Mi. */
export function guaranteedPod(uid = 'guaranteed-0001'): Pod {
  return pod(
    uid,
    [
      container('a', { cpu: '500m', memory: '128Mi' }, { cpu: '500m', memory: '128Mi' }),
      container('b', { cpu: '250m', memory: '64Mi' }, { cpu: '250m', memory: '64Mi' }),
    ],
    [container('init', { cpu: '1', memory: '256Mi' }, { cpu: '1', memory: '256Mi' })],
  );
}

/** Every container has a cpu limit (700m in all), one lacks a memory limit: quota, no memory limit. */
export function burstablePod(uid = 'burstable-0001'): Pod {
  return pod(uid, [
    container('a', { cpu: '100m', memory: '50Mi' }, { cpu: '300m', memory: '100Mi' }),
    container('b', { cpu: '200m' }, { cpu: '400m' }),
  ]);
}

export function bestEffortPod(uid = 'besteffort-0001'): Pod {
  return pod(uid, [container('a')]);
}
