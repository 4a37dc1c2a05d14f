/**
 * The eviction manager through the built kubelet in cluster mode (test API server) and real
 * containerd: pods past their local storage limits are evicted with upstream's status and event
 * while a neighbour runs on; memory pressure (a threshold set just under what the machine has free,
 * tripped by a pod filling a memory-backed emptyDir) raises MemoryPressure, refuses a BestEffort
 * pod at admission, evicts the pod using the memory, and clears after the transition period.
 * Static pods are critical upstream and never evicted, so these pods come from the API.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { realCgroupFs } from '../../src/cm/cgroup-fs.js';
import { detectCgroupSubsystems } from '../../src/cm/cgroup-subsystems.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import type { Node } from '../../src/api/node.js';
import { CgroupStatsReader } from '../../src/stats/cgroup-stats.js';
import { readMemInfo } from '../../src/stats/node-host-stats.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-eviction-${process.pid}`;
const Mi = 1024 * 1024;

/** memory.available as the kubelet computes it: MemTotal minus the root cgroup's working set. */
async function memoryAvailableBytes(): Promise<number> {
  const mem = await readMemInfo();
  assert.ok(mem);
  const root = await new CgroupStatsReader(realCgroupFs(), await detectCgroupSubsystems(realCgroupFs())).read(
    '/',
    0,
  );
  const ws = root?.memoryWorkingSetBytes ?? mem.totalBytes - mem.freeBytes - mem.inactiveFileBytes;
  return mem.totalBytes - ws;
}

function busyboxPod(
  name: string,
  nodeName: string,
  command: string,
  extra: Partial<Pod['spec']> = {},
  resources = {},
) {
  return {
    metadata: { name, namespace: ns },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      restartPolicy: 'Never',
      containers: [
        {
          name: 'main',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', command],
          resources,
        },
      ],
      ...extra,
    },
  };
}

