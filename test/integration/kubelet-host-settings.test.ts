/**
 * Settings that were parsed but not acted on, now acted on through the built
 * kubelet and a real containerd. --pod-cidr reaches containerd through CRI UpdateRuntimeConfig;
 * --kubelet-cgroups moves the kubelet into that cgroup in every hierarchy.
 */
import assert from 'node:assert/strict';
import { readFile, readdir, rmdir } from 'node:fs/promises';
import { afterEach, describe, test } from 'node:test';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

describe('settings acted on at start', () => {
  const kubelets: KubeletProcess[] = [];
  afterEach(async () => {
    for (const k of kubelets.splice(0)) await k.dispose();
  });

  test('--pod-cidr is handed to containerd (UpdateRuntimeConfig), which accepts it', async () => {
    const k = new KubeletProcess({ extraArgs: ['--pod-cidr=10.244.86.0/24'] });
    kubelets.push(k);
    await k.start();
    const logs = await k.logs();
    assert.match(logs, /"Updating Pod CIDR" originalPodCIDR="" newPodCIDR="10\.244\.86\.0\/24"/);
    assert.doesNotMatch(logs, /Pod CIDR update failed/);
    assert.doesNotMatch(logs, /parsed but not acted on.*podCIDR/);
  });

  const canMove = process.getuid?.() === 0 ? false : 'needs root to make cgroups and move a process';
  test(
    '--kubelet-cgroups moves the kubelet into that cgroup in every hierarchy',
    { skip: canMove },
    async () => {
      const name = '/tsk-settings2-test';
      const k = new KubeletProcess({ extraArgs: [`--kubelet-cgroups=${name}`] });
      kubelets.push(k);
      const mounts = (await readdir('/sys/fs/cgroup', { withFileTypes: true }))
        .filter((e) => e.isDirectory())
        .map((e) => `/sys/fs/cgroup/${e.name}`);
      try {
        await k.start();
        const pid = k.pid;
        assert.ok(pid !== undefined);
        // /healthz can answer before the node managers are built, so the first move may still be under way.
        const readLines = async (): Promise<string[]> =>
          (await readFile(`/proc/${pid}/cgroup`, 'utf8')).trim().split('\n');
        const inCgroup = (line: string): boolean => line.split(':').slice(2).join(':') === name;
        const lines = await waitFor(
          'the kubelet in its cgroup in every hierarchy',
          async () => {
            const now = await readLines();
            return now.every(inCgroup) && now;
          },
          20_000,
        ).catch(async () => readLines());
        assert.ok(lines.length > 0);
        for (const line of lines) assert.equal(line.split(':').slice(2).join(':'), name, line);
        assert.doesNotMatch(await k.logs(), /Failed to ensure state|parsed but not acted on.*kubeletCgroups/);
      } finally {
        await k.dispose();
        // The kubelet is gone, so the cgroup is empty and can be removed from each hierarchy (v2: the one tree).
        for (const dir of mounts.length > 0 ? mounts : ['/sys/fs/cgroup'])
          await rmdir(`${dir}${name}`).catch(() => undefined);
        await rmdir(`/sys/fs/cgroup${name}`).catch(() => undefined);
      }
    },
  );
});
