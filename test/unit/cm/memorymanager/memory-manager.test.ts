import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Container, Pod } from '../../../../src/api/core-v1.js';
import { parseQuantity } from '../../../../src/api/quantity.js';
import { unmarshalCheckpoint } from '../../../../src/cm/memorymanager/checkpoint.js';
import {
  createMemoryManager,
  type MemoryManager,
  type MemoryManagerConfig,
} from '../../../../src/cm/memorymanager/memory-manager.js';
import { readNUMANodeMemory } from '../../../../src/cm/memorymanager/numa-memory.js';

const MB = 1024 ** 2;
const GB = 1024 * MB;

/** A fake /sys with 2 NUMA nodes of 8 GiB, each with 512 pages of 2 MiB (1 GiB) and no 1 GiB pages. */
async function fakeSysfs(): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'fake-sysfs-numa-'));
  for (const id of [0, 1]) {
    const dir = path.join(root, 'devices/system/node', `node${id}`);
    await mkdir(path.join(dir, 'hugepages/hugepages-2048kB'), { recursive: true });
    await mkdir(path.join(dir, 'hugepages/hugepages-1048576kB'), { recursive: true });
    await writeFile(
      path.join(dir, 'meminfo'),
      `Node ${id} MemTotal:        8388608 kB\nNode ${id} MemFree:         7000000 kB\n`,
    );
    await writeFile(path.join(dir, 'hugepages/hugepages-2048kB/nr_hugepages'), '512\n');
    await writeFile(path.join(dir, 'hugepages/hugepages-1048576kB/nr_hugepages'), '0\n');
  }
  // Not a node: the kernel keeps other files beside them.
  await writeFile(path.join(root, 'devices/system/node', 'online'), '0-1\n');
  return root;
}

/** Every container of pod, init containers first, as the topology manager's pod scope allocates. */
function allocatePod(m: MemoryManager, pod: Pod): void {
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) m.allocate(pod, c);
}

function guaranteed(uid: string, memory: string, hugepages2Mi?: string, init?: Container[]): Pod {
  const list: Record<string, string> = { cpu: '1', memory };
  if (hugepages2Mi) list['hugepages-2Mi'] = hugepages2Mi;
  return {
    metadata: { name: uid, namespace: 'default', uid },
    spec: {
      containers: [{ name: 'app', image: 'i', resources: { requests: list, limits: list } }],
      ...(init ? { initContainers: init } : {}),
    },
  };
}

async function setup(overrides: Partial<MemoryManagerConfig> = {}) {
  const sysfsRoot = await fakeSysfs();
  const rootDir = await mkdtemp(path.join(tmpdir(), 'memmgr-'));
  const config: MemoryManagerConfig = {
    policyName: 'Static',
    reservedMemory: [
      { numaNode: 0, limits: { memory: '512Mi' } },
      { numaNode: 1, limits: { memory: '512Mi' } },
    ],
    nodeAllocatableReservation: () => Promise.resolve({ memory: parseQuantity('1Gi') }),
    rootDir,
    sysfsRoot,
    ...overrides,
  };
  const done = async () => {
    await rm(sysfsRoot, { recursive: true, force: true });
    await rm(rootDir, { recursive: true, force: true });
  };
  return { config, rootDir, done };
}

