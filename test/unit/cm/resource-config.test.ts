import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  cpuSharesToWeight,
  hugePageUnitSize,
  podCPURequestMilli,
  resourceConfigForPod,
  type ResourceConfig,
} from '../../../src/cm/resource-config.js';
import { bestEffortPod, burstablePod, container, guaranteedPod, MiB, pod } from './fixtures.js';

const on = { enforceCPULimits: true, cpuPeriodUs: 100_000 };

function withoutHugePages(c: ResourceConfig): ResourceConfig {
  const { hugePageLimits, ...rest } = c;
  assert.equal(hugePageLimits?.size ?? 0, 0);
  return rest;
}

test('Guaranteed: shares, quota and memory from the larger of the app sum and the biggest init container', () => {
  // Apps sum to 750m and 192Mi; the init container needs 1 cpu and 256Mi.
  assert.deepEqual(withoutHugePages(resourceConfigForPod(guaranteedPod(), on)), {
    cpuShares: 1024,
    cpuQuotaUs: 100_000,
    cpuPeriodUs: 100_000,
    memoryBytes: BigInt(256 * MiB),
  });
});

test('Guaranteed without an init container: the sums', () => {
  const p = pod('g2', [
    container('a', { cpu: '500m', memory: '128Mi' }, { cpu: '500m', memory: '128Mi' }),
    container('b', { cpu: '250m', memory: '64Mi' }, { cpu: '250m', memory: '64Mi' }),
  ]);
  assert.deepEqual(withoutHugePages(resourceConfigForPod(p, on)), {
    cpuShares: 768,
    cpuQuotaUs: 75_000,
    cpuPeriodUs: 100_000,
    memoryBytes: BigInt(192 * MiB),
  });
});

test('Burstable: quota only when every container has a cpu limit, memory only when every one has a memory limit', () => {
  // 300m requested (307 shares), 700m of limits, one container without a memory limit.
  assert.deepEqual(withoutHugePages(resourceConfigForPod(burstablePod(), on)), {
    cpuShares: 307,
    cpuQuotaUs: 70_000,
    cpuPeriodUs: 100_000,
  });
  const memOnly = pod('b2', [
    container('a', { memory: '64Mi' }, { memory: '128Mi' }),
    container('b', { cpu: '100m', memory: '32Mi' }, { memory: '32Mi' }),
  ]);
  assert.deepEqual(withoutHugePages(resourceConfigForPod(memOnly, on)), {
    cpuShares: 102,
    memoryBytes: BigInt(160 * MiB),
  });
});

test('an init container counts for requests, and one without a cpu limit drops the pod quota', () => {
  const p = pod(
    'b3',
    [container('a', { cpu: '300m' }, { cpu: '300m' })],
    [container('init', { cpu: '500m' })],
  );
  // max(300m, 500m) = 500m → 512 shares; the init container has no cpu limit, so no quota (upstream's ContainerFn).
  assert.deepEqual(withoutHugePages(resourceConfigForPod(p, on)), { cpuShares: 512 });
  assert.equal(podCPURequestMilli(p), 500);
});

test('sidecars add to the app containers and to every later init container', () => {
  const p = pod(
    'b4',
    [container('app', { cpu: '300m' }, { cpu: '300m' })],
    [
      container('sidecar', { cpu: '100m' }, { cpu: '100m' }, 'Always'),
      container('init', { cpu: '250m' }, { cpu: '250m' }),
    ],
  );
  // Running: 300m + 100m = 400m. While init runs: 250m + 100m = 350m. The larger wins.
  assert.deepEqual(withoutHugePages(resourceConfigForPod(p, on)), {
    cpuShares: 409,
    cpuQuotaUs: 40_000,
    cpuPeriodUs: 100_000,
  });
  const bigInit = pod(
    'b5',
    [container('app', { cpu: '300m' }, { cpu: '300m' })],
    [
      container('sidecar', { cpu: '100m' }, { cpu: '100m' }, 'Always'),
      container('init', { cpu: '600m' }, { cpu: '600m' }),
    ],
  );
  assert.equal(resourceConfigForPod(bigInit, on).cpuShares, 716); // 700m
  assert.equal(resourceConfigForPod(bigInit, on).cpuQuotaUs, 70_000);
});

