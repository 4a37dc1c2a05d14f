/**
 * CSI end to end: the built kubelet in cluster mode (test API server, private containerd) and the
 * CSI test driver (test/helpers/csi-test-driver.ts), which speaks the real pluginregistration and
 * CSI gRPC APIs over unix sockets. The driver registers through `<root-dir>/plugins_registry`
 * (GetInfo, NodeGetInfo, registration status OK, the node's `csi.volume.kubernetes.io/nodeid`
 * annotation and CSINode entry); a pod with a CSI inline volume sees the file its NodePublishVolume
 * wrote at upstream's target path, with the pod info in the volume context; deleting the pod calls
 * NodeUnpublishVolume and the target is gone.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { makeVolumeHandle } from '../../src/volume/csi/csi-plugin.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { CsiTestDriver } from '../helpers/csi-test-driver.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-csi-${process.pid}`;
const nodeName = `it-csi-node-${process.pid}`;
const driverName = 'hostdir.csi.tskubelet.test';

describe('a CSI driver through the plugin watcher, the test API server and containerd', () => {
  let cri: CriInspector;
  let server: TestApiServer;
  let kubelet: KubeletProcess;
  let dir: string;
  let driver: CsiTestDriver;

  const apiPod = (name: string) => server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
  const withLog = async (err: unknown): Promise<never> => {
    throw new Error(`${(err as Error).message}\n--- kubelet log ---\n${(await kubelet.logs()).slice(-6000)}`);
  };

  before(async () => {
    cri = await CriInspector.connect();
    dir = await mkdtemp(path.join(os.tmpdir(), 'it-csi-'));
    server = await startTestApiServer({ nodeName });
    server.store.create('namespaces', { metadata: { name: ns } });
    const kubeconfig = path.join(dir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    kubelet = new KubeletProcess({
      nodeName,
      extraArgs: [`--kubeconfig=${kubeconfig}`, '--cgroups-per-qos=false', '--enforce-node-allocatable='],
    });
    await kubelet.start();
    await waitFor('the node to register', () => server.store.tryGet('nodes', nodeName), 30_000).catch(
      withLog,
    );
  });

  after(async () => {
    for (const p of server?.store.list('pods', { namespace: ns }).items ?? []) {
      server.store.delete('pods', p.metadata.name ?? '', ns, { gracePeriodSeconds: 0 });
    }
    await kubelet?.dispose();
    await driver?.stop();
    await server?.stop();
    await cri?.removeNamespace(ns);
    cri?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('the driver registers, a pod gets its inline volume published and, once deleted, unpublished', async () => {
    driver = new CsiTestDriver({
      name: driverName,
      csiSocket: path.join(dir, 'csi.sock'),
      registrationSocket: path.join(kubelet.rootDir, 'plugins_registry', `${driverName}-reg.sock`),
      nodeId: nodeName,
    });
    await driver.start();
    await waitFor('the registration status', () => driver.statuses.length > 0, 20_000, 100).catch(withLog);
    assert.deepEqual(driver.statuses[0], { pluginRegistered: true, error: '' });
    assert.equal(driver.callsOf('GetInfo').length, 1);
    assert.equal(driver.callsOf('NodeGetInfo').length, 1);
    const node = server.store.tryGet('nodes', nodeName) as unknown as {
      metadata: { annotations?: Record<string, string> };
    };
    assert.deepEqual(JSON.parse(node.metadata.annotations?.['csi.volume.kubernetes.io/nodeid'] ?? '{}'), {
      [driverName]: nodeName,
    });
    const csiNode = server.store.tryGet('csinodes', nodeName) as unknown as {
      spec: { drivers: { name: string; nodeID: string }[] };
    };
    assert.deepEqual(
      csiNode.spec.drivers.map((d) => [d.name, d.nodeID]),
      [[driverName, nodeName]],
    );

    server.store.create('csidrivers', {
      metadata: { name: driverName },
      spec: { attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ['Ephemeral'] },
    });
    server.store.create('pods', {
      metadata: { name: 'inline', namespace: ns },
      spec: {
        nodeName,
        terminationGracePeriodSeconds: 1,
        serviceAccountName: 'default',
        automountServiceAccountToken: false,
        volumes: [
          { name: 'data', csi: { driver: driverName, volumeAttributes: { greeting: 'hi from csi' } } },
        ],
        containers: [
          {
            name: 'main',
            image: 'busybox',
            imagePullPolicy: 'IfNotPresent',
            command: ['sh', '-c', 'cat /data/hello.txt; sleep 3600'],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
      },
    });
    const running = await waitFor(
      'the pod to run',
      () => {
        const p = apiPod('inline');
        return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
      },
      40_000,
      200,
    ).catch(withLog);
    const uid = running.metadata.uid ?? '';
    const target = path.join(kubelet.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~csi', 'data', 'mount');

    const publish = driver.callsOf('NodePublishVolume');
    assert.equal(publish.length, 1);
    const req = publish[0]!.request;
    assert.equal(req.targetPath, target);
    assert.equal(req.volumeId, makeVolumeHandle(uid, 'data'));
    assert.deepEqual(req.volumeContext, {
      greeting: 'hi from csi',
      'csi.storage.k8s.io/pod.name': 'inline',
      'csi.storage.k8s.io/pod.namespace': ns,
      'csi.storage.k8s.io/pod.uid': uid,
      'csi.storage.k8s.io/serviceAccount.name': 'default',
      'csi.storage.k8s.io/ephemeral': 'true',
    });
    assert.equal(driver.callsOf('NodeStageVolume').length, 0, 'inline volumes are not staged, as upstream');

    const id = running.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '') ?? '';
    const r = await cri.conn.runtime.execSync(id, ['cat', '/data/hello.txt'], 20);
    assert.equal(r.stdout.toString('utf8'), 'hi from csi\n');

    server.store.delete('pods', 'inline', ns, { gracePeriodSeconds: 1 });
    await waitFor(
      'NodeUnpublishVolume',
      () => driver.callsOf('NodeUnpublishVolume').length > 0,
      30_000,
      200,
    ).catch(withLog);
    const unpublish = driver.callsOf('NodeUnpublishVolume')[0]!.request;
    assert.deepEqual(unpublish, { volumeId: makeVolumeHandle(uid, 'data'), targetPath: target });
    await waitFor(
      'the volume folder to go',
      () =>
        stat(path.dirname(target)).then(
          () => false,
          () => true,
        ),
      20_000,
      200,
    ).catch(withLog);
  });
});
