import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import type { ResourceDeviceInstances } from '../../../src/cm/devicemanager/manager.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { PodResourcesLister, PodResourcesServer } from '../../../src/podresources/server.js';
import { PodResourcesClient } from '../../helpers/pod-resources-client.js';

const pods: Pod[] = [
  {
    metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
    spec: {
      initContainers: [
        { name: 'sidecar', image: 'i', restartPolicy: 'Always' },
        { name: 'init', image: 'i' },
      ],
      containers: [{ name: 'main', image: 'i' }],
    },
  } as Pod,
];

const devices = {
  updated: 0,
  updateAllocatedDevices() {
    this.updated++;
  },
  getDevices(uid: string, container: string): ResourceDeviceInstances {
    if (uid === 'u1' && container === 'main')
      return new Map([
        [
          'example.com/dev',
          new Map([
            ['a', { id: 'a', numaNodes: [] }],
            ['b', { id: 'b', numaNodes: [0, 1] }],
          ]),
        ],
      ]);
    return new Map();
  },
  getAllocatableDevices: (): ResourceDeviceInstances =>
    new Map([['example.com/dev', new Map([['a', { id: 'a', numaNodes: [] }]])]]),
};

const podsProvider = {
  getPods: () => pods,
  getPodByName: (ns: string, name: string) =>
    pods.find((p) => p.metadata.name === name && p.metadata.namespace === ns),
};

test('List: sidecars and containers with one entry per device and NUMA node; no CPUs or memory', () => {
  const lister = new PodResourcesLister({ pods: podsProvider, devices, getEnabled: false });
  const res = lister.list();
  assert.equal(devices.updated, 1);
  assert.deepEqual(
    res.podResources[0]?.containers.map((c) => c.name),
    ['sidecar', 'main'],
  );
  assert.deepEqual(res.podResources[0]?.containers[1], {
    name: 'main',
    devices: [
      { resourceName: 'example.com/dev', deviceIds: ['a'], topology: undefined },
      { resourceName: 'example.com/dev', deviceIds: ['b'], topology: { nodes: [{ ID: 0 }] } },
      { resourceName: 'example.com/dev', deviceIds: ['b'], topology: { nodes: [{ ID: 1 }] } },
    ],
    cpuIds: [],
    memory: [],
    dynamicResources: [],
  });
  assert.deepEqual(
    lister.getAllocatableResources().devices.map((d) => d.deviceIds),
    [['a']],
  );
});

test("List and GetAllocatableResources report the CPU manager's exclusive and allocatable CPUs", () => {
  const cpus = {
    getCPUs: (uid: string, container: string): number[] =>
      uid === 'u1' && container === 'main' ? [2, 3] : [],
    getAllocatableCPUs: (): number[] => [1, 2, 3],
  };
  const lister = new PodResourcesLister({ pods: podsProvider, devices, cpus, getEnabled: false });
  const containers = lister.list().podResources[0]?.containers;
  assert.deepEqual(
    containers?.map((c) => [c.name, c.cpuIds]),
    [
      ['sidecar', []],
      ['main', [2, 3]],
    ],
  );
  assert.deepEqual(lister.getAllocatableResources().cpuIds, [1, 2, 3]);
});

test("List and GetAllocatableResources report the memory manager's blocks, as upstream's containerMemoryFromBlock", () => {
  const memory = {
    getMemory: (uid: string, container: string) =>
      uid === 'u1' && container === 'main'
        ? [
            { numaAffinity: [0, 1], type: 'memory', size: 1073741824 },
            { numaAffinity: [0, 1], type: 'hugepages-2Mi', size: 4194304 },
          ]
        : [],
    getAllocatableMemory: () => [
      { numaAffinity: [0], type: 'memory', size: 7516192768 },
      { numaAffinity: [1], type: 'memory', size: 8053063680 },
    ],
  };
  const lister = new PodResourcesLister({ pods: podsProvider, devices, memory, getEnabled: false });
  const containers = lister.list().podResources[0]?.containers;
  assert.deepEqual(containers?.[0]?.memory, []);
  assert.deepEqual(containers?.[1]?.memory, [
    { memoryType: 'memory', size: 1073741824, topology: { nodes: [{ ID: 0 }, { ID: 1 }] } },
    { memoryType: 'hugepages-2Mi', size: 4194304, topology: { nodes: [{ ID: 0 }, { ID: 1 }] } },
  ]);
  assert.deepEqual(lister.getAllocatableResources().memory, [
    { memoryType: 'memory', size: 7516192768, topology: { nodes: [{ ID: 0 }] } },
    { memoryType: 'memory', size: 8053063680, topology: { nodes: [{ ID: 1 }] } },
  ]);
});

test('Get: off by default (upstream v1.30), and upstream errors when on', () => {
  const off = new PodResourcesLister({ pods: podsProvider, devices, getEnabled: false });
  assert.throws(
    () => off.get({ podName: 'p', podNamespace: 'ns' }),
    /^Error: PodResources API Get method disabled$/,
  );
  const on = new PodResourcesLister({ pods: podsProvider, devices, getEnabled: true });
  assert.equal(on.get({ podName: 'p', podNamespace: 'ns' }).podResources?.name, 'p');
  assert.throws(() => on.get({ podName: 'x', podNamespace: 'ns' }), /pod x in namespace ns not found/);
});

test('over the socket, past the burst, calls are refused by the rate limit', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'podresources-'));
  const server = new PodResourcesServer({
    socketDir: dir,
    pods: podsProvider,
    devices,
    clock: new FakeClock(),
    burst: 2,
    qps: 1,
  });
  await server.start();
  const client = new PodResourcesClient(server.socketPath);
  const list = () => client.list();
  try {
    assert.equal((await list()).podResources.length, 1);
    await list();
    await assert.rejects(
      list(),
      (err: grpc.ServiceError) =>
        err.code === grpc.status.RESOURCE_EXHAUSTED && err.details === 'rejected by rate limit',
    );
  } finally {
    client.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
