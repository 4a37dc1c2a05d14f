/**
 * reservedSystemCPUs in node allocatable: upstream's kubelet replaces systemReserved.cpu with the
 * set's size and drops kubeReserved.cpu before anything reads them (cmd/kubelet/app/server.go), so
 * the Node's allocatable, kubepods' limits and the CPU manager all see the same reservation.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { withReservedSystemCPUs } from '../../../../src/cm/cpumanager/reserved-system-cpus.js';
import { nodeAllocatableReservation } from '../../../../src/nodestatus/setters.js';
import { DUAL_SOCKET_HT, makeFakeSysfs } from './fake-sysfs.js';

const sysfs = await makeFakeSysfs(DUAL_SOCKET_HT);
after(() => sysfs.remove());

const base = {
  reservedSystemCPUs: '',
  systemReserved: { cpu: '500m', memory: '1Gi' },
  kubeReserved: { cpu: '1', memory: '512Mi' },
  evictionHard: {},
};

test('reservedSystemCPUs overrides the cpu of systemReserved and kubeReserved in allocatable', async () => {
  const capacity = { cpu: { nano: 12_000_000_000n, format: 'DecimalSI' as const } };
  assert.equal(nodeAllocatableReservation(capacity, base).cpu?.nano, 1_500_000_000n);
  const applied = await withReservedSystemCPUs({ ...base, reservedSystemCPUs: '0,6,1' }, sysfs.root);
  assert.deepEqual(applied.systemReserved, { cpu: '3', memory: '1Gi' });
  assert.deepEqual(applied.kubeReserved, { memory: '512Mi' });
  assert.equal(nodeAllocatableReservation(capacity, applied).cpu?.nano, 3_000_000_000n);
  // Nothing set: nothing changes.
  assert.equal(await withReservedSystemCPUs(base, sysfs.root), base);
});

test("a set outside the online CPUs, or one that does not parse, stops the start in upstream's words", async () => {
  await assert.rejects(withReservedSystemCPUs({ ...base, reservedSystemCPUs: '0,40' }, sysfs.root), {
    message: 'reserved-cpus: 0,40 is not a subset of online-cpus: 0-11',
  });
  await assert.rejects(withReservedSystemCPUs({ ...base, reservedSystemCPUs: '0-x' }, sysfs.root), {
    message: /^unable to parse reserved-cpus list: /,
  });
});
