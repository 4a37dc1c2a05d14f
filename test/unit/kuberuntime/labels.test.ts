import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { hashContainer } from '../../../src/kuberuntime/container-hash.js';
import {
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  getPodSandboxInfoFromLabels,
  newContainerAnnotations,
  newContainerLabels,
  newPodAnnotations,
  newPodLabels,
} from '../../../src/kuberuntime/labels.js';

function pod(): Pod {
  return {
    metadata: {
      name: 'web',
      namespace: 'default',
      uid: 'uid-1',
      labels: { app: 'web', 'io.kubernetes.pod.name': 'spoofed' },
      annotations: { note: 'hello' },
      deletionGracePeriodSeconds: 5,
    },
    spec: {
      terminationGracePeriodSeconds: 45,
      initContainers: [{ name: 'init', image: 'busybox' }],
      containers: [
        {
          name: 'app',
          image: 'busybox',
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          ports: [{ containerPort: 80, protocol: 'TCP' }],
          lifecycle: { preStop: { exec: { command: ['sh', '-c', 'sleep 1'] } } },
        },
      ],
    },
  };
}

test('sandbox labels carry the pod labels and the pod identity, identity winning', () => {
  const labels = newPodLabels(pod());
  assert.equal('io.kubernetes.container.name' in labels, false);
  assert.deepEqual(labels, {
    app: 'web',
    'io.kubernetes.pod.name': 'web',
    'io.kubernetes.pod.namespace': 'default',
    'io.kubernetes.pod.uid': 'uid-1',
  });
  const back = getPodSandboxInfoFromLabels(labels);
  assert.deepEqual(back, {
    labels: { app: 'web' },
    podName: 'web',
    podNamespace: 'default',
    podUid: 'uid-1',
  });
});

test('sandbox annotations are the pod annotations', () => {
  assert.deepEqual(newPodAnnotations(pod()), { note: 'hello' });
});

test('container labels are exactly the four identity labels', () => {
  const p = pod();
  const labels = newContainerLabels(p.spec.containers[0]!, p);
  assert.deepEqual(labels, {
    'io.kubernetes.pod.name': 'web',
    'io.kubernetes.pod.namespace': 'default',
    'io.kubernetes.pod.uid': 'uid-1',
    'io.kubernetes.container.name': 'app',
  });
  assert.deepEqual(getContainerInfoFromLabels(labels), {
    containerName: 'app',
    podName: 'web',
    podNamespace: 'default',
    podUid: 'uid-1',
  });
});

test('container annotations use upstream keys and formats, and read back', () => {
  const p = pod();
  const c = p.spec.containers[0]!;
  const hash = hashContainer(c);
  const a = newContainerAnnotations(c, p, {
    hash,
    restartCount: 3,
    extra: { 'io.kubernetes.container.hash': 'x', dev: 'y' },
  });
  assert.equal(a['io.kubernetes.container.hash'], hash);
  assert.equal(a['io.kubernetes.container.restartCount'], '3');
  assert.equal(a['io.kubernetes.container.terminationMessagePath'], '/dev/termination-log');
  assert.equal(a['io.kubernetes.container.terminationMessagePolicy'], 'File');
  assert.equal(a['io.kubernetes.pod.terminationGracePeriod'], '45');
  assert.equal(a['io.kubernetes.pod.deletionGracePeriod'], '5');
  assert.equal(a['io.kubernetes.container.preStopHandler'], '{"exec":{"command":["sh","-c","sleep 1"]}}');
  assert.equal(a['io.kubernetes.container.ports'], '[{"containerPort":80,"protocol":"TCP"}]');
  assert.equal(a['io.kubernetes.container.type'], 'container');
  assert.equal(a.dev, 'y');

  const info = getContainerInfoFromAnnotations(a);
  assert.equal(info.hash, hash);
  assert.equal(info.restartCount, 3);
  assert.equal(info.podTerminationGracePeriodSeconds, 45);
  assert.equal(info.podDeletionGracePeriodSeconds, 5);
  assert.deepEqual(info.preStopHandler, { exec: { command: ['sh', '-c', 'sleep 1'] } });
  assert.deepEqual(info.containerPorts, [{ containerPort: 80, protocol: 'TCP' }]);
  assert.equal(info.containerType, 'container');
});

test('init containers are typed init; optional annotations are absent when unset', () => {
  const p = pod();
  delete p.spec.terminationGracePeriodSeconds;
  delete p.metadata.deletionGracePeriodSeconds;
  const a = newContainerAnnotations(p.spec.initContainers![0]!, p, { hash: 'abc', restartCount: 0 });
  assert.equal(a['io.kubernetes.container.type'], 'init');
  assert.equal('io.kubernetes.pod.terminationGracePeriod' in a, false);
  assert.equal('io.kubernetes.pod.deletionGracePeriod' in a, false);
  assert.equal('io.kubernetes.container.preStopHandler' in a, false);
  assert.equal('io.kubernetes.container.ports' in a, false);
});

test('missing or malformed annotations read as zero values', () => {
  const info = getContainerInfoFromAnnotations({
    'io.kubernetes.container.restartCount': 'three',
    'io.kubernetes.container.hash': 'zz',
    'io.kubernetes.container.preStopHandler': '{not json',
  });
  assert.equal(info.restartCount, 0);
  assert.equal(info.hash, '');
  assert.equal(info.preStopHandler, undefined);
  assert.equal(info.podTerminationGracePeriodSeconds, undefined);
  // Upstream writes hex without leading zeros; a padded value from another writer compares equal.
  assert.equal(getContainerInfoFromAnnotations({ 'io.kubernetes.container.hash': '00AbC' }).hash, 'abc');
});
