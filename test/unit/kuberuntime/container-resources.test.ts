import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import { computePodQOS } from '../../../src/api/qos.js';
import {
  containerOOMScoreAdjust,
  generateLinuxContainerResources,
  milliCPUToQuota,
  milliCPUToShares,
} from '../../../src/kuberuntime/container-resources.js';

const GiB = 1024 ** 3;
const opts = { memoryCapacityBytes: 8 * GiB, cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 };

function pod(containers: Container[], annotations: Record<string, string> = {}): Pod {
  return { metadata: { name: 'p', namespace: 'd', uid: 'u', annotations }, spec: { containers } };
}

test('shares and quota arithmetic', () => {
  assert.equal(milliCPUToShares(0), 2);
  assert.equal(milliCPUToShares(1), 2);
  assert.equal(milliCPUToShares(100), 102);
  assert.equal(milliCPUToShares(1000), 1024);
  assert.equal(milliCPUToShares(1_000_000), 262_144);
  assert.equal(milliCPUToQuota(0, 100_000), 0);
  assert.equal(milliCPUToQuota(500, 100_000), 50_000);
  assert.equal(milliCPUToQuota(5, 100_000), 1000);
});

test('requests give shares, limits give quota and memory limit', () => {
  const c: Container = {
    name: 'a',
    resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '1', memory: '128Mi' } },
  };
  const r = generateLinuxContainerResources(pod([c]), c, opts);
  assert.equal(r.cpuShares, 256);
  assert.equal(r.cpuPeriod, 100_000);
  assert.equal(r.cpuQuota, 100_000);
  assert.equal(r.memoryLimitInBytes, 128 * 1024 * 1024);
});

test('a limit without a request: shares from the limit; nothing at all: minimum shares, no quota', () => {
  const limited: Container = { name: 'a', resources: { limits: { cpu: '500m' } } };
  assert.equal(generateLinuxContainerResources(pod([limited]), limited, opts).cpuShares, 512);
  const bare: Container = { name: 'b' };
  const r = generateLinuxContainerResources(pod([bare]), bare, opts);
  assert.equal(r.cpuShares, 2);
  assert.equal(r.cpuQuota, 0);
  assert.equal(r.memoryLimitInBytes, 0);
  assert.equal(r.oomScoreAdj, 1000);
  const noQuota = generateLinuxContainerResources(pod([limited]), limited, { ...opts, cpuCFSQuota: false });
  assert.equal(noQuota.cpuQuota, 0);
  assert.equal(noQuota.cpuPeriod, 0);
});

test('QoS classes and OOM score adjustments', () => {
  const guaranteed: Container = { name: 'g', resources: { limits: { cpu: '1', memory: '1Gi' } } };
  const burstable: Container = { name: 'b', resources: { requests: { memory: '2Gi' } } };
  assert.equal(computePodQOS(pod([guaranteed])), 'Guaranteed');
  assert.equal(computePodQOS(pod([burstable])), 'Burstable');
  assert.equal(computePodQOS(pod([{ name: 'x' }])), 'BestEffort');
  assert.equal(computePodQOS(pod([guaranteed, { name: 'x' }])), 'Burstable');
  assert.equal(containerOOMScoreAdjust(pod([guaranteed]), guaranteed, 8 * GiB), -997);
  assert.equal(containerOOMScoreAdjust(pod([burstable]), burstable, 8 * GiB), 750);
  const huge: Container = { name: 'h', resources: { requests: { memory: '8Gi' } } };
  assert.equal(containerOOMScoreAdjust(pod([huge]), huge, 8 * GiB), 3);
  const tiny: Container = { name: 't', resources: { requests: { memory: '1' } } };
  assert.equal(containerOOMScoreAdjust(pod([tiny]), tiny, 8 * GiB), 999);
  // Static pods are critical to the node.
  const x: Container = { name: 'x' };
  assert.equal(
    containerOOMScoreAdjust(pod([x], { 'kubernetes.io/config.source': 'file' }), x, 8 * GiB),
    -997,
  );
});
