import assert from 'node:assert/strict';
import { test } from 'node:test';
import { takeByTopologyNUMAPacked } from '../../../../src/cm/cpumanager/cpu-assignment.js';
import { CPUSet } from '../../../../src/cm/cpumanager/cpu-set.js';
import { DUAL_SOCKET_HT, SINGLE_SOCKET_HT, topologyOf } from './fake-sysfs.js';

// Upstream's commonTakeByTopologyTestCases and the packed cases of cpu_assignment_test.go that use
// these two topologies.
const cases: {
  name: string;
  cores: typeof DUAL_SOCKET_HT;
  available: string;
  n: number;
  want: string | Error;
}[] = [
  {
    name: 'more cpus than are available',
    cores: SINGLE_SOCKET_HT,
    available: '0,2,4,6',
    n: 5,
    want: new Error('not enough cpus available to satisfy request'),
  },
  { name: 'zero cpus', cores: SINGLE_SOCKET_HT, available: '0-7', n: 0, want: '' },
  { name: 'one cpu from single socket with HT', cores: SINGLE_SOCKET_HT, available: '0-7', n: 1, want: '0' },
  { name: 'one cpu, some cpus taken', cores: SINGLE_SOCKET_HT, available: '1,3,5-7', n: 1, want: '6' },
  {
    name: 'two cpus from single socket with HT',
    cores: SINGLE_SOCKET_HT,
    available: '0-7',
    n: 2,
    want: '0,4',
  },
  {
    name: 'all cpus from single socket with HT',
    cores: SINGLE_SOCKET_HT,
    available: '0-7',
    n: 8,
    want: '0-7',
  },
  {
    name: 'two cpus, only one core totally free',
    cores: SINGLE_SOCKET_HT,
    available: '0-3,6',
    n: 2,
    want: '2,6',
  },
  {
    name: 'a socket of cpus from dual socket with HT',
    cores: DUAL_SOCKET_HT,
    available: '0-11',
    n: 6,
    want: '0,2,4,6,8,10',
  },
  {
    name: 'one cpu from dual socket with HT - core from socket 0',
    cores: DUAL_SOCKET_HT,
    available: '1-5,7-11',
    n: 1,
    want: '2',
  },
  {
    name: '4 full cores, 3 filling NUMA node 0 and 1 from node 1',
    cores: DUAL_SOCKET_HT,
    available: '0-11',
    n: 8,
    want: '0-2,4,6-8,10',
  },
];

for (const c of cases) {
  test(`takeByTopologyNUMAPacked: ${c.name}`, () => {
    const topo = topologyOf(c.cores);
    const run = (): CPUSet => takeByTopologyNUMAPacked(topo, CPUSet.parse(c.available), c.n);
    if (c.want instanceof Error) assert.throws(run, { message: c.want.message });
    else assert.equal(run().toString(), c.want);
  });
}
