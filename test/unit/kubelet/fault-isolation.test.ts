/**
 * One pod's failure stays with that pod, and nothing is cleaned up as unwanted before every source
 * has reported (upstream's sourcesReady): the kubelet's sync loop over the in-memory fake CRI runtime,
 * with fake cgroup and volume managers that record what they are asked to remove.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '../../../src/api/core-v1.js';
import { PodConfig, type SourceChannel } from '../../../src/config/pod-config.js';
import type { PodSource } from '../../../src/config/types.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { FakeContainerManager } from '../../../src/cm/testing/fake-container-manager.js';
import { Kubelet } from '../../../src/kubelet/kubelet.js';
import { KubeGenericRuntimeManager } from '../../../src/kuberuntime/runtime-manager.js';
import { realClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { GenericPLEG } from '../../../src/pleg/generic-pleg.js';
import { InMemoryPodCache } from '../../../src/pleg/pod-cache.js';
import { PodWorkersImpl } from '../../../src/podworkers/pod-workers.js';
import { BasicWorkQueue } from '../../../src/podworkers/work-queue.js';
import { LocalStatusManager } from '../../../src/status/status-manager.js';
import { FakeVolumeManager } from '../../../src/volume/testing/fake-volume-manager.js';
import { sleep, waitFor } from '../../helpers/wait.js';

setLogSink(() => undefined);

/** Longer than one housekeeping period (2 s), so a pass has run whatever it decided. */
const ONE_HOUSEKEEPING_MS = 2600;

interface Node {
  kubelet: Kubelet;
  channels: Map<PodSource, SourceChannel>;
  containerManager: FakeContainerManager;
  volumeManager: FakeVolumeManager;
  statusManager: LocalStatusManager;
  stop(): Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kubelet-isolation-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'resolv.conf'), 'nameserver 10.0.0.2\n');
  return dir;
}

function startNode(
  fake: FakeRuntime,
  dir: string,
  sources: PodSource[],
  opts: { onEvent?: (pod: Pod) => void } = {},
): Node {
  const clock = realClock;
  const runtime = new KubeGenericRuntimeManager({
    runtimeService: fake,
    imageService: fake,
    clock,
    podLogsDir: path.join(dir, 'logs'),
    rootDir: path.join(dir, 'root'),
    resolvConf: path.join(dir, 'resolv.conf'),
    nodeName: 'node-a',
    legacyContainerLogsDir: path.join(dir, 'containers'),
  });
  const containerManager = new FakeContainerManager();
  const volumeManager = new FakeVolumeManager(path.join(dir, 'root'));
  const podCache = new InMemoryPodCache();
  const pleg = new GenericPLEG({ runtime, cache: podCache, clock, relistPeriodMs: 50 });
  const workQueue = new BasicWorkQueue(clock);
  const podConfig = new PodConfig({ clock });
  const channels = new Map(sources.map((s) => [s, podConfig.channel(s)] as const));
  const statusManager = new LocalStatusManager({ clock });
  const kubelet: Kubelet = new Kubelet({
    nodeName: 'node-a',
    rootDir: path.join(dir, 'root'),
    getNode: () => ({
      metadata: { name: 'node-a', labels: { 'kubernetes.io/os': 'linux' } },
      status: { allocatable: { cpu: '4', memory: '8Gi', pods: '110' } },
    }),
    recorder: { event: (p) => opts.onEvent?.(p), eventFor: () => undefined },
    clock,
    runtime,
    podConfig,
    podCache,
    pleg,
    workQueue,
    statusManager,
    containerManager,
    volumeManager,
    podWorkers: () => new PodWorkersImpl({ syncer: kubelet, podCache, workQueue, clock }),
  });
  kubelet.start();
  const stop = async () => {
    podConfig.stop();
    await kubelet.stop();
  };
  cleanups.push(stop);
  return { kubelet, channels, containerManager, volumeManager, statusManager, stop };
}

