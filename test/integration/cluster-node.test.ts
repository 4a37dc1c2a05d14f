/**
 * Cluster mode, the node's side, end to end: the built kubelet with --kubeconfig for the test API
 * server and the private containerd registers its Node (labels, addresses, nodeInfo, capacity),
 * reports it Ready, and holds and renews its Lease in kube-node-lease.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KUBELET_VERSION } from '../../src/cmd/version.js';
import type { Lease, Node } from '../../src/api/node.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const NODE_NAME = `it-cluster-node-${process.pid}`;

function goArch(): string {
  return process.arch === 'x64' ? 'amd64' : process.arch;
}

async function memTotalKiB(): Promise<number> {
  const m = /^MemTotal:\s+(\d+) kB/m.exec(await readFile('/proc/meminfo', 'utf8'));
  return Number(m![1]);
}

async function prettyName(): Promise<string> {
  const text = await readFile('/etc/os-release', 'utf8');
  return /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(text)?.[1] ?? 'Linux';
}

describe('cluster mode: the node', () => {
  let server: TestApiServer;
  let kubelet: KubeletProcess;
  let cri: CriInspector;
  let dir = '';

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE_NAME });
    cri = await CriInspector.connect();
    dir = await mkdtemp(path.join(os.tmpdir(), 'tskubelet-it-cluster-'));
    const kubeconfig = path.join(dir, 'kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser);
    kubelet = new KubeletProcess({
      nodeName: NODE_NAME,
      extraArgs: [
        `--kubeconfig=${kubeconfig}`,
        '--node-labels=tskubelet.test/suite=cluster-node,node.kubernetes.io/pool=it',
        '--register-with-taints=tskubelet.test/dedicated=it:NoSchedule',
      ],
    });
    await kubelet.start();
  });

  after(async () => {
    await kubelet?.dispose();
    cri?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const getNode = () => server.store.tryGet('nodes', NODE_NAME) as Node | undefined;
  const getLease = () => server.store.tryGet('leases', NODE_NAME, 'kube-node-lease') as Lease | undefined;

  it('registers the Node with its labels, taints, addresses, nodeInfo and capacity', async () => {
    const node = await waitFor('the Node to be registered', getNode, 30_000);
    const arch = goArch();
    assert.deepEqual(
      Object.fromEntries(Object.entries(node.metadata.labels ?? {}).sort(([a], [b]) => a.localeCompare(b))),
      {
        'beta.kubernetes.io/arch': arch,
        'beta.kubernetes.io/os': 'linux',
        'kubernetes.io/arch': arch,
        'kubernetes.io/hostname': NODE_NAME,
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/pool': 'it',
        'tskubelet.test/suite': 'cluster-node',
      },
    );
    assert.equal(
      node.metadata.annotations?.['volumes.kubernetes.io/controller-managed-attach-detach'],
      'true',
    );
    assert.deepEqual(node.spec?.taints, [
      { key: 'tskubelet.test/dedicated', value: 'it', effect: 'NoSchedule' },
    ]);

    const addresses = node.status?.addresses ?? [];
    assert.equal(addresses.length, 2);
    assert.equal(addresses[0]?.type, 'InternalIP');
    const hostIPs = Object.values(os.networkInterfaces())
      .flat()
      .filter((a) => a && !a.internal)
      .map((a) => a!.address);
    assert.ok(
      hostIPs.includes(addresses[0]!.address),
      `${addresses[0]?.address} is one of this host's addresses`,
    );
    assert.deepEqual(addresses[1], { type: 'Hostname', address: NODE_NAME });

    const version = await cri.conn.runtime.version();
    const info = node.status?.nodeInfo;
    assert.equal(info?.machineID, (await readFile('/etc/machine-id', 'utf8')).trim());
    assert.equal(info?.bootID, (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim());
    assert.ok(info?.systemUUID);
    assert.equal(info?.kernelVersion, os.release());
    assert.equal(info?.osImage, await prettyName());
    assert.equal(info?.operatingSystem, 'linux');
    assert.equal(info?.architecture, arch);
    assert.equal(info?.containerRuntimeVersion, `${version.runtimeName}://${version.runtimeVersion}`);
    assert.equal(info?.kubeletVersion, KUBELET_VERSION);
    assert.equal(info?.kubeProxyVersion, KUBELET_VERSION);
    assert.deepEqual(node.status?.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });

    const memKiB = await memTotalKiB();
    const capacity = node.status?.capacity ?? {};
    assert.equal(capacity.cpu, String(os.cpus().length));
    assert.equal(capacity.memory, `${memKiB}Ki`);
    assert.equal(capacity.pods, '110');
    assert.match(capacity['ephemeral-storage'] ?? '', /^\d+(Ki|Mi|Gi)?$/);
    const allocatable = node.status?.allocatable ?? {};
    assert.equal(
      allocatable.memory,
      `${memKiB - 100 * 1024}Ki`,
      'memory less the 100Mi hard eviction threshold',
    );
    assert.equal(allocatable.cpu, capacity.cpu);
    assert.equal(allocatable.pods, '110');
  });

  it('becomes Ready, with the pressure conditions False', async () => {
    const node = await waitFor(
      'the Node to be Ready',
      () => {
        const n = getNode();
        return n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? n : undefined;
      },
      60_000,
    );
    const conditions = Object.fromEntries((node.status?.conditions ?? []).map((c) => [c.type, c]));
    assert.equal(conditions.Ready?.reason, 'KubeletReady');
    assert.equal(conditions.Ready?.message, 'kubelet is posting ready status');
    assert.equal(conditions.MemoryPressure?.status, 'False');
    assert.equal(conditions.MemoryPressure?.reason, 'KubeletHasSufficientMemory');
    assert.equal(conditions.DiskPressure?.status, 'False');
    assert.equal(conditions.DiskPressure?.reason, 'KubeletHasNoDiskPressure');
    assert.equal(conditions.PIDPressure?.status, 'False');
    assert.equal(conditions.PIDPressure?.reason, 'KubeletHasSufficientPID');
    // The Node is created with its full status, Ready included, so Ready may be seen before the first
    // status update: wait (bounded) for that too.
    const patches = await waitFor(
      'a Node status update',
      () => {
        const found = server.requests.filter((r) => r.method === 'PATCH' && r.resource === 'nodes');
        return found.length > 0 ? found : undefined;
      },
      30_000,
    );
    for (const p of patches) {
      assert.equal(p.subresource, 'status');
      assert.equal(p.contentType, 'application/strategic-merge-patch+json');
      assert.equal(p.user, server.nodeUser);
    }
  });

  it('holds its Lease, owned by the Node, and renews it', async () => {
    // Created at once, as upstream, and owned by the Node from the first renewal after the Node exists.
    const lease = await waitFor(
      'the Lease, owned by the Node',
      () => {
        const l = getLease();
        return l?.metadata.ownerReferences?.length ? l : undefined;
      },
      30_000,
    );
    assert.equal(lease.spec?.holderIdentity, NODE_NAME);
    assert.equal(lease.spec?.leaseDurationSeconds, 40);
    assert.deepEqual(lease.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: NODE_NAME, uid: getNode()?.metadata.uid },
    ]);
    const first = lease.spec?.renewTime ?? '';
    assert.match(first, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // Renewed every 10 s (a quarter of the 40 s lease), with up to 4% jitter.
    await waitFor('the Lease to be renewed', () => (getLease()?.spec?.renewTime ?? '') > first, 25_000, 500);
  });
});
