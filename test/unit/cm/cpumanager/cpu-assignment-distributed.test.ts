/**
 * distribute-cpus-across-numa's assignment (upstream takeByTopologyNUMADistributed): upstream's
 * TestTakeByTopologyNUMADistributed replayed case by case, its common packed cases (with a CPU group
 * of 1) first, on the same topologies, checked through the fake sysfs as the node reads them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { takeByTopologyNUMADistributed } from '../../../../src/cm/cpumanager/cpu-assignment-distributed.js';
import { CPUSet } from '../../../../src/cm/cpumanager/cpu-set.js';
import { discoverTopology, type CPUTopology } from '../../../../src/cm/cpumanager/topology.js';
import {
  DUAL_SOCKET_HT,
  DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT,
  DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT_LARGE,
  makeFakeSysfs,
  SINGLE_SOCKET_HT,
  type FakeCore,
} from './fake-sysfs.js';

type Topo = 'single' | 'dual' | 'multiNuma' | 'multiNumaLarge';
const CORES: Record<Topo, FakeCore[]> = {
  single: SINGLE_SOCKET_HT,
  dual: DUAL_SOCKET_HT,
  multiNuma: DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT,
  multiNumaLarge: DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT_LARGE,
};

interface Case {
  name: string;
  topo: Topo;
  available: string;
  n: number;
  groupSize: number;
  want: string | Error;
}

/** commonTakeByTopologyTestCases, run with a CPU group of 1 (commonTakeByTopologyExtendedTestCases). */
const common: Omit<Case, 'groupSize'>[] = [
  { name: 'take more cpus than are available from single socket with HT', topo: 'single', available: '0,2,4,6', n: 5, want: new Error('not enough cpus available to satisfy request') },
  { name: 'take zero cpus from single socket with HT', topo: 'single', available: '0-7', n: 0, want: '' },
  { name: 'take one cpu from single socket with HT', topo: 'single', available: '0-7', n: 1, want: '0' },
  { name: 'take one cpu from single socket with HT, some cpus are taken', topo: 'single', available: '1,3,5,6,7', n: 1, want: '6' },
  { name: 'take two cpus from single socket with HT', topo: 'single', available: '0-7', n: 2, want: '0,4' },
  { name: 'take all cpus from single socket with HT', topo: 'single', available: '0-7', n: 8, want: '0-7' },
  { name: 'take two cpus from single socket with HT, only one core totally free', topo: 'single', available: '0-3,6', n: 2, want: '2,6' },
  { name: 'take a socket of cpus from dual socket with HT', topo: 'dual', available: '0-11', n: 6, want: '0,2,4,6,8,10' },
  { name: 'take a socket of cpus from dual socket with multi-numa-per-socket with HT', topo: 'multiNuma', available: '0-79', n: 40, want: '0-19,40-59' },
  { name: 'take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT', topo: 'multiNuma', available: '0-79', n: 20, want: '0-9,40-49' },
  { name: 'take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, with 1 NUMA node already taken', topo: 'multiNuma', available: '10-39,50-79', n: 20, want: '10-19,50-59' },
  { name: 'take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT', topo: 'multiNuma', available: '0-79', n: 60, want: '0-29,40-69' },
  { name: 'take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, a core taken', topo: 'multiNuma', available: '1-39,41-79', n: 60, want: '10-39,50-79' },
]; // prettier-ignore

