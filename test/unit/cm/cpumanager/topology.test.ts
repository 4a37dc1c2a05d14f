import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CPUSet } from '../../../../src/cm/cpumanager/cpu-set.js';
import { discoverTopology } from '../../../../src/cm/cpumanager/topology.js';
import { DUAL_SOCKET_HT, makeFakeSysfs } from './fake-sysfs.js';

test('CPUSet parses and prints the Linux list format', () => {
  assert.deepEqual(CPUSet.parse('0-3,8,10-11').list(), [0, 1, 2, 3, 8, 10, 11]);
  assert.equal(CPUSet.of(7, 0, 1, 2, 5, 6).toString(), '0-2,5-7');
  assert.equal(CPUSet.parse('').toString(), '');
  assert.equal(CPUSet.of(3).toString(), '3');
  for (const bad of ['a', '1-', '3-1', '1,,2', '1-2-3', ' 1'])
    assert.throws(() => CPUSet.parse(bad), /invalid cpuset/, bad);
});

test('CPUSet set algebra', () => {
  const a = CPUSet.parse('0-5');
  const b = CPUSet.parse('4-7');
  assert.equal(a.union(b).toString(), '0-7');
  assert.equal(a.intersection(b).toString(), '4-5');
  assert.equal(a.difference(b).toString(), '0-3');
  assert.ok(CPUSet.of(1, 2).isSubsetOf(a));
  assert.ok(!b.isSubsetOf(a));
  assert.ok(CPUSet.parse('1-2').equals(CPUSet.of(2, 1)));
});

test('discoverTopology reads cores, sockets and NUMA nodes from sysfs (2 sockets, 2 NUMA nodes, HT)', async () => {
  const fake = await makeFakeSysfs(DUAL_SOCKET_HT);
  try {
    const topo = await discoverTopology(fake.root);
    assert.equal(topo.numCPUs, 12);
    assert.equal(topo.numCores, 6);
    assert.equal(topo.numSockets, 2);
    assert.equal(topo.numNUMANodes, 2);
    assert.equal(topo.cpusPerCore(), 2);
    assert.equal(topo.cpusPerSocket(), 6);
    assert.deepEqual(topo.details.byCPU.get(8), { coreId: 2, socketId: 0, numaNodeId: 0 });
    assert.deepEqual(topo.details.byCPU.get(11), { coreId: 5, socketId: 1, numaNodeId: 1 });
    assert.equal(topo.details.cpusInNUMANodes(1).toString(), '1,3,5,7,9,11');
    assert.equal(topo.details.cpusInCores(4).toString(), '4,10');
  } finally {
    await fake.remove();
  }
});

test('discoverTopology puts every CPU on NUMA node 0 when the kernel has no node folder', async () => {
  const fake = await makeFakeSysfs([{ threads: [0, 1], socket: 0, numa: 0 }]);
  try {
    const { rm } = await import('node:fs/promises');
    await rm(`${fake.root}/devices/system/node`, { recursive: true });
    const topo = await discoverTopology(fake.root);
    assert.equal(topo.numNUMANodes, 1);
    assert.equal(topo.details.byCPU.get(1)?.numaNodeId, 0);
  } finally {
    await fake.remove();
  }
});
