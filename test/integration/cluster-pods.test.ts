/**
 * Cluster mode end to end: the built kubelet with --kubeconfig against the in-process test API server
 * (HTTPS, client certificate) and the private containerd. A pod bound to the node in the API runs, its
 * status reaches the API, and a graceful deletion stops it and ends with the kubelet deleting it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import type { ContainerStatus, Pod } from '../../src/api/core-v1.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-cluster-${process.pid}`;

function apiPod(server: TestApiServer, name: string): Pod | undefined {
  return server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
}

function containerStatus(p: Pod | undefined, name: string): ContainerStatus | undefined {
  return p?.status?.containerStatuses?.find((c) => c.name === name);
}

describe('cluster mode: pods from the API server through containerd', () => {
  let cri: CriInspector;
  let server: TestApiServer;
  let kubelet: KubeletProcess | undefined;

  let configDir: string;

  before(async () => {
    cri = await CriInspector.connect();
    configDir = await mkdtemp(path.join(os.tmpdir(), 'it-cluster-'));
  });

  afterEach(async () => {
    await kubelet?.dispose();
    kubelet = undefined;
    await server?.stop();
    await cri.removeNamespace(ns);
  });

  after(async () => {
    cri.close();
    await rm(configDir, { recursive: true, force: true });
  });

  test('a pod bound to the node runs, reports its status, and is deleted by the kubelet after a graceful delete', async () => {
    const nodeName = `it-cluster-node-${process.pid}`;
    server = await startTestApiServer({ nodeName });
    server.store.create('namespaces', { metadata: { name: ns } });
    const kubeconfig = path.join(configDir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    const k = new KubeletProcess({
      nodeName,
      extraArgs: [`--kubeconfig=${kubeconfig}`],
    });
    kubelet = k;
    await k.start();

    server.store.create('pods', {
      metadata: { name: 'web', namespace: ns },
      spec: {
        nodeName: k.nodeName,
        terminationGracePeriodSeconds: 2,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            imagePullPolicy: 'IfNotPresent',
            command: ['sh', '-c', 'exec sleep 3600'],
          },
        ],
      },
    });

    const running = await waitFor(
      'the API to show web Running',
      () => {
        const p = apiPod(server, 'web');
        return p?.status?.phase === 'Running' && containerStatus(p, 'main')?.state?.running ? p : undefined;
      },
      90_000,
      250,
    ).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}\n--- kubelet log ---\n${(await k.logs()).slice(-6000)}`);
    });
    const conditions = Object.fromEntries((running.status?.conditions ?? []).map((c) => [c.type, c.status]));
    assert.deepEqual(conditions, {
      PodReadyToStartContainers: 'True',
      Initialized: 'True',
      Ready: 'True',
      ContainersReady: 'True',
      PodScheduled: 'True',
    });
    // The watch brings back the status the kubelet wrote: one start in upstream's pod startup SLI.
    const metrics = await waitFor(
      'the pod startup SLI to be observed',
      async () => {
        const text = await (await fetch(`http://127.0.0.1:${k.readOnlyPort}/metrics`)).text();
        return /^kubelet_pod_start_sli_duration_seconds_count 1$/m.test(text) ? text : undefined;
      },
      15_000,
      250,
    );
    assert.match(metrics, /^kubelet_pod_start_total_duration_seconds_count 1$/m);
    // The first pod on the pod network sets the gauge (0 until then).
    const first = /^kubelet_first_network_pod_start_sli_duration_seconds (\S+)$/m.exec(metrics);
    assert.ok(first && Number(first[1]) !== 0, 'the first network pod was measured');
    const cs = containerStatus(running, 'main')!;
    assert.equal(cs.ready, true);
    assert.equal(cs.restartCount, 0);
    assert.match(cs.containerID ?? '', /^containerd:\/\/[0-9a-f]{64}$/);
    assert.match(running.status?.podIP ?? '', /^\d+\.\d+\.\d+\.\d+$/);
    assert.ok(running.status?.startTime);
    // Status went as strategic merge patches of pods/status, by the node's own identity.
    const patches = server.requests.filter(
      (r) => r.verb === 'patch' && r.subresource === 'status' && r.name === 'web',
    );
    assert.ok(patches.length > 0);
    assert.ok(
      patches.every(
        (r) => r.user === server.nodeUser && r.contentType === 'application/strategic-merge-patch+json',
      ),
    );
    assert.equal(
      (await cri.podContainers(ns, 'web')).filter((c) => c.state === 'CONTAINER_RUNNING').length,
      1,
    );

    // The runtime manager's events reached the API as core/v1 Events about the container.
    const started = await waitFor(
      'the Started event',
      () =>
        (server.store.list('events', { namespace: ns }).items as unknown as CoreEvent[]).find(
          (e) => e.reason === 'Started' && e.involvedObject.name === 'web',
        ),
      10_000,
      100,
    );
    assert.deepEqual(
      [started.involvedObject.kind, started.involvedObject.uid, started.involvedObject.fieldPath],
      ['Pod', running.metadata.uid, 'spec.containers{main}'],
    );
    assert.deepEqual(started.source, { component: 'kubelet', host: nodeName });
    const reasons = (server.store.list('events', { namespace: ns }).items as unknown as CoreEvent[]).map(
      (e) => e.reason,
    );
    assert.ok(reasons.includes('Created'), reasons.join(','));

    // kubectl delete: graceful, with the pod's 2 s grace period.
    const uid = running.metadata.uid;
    server.store.delete('pods', 'web', ns);
    assert.ok(apiPod(server, 'web')?.metadata.deletionTimestamp);
    await waitFor(
      'the kubelet to delete web from the API',
      () => apiPod(server, 'web') === undefined,
      60_000,
      250,
    ).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}\n--- kubelet log ---\n${(await k.logs()).slice(-6000)}`);
    });
    const deletes = server.requests.filter(
      (r) => r.verb === 'delete' && r.resource === 'pods' && r.name === 'web',
    );
    assert.equal(deletes.length, 1);
    assert.equal(deletes[0]!.user, server.nodeUser);
    assert.equal(deletes[0]!.code, 200);
    const containers = await cri.podContainers(ns, 'web');
    assert.ok(containers.length > 0);
    assert.ok(
      containers.every((c) => c.state !== 'CONTAINER_RUNNING'),
      'the containers were stopped',
    );
    assert.ok(uid);
    const killing = (server.store.list('events', { namespace: ns }).items as unknown as CoreEvent[]).find(
      (e) => e.reason === 'Killing',
    );
    assert.equal(killing?.involvedObject.fieldPath, 'spec.containers{main}');
  });

  test('a failing readiness probe records Unhealthy warnings about the container in the API', async () => {
    const nodeName = `it-cluster-node-${process.pid}`;
    server = await startTestApiServer({ nodeName });
    server.store.create('namespaces', { metadata: { name: ns } });
    const kubeconfig = path.join(configDir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    const k = new KubeletProcess({ nodeName, extraArgs: [`--kubeconfig=${kubeconfig}`] });
    kubelet = k;
    await k.start();

    server.store.create('pods', {
      metadata: { name: 'unready', namespace: ns },
      spec: {
        nodeName: k.nodeName,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            imagePullPolicy: 'IfNotPresent',
            command: ['sh', '-c', 'exec sleep 3600'],
            readinessProbe: { exec: { command: ['sh', '-c', 'echo not yet; exit 1'] }, periodSeconds: 1 },
          },
        ],
      },
    });

    const unhealthy = await waitFor(
      'an Unhealthy event for unready',
      () =>
        (server.store.list('events', { namespace: ns }).items as unknown as CoreEvent[]).find(
          (e) => e.reason === 'Unhealthy' && e.involvedObject.name === 'unready',
        ),
      60_000,
      250,
    ).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}\n--- kubelet log ---\n${(await k.logs()).slice(-6000)}`);
    });
    assert.equal(unhealthy.type, 'Warning');
    assert.equal(unhealthy.involvedObject.fieldPath, 'spec.containers{main}');
    assert.match(unhealthy.message ?? '', /^Readiness probe failed: not yet/);
    assert.deepEqual(unhealthy.source, { component: 'kubelet', host: nodeName });
    const p = apiPod(server, 'unready');
    assert.equal(containerStatus(p, 'main')?.ready, false);
  });
});