describe('eviction through the kubelet process', () => {
  let cri: CriInspector;
  let server: TestApiServer;
  let kubelet: KubeletProcess | undefined;
  let configDir: string;

  const apiPod = (name: string) => server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
  const events = () => server.store.list('events', { namespace: ns }).items as unknown as CoreEvent[];

  async function startKubelet(nodeName: string, extraConfig: string[]): Promise<KubeletProcess> {
    server = await startTestApiServer({ nodeName });
    server.store.create('namespaces', { metadata: { name: ns } });
    const kubeconfig = path.join(configDir, `${nodeName}.kubeconfig`);
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    const k = new KubeletProcess({ nodeName, extraArgs: [`--kubeconfig=${kubeconfig}`], extraConfig });
    kubelet = k;
    await k.start();
    return k;
  }

  before(async () => {
    cri = await CriInspector.connect();
    configDir = await mkdtemp(path.join(os.tmpdir(), 'it-eviction-'));
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

  test('an emptyDir past its sizeLimit and a pod past limits.ephemeral-storage are evicted; a neighbour is not', async () => {
    const nodeName = `it-evict-ls-${process.pid}`;
    const k = await startKubelet(nodeName, ['volumeStatsAggPeriod: 2s']);
    server.store.create('pods', busyboxPod('neighbour', k.nodeName, 'exec sleep 3600'));
    server.store.create(
      'pods',
      busyboxPod(
        'filler',
        k.nodeName,
        'dd if=/dev/zero of=/scratch/blob bs=1M count=40 2>/dev/null; exec sleep 3600',
        {
          volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '10Mi' } }],
          containers: [
            {
              name: 'main',
              image: 'busybox',
              imagePullPolicy: 'IfNotPresent',
              command: [
                'sh',
                '-c',
                'dd if=/dev/zero of=/scratch/blob bs=1M count=40 2>/dev/null; exec sleep 3600',
              ],
              volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
            },
          ],
        },
      ),
    );
    server.store.create(
      'pods',
      busyboxPod(
        'writer',
        k.nodeName,
        'dd if=/dev/zero of=/tmp/blob bs=1M count=30 2>/dev/null; exec sleep 3600',
        {},
        {
          limits: { 'ephemeral-storage': '20Mi' },
        },
      ),
    );
    for (const [name, message] of [
      ['filler', 'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". '],
      ['writer', 'Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. '],
    ] as const) {
      const evicted = await waitFor(
        `${name} to be evicted`,
        () => {
          const p = apiPod(name);
          return p?.status?.phase === 'Failed' ? p : undefined;
        },
        60_000,
        500,
      );
      assert.equal(evicted.status?.reason, 'Evicted', name);
      assert.equal(evicted.status?.message, message, name);
      const event = events().find((e) => e.reason === 'Evicted' && e.involvedObject.name === name);
      assert.equal(event?.type, 'Warning');
      assert.equal(event?.message, message);
    }
    assert.equal(apiPod('neighbour')?.status?.phase, 'Running');
    assert.equal(
      (await cri.podContainers(ns, 'neighbour')).filter((c) => c.state === 'CONTAINER_RUNNING').length,
      1,
    );
  });

  test('memory pressure: MemoryPressure, BestEffort refused, the pod using the memory evicted, then False again', async () => {
    const nodeName = `it-evict-mem-${process.pid}`;
    // A threshold 768 MiB under what is free now: the hog's 1.5 GiB in a memory-backed emptyDir trips it.
    const threshold = (await memoryAvailableBytes()) - 768 * Mi;
    const k = await startKubelet(nodeName, [
      'evictionHard:',
      `  memory.available: "${threshold}"`,
      'evictionPressureTransitionPeriod: 20s',
      'nodeStatusUpdateFrequency: 2s',
    ]);
    const memoryPressure = () =>
      (server.store.tryGet('nodes', nodeName) as Node | undefined)?.status?.conditions?.find(
        (c) => c.type === 'MemoryPressure',
      );
    await waitFor(
      'the node to report no memory pressure',
      () => memoryPressure()?.status === 'False',
      30_000,
      500,
    );
    assert.equal(memoryPressure()?.reason, 'KubeletHasSufficientMemory');
    server.store.create(
      'pods',
      busyboxPod('steady', k.nodeName, 'exec sleep 3600', {}, { requests: { memory: '64Mi' } }),
    );
    await waitFor('steady to run', () => apiPod('steady')?.status?.phase === 'Running', 30_000, 500);
    server.store.create('pods', {
      ...busyboxPod('hog', k.nodeName, ''),
      spec: {
        nodeName: k.nodeName,
        terminationGracePeriodSeconds: 1,
        restartPolicy: 'Never',
        volumes: [{ name: 'mem', emptyDir: { medium: 'Memory' } }],
        containers: [
          {
            name: 'main',
            image: 'busybox',
            imagePullPolicy: 'IfNotPresent',
            command: [
              'sh',
              '-c',
              'dd if=/dev/zero of=/mem/fill bs=1M count=1536 2>/dev/null; exec sleep 3600',
            ],
            volumeMounts: [{ name: 'mem', mountPath: '/mem' }],
          },
        ],
      },
    });
    await waitFor('MemoryPressure=True', () => memoryPressure()?.status === 'True', 60_000, 500);
    assert.equal(memoryPressure()?.reason, 'KubeletHasInsufficientMemory');
    assert.equal(memoryPressure()?.message, 'kubelet has insufficient memory available');

    server.store.create('pods', busyboxPod('besteffort', k.nodeName, 'exec sleep 3600'));
    const refused = await waitFor(
      'besteffort to be refused',
      () => {
        const p = apiPod('besteffort');
        return p?.status?.phase === 'Failed' ? p : undefined;
      },
      20_000,
      250,
    );
    assert.equal(refused.status?.reason, 'Evicted');
    assert.equal(refused.status?.message, 'Pod was rejected: The node had condition: [MemoryPressure]. ');

    const hog = await waitFor(
      'hog to be evicted',
      () => {
        const p = apiPod('hog');
        return p?.status?.phase === 'Failed' ? p : undefined;
      },
      40_000,
      500,
    );
    assert.equal(hog.status?.reason, 'Evicted');
    assert.match(
      hog.status?.message ?? '',
      /^The node was low on resource: memory\. Threshold quantity: \d+, available: \d+Ki\. Container main was using \d+Ki, request is 0, has larger consumption of memory\. $/,
    );
    assert.equal(
      hog.status?.conditions?.find((c) => c.type === 'DisruptionTarget')?.reason,
      'TerminationByKubelet',
    );
    assert.ok(events().some((e) => e.reason === 'Evicted' && e.involvedObject.name === 'hog'));
    assert.equal(apiPod('steady')?.status?.phase, 'Running', 'the pod within its request stays');
    // Deleting the evicted pod releases its memory-backed volume.
    server.store.delete('pods', 'hog', ns);
    await waitFor(
      'MemoryPressure=False after the transition period',
      () => memoryPressure()?.status === 'False',
      60_000,
      1000,
    );
    assert.equal(apiPod('steady')?.status?.phase, 'Running');
  });
});
