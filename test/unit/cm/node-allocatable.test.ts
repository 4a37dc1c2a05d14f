import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeAllocatableResourceConfig, readHugePages } from '../../../src/cm/node-allocatable.js';
import { TempCgroupTree } from '../../../src/cm/testing/temp-cgroup-fs.js';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { capacity, MiB } from './fixtures.js';

const GiB = 1024 * MiB;

test('enforced: capacity less system and kube reservations, never below zero', () => {
  const c = nodeAllocatableResourceConfig(
    { ...capacity, hugePagesBytes: new Map([[2 * MiB, BigInt(512 * MiB)]]) },
    {
      enforcePods: true,
      systemReserved: { cpu: '1', memory: '6Gi', 'hugepages-2Mi': '128Mi' },
      kubeReserved: { cpu: '500m', memory: '4Gi', pid: '100' },
    },
  );
  assert.equal(c.cpuShares, 2560); // 2500m
  assert.equal(c.memoryBytes, 0n); // 8Gi - 10Gi
  assert.equal(c.pidsLimit, 32_668);
  assert.deepEqual([...(c.hugePageLimits ?? [])], [[2 * MiB, BigInt(384 * MiB)]]);
});

test('not enforced: the whole capacity', () => {
  const c = nodeAllocatableResourceConfig(capacity, { enforcePods: false, systemReserved: { cpu: '1' } });
  assert.deepEqual(c, {
    cpuShares: 4096,
    memoryBytes: BigInt(8 * GiB),
    pidsLimit: 32_768,
    hugePageLimits: new Map([[2 * MiB, 0n]]),
  });
});

test('huge page pools are read as page size → bytes', async () => {
  const tree = await TempCgroupTree.create({ version: 'v2', controllers: [] });
  try {
    const dir = path.join(tree.root, 'hugepages');
    for (const [name, pages] of [
      ['hugepages-2048kB', '16'],
      ['hugepages-1048576kB', '1'],
    ] as const) {
      await mkdir(path.join(dir, name), { recursive: true });
      await writeFile(path.join(dir, name, 'nr_hugepages'), `${pages}\n`);
    }
    assert.deepEqual(
      [...(await readHugePages(tree.fs, dir))].sort((a, b) => a[0] - b[0]),
      [
        [2 * MiB, BigInt(32 * MiB)],
        [GiB, BigInt(GiB)],
      ],
    );
    assert.equal((await readHugePages(tree.fs, path.join(tree.root, 'absent'))).size, 0);
  } finally {
    await tree.cleanup();
  }
});
