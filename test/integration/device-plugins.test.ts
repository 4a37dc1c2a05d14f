/**
 * Device plugins end to end: the built kubelet in cluster mode (test API server) on the private
 * containerd, and a test device plugin speaking the real v1beta1 API over unix sockets. The plugin
 * registers on kubelet.sock; the Node shows its resource in capacity and allocatable; a pod asking
 * for one device runs with the env, mount and device node the plugin's Allocate gave; a pod asking
 * for more than is free is refused as upstream refuses it; the pod resources API lists the
 * allocation; and the allocation is in the checkpoint in upstream's shape.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import type { Node } from '../../src/api/node.js';
import { DEVICE_MANAGER_CHECKPOINT, unmarshalCheckpoint } from '../../src/cm/devicemanager/checkpoint.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { PodResourcesClient } from '../helpers/pod-resources-client.js';
import { TestDevicePlugin } from '../helpers/test-device-plugin.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-devices-${process.pid}`;
const NODE_NAME = `it-devices-node-${process.pid}`;
const RES = 'example.com/dev';

let server: TestApiServer;

function apiPod(name: string): Pod | undefined {
  return server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
}

function devicePod(name: string, count: number): Pod {
  return {
    metadata: { name, namespace: ns },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'main',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', 'exec sleep 3600'],
          resources: { limits: { [RES]: String(count) }, requests: { [RES]: String(count) } },
        },
      ],
    },
    status: {
      phase: 'Pending',
      qosClass: 'BestEffort',
      conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    },
  };
}

describe('device plugins and the pod resources API', () => {
  let kubelet: KubeletProcess;
  let cri: CriInspector;
  let plugin: TestDevicePlugin;
  let dir = '';

  const withLog = async <T>(p: Promise<T>): Promise<T> =>
    p.catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}\n--- kubelet log ---\n${(await kubelet.logs()).slice(-6000)}`,
      );
    });

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE_NAME });
    server.store.create('namespaces', { metadata: { name: ns } });
    cri = await CriInspector.connect();
    dir = await mkdtemp(path.join(os.tmpdir(), 'it-devices-'));
    const kubeconfig = path.join(dir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    kubelet = new KubeletProcess({
      nodeName: NODE_NAME,
      extraArgs: [`--kubeconfig=${kubeconfig}`],
      extraConfig: ['nodeStatusUpdateFrequency: 1s', 'featureGates:', '  KubeletPodResourcesGet: true'],
    });
    await kubelet.start();
    // What the plugin's mount shows in the container: one folder per device.
    for (const id of ['dev-0', 'dev-1']) {
      await mkdir(path.join(dir, 'data', id), { recursive: true });
      await writeFile(path.join(dir, 'data', id, 'id'), `${id}\n`);
    }
    plugin = new TestDevicePlugin({
      pluginDir: path.join(kubelet.rootDir, 'device-plugins'),
      resourceName: RES,
      endpoint: 'test-dev.sock',
      devices: [{ id: 'dev-0' }, { id: 'dev-1' }],
      dataDir: path.join(dir, 'data'),
      preferredAllocation: true,
    });
  });

  after(async () => {
    await plugin?.stop();
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('a plugin registers, its devices reach the Node, pods get them or are refused, pod resources lists them', async () => {
    const kubeletSock = path.join(kubelet.rootDir, 'device-plugins', 'kubelet.sock');
    await withLog(waitFor('kubelet.sock', () => stat(kubeletSock).then((s) => s.isSocket()), 15_000));
    await plugin.serve();
    await plugin.register();

    const node = await withLog(
      waitFor(
        `the Node to show ${RES}`,
        () => {
          const n = server.store.tryGet('nodes', NODE_NAME) as Node | undefined;
          return n?.status?.capacity?.[RES] === '2' && n.status.allocatable?.[RES] === '2' ? n : undefined;
        },
        20_000,
      ),
    );
    assert.equal(node.status?.allocatable?.[RES], '2');

    // One device: the plugin chose it (GetPreferredAllocation answers in reverse order), Allocate's answer is in the container.
    server.store.create('pods', devicePod('one', 1) as unknown as Record<string, unknown>);
    const running = await withLog(
      waitFor(
        'pod one to run',
        () => (apiPod('one')?.status?.phase === 'Running' ? apiPod('one') : undefined),
        30_000,
      ),
    );
    assert.deepEqual(plugin.allocations, [['dev-1']]);
    assert.deepEqual(plugin.preferredRequests[0]?.containerRequests[0]?.availableDeviceIDs, [
      'dev-0',
      'dev-1',
    ]);
    const containerId =
      running?.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '') ?? '';
    assert.ok(containerId);
    const out = await cri.conn.runtime.execSync(
      containerId,
      ['sh', '-c', 'echo "ids=$TEST_DEVICE_IDS"; cat /dev-data/id; test -c /dev/test-device && echo chardev'],
      10,
    );
    assert.equal(Buffer.from(out.stdout).toString(), 'ids=dev-1\ndev-1\nchardev\n');
    const [container] = await cri.podContainers(ns, 'one');
    assert.equal(container?.annotations['example.com/allocated'], 'dev-1');

    // Three: only one is free. Upstream's UnexpectedAdmissionError, and the plugin is not asked.
    server.store.create('pods', devicePod('three', 3) as unknown as Record<string, unknown>);
    const message =
      'Allocate failed due to requested number of devices unavailable for example.com/dev. Requested: 3, Available: 1, which is unexpected';
    const refused = await withLog(
      waitFor(
        'pod three to fail',
        () => (apiPod('three')?.status?.phase === 'Failed' ? apiPod('three') : undefined),
        20_000,
      ),
    );
    assert.equal(refused?.status?.reason, 'UnexpectedAdmissionError');
    assert.equal(refused?.status?.message, `Pod was rejected: ${message}`);
    const event = await waitFor(
      'the UnexpectedAdmissionError event',
      () =>
        (server.store.list('events', { namespace: ns }).items as unknown as CoreEvent[]).find(
          (e) => e.reason === 'UnexpectedAdmissionError' && e.involvedObject.name === 'three',
        ),
      10_000,
    );
    assert.equal(event.message, message);
    assert.equal(plugin.allocations.length, 1);
    assert.deepEqual(await cri.podContainers(ns, 'three'), []);

    // The pod resources API, as a monitoring agent dials it.
    const client = new PodResourcesClient(path.join(kubelet.rootDir, 'pod-resources', 'kubelet.sock'));
    try {
      const list = await client.list();
      const one = list.podResources.find((p) => p.name === 'one' && p.namespace === ns);
      assert.deepEqual(one?.containers, [
        {
          name: 'main',
          devices: [{ resourceName: RES, deviceIds: ['dev-1'], topology: undefined }],
          cpuIds: [],
          memory: [],
          dynamicResources: [],
        },
      ]);
      const allocatable = await client.getAllocatableResources();
      assert.deepEqual(allocatable.devices.map((d) => d.deviceIds[0]).sort(), ['dev-0', 'dev-1']);
      const got = await client.get(ns, 'one');
      assert.deepEqual(got.podResources?.containers[0]?.devices[0]?.deviceIds, ['dev-1']);
    } finally {
      client.close();
    }

    // The checkpoint, in upstream's shape with a checksum that verifies.
    const checkpoint = unmarshalCheckpoint(
      await readFile(path.join(kubelet.rootDir, 'device-plugins', DEVICE_MANAGER_CHECKPOINT), 'utf8'),
    );
    assert.deepEqual(checkpoint.RegisteredDevices, { [RES]: ['dev-0', 'dev-1'] });
    const entry = checkpoint.PodDeviceEntries?.find((e) => e.PodUID === running?.metadata.uid);
    assert.deepEqual(entry && { c: entry.ContainerName, r: entry.ResourceName, d: entry.DeviceIDs }, {
      c: 'main',
      r: RES,
      d: { '-1': ['dev-1'] },
    });

    // An unhealthy device leaves allocatable, not capacity.
    plugin.setDevices([{ id: 'dev-0', healthy: false }, { id: 'dev-1' }]);
    await withLog(
      waitFor(
        'allocatable to drop to 1',
        () => {
          const n = server.store.tryGet('nodes', NODE_NAME) as Node | undefined;
          return n?.status?.capacity?.[RES] === '2' && n.status.allocatable?.[RES] === '1';
        },
        20_000,
      ),
    );
  });
  test('after a kubelet restart: kubelet.sock anew, the plugin registers again, the allocation from the checkpoint holds', async () => {
    const kubeletSock = path.join(kubelet.rootDir, 'device-plugins', 'kubelet.sock');
    const before = await stat(kubeletSock);
    await kubelet.stop('SIGKILL');
    await kubelet.start();
    // A new kubelet.sock, and the stale plugin socket removed: a plugin watching the folder registers again.
    await withLog(
      waitFor(
        'a new kubelet.sock',
        () =>
          // A freed inode number may come back: the change time tells the new file apart.
          stat(kubeletSock).then((s) => s.ino !== before.ino || s.ctimeMs !== before.ctimeMs),
        15_000,
      ),
    );
    await withLog(
      waitFor(
        'the plugin socket removed',
        () =>
          stat(plugin.socketPath).then(
            () => false,
            () => true,
          ),
        5_000,
      ),
    );
    await plugin.stop();
    plugin.setDevices([{ id: 'dev-0' }, { id: 'dev-1' }]);
    await plugin.serve();
    await plugin.register();

    // dev-1 is still pod one's (from the checkpoint): a new pod gets dev-0, and one more is refused.
    server.store.create('pods', devicePod('after-restart', 1) as unknown as Record<string, unknown>);
    await withLog(
      waitFor('pod after-restart to run', () => apiPod('after-restart')?.status?.phase === 'Running', 30_000),
    );
    assert.deepEqual(plugin.allocations.at(-1), ['dev-0']);
    assert.equal(apiPod('one')?.status?.phase, 'Running');
    server.store.create('pods', devicePod('no-room', 1) as unknown as Record<string, unknown>);
    const refused = await withLog(
      waitFor(
        'pod no-room to fail',
        () => (apiPod('no-room')?.status?.phase === 'Failed' ? apiPod('no-room') : undefined),
        20_000,
      ),
    );
    assert.equal(
      refused?.status?.message,
      'Pod was rejected: Allocate failed due to requested number of devices unavailable for example.com/dev. Requested: 1, Available: 0, which is unexpected',
    );
  });
});
