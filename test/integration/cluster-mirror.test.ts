/**
 * Mirror pods end to end: the built kubelet with a manifest folder and --kubeconfig against the test
 * API server and the private containerd. A static pod appears in the API as its mirror pod (the
 * config.mirror annotation, the Node as owner, the static pod's status); a mirror pod deleted in the
 * API is made again while the static pod runs on; an edited manifest replaces it; a removed manifest
 * takes it away once the pod has stopped.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import type { Node } from '../../src/api/node.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-mirror-${process.pid}`;
const NODE_NAME = `it-mirror-node-${process.pid}`;
const MIRROR_NAME = `web-${NODE_NAME}`;

function manifest(version: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: ns, labels: { app: 'web', version } },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'main',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', `echo ${version}; exec sleep 3600`],
        },
      ],
    },
  };
}

describe('cluster mode: mirror pods', () => {
  let server: TestApiServer;
  let kubelet: KubeletProcess;
  let cri: CriInspector;
  let dir = '';

  const mirror = () => server.store.tryGet('pods', MIRROR_NAME, ns) as unknown as Pod | undefined;
  const withLog = async <T>(p: Promise<T>): Promise<T> =>
    p.catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}\n--- kubelet log ---\n${(await kubelet.logs()).slice(-8000)}`,
      );
    });
  const runningContainers = async () =>
    (await cri.podContainers(ns, MIRROR_NAME)).filter((c) => c.state === 'CONTAINER_RUNNING');
  /** The mirror pod that replaced `previousUid`, once it is there and not being deleted. */
  const replacementOf = (previousUid: string | undefined, what: string) =>
    withLog(
      waitFor(
        what,
        () => {
          const m = mirror();
          return m && m.metadata.uid !== previousUid && !m.metadata.deletionTimestamp ? m : undefined;
        },
        30_000,
      ),
    );

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE_NAME });
    server.store.create('namespaces', { metadata: { name: ns } });
    cri = await CriInspector.connect();
    dir = await mkdtemp(path.join(os.tmpdir(), 'it-mirror-'));
    const kubeconfig = path.join(dir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    kubelet = new KubeletProcess({ nodeName: NODE_NAME, extraArgs: [`--kubeconfig=${kubeconfig}`] });
    await kubelet.start();
  });

  after(async () => {
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('a static pod’s mirror pod: created, recreated when deleted, replaced when edited, removed with it', async () => {
    await kubelet.writeManifest('web.json', manifest('v1'));

    // It appears, as upstream makes it, and carries the static pod's status.
    const first = await replacementOf(undefined, 'the mirror pod to appear');
    const node = server.store.get('nodes', NODE_NAME) as Node;
    const annotations = first.metadata.annotations ?? {};
    assert.ok(annotations['kubernetes.io/config.hash']);
    assert.equal(annotations['kubernetes.io/config.mirror'], annotations['kubernetes.io/config.hash']);
    assert.equal(annotations['kubernetes.io/config.source'], 'file');
    assert.ok(annotations['kubernetes.io/config.seen']);
    assert.deepEqual(first.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: NODE_NAME, uid: node.metadata.uid, controller: true },
    ]);
    assert.deepEqual(first.metadata.labels, { app: 'web', version: 'v1' });
    assert.equal(first.spec.nodeName, NODE_NAME);
    assert.equal(first.spec.serviceAccountName, undefined);
    const staticUid = annotations['kubernetes.io/config.hash'];
    assert.notEqual(first.metadata.uid, staticUid, 'the mirror pod has a UID of its own');
    await withLog(
      waitFor('the mirror pod to show Running', () => mirror()?.status?.phase === 'Running', 60_000),
    );
    const [container] = await runningContainers();
    assert.ok(container, 'the static pod runs');
    assert.equal(
      container.labels['io.kubernetes.pod.uid'],
      staticUid,
      'the runtime runs the static pod, not the mirror',
    );

    // Deleted gracefully in the API (kubectl delete): the kubelet deletes it at once and makes it again.
    server.store.delete('pods', MIRROR_NAME, ns);
    assert.ok(mirror()?.metadata.deletionTimestamp, 'a graceful deletion');
    const second = await replacementOf(
      first.metadata.uid,
      'the gracefully deleted mirror pod to be recreated',
    );
    assert.equal(second.metadata.annotations?.['kubernetes.io/config.mirror'], staticUid);
    const deletes = server.requests.filter(
      (r) =>
        r.verb === 'delete' && r.resource === 'pods' && r.name === MIRROR_NAME && r.user === server.nodeUser,
    );
    assert.ok(deletes.length >= 1, 'the kubelet deleted the mirror pod');

    // Deleted at once: made again too.
    server.store.delete('pods', MIRROR_NAME, ns, { gracePeriodSeconds: 0 });
    const third = await replacementOf(second.metadata.uid, 'the force-deleted mirror pod to be recreated');
    await withLog(
      waitFor('the status to reach the new mirror pod', () => mirror()?.status?.phase === 'Running', 30_000),
    );
    // Through all of it the static pod ran on: the same container.
    assert.deepEqual(
      (await runningContainers()).map((c) => c.id),
      [container.id],
    );

    // The manifest changes: a new static pod, and its mirror pod replaces the old one.
    await kubelet.writeManifest('web.json', manifest('v2'));
    const edited = await withLog(
      waitFor(
        'the mirror pod of the edited manifest',
        () => {
          const m = mirror();
          return m && m.metadata.labels?.version === 'v2' && !m.metadata.deletionTimestamp ? m : undefined;
        },
        60_000,
      ),
    );
    assert.notEqual(edited.metadata.uid, third.metadata.uid);
    const newHash = edited.metadata.annotations?.['kubernetes.io/config.hash'];
    assert.notEqual(newHash, staticUid);
    assert.equal(edited.metadata.annotations?.['kubernetes.io/config.mirror'], newHash);
    const replaced = await withLog(
      waitFor(
        'the new static pod to run in place of the old',
        async () => {
          const running = await runningContainers();
          return running.length === 1 && running[0]!.labels['io.kubernetes.pod.uid'] === newHash
            ? running
            : undefined;
        },
        60_000,
      ),
    );
    assert.notEqual(replaced[0]!.id, container.id);

    // The manifest goes: the pod stops, then its mirror pod goes too.
    await kubelet.removeManifest('web.json');
    await withLog(waitFor('the mirror pod to be deleted', () => mirror() === undefined, 60_000));
    assert.deepEqual(await runningContainers(), [], 'the static pod stopped before its mirror pod went');
  });
});