function pod(name: string, uid: string, extra: Partial<Pod['spec']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid, annotations: { 'kubernetes.io/config.source': 'file' } },
    spec: {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent' }],
      ...extra,
    },
  };
}

/** The manifest: a limit that is no quantity, on a pod admission refuses (its nodeSelector matches nothing). */
function hostilePod(uid: string): Pod {
  return pod('hostile', uid, {
    nodeSelector: { disk: 'ssd' },
    containers: [
      {
        name: 'main',
        image: 'busybox:1.36',
        imagePullPolicy: 'IfNotPresent',
        resources: { limits: { memory: 'lots' } },
      },
    ],
  });
}

function running(fake: FakeRuntime, podUid: string): string[] {
  return [...fake.containers.values()]
    .filter((c) => c.config.labels['io.kubernetes.pod.uid'] === podUid && c.state === 'CONTAINER_RUNNING')
    .map((c) => c.id);
}

function newFake(): FakeRuntime {
  const fake = new FakeRuntime(realClock);
  fake.addImage('busybox:1.36');
  return fake;
}

function send(node: Node, source: PodSource, pods: Pod[]): void {
  node.channels.get(source)!({ op: 'SET', pods });
}

test('a pod whose rejection fails does not keep the other pods of its batch from running', async () => {
  const dir = await tempDir();
  const fake = newFake();
  // The recorder fails for one pod: its rejection still ends Failed, and the pods after it run.
  const node = startNode(fake, dir, ['file'], {
    onEvent: (p) => {
      if (p.metadata.name === 'hostile') throw new Error('recorder broke');
    },
  });
  send(node, 'file', [pod('a', 'uid-a'), hostilePod('uid-hostile'), pod('b', 'uid-b')]);
  await waitFor(
    'a and b to run',
    () => running(fake, 'uid-a').length + running(fake, 'uid-b').length === 2,
    5000,
    20,
  );
  const status = node.statusManager.getPodStatus('uid-hostile');
  assert.equal(status?.phase, 'Failed');
  assert.equal(status?.reason, 'NodeAffinity');
  assert.equal(running(fake, 'uid-hostile').length, 0, 'the refused pod never started');
});

test('a pod with a quantity that does not parse is refused alone, with the bare rejection status', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const node = startNode(fake, dir, ['file']);
  send(node, 'file', [hostilePod('uid-hostile'), pod('a', 'uid-a')]);
  await waitFor('a to run', () => running(fake, 'uid-a').length === 1, 5000, 20);
  const status = await waitFor(
    'the hostile pod to be Failed',
    () => {
      const s = node.statusManager.getPodStatus('uid-hostile');
      return s?.phase === 'Failed' && s;
    },
    5000,
    20,
  );
  assert.equal(status.reason, 'NodeAffinity');
  // v1.28's rejectPod names no QoS class: nothing reads the unparsable quantity.
  assert.equal(status.qosClass, undefined);
});

test('a failing admission check refuses only its pod, with UnexpectedAdmissionError', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const node = startNode(fake, dir, ['file']);
  // Sysctls that are no list make the sysctl admit handler throw.
  const odd = pod('odd', 'uid-odd', {
    securityContext: { sysctls: 5 as unknown as { name: string; value: string }[] },
  });
  send(node, 'file', [odd, pod('a', 'uid-a')]);
  await waitFor('a to run', () => running(fake, 'uid-a').length === 1, 5000, 20);
  const status = node.statusManager.getPodStatus('uid-odd');
  assert.equal(status?.phase, 'Failed');
  assert.equal(status?.reason, 'UnexpectedAdmissionError');
  assert.equal(running(fake, 'uid-odd').length, 0);
});

