/**
 * memorySwap.swapBehavior, as upstream v1.30's configureContainerSwapResources: what each container's
 * Linux resources say about swap on cgroup v1 and v2, with and without the swap controller and the
 * NodeSwap gate, and LimitedSwap's share for Burstable containers (calcSwapForBurstablePods).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import { generateLinuxContainerResources } from '../../../src/kuberuntime/container-resources.js';
import {
  calcSwapForBurstablePods,
  configureContainerSwapResources,
  type SwapSettings,
} from '../../../src/kuberuntime/container-swap.js';
import type { LinuxContainerResources } from '../../../src/cri/types.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

function pod(c: Container): Pod {
  return { metadata: { name: 'p', namespace: 'd', uid: 'u' }, spec: { containers: [c] } };
}

const burstable: Container = {
  name: 'b',
  resources: { requests: { memory: '1Gi' }, limits: { memory: '2Gi' } },
};
const guaranteed: Container = {
  name: 'g',
  resources: { requests: { memory: '1Gi', cpu: '1' }, limits: { memory: '1Gi', cpu: '1' } },
};
const bestEffort: Container = { name: 'e' };
const burstableCpuOnly: Container = { name: 'c', resources: { requests: { cpu: '100m' } } };

function settings(over: Partial<SwapSettings>): SwapSettings {
  return {
    behavior: '',
    nodeSwapEnabled: true,
    controllerAvailable: true,
    cgroupV2: true,
    memoryCapacityBytes: 16 * GiB,
    swapCapacityBytes: 4 * GiB,
    ...over,
  };
}

function resources(c: Container, swap: SwapSettings): LinuxContainerResources {
  return generateLinuxContainerResources(pod(c), c, {
    memoryCapacityBytes: 16 * GiB,
    cpuCFSQuota: true,
    cpuCFSQuotaPeriodUs: 100_000,
    swap,
  });
}

describe('cgroup v2: memory.swap.max through CRI unified resources', () => {
  test('NoSwap and the default ("") give every container memory.swap.max 0', () => {
    for (const behavior of ['', 'NoSwap'] as const) {
      for (const c of [burstable, guaranteed, bestEffort]) {
        const r = resources(c, settings({ behavior }));
        assert.deepEqual(r.unified, { 'memory.swap.max': '0' }, `${behavior} ${c.name}`);
        assert.equal(r.memorySwapLimitInBytes, 0);
      }
    }
  });

  test("LimitedSwap: a Burstable container's share of the swap, by its memory request", () => {
    const r = resources(burstable, settings({ behavior: 'LimitedSwap' }));
    // 1 GiB of 16 GiB requested: 1/16 of 4 GiB of swap.
    assert.deepEqual(r.unified, { 'memory.swap.max': String(256 * MiB) });
  });

  test('LimitedSwap: Guaranteed, BestEffort, no memory request, request = limit get none', () => {
    const requestIsLimit: Container = {
      name: 'r',
      resources: { requests: { memory: '1Gi', cpu: '100m' }, limits: { memory: '1Gi' } },
    };
    for (const c of [guaranteed, bestEffort, burstableCpuOnly, requestIsLimit]) {
      const r = resources(c, settings({ behavior: 'LimitedSwap' }));
      assert.deepEqual(r.unified, { 'memory.swap.max': '0' }, c.name);
    }
  });

  test('LimitedSwap with NodeSwap off is NoSwap', () => {
    const r = resources(burstable, settings({ behavior: 'LimitedSwap', nodeSwapEnabled: false }));
    assert.deepEqual(r.unified, { 'memory.swap.max': '0' });
  });

  test('without the swap controller nothing is set', () => {
    for (const cgroupV2 of [true, false]) {
      const r = resources(
        burstable,
        settings({ behavior: 'LimitedSwap', controllerAvailable: false, cgroupV2 }),
      );
      assert.deepEqual(r.unified, {});
      assert.equal(r.memorySwapLimitInBytes, 0);
    }
  });
});

describe('cgroup v1: memory.memsw.limit_in_bytes', () => {
  test('every behaviour is NoSwap there: memory+swap limited to the memory limit', () => {
    for (const behavior of ['', 'NoSwap', 'LimitedSwap'] as const) {
      const r = resources(burstable, settings({ behavior, cgroupV2: false }));
      assert.equal(r.memorySwapLimitInBytes, 2 * GiB, behavior);
      assert.deepEqual(r.unified, {});
    }
    // No memory limit: memsw stays unset (0), which the runtime ignores.
    assert.equal(resources(bestEffort, settings({ cgroupV2: false })).memorySwapLimitInBytes, 0);
  });
});

describe('calcSwapForBurstablePods', () => {
  test("upstream's proportion and its errors", () => {
    assert.equal(calcSwapForBurstablePods(GiB, 16 * GiB, 4 * GiB), 256 * MiB);
    assert.equal(calcSwapForBurstablePods(3, 7, 10), 4, 'truncated as Go converts a float64 to int64');
    assert.throws(() => calcSwapForBurstablePods(GiB, 0, GiB), /^Error: total node memory is 0$/);
    assert.throws(
      () => calcSwapForBurstablePods(2 * GiB, GiB, GiB),
      new RegExp(`container request ${2 * GiB} is larger than total node memory ${GiB}`),
    );
  });

  test('a request above the node memory means NoSwap for the container', () => {
    const big: Container = {
      name: 'x',
      resources: { requests: { memory: '32Gi' }, limits: { memory: '64Gi' } },
    };
    const lcr = resources(big, settings({ behavior: 'LimitedSwap' }));
    assert.deepEqual(lcr.unified, { 'memory.swap.max': '0' });
    const direct: LinuxContainerResources = { ...lcr, unified: {} };
    configureContainerSwapResources(direct, pod(big), big, settings({ behavior: 'LimitedSwap' }));
    assert.deepEqual(direct.unified, { 'memory.swap.max': '0' });
  });
});