test('reads each NUMA node of the fake sysfs, pools with no pages included', async () => {
  const root = await fakeSysfs();
  try {
    assert.deepEqual(await readNUMANodeMemory(root), [
      {
        id: 0,
        memoryBytes: 8 * GB,
        hugePages: [
          { pageSizeKiB: 1048576, numPages: 0 },
          { pageSizeKiB: 2048, numPages: 512 },
        ],
      },
      {
        id: 1,
        memoryBytes: 8 * GB,
        hugePages: [
          { pageSizeKiB: 1048576, numPages: 0 },
          { pageSizeKiB: 2048, numPages: 512 },
        ],
      },
    ]);
    await assert.rejects(readNUMANodeMemory(path.join(root, 'nowhere')), /no NUMA nodes under/);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('the machine state at start: totals, system reserved, pools taken off regular memory', async () => {
  const { config, done } = await setup();
  try {
    const m = await createMemoryManager(config);
    const node = m.checkpoint().machineState?.get(1);
    assert.deepEqual(node, {
      numberOfAssignments: 0,
      cells: [1],
      memoryMap: new Map([
        ['hugepages-1Gi', { total: 0, systemReserved: 0, allocatable: 0, reserved: 0, free: 0 }],
        ['hugepages-2Mi', { total: GB, systemReserved: 0, allocatable: GB, reserved: 0, free: GB }],
        [
          'memory',
          { total: 8 * GB, systemReserved: 512 * MB, allocatable: 6656 * MB, reserved: 0, free: 6656 * MB },
        ],
      ]),
    });
    assert.deepEqual(m.getAllocatableMemory(), [
      { numaAffinity: [0], type: 'hugepages-2Mi', size: GB },
      { numaAffinity: [0], type: 'memory', size: 6656 * MB },
      { numaAffinity: [1], type: 'hugepages-2Mi', size: GB },
      { numaAffinity: [1], type: 'memory', size: 6656 * MB },
    ]);
  } finally {
    await done();
  }
});

test('refuses at start what upstream refuses, in its words', async () => {
  const { config, done } = await setup();
  try {
    await assert.rejects(
      createMemoryManager({ ...config, policyName: 'static' }),
      /^KubeletError: unknown policy: "static"$/,
    );
    await assert.rejects(
      createMemoryManager({ ...config, reservedMemory: [{ numaNode: 0, limits: { memory: '512Mi' } }] }),
      /the total amount "512Mi" of type "memory" is not equal to the value "1Gi" determined by Node Allocatable feature/,
    );
    await assert.rejects(
      createMemoryManager({ ...config, reservedMemory: [{ numaNode: 3, limits: { memory: '1Gi' } }] }),
      /the reserved memory configuration references a NUMA node 3 that does not exist on this machine/,
    );
    await assert.rejects(
      createMemoryManager({
        ...config,
        reservedMemory: [{ numaNode: 0, limits: { 'hugepages-2Mi': '1Gi' } }],
        nodeAllocatableReservation: () => Promise.resolve({ 'hugepages-2Mi': parseQuantity('1Gi') }),
      }),
      /\[memorymanager\] you should specify the system reserved memory/,
    );
  } finally {
    await done();
  }
});

test('allocates, offers hints, sets cpuset.mems, frees stale pods and keeps it all in memory_manager_state', async () => {
  const { config, rootDir, done } = await setup();
  try {
    const m = await createMemoryManager(config);
    const active: Pod[] = [];
    m.start(() => active);
    const big = guaranteed('big', '6Gi', '512Mi');
    active.push(big);
    const hints = m.getTopologyHints(big, big.spec.containers[0]!);
    assert.deepEqual(hints?.get('memory'), [
      { numaNodeAffinity: [0], preferred: true },
      { numaNodeAffinity: [1], preferred: true },
      { numaNodeAffinity: [0, 1], preferred: false },
    ]);
    allocatePod(m, big);
    assert.equal(m.cpusetMemsFor(big, big.spec.containers[0]!), '0');
    assert.deepEqual(m.getMemory('big', 'app'), [
      { numaAffinity: [0], type: 'memory', size: 6 * GB },
      { numaAffinity: [0], type: 'hugepages-2Mi', size: 512 * MB },
    ]);
    // Node 0 has 512Mi of memory left: a 1Gi pod goes to node 1.
    const small = guaranteed('small', '1Gi');
    active.push(small);
    allocatePod(m, small);
    assert.equal(m.cpusetMemsFor(small, small.spec.containers[0]!), '1');
    // 7Gi fits no single node any more, and node 0 is in use alone: no hint, no allocation.
    const huge = guaranteed('huge', '7Gi');
    assert.equal(m.getTopologyHints(huge, huge.spec.containers[0]!)?.size, 0);
    assert.throws(() => allocatePod(m, huge), /no NUMA nodes with enough memory is available/);
    // BestEffort and Burstable pods get nothing and no cpuset.mems.
    const be: Pod = {
      metadata: { name: 'be', uid: 'be' },
      spec: { containers: [{ name: 'c', image: 'i' }] },
    };
    allocatePod(m, be);
    assert.equal(m.cpusetMemsFor(be, be.spec.containers[0]!), '');

    await m.stop();
    const cp = unmarshalCheckpoint(await readFile(path.join(rootDir, 'memory_manager_state'), 'utf8'));
    assert.deepEqual([...(cp.entries?.keys() ?? [])].sort(), ['big', 'small']);
    assert.equal(cp.machineState?.get(0)?.memoryMap?.get('memory')?.free, 512 * MB);
    assert.equal(cp.machineState?.get(0)?.numberOfAssignments, 2);

    // A restart reads it back, checked against the machine.
    const again = await createMemoryManager(config);
    assert.equal(again.cpusetMemsFor(big, big.spec.containers[0]!), '0');
    assert.deepEqual(again.checkpoint(), m.checkpoint());

    // The big pod goes: its memory is freed at the next admission (upstream's removeStaleState).
    active.splice(0, 1);
    const next = guaranteed('next', '6Gi');
    allocatePod(m, next);
    assert.equal(m.cpusetMemsFor(next, next.spec.containers[0]!), '0');
    assert.equal(m.getMemory('big', 'app').length, 0);
    await m.stop();
  } finally {
    await done();
  }
});

test("an init container's memory goes back once the next container is created", async () => {
  const { config, done } = await setup();
  try {
    const m = await createMemoryManager(config);
    const init = {
      name: 'init',
      image: 'i',
      resources: { requests: { cpu: '1', memory: '2Gi' }, limits: { cpu: '1', memory: '2Gi' } },
    };
    const p = guaranteed('p', '1Gi', undefined, [init]);
    m.start(() => [p]);
    allocatePod(m, p);
    // The app reuses the init container's bytes: 2Gi held in all, not 3Gi.
    assert.equal(m.checkpoint().machineState?.get(0)?.memoryMap?.get('memory')?.reserved, 2 * GB);
    assert.equal(m.cpusetMemsFor(p, init), '0');
    assert.equal(m.cpusetMemsFor(p, p.spec.containers[0]!), '0');
    assert.equal(m.getMemory('p', 'init').length, 0);
    assert.equal(m.checkpoint().machineState?.get(0)?.memoryMap?.get('memory')?.reserved, GB);
    await m.stop();
  } finally {
    await done();
  }
});

test('a checkpoint of another policy, a corrupt one or one that does not fit the machine stops the start', async () => {
  const { config, rootDir, done } = await setup();
  try {
    const none = await createMemoryManager({ ...config, policyName: 'None' });
    await none.stop();
    // None keeps the file too, as upstream: {"policyName":"None","machineState":{},"checksum":…}.
    const text = await readFile(path.join(rootDir, 'memory_manager_state'), 'utf8');
    assert.match(text, /^\{"policyName":"None","machineState":\{\},"checksum":\d+\}$/);
    await assert.rejects(
      createMemoryManager(config),
      new RegExp(
        `^KubeletError: could not restore state from checkpoint: \\[memorymanager\\] configured policy "Static" differs from state checkpoint policy "None", please drain this node and delete the memory manager checkpoint file "${path.join(rootDir, 'memory_manager_state')}" before restarting Kubelet$`,
      ),
    );
    await writeFile(
      path.join(rootDir, 'memory_manager_state'),
      text.replace(/"checksum":\d+/, '"checksum":1'),
    );
    await assert.rejects(createMemoryManager({ ...config, policyName: 'None' }), /checkpoint is corrupted/);
    await rm(path.join(rootDir, 'memory_manager_state'));
    const s = await createMemoryManager(config);
    await s.stop();
    // The reservation changed since the file was written: the machine state no longer adds up.
    await assert.rejects(
      createMemoryManager({
        ...config,
        reservedMemory: [{ numaNode: 0, limits: { memory: '1Gi' } }],
      }),
      /\[memorymanager\] the expected machine state is different from the real one/,
    );
  } finally {
    await done();
  }
});

test('the checkpoint is written only when the state changes (None, BestEffort pods: never)', async () => {
  const { config, rootDir, done } = await setup();
  const file = path.join(rootDir, 'memory_manager_state');
  try {
    for (const policyName of ['None', 'Static']) {
      await rm(file, { force: true });
      const m = await createMemoryManager({ ...config, policyName });
      m.start(() => []);
      const before = (await stat(file)).mtimeMs;
      await new Promise((r) => setTimeout(r, 20));
      const be: Pod = {
        metadata: { name: 'be', uid: 'be' },
        spec: { containers: [{ name: 'c', image: 'i' }] },
      };
      allocatePod(m, be);
      m.cpusetMemsFor(be, be.spec.containers[0]!);
      await m.stop();
      assert.equal((await stat(file)).mtimeMs, before, policyName);
    }
  } finally {
    await done();
  }
});
