import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeContainerStatus, KubePodStatus } from '../../../src/kuberuntime/types.js';
import { InMemoryPodCache } from '../../../src/pleg/pod-cache.js';
import { podCacheContainerStatus } from '../../../src/prober/pod-cache-container-status.js';

function container(
  id: string,
  name: string,
  createdAtMs: number,
  state: KubeContainerStatus['state'],
): KubeContainerStatus {
  return {
    containerID: `containerd://${id}`,
    id,
    name,
    state,
    createdAtMs,
    startedAtMs: createdAtMs + 100,
    finishedAtMs: 0,
    exitCode: 0,
    image: 'busybox',
    imageRef: 'sha256:x',
    hash: 'h',
    restartCount: 0,
    reason: '',
    message: '',
    podSandboxId: 's',
  };
}

test('reads the newest container of the name and the pod IP from the pod cache', () => {
  const cache = new InMemoryPodCache();
  const status: KubePodStatus = {
    uid: 'u1',
    name: 'web',
    namespace: 'default',
    ips: ['10.244.0.7'],
    sandboxStatuses: [],
    containerStatuses: [container('old', 'app', 1000, 'exited'), container('new', 'app', 2000, 'running')],
    timestampMs: 3000,
  };
  cache.set('u1', status, undefined, 3000);
  const get = podCacheContainerStatus(cache);
  assert.deepEqual(get('u1', 'app'), {
    containerId: 'containerd://new',
    state: 'running',
    startedAtMs: 2100,
    podIP: '10.244.0.7',
  });
  assert.equal(get('u1', 'other'), undefined);
  assert.equal(get('unknown-pod', 'app'), undefined);
});
