/**
 * Hostile input against the built kubelet and a real containerd: a restart with hostile
 * manifests in the folder (a limit that is no quantity on a pod admission refuses, a liveness probe
 * with periodSeconds -1) stops no running pod, deletes no emptyDir data, and leaves /healthz answering.
 */
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ContainerStatus, Pod } from '../../src/api/core-v1.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-hostile-${process.pid}`;
const NAMES = ['a', 'b', 'c'];

function dataPod(name: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: {
      terminationGracePeriodSeconds: 2,
      volumes: [{ name: 'data', emptyDir: {} }],
      containers: [
        {
          name: 'main',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', `echo ${name} > /data/kept; exec sleep 3600`],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
    },
  };
}

/** The manifests: ones a sloppy user writes, which must not reach the other pods. */
const HOSTILE: Record<string, string> = {
  'lots.yaml': `apiVersion: v1
kind: Pod
metadata: {name: lots, namespace: ${ns}}
spec:
  nodeSelector: {disk: ssd}
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, '3600']
    resources: {limits: {memory: lots}}
`,
  'spin.yaml': `apiVersion: v1
kind: Pod
metadata: {name: spin, namespace: ${ns}}
spec:
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, '3600']
    livenessProbe: {exec: {command: ['true']}, periodSeconds: -1, timeoutSeconds: -1}
`,
};

function mainStatus(p: Pod | undefined): ContainerStatus | undefined {
  return p?.status?.containerStatuses?.find((c) => c.name === 'main');
}

let cri: CriInspector;
let kubelet: KubeletProcess | undefined;
before(async () => {
  cri = await CriInspector.connect();
});
afterEach(async () => {
  await kubelet?.dispose();
  kubelet = undefined;
  await cri.removeNamespace(ns);
});
after(() => cri.close());

async function healthzMs(k: KubeletProcess): Promise<number> {
  const start = Date.now();
  const res = await fetch(`http://127.0.0.1:${k.healthzPort}/healthz`, { signal: AbortSignal.timeout(5000) });
  assert.equal(res.status, 200, await res.text());
  return Date.now() - start;
}

test('a kill -9 restart with hostile manifests beside running pods stops nothing and loses no data', async () => {
  const k = (kubelet = new KubeletProcess());
  await k.start();
  for (const n of NAMES) await k.writeManifest(`${n}.yaml`, dataPod(n));
  const before = new Map<string, string>();
  for (const n of NAMES) {
    const p = await waitFor(
      'the pod to run',
      async () => {
        const pod = await k.pod(n);
        return mainStatus(pod)?.state?.running ? pod : undefined;
      },
      60_000,
    );
    before.set(n, mainStatus(p)!.containerID!);
  }

  await k.stop('SIGKILL');
  for (const [file, text] of Object.entries(HOSTILE)) await k.writeManifest(file, text);
  await k.start();

  // Through a few housekeeping passes and probe periods.
  for (let i = 0; i < 8; i++) {
    assert.ok((await healthzMs(k)) < 1000, '/healthz answers within 1 s');
    await new Promise((r) => setTimeout(r, 500));
  }
  for (const n of NAMES) {
    const p = await waitFor(
      'the pod to be reported Running',
      async () => {
        const pod = await k.pod(n);
        return mainStatus(pod)?.state?.running ? pod : undefined;
      },
      30_000,
    );
    assert.equal(mainStatus(p)?.containerID, before.get(n), `${n}: the same container`);
    assert.equal(mainStatus(p)?.restartCount, 0);
    const file = path.join(
      k.rootDir,
      'pods',
      p.metadata.uid!,
      'volumes',
      'kubernetes.io~empty-dir',
      'data',
      'kept',
    );
    assert.equal((await readFile(file, 'utf8')).trim(), n, `${n}: emptyDir data kept`);
  }
  const running = await cri.podContainers(ns, `lots-${k.nodeName}`);
  assert.equal(running.filter((c) => c.state === 'CONTAINER_RUNNING').length, 0, 'the refused pod never ran');
});
