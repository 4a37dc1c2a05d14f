import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import type { PodSandboxConfig } from '../../../src/cri/types.js';
import { ImageGCManager } from '../../../src/images/image-gc-manager.js';
import { FakeClock } from '../../../src/lib/clock.js';

const Mi = 1024 * 1024;

async function setUp(availableBytes: number, lowThresholdPercent = 80) {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  fake.addImage('registry.k8s.io/pause:3.9', { size: 1 * Mi });
  fake.addImage('busybox', { size: 5 * Mi });
  fake.addImage('old-unused:1', { size: 30 * Mi });
  fake.addImage('newer-unused:1', { size: 30 * Mi });
  const sandboxConfig = {
    metadata: { name: 'p', namespace: 'ns', uid: 'u', attempt: 0 },
  } as unknown as PodSandboxConfig;
  const sb = await fake.runPodSandbox(sandboxConfig, '');
  const events: string[] = [];
  const gc = new ImageGCManager({
    runtimeService: fake,
    imageService: fake,
    imageFsStats: async () => ({ time: 0, capacityBytes: 100 * Mi, availableBytes }),
    sandboxImage: 'registry.k8s.io/pause:3.9',
    policy: { highThresholdPercent: 85, lowThresholdPercent, minAgeMs: 60_000, maxAgeMs: 0 },
    clock,
    nodeName: 'n',
    recorder: {
      event: () => undefined,
      eventFor: (_r, type, reason, message) => events.push(`${type} ${reason} ${message}`),
    },
    runtimeRequestTimeoutMs: 1000,
  });
  const use = async (image: string) => {
    const id = await fake.createContainer(
      sb,
      { metadata: { name: image, attempt: 0 }, image: { image }, labels: {}, annotations: {} } as never,
      sandboxConfig,
    );
    await fake.startContainer(id);
    return id;
  };
  const names = () => [...fake.images.values()].flatMap((i) => i.repoTags).sort();
  return { clock, fake, gc, events, use, names };
}

test('over the high threshold: least recently used unused images go first, down to the low threshold', async () => {
  const h = await setUp(10 * Mi); // 90 % used: free 20 MiB to get to 80 %
  await h.use('docker.io/library/old-unused:1');
  await h.use('docker.io/library/busybox:latest');
  // The first pass: what is there dates from an unknown past (upstream), so imageMinimumGCAge does
  // not shield it; newer-unused was never used, and used-at-0 sorts first, as upstream.
  await h.gc.garbageCollect();
  assert.deepEqual(h.names(), [
    'docker.io/library/busybox:latest',
    'docker.io/library/old-unused:1',
    'registry.k8s.io/pause:3.9',
  ]);
  assert.deepEqual(h.events, []);
});

test('an image first seen after the first pass is kept until it is imageMinimumGCAge old', async () => {
  const h = await setUp(10 * Mi);
  await h.use('docker.io/library/old-unused:1');
  await h.use('docker.io/library/newer-unused:1');
  await h.use('docker.io/library/busybox:latest');
  await assert.rejects(h.gc.garbageCollect(), /Failed to garbage collect/, 'nothing unused yet');
  h.fake.addImage('late:1', { size: 30 * Mi });
  h.clock.advance(30_000);
  await assert.rejects(h.gc.garbageCollect(), /only found 0 bytes eligible/);
  assert.ok(h.names().includes('docker.io/library/late:1'));
  // Its age counts from the pass that first saw it.
  h.clock.advance(61_000);
  await h.gc.garbageCollect();
  assert.ok(!h.names().includes('docker.io/library/late:1'));
});

test('short of the goal: FreeDiskSpaceFailed; in-use and the pinned sandbox image are kept', async () => {
  const h = await setUp(1 * Mi, 0);
  await h.use('docker.io/library/busybox:latest');
  await assert.rejects(h.gc.garbageCollect(), /Failed to garbage collect required amount of images/);
  assert.deepEqual(h.names(), ['docker.io/library/busybox:latest', 'registry.k8s.io/pause:3.9']);
  assert.match(
    h.events.at(-1) ?? '',
    /^Warning FreeDiskSpaceFailed Failed to garbage collect required amount of images\. Attempted to free \d+ bytes, but only found 62914560 bytes eligible to free\.$/,
  );
});

test('a pass that fails twice in a row is told on the node as ImageGCFailed (upstream StartGarbageCollection)', async () => {
  const h = await setUp(1 * Mi, 0);
  await h.use('docker.io/library/busybox:latest');
  h.gc.start();
  const settle = async () => {
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
  };
  h.clock.advance(0);
  await settle();
  // The first pass: everything is younger than minAge, short of the goal; no ImageGCFailed yet.
  assert.deepEqual(
    h.events.map((e) => e.split(' ')[1]),
    ['FreeDiskSpaceFailed'],
  );
  h.clock.advance(5 * 60_000);
  await settle();
  h.gc.stop();
  assert.deepEqual(
    h.events.map((e) => e.split(' ')[1]),
    ['FreeDiskSpaceFailed', 'FreeDiskSpaceFailed', 'ImageGCFailed'],
  );
  assert.equal(h.events[2], h.events[1]!.replace('FreeDiskSpaceFailed', 'ImageGCFailed'));
});

test('deleteUnusedImages removes every eligible image whatever the usage', async () => {
  const h = await setUp(90 * Mi);
  await h.use('docker.io/library/busybox:latest');
  await h.gc.garbageCollect();
  h.clock.advance(61_000);
  await h.gc.deleteUnusedImages();
  assert.deepEqual(h.names(), ['docker.io/library/busybox:latest', 'registry.k8s.io/pause:3.9']);
});
