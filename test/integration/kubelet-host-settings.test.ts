/**
 * Issue 37, item 6: settings that were parsed but not acted on, now acted on through the built
 * kubelet and a real containerd. --pod-cidr reaches containerd through CRI UpdateRuntimeConfig.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { KubeletProcess } from '../helpers/kubelet-process.js';

describe('settings acted on at start (issue 37, item 6)', () => {
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
});
