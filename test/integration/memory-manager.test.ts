/**
 * The memory manager's Static policy through the real containerd, on this machine's one NUMA node
 * with reservedMemory for node 0 equal to its node allocatable reservation (systemReserved 156Mi +
 * the default hard eviction threshold 100Mi): a Guaranteed pod's container is created with
 * cpuset_mems "0" (the OCI spec containerd made from the CRI request) and its cpuset cgroup reads
 * cpuset.mems "0" (cgroup v1: the container's own cpuset folder); a BestEffort pod's is created
 * without one; the assignment is in <root-dir>/memory_manager_state and stays there across a
 * kubelet restart. A reservation that does not add up stops the start with upstream's words.
 */
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { unmarshalCheckpoint } from '../../src/cm/memorymanager/checkpoint.js';
import { sleeperPod } from '../helpers/conformance.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const NAMESPACE = 'tskubelet-memorymanager-test';
const CPUSET_V1 = '/sys/fs/cgroup/cpuset';

async function skipReason(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root to run pods';
  if (!(await stat(`${CPUSET_V1}/cpuset.mems`).catch(() => undefined)))
    return 'needs cgroup v1 with the cpuset controller at /sys/fs/cgroup/cpuset';
  if (!(await stat('/sys/devices/system/node/node0/meminfo').catch(() => undefined)))
    return "needs the kernel's NUMA topology (/sys/devices/system/node)";
  return undefined;
}

const STATIC_CONFIG = [
  'memoryManagerPolicy: Static',
  'systemReserved: {memory: 156Mi}',
  'reservedMemory: [{numaNode: 0, limits: {memory: 256Mi}}]',
];

describe('memory manager, Static policy', { skip: await skipReason() }, () => {
  let kubelet: KubeletProcess;
  let cri: CriInspector;

  before(async () => {
    cri = await CriInspector.connect();
    await cri.removeNamespace(NAMESPACE);
    kubelet = new KubeletProcess({ extraConfig: STATIC_CONFIG });
  });

  after(async () => {
    await kubelet?.dispose();
    await cri?.removeNamespace(NAMESPACE);
    cri?.close();
  });

  /** The running container's cpuset.mems as its OCI spec asks and as its cgroup holds it. */
  async function mems(podName: string): Promise<{ spec: string | undefined; cgroup: string } | undefined> {
    const [c] = await cri.podContainers(NAMESPACE, `${podName}-${kubelet.nodeName}`);
    if (!c || c.state !== 'CONTAINER_RUNNING') return undefined;
    const { info } = await cri.conn.runtime.containerStatus(c.id, true, { timeoutMs: 20_000 });
    const detail = JSON.parse(info.info ?? '{}') as {
      pid?: number;
      runtimeSpec?: { linux?: { resources?: { cpu?: { mems?: string } } } };
    };
    const cgroups = await readFile(`/proc/${detail.pid}/cgroup`, 'utf8');
    const cpusetPath = /^\d+:cpuset:(.*)$/m.exec(cgroups)?.[1];
    assert.ok(cpusetPath, `no cpuset cgroup in /proc/${detail.pid}/cgroup:\n${cgroups}`);
    return {
      spec: detail.runtimeSpec?.linux?.resources?.cpu?.mems,
      cgroup: (await readFile(path.join(CPUSET_V1, cpusetPath, 'cpuset.mems'), 'utf8')).trim(),
    };
  }

  async function running(podName: string): Promise<{ spec: string | undefined; cgroup: string }> {
    let last: Awaited<ReturnType<typeof mems>>;
    await waitFor(`${podName} to run`, async () => (last = await mems(podName)) !== undefined, 90_000).catch(
      async (err: unknown) => {
        throw new Error(`${String(err)}; kubelet log:\n${(await kubelet.logs()).slice(-4000)}`);
      },
    );
    return last!;
  }

  test('a reservation that does not match node allocatable stops the start, in upstream words', async () => {
    kubelet.setExtraConfig([
      'memoryManagerPolicy: Static',
      'reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]',
    ]);
    try {
      // /healthz may answer before the managers are built, so start() may resolve: the log decides.
      await kubelet.start().catch(() => undefined);
      const log = await waitFor(
        'the kubelet to refuse to start',
        async () => {
          const text = await kubelet.logs();
          return /"Kubelet failed"/.test(text) && text;
        },
        20_000,
      );
      // The log line quotes the message as a value, its quotes escaped.
      assert.match(
        log,
        /"Kubelet failed" err="the total amount \\"1Gi\\" of type \\"memory\\" is not equal to the value \\"100Mi\\" determined by Node Allocatable feature"/,
      );
      await kubelet.stop();
    } finally {
      kubelet.setExtraConfig(STATIC_CONFIG);
    }
  });

  test('a Guaranteed pod gets cpuset.mems 0 and its assignment in memory_manager_state, across a restart', async () => {
    await kubelet.start();
    await kubelet.writeManifest(
      'guaranteed.json',
      sleeperPod(NAMESPACE, 'guaranteed', {
        requests: { cpu: '1', memory: '64Mi' },
        limits: { cpu: '1', memory: '64Mi' },
      }),
    );
    await kubelet.writeManifest('besteffort.json', sleeperPod(NAMESPACE, 'besteffort'));
    assert.deepEqual(await running('guaranteed'), { spec: '0', cgroup: '0' });
    assert.equal((await running('besteffort')).spec, undefined);

    const file = path.join(kubelet.rootDir, 'memory_manager_state');
    const state = unmarshalCheckpoint(await readFile(file, 'utf8'));
    assert.equal(state.policyName, 'Static');
    const entries = [...(state.entries ?? new Map()).values()];
    assert.deepEqual(entries, [
      new Map([['main', [{ numaAffinity: [0], type: 'memory', size: 64 * 1024 * 1024 }]]]),
    ]);
    const memory = state.machineState?.get(0)?.memoryMap?.get('memory');
    assert.equal(memory?.systemReserved, 256 * 1024 * 1024);
    assert.equal(memory?.reserved, 64 * 1024 * 1024);
    assert.equal(state.machineState?.get(0)?.numberOfAssignments, 1);

    await kubelet.stop();
    await kubelet.start();
    // The restarted kubelet admits the pod again from the state it read back: nothing moves.
    await new Promise((r) => setTimeout(r, 3000));
    assert.deepEqual(await running('guaranteed'), { spec: '0', cgroup: '0' });
    const again = unmarshalCheckpoint(await readFile(file, 'utf8'));
    assert.deepEqual(again.entries, state.entries);
    assert.deepEqual(again.machineState, state.machineState);
  });
});