test('after a restart with a hostile manifest beside them, every running pod is adopted, not stopped', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const uids = ['uid-1', 'uid-2', 'uid-3', 'uid-4'];
  const first = startNode(fake, dir, ['file']);
  send(
    first,
    'file',
    uids.map((u) => pod(u.replace('uid-', 'p'), u)),
  );
  await waitFor('all to run', () => uids.every((u) => running(fake, u).length === 1), 5000, 20);
  const before = uids.map((u) => running(fake, u)[0]);
  await first.stop();

  const second = startNode(fake, dir, ['file']);
  // The hostile pod sorts in the middle of the batch.
  const batch = uids.map((u) => pod(u.replace('uid-', 'p'), u));
  batch.splice(2, 0, hostilePod('uid-hostile'));
  send(second, 'file', batch);
  await sleep(ONE_HOUSEKEEPING_MS);
  assert.deepEqual(
    uids.map((u) => running(fake, u)[0]),
    before,
    'the same containers still run',
  );
  assert.equal(fake.callsOf('stopContainer').length, 0, 'nothing was stopped');
  assert.equal(second.statusManager.getPodStatus('uid-hostile')?.phase, 'Failed');
});

test('nothing a source may still claim is cleaned up before every source has reported', async () => {
  const dir = await tempDir();
  const fake = newFake();
  const first = startNode(fake, dir, ['file']);
  send(first, 'file', [pod('keep', 'uid-keep'), pod('drop', 'uid-drop')]);
  await waitFor(
    'both to run',
    () => running(fake, 'uid-keep').length + running(fake, 'uid-drop').length === 2,
    5000,
    20,
  );
  // A dead container of "drop", for the container GC to find.
  const dropId = running(fake, 'uid-drop')[0]!;
  fake.exitContainer(dropId, 0);
  await waitFor('drop to restart', () => running(fake, 'uid-drop').length === 1, 5000, 20);
  await first.stop();
  const logsDir = path.join(dir, 'logs');
  const dropLogs = (await readdir(logsDir)).find((d) => d.endsWith('_uid-drop'));
  assert.ok(dropLogs, 'drop has a log folder');

  // A restart with two sources: the file source reports, the API source not yet.
  const second = startNode(fake, dir, ['file', 'api']);
  second.containerManager.podCgroups.add('uid-drop');
  await second.volumeManager.waitForAttachAndMount(pod('drop', 'uid-drop'));
  send(second, 'file', [pod('keep', 'uid-keep')]);
  await sleep(ONE_HOUSEKEEPING_MS);
  assert.equal(second.kubelet.allSourcesReady(), false);
  assert.equal(running(fake, 'uid-drop').length, 1, 'housekeeping: the unwanted pod still runs');
  assert.equal(fake.callsOf('removeContainer').length, 0, 'container GC: no container removed');
  assert.ok(existsSync(path.join(logsDir, dropLogs)), 'container GC: the log folder is kept');
  assert.ok(second.containerManager.podCgroups.has('uid-drop'), 'cgroup cleanup: the pod cgroup is kept');
  assert.ok(
    !second.containerManager.calls.some((c) => c.method === 'cleanupOrphanedPodCgroups'),
    'cgroup cleanup: not attempted',
  );
  assert.deepEqual(second.volumeManager.orphanChecks, [], 'volume cleanup: not attempted');
  assert.ok(second.volumeManager.podHasMountedVolumes('uid-drop'), 'volume cleanup: volumes kept');

  // The API source reports without "drop": now it is unwanted, and everything of it goes.
  send(second, 'api', []);
  assert.equal(second.kubelet.allSourcesReady(), true);
  await waitFor('drop to stop', () => running(fake, 'uid-drop').length === 0, 8000, 50);
  await waitFor('its cgroup to go', () => !second.containerManager.podCgroups.has('uid-drop'), 8000, 50);
  await waitFor('its volumes to go', () => !second.volumeManager.podHasMountedVolumes('uid-drop'), 8000, 50);
  assert.equal(running(fake, 'uid-keep').length, 1, 'keep runs on');
});