/** The extended cases, then TestTakeByTopologyNUMADistributed's own. */
const distributed: Case[] = [
  { name: 'allocate 4 full cores with 2 distributed across each NUMA node', topo: 'dual', available: '0-11', n: 8, groupSize: 1, want: '0,6,2,8,1,7,3,9' },
  { name: 'allocate 32 full cores with 8 distributed across each NUMA node', topo: 'multiNuma', available: '0-79', n: 64, groupSize: 1, want: '0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77' },
  { name: 'allocate 24 full cores with 8 distributed across the first 3 NUMA nodes', topo: 'multiNuma', available: '0-79', n: 48, groupSize: 1, want: '0-7,10-17,20-27,40-47,50-57,60-67' },
  { name: 'allocate 24 full cores with 8 distributed across the first 3 NUMA nodes (taking all but 2 from the first NUMA node)', topo: 'multiNuma', available: '1-29,32-39,41-69,72-79', n: 48, groupSize: 1, want: '1-8,10-17,20-27,41-48,50-57,60-67' },
  { name: 'allocate 24 full cores with 8 distributed across the last 3 NUMA nodes (even though all 8 could be allocated from the first NUMA node)', topo: 'multiNuma', available: '2-29,31-39,42-69,71-79', n: 48, groupSize: 1, want: '10-17,20-27,31-38,50-57,60-67,71-78' },
  { name: 'allocate 8 full cores with 2 distributed across each NUMA node', topo: 'multiNuma', available: '0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71', n: 16, groupSize: 1, want: '0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71' },
  { name: 'take one cpu from dual socket with HT - core from Socket 0', topo: 'dual', available: '1-5,7-11', n: 1, groupSize: 1, want: '1' },
  { name: 'take one cpu from dual socket with HT - core from Socket 0 - cpuGroupSize 2', topo: 'dual', available: '1-5,7-11', n: 1, groupSize: 2, want: '2' },
  { name: 'allocate 13 full cores distributed across the first 2 NUMA nodes', topo: 'multiNuma', available: '0-79', n: 26, groupSize: 1, want: '0-6,10-16,40-45,50-55' },
  { name: 'allocate 13 full cores distributed across the first 2 NUMA nodes (cpuGroupSize 2)', topo: 'multiNuma', available: '0-79', n: 26, groupSize: 2, want: '0-6,10-15,40-46,50-55' },
  { name: 'allocate 31 full cores with 15 CPUs distributed across each NUMA node and 1 CPU spilling over to each of NUMA 0, 1', topo: 'multiNuma', available: '0-79', n: 62, groupSize: 1, want: '0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76' },
  { name: 'allocate 31 full cores with 14 CPUs distributed across each NUMA node and 2 CPUs spilling over to each of NUMA 0, 1, 2 (cpuGroupSize 2)', topo: 'multiNuma', available: '0-79', n: 62, groupSize: 2, want: '0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76' },
  { name: 'allocate 31 full cores with 15 CPUs distributed across each NUMA node and 1 CPU spilling over to each of NUMA 2, 3 (to keep balance)', topo: 'multiNuma', available: '0-8,10-18,20-39,40-48,50-58,60-79', n: 62, groupSize: 1, want: '0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77' },
  { name: 'allocate 31 full cores with 14 CPUs distributed across each NUMA node and 2 CPUs spilling over to each of NUMA 0, 2, 3 (to keep balance with cpuGroupSize 2)', topo: 'multiNuma', available: '0-8,10-18,20-39,40-48,50-58,60-79', n: 62, groupSize: 2, want: '0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77' },
  { name: 'ensure bestRemainder chosen with NUMA nodes that have enough CPUs to satisfy the request', topo: 'multiNuma', available: '0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76', n: 34, groupSize: 1, want: '0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74' },
  { name: 'ensure previous failure encountered on live machine has been fixed (1/1)', topo: 'multiNumaLarge', available: '0,128,30,31,158,159,43-47,171-175,62,63,190,191,75-79,203-207,94,96,222,223,101-111,229-239,126,127,254,255', n: 28, groupSize: 1, want: '43-47,75-79,96,101-105,171-174,203-206,229-232' },
]; // prettier-ignore

const cases: Case[] = [...common.map((c) => ({ ...c, groupSize: 1 })), ...distributed];

describe('takeByTopologyNUMADistributed (upstream TestTakeByTopologyNUMADistributed)', () => {
  const topologies = new Map<Topo, CPUTopology>();
  const removers: (() => Promise<void>)[] = [];
  before(async () => {
    for (const [name, cores] of Object.entries(CORES) as [Topo, FakeCore[]][]) {
      const sysfs = await makeFakeSysfs(cores);
      removers.push(sysfs.remove);
      topologies.set(name, await discoverTopology(sysfs.root));
    }
  });
  after(async () => {
    for (const remove of removers) await remove();
  });

  for (const c of cases) {
    test(c.name, () => {
      const topo = topologies.get(c.topo)!;
      const run = (): CPUSet =>
        takeByTopologyNUMADistributed(topo, CPUSet.parse(c.available), c.n, c.groupSize);
      if (c.want instanceof Error) assert.throws(run, { message: c.want.message });
      else assert.equal(run().toString(), CPUSet.parse(c.want).toString());
    });
  }
});
