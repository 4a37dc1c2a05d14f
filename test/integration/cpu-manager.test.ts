/**
 * The CPU manager's static policy through the real containerd: on a node with reservedSystemCPUs "0",
 * a Guaranteed pod with cpu: 1 runs on CPU 1 alone, a BestEffort pod on the shared pool without it
 * (read from the kernel: Cpus_allowed_list of each container's first process), the state is kept in
 * <root-dir>/cpu_manager_state, and both stay so across a kubelet restart.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sleeperPod } from '../helpers/conformance.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const NAMESPACE = 'tskubelet-cpumanager-test';

const skip =
  process.getuid?.() !== 0
    ? 'needs root to run pods'
    : os.availableParallelism() < 2
      ? 'needs at least 2 CPUs (one reserved, one exclusive)'
      : undefined;

describe('CPU manager, static policy', { skip }, () => {
  let kubelet: KubeletProcess;
  let cri: CriInspector;

  before(async () => {
    cri = await CriInspector.connect();
    await cri.removeNamespace(NAMESPACE);
    kubelet = new KubeletProcess({
      extraConfig: ['cpuManagerPolicy: static', 'reservedSystemCPUs: "0"', 'cpuManagerReconcilePeriod: 1s'],
    });
    await kubelet.start();
  });

  after(async () => {
    await kubelet?.dispose();
    await cri?.removeNamespace(NAMESPACE);
    cri?.close();
  });

  /** The CPUs the kernel lets the pod's container run on, once it runs. */
  async function allowedCPUs(podName: string): Promise<string | undefined> {
    const [c] = await cri.podContainers(NAMESPACE, `${podName}-${kubelet.nodeName}`);
    if (!c || c.state !== 'CONTAINER_RUNNING') return undefined;
    const res = await cri.conn.runtime.execSync(c.id, ['cat', '/proc/1/status'], 10, { timeoutMs: 20_000 });
    return /^Cpus_allowed_list:\s*(\S+)$/m.exec(res.stdout.toString())?.[1];
  }

  async function expectCPUs(podName: string, want: string): Promise<void> {
    let last: string | undefined;
    await waitFor(
      `${podName} to run on CPUs ${want} (last seen: ${last ?? 'not running'})`,
      async () => (last = await allowedCPUs(podName)) === want,
      90_000,
    ).catch(async (err: unknown) => {
      throw new Error(
        `${String(err)}; last ${last ?? 'not running'}; kubelet log:\n${(await kubelet.logs()).slice(-4000)}`,
      );
    });
  }

  test('a Guaranteed pod gets CPU 1 to itself; a BestEffort pod runs on the rest; both survive a restart', async () => {
    await kubelet.writeManifest(
      'guaranteed.json',
      sleeperPod(NAMESPACE, 'guaranteed', {
        requests: { cpu: '1', memory: '32Mi' },
        limits: { cpu: '1', memory: '32Mi' },
      }),
    );
    await kubelet.writeManifest('besteffort.json', sleeperPod(NAMESPACE, 'besteffort'));
    await expectCPUs('guaranteed', '1');
    await expectCPUs('besteffort', '0');

    const state = JSON.parse(await readFile(path.join(kubelet.rootDir, 'cpu_manager_state'), 'utf8')) as {
      policyName: string;
      defaultCpuSet: string;
      entries?: Record<string, Record<string, string>>;
      checksum: number;
    };
    assert.equal(state.policyName, 'static');
    assert.equal(state.defaultCpuSet, '0');
    assert.deepEqual(Object.values(state.entries ?? {}), [{ main: '1' }]);
    assert.ok(state.checksum > 0);

    await kubelet.stop();
    await kubelet.start();
    // Give the restarted kubelet's reconcile loop a few periods to (wrongly) move anything.
    await new Promise((r) => setTimeout(r, 3000));
    await expectCPUs('guaranteed', '1');
    await expectCPUs('besteffort', '0');
    const again = JSON.parse(
      await readFile(path.join(kubelet.rootDir, 'cpu_manager_state'), 'utf8'),
    ) as typeof state;
    assert.deepEqual(again.entries, state.entries);
  });
});
