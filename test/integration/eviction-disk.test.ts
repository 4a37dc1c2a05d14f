/**
 * A disk that fills: under disk pressure the kubelet first reclaims node-level
 * resources (dead containers, unused images), and evicts a pod only when that was not enough
 * (upstream's reclaimNodeLevelResources before the ranking). Through the built kubelet in cluster
 * mode (static pods are never evicted) and real containerd.
 *
 * Deterministic without filling the disk: the nodefs.available threshold is set 384 MiB under what
 * the root filesystem has free when the test starts, and a pod writes 768 MiB into an emptyDir.
 * Removing a dead container and a small image cannot give that back, so the writer is evicted, and
 * its neighbour stays: the eviction manager waits for the writer's volume to be torn down before
 * it looks again.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, statfs } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import type { Node } from '../../src/api/node.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { TestRegistry } from '../helpers/conformance-registry.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { freePort } from '../helpers/ports.js';
import { restoreStackImages } from '../helpers/stack-images.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-evict-disk-${process.pid}`;
const Mi = 1024 * 1024;
const MARGIN_BYTES = 384 * Mi;
const WRITE_MIB = 768;
const WRITER_DELAY_S = 6;

function apiPodSpec(name: string, nodeName: string, command: string, extra: Partial<Pod['spec']> = {}) {
  return {
    metadata: { name, namespace: ns },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      restartPolicy: 'Never',
      containers: [
        { name: 'main', image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', command] },
      ],
      ...extra,
    },
  };
}

describe('disk pressure: node-level reclaim before eviction', () => {
  let cri: CriInspector;
  let registry: TestRegistry;
  let server: TestApiServer;
  let kubelet: KubeletProcess | undefined;
  let configDir: string;
  let unusedImage = '';

  before(async () => {
    cri = await CriInspector.connect();
    configDir = await mkdtemp(path.join(os.tmpdir(), 'it-evict-disk-'));
    registry = await TestRegistry.start(await freePort());
  });

  after(async () => {
    await kubelet?.dispose();
    await server?.stop();
    await cri.removeNamespace(ns);
    if (unusedImage) await cri.conn.images.removeImage({ image: unusedImage }).catch(() => undefined);
    cri.close();
    await registry?.stop();
    await rm(configDir, { recursive: true, force: true });
    // Image GC removes every unused image, the stack's busybox tags among them.
    await restoreStackImages();
  });

  test('dead containers and unused images are removed before a pod is evicted; the neighbour runs on', async () => {
    // Pulled before the kubelet starts: an image the node already had, old to image GC.
    unusedImage = (
      await registry.push('busybox', 'docker.io/library/busybox:latest', `tsk/unused-${process.pid}`, 'v1')
    ).ref;
    const unusedId = await cri.conn.images.pullImage({ image: unusedImage }, undefined, undefined);

    const nodeName = `it-evict-disk-${process.pid}`;
    server = await startTestApiServer({ nodeName });
    server.store.create('namespaces', { metadata: { name: ns } });
    const kubeconfig = path.join(configDir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    // The kubelet's rootDir is made under the temporary folder: its filesystem is nodefs.
    const fs = await statfs(os.tmpdir());
    const threshold = fs.bavail * fs.bsize - MARGIN_BYTES;
    const k = (kubelet = new KubeletProcess({
      nodeName,
      extraArgs: [`--kubeconfig=${kubeconfig}`],
      extraConfig: [
        'evictionHard:',
        `  nodefs.available: "${threshold}"`,
        // emptyDir usage is measured in the background: often enough to rank the writer first.
        'volumeStatsAggPeriod: 2s',
        'nodeStatusUpdateFrequency: 2s',
      ],
    }));
    await k.start();
    const apiPod = (name: string) => server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
    const diskPressure = () =>
      (server.store.tryGet('nodes', nodeName) as Node | undefined)?.status?.conditions?.find(
        (c) => c.type === 'DiskPressure',
      );

    server.store.create('pods', apiPodSpec('done', nodeName, 'exit 0'));
    server.store.create('pods', apiPodSpec('steady', nodeName, 'exec sleep 3600'));
    // Started beside the others, the writer waits a few seconds: done has exited before the disk fills.
    server.store.create(
      'pods',
      apiPodSpec('writer', nodeName, '', {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            imagePullPolicy: 'IfNotPresent',
            command: [
              'sh',
              '-c',
              `sleep ${WRITER_DELAY_S} && dd if=/dev/zero of=/data/fill bs=1M count=${WRITE_MIB} && exec sleep 3600`,
            ],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
        volumes: [{ name: 'data', emptyDir: {} }],
      }),
    );
    await waitFor(
      'done to succeed and steady to run',
      () => apiPod('done')?.status?.phase === 'Succeeded' && apiPod('steady')?.status?.phase === 'Running',
      40_000,
      100,
    );
    const deadContainer = (await cri.podContainers(ns, 'done'))[0];
    assert.ok(deadContainer, "done's exited container is there");
    assert.notEqual(diskPressure()?.status, 'True', 'no pressure before the writer writes');

    const containerGone = async () =>
      !(await cri.conn.runtime.listContainers({})).some((c) => c.id === deadContainer.id);
    const imageGone = async () => (await cri.conn.images.imageStatus({ image: unusedImage })) === undefined;
    const evicted = await waitFor(
      'writer to be evicted',
      () => {
        const p = apiPod('writer');
        return p?.status?.phase === 'Failed' ? p : undefined;
      },
      60_000,
      250,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}\n--- kubelet log ---\n${(await k.logs()).slice(-6000)}`);
    });
    // Seen at the eviction: both were reclaimed already.
    assert.ok(await containerGone(), "done's dead container was removed");
    assert.ok(await imageGone(), 'the unused image was removed');
    assert.equal(evicted.status?.reason, 'Evicted');
    assert.match(
      evicted.status?.message ?? '',
      /^The node was low on resource: ephemeral-storage\. Threshold quantity: \d+, available: \d+Ki\. /,
    );
    const events = server.store.list('events', { namespace: ns }).items as unknown as CoreEvent[];
    assert.ok(events.some((e) => e.reason === 'Evicted' && e.involvedObject.name === 'writer'));

    // And in the kubelet's own order: the reclaim came first, within the pass that evicted.
    const log = (await k.logs()).split('\n');
    const at = (pred: (line: string) => boolean) => log.findIndex(pred);
    const reclaimedImage = at((l) => l.includes('"Removing image to free bytes"') && l.includes(unusedId));
    const mustEvict = at((l) => l.includes('"Eviction manager: must evict pod(s) to reclaim"'));
    assert.ok(reclaimedImage >= 0, 'the unused image was removed by the kubelet');
    assert.ok(mustEvict > reclaimedImage, 'the image went before any pod was chosen for eviction');

    await waitFor('DiskPressure=True on the node', () => diskPressure()?.status === 'True', 20_000, 500);
    // The writer's emptyDir goes with it; the next passes see the space back and evict nothing more.
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(apiPod('steady')?.status?.phase, 'Running', 'the neighbour runs on');
    assert.ok(
      (await cri.conn.images.imageStatus({ image: 'busybox' })) !== undefined,
      'the image in use is kept',
    );
  });
});