test('BestEffort: the minimum shares and nothing else', () => {
  assert.deepEqual(withoutHugePages(resourceConfigForPod(bestEffortPod(), on)), { cpuShares: 2 });
});

test('cpuCFSQuota off: quota -1 where upstream would set one, period kept', () => {
  const off = { enforceCPULimits: false, cpuPeriodUs: 100_000 };
  assert.deepEqual(withoutHugePages(resourceConfigForPod(guaranteedPod(), off)), {
    cpuShares: 1024,
    cpuQuotaUs: -1,
    cpuPeriodUs: 100_000,
    memoryBytes: BigInt(256 * MiB),
  });
  assert.equal(resourceConfigForPod(burstablePod(), off).cpuQuotaUs, -1);
});

test('a custom CFS period scales the quota', () => {
  const c = resourceConfigForPod(guaranteedPod(), { enforceCPULimits: true, cpuPeriodUs: 50_000 });
  assert.equal(c.cpuPeriodUs, 50_000);
  assert.equal(c.cpuQuotaUs, 50_000);
});

test('limits without requests count as requests (a manifest nobody defaulted)', () => {
  const p = pod('g3', [container('a', {}, { cpu: '2', memory: '1Gi' })]);
  assert.equal(resourceConfigForPod(p, on).cpuShares, 2048);
  assert.equal(resourceConfigForPod(p, on).memoryBytes, BigInt(1024 * MiB));
});

test('overhead adds to requests and to the limits the pod has', () => {
  const p = guaranteedPod();
  (p.spec as { overhead?: Record<string, string> }).overhead = { cpu: '100m', memory: '16Mi' };
  const c = resourceConfigForPod(p, on);
  assert.equal(c.cpuShares, 1126); // 1100m
  assert.equal(c.cpuQuotaUs, 110_000);
  assert.equal(c.memoryBytes, BigInt(272 * MiB));
});

test('huge page requests become hugetlb limits by page size', () => {
  const p = pod('h1', [
    container(
      'a',
      { cpu: '1', memory: '1Gi', 'hugepages-2Mi': '64Mi' },
      { cpu: '1', memory: '1Gi', 'hugepages-2Mi': '64Mi' },
    ),
    container(
      'b',
      { 'hugepages-2Mi': '32Mi', 'hugepages-1Gi': '1Gi' },
      { 'hugepages-2Mi': '32Mi', 'hugepages-1Gi': '1Gi' },
    ),
  ]);
  const limits = resourceConfigForPod(p, on).hugePageLimits;
  assert.deepEqual(
    [...(limits ?? new Map())].sort((a, b) => a[0] - b[0]),
    [
      [2 * MiB, BigInt(96 * MiB)],
      [1024 * MiB, BigInt(1024 * MiB)],
    ],
  );
  assert.equal(hugePageUnitSize(2 * MiB), '2MB');
  assert.equal(hugePageUnitSize(1024 * MiB), '1GB');
  assert.equal(hugePageUnitSize(64 * 1024), '64KB');
});

test('cgroup v2 weight from shares, as the 1.30 kubelet converts', () => {
  assert.equal(cpuSharesToWeight(2), 1);
  assert.equal(cpuSharesToWeight(1024), 39);
  assert.equal(cpuSharesToWeight(307), 12);
  assert.equal(cpuSharesToWeight(262_144), 10_000);
  assert.equal(cpuSharesToWeight(1_000_000), 10_000);
});

test('sums are exact: three times 333m is 999m, not 1', () => {
  const p = pod('b6', [
    container('a', { cpu: '333m' }),
    container('b', { cpu: '333m' }),
    container('c', { cpu: '0.333' }),
  ]);
  assert.equal(podCPURequestMilli(p), 999);
});
