import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import type { PodSandboxConfig } from '../../../src/cri/types.js';
import { ContainerGC, type GCPolicy } from '../../../src/kuberuntime/container-gc.js';
import { FakeClock } from '../../../src/lib/clock.js';

function sandboxConfig(uid: string): PodSandboxConfig {
  return {
    metadata: { name: uid, namespace: 'd', uid, attempt: 0 },
    hostname: '',
    logDirectory: '',
    portMappings: [],
    labels: { 'io.kubernetes.pod.uid': uid },
    annotations: {},
  };
}

async function deadAttempts(
  fake: FakeRuntime,
  clock: FakeClock,
  uid: string,
  name: string,
  n: number,
): Promise<string> {
  const sb = await fake.runPodSandbox(sandboxConfig(uid), '');
  for (let i = 0; i < n; i++) {
    const id = await fake.createContainer(
      sb,
      {
        metadata: { name, attempt: i },
        image: { image: 'busybox:latest' },
        command: [],
        args: [],
        workingDir: '',
        envs: [],
        mounts: [],
        labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': name },
        annotations: {},
        logPath: '',
        stdin: false,
        stdinOnce: false,
        tty: false,
      },
      sandboxConfig(uid),
    );
    await fake.startContainer(id);
    fake.exitContainer(id, 1);
    clock.advance(1000);
  }
  return sb;
}

function gc(fake: FakeRuntime, clock: FakeClock, policy: GCPolicy): ContainerGC {
  return new ContainerGC({
    runtimeService: fake,
    clock,
    podLogsDir: '/nonexistent',
    legacyContainerLogsDir: '',
    policy,
    removeContainer: (id) => fake.removeContainer(id),
  });
}

function attempts(fake: FakeRuntime): string[] {
  return [...fake.containers.values()]
    .map(
      (c) =>
        `${c.config.labels['io.kubernetes.pod.uid']}/${c.config.metadata.name}/${c.config.metadata.attempt}`,
    )
    .sort();
}

test('maxPerPodContainer keeps the newest dead attempts; minAge spares young ones', async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  fake.addImage('busybox:latest');
  await deadAttempts(fake, clock, 'a', 'app', 4);
  await gc(fake, clock, { minAgeMs: 2500, maxPerPodContainer: 1, maxContainers: -1 }).garbageCollect(
    () => true,
  );
  // Attempts 2 and 3 are younger than 2.5 s: not evictable; of the older 0 and 1, one is kept.
  assert.deepEqual(attempts(fake), ['a/app/1', 'a/app/2', 'a/app/3']);
  await gc(fake, clock, { minAgeMs: 0, maxPerPodContainer: 2, maxContainers: -1 }).garbageCollect(() => true);
  assert.deepEqual(attempts(fake), ['a/app/2', 'a/app/3']);
});

test('maxContainers shares the node-wide budget, then removes the oldest', async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  fake.addImage('busybox:latest');
  await deadAttempts(fake, clock, 'a', 'app', 3);
  await deadAttempts(fake, clock, 'b', 'app', 3);
  await deadAttempts(fake, clock, 'c', 'app', 3);
  await gc(fake, clock, { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 2 }).garbageCollect(() => true);
  // One per container first (3 left), then the oldest of those goes.
  assert.deepEqual(attempts(fake), ['b/app/2', 'c/app/2']);
});

test('an unwanted pod loses every dead container and dead sandbox; a wanted one keeps its newest sandbox', async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  fake.addImage('busybox:latest');
  const a1 = await deadAttempts(fake, clock, 'a', 'app', 0);
  const a2 = await deadAttempts(fake, clock, 'a', 'app', 0);
  await fake.stopPodSandbox(a1);
  await fake.stopPodSandbox(a2);
  const b = await deadAttempts(fake, clock, 'b', 'app', 2);
  await fake.stopPodSandbox(b);
  await gc(fake, clock, { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 }).garbageCollect(
    (uid) => uid === 'a',
  );
  assert.deepEqual(attempts(fake), []);
  assert.deepEqual([...fake.sandboxes.keys()], [a2]);
});
