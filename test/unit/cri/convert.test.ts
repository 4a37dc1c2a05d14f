import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  containerConfigFromWire,
  containerFilterFromWire,
  containerFilterToWire,
  containerFromWire,
  containerStatsFromWire,
  containerStatusFromWire,
  imageFromWire,
  podSandboxConfigFromWire,
  podSandboxFilterFromWire,
  podSandboxFilterToWire,
  podSandboxStatusFromWire,
} from '../../../src/cri/convert.js';
import { criMethod } from '../../../src/cri/cri-proto.js';
import type { ContainerStats, ContainerStatus, Image, PodSandboxStatus } from '../../../src/cri/types.js';
import { fullContainerConfig, fullSandboxConfig } from './cri-fixtures.js';

/** Encodes a request the way the client does and decodes it the way the server does. */
function overTheWire(method: string, request: object): Record<string, unknown> {
  const m = criMethod(method);
  return m.deserializeRequest(m.serializeRequest(request));
}

function responseOverTheWire(method: string, response: object): Record<string, unknown> {
  const m = criMethod(method);
  return m.deserializeResponse(m.serializeResponse(response));
}

test('a PodSandboxConfig with every field set survives the wire unchanged', () => {
  const config = fullSandboxConfig();
  const wire = overTheWire('RunPodSandbox', { config, runtimeHandler: 'runc' });
  assert.equal(wire.runtimeHandler, 'runc');
  assert.deepEqual(podSandboxConfigFromWire(wire.config as Record<string, unknown>), config);
});

test('a ContainerConfig with every field set survives the wire unchanged, int64 and enums included', () => {
  const config = fullContainerConfig();
  const sandboxConfig = fullSandboxConfig();
  const wire = overTheWire('CreateContainer', { podSandboxId: 'sb', config, sandboxConfig });
  assert.equal(wire.podSandboxId, 'sb');
  assert.deepEqual(containerConfigFromWire(wire.config as Record<string, unknown>), config);
  assert.deepEqual(podSandboxConfigFromWire(wire.sandboxConfig as Record<string, unknown>), sandboxConfig);
});

test('an empty message decodes to the facade defaults, with required sub-messages filled in', () => {
  const status = containerStatusFromWire(
    responseOverTheWire('ContainerStatus', { status: {} }).status as Record<string, unknown>,
  );
  assert.deepEqual(status, {
    id: '',
    metadata: { name: '', attempt: 0 },
    state: 'CONTAINER_CREATED',
    createdAt: 0,
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    image: { image: '', annotations: {} },
    imageRef: '',
    reason: '',
    message: '',
    labels: {},
    annotations: {},
    mounts: [],
    logPath: '',
  });
  const sandbox = podSandboxStatusFromWire(
    responseOverTheWire('PodSandboxStatus', { status: {} }).status as Record<string, unknown>,
  );
  assert.equal(sandbox.network, undefined);
  assert.equal(sandbox.linux, undefined);
  assert.deepEqual(sandbox.metadata, { name: '', uid: '', namespace: '', attempt: 0 });
});

test('nanosecond timestamps come back as the same numbers', () => {
  const createdAt = 1_700_000_000_123_456_768; // a double near 1.7e18 holds multiples of 256 exactly
  const status = containerStatusFromWire(
    responseOverTheWire('ContainerStatus', {
      status: { id: 'c', createdAt, startedAt: createdAt, exitCode: -1 },
    }).status as Record<string, unknown>,
  );
  assert.equal(typeof status.createdAt, 'number');
  assert.equal(status.createdAt, createdAt);
  assert.equal(status.exitCode, -1);
});

test('response types round-trip: sandbox status, container status, image and stats', () => {
  const sandboxStatus: PodSandboxStatus = {
    id: 'sb',
    metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 1 },
    state: 'SANDBOX_NOTREADY',
    createdAt: 1_700_000_000_000_000_000,
    network: { ip: '10.0.0.2', additionalIps: [{ ip: 'fd00::2' }] },
    linux: { namespaces: { options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
    labels: { a: 'b' },
    annotations: { c: 'd' },
    runtimeHandler: 'runc',
  };
  const wireSandbox = responseOverTheWire('PodSandboxStatus', { status: sandboxStatus, info: { k: 'v' } });
  assert.deepEqual(podSandboxStatusFromWire(wireSandbox.status as Record<string, unknown>), sandboxStatus);
  assert.deepEqual(wireSandbox.info, { k: 'v' });

  const containerStatus: ContainerStatus = {
    id: 'c',
    metadata: { name: 'app', attempt: 3 },
    state: 'CONTAINER_EXITED',
    createdAt: 1_700_000_000_000_000_000,
    startedAt: 1_700_000_001_000_000_000,
    finishedAt: 1_700_000_002_000_000_000,
    exitCode: 137,
    image: { image: 'busybox', annotations: {} },
    imageRef: 'sha256:abc',
    reason: 'OOMKilled',
    message: 'out of memory',
    labels: { x: 'y' },
    annotations: { z: 'w' },
    mounts: [
      {
        containerPath: '/a',
        hostPath: '/b',
        readonly: false,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_BIDIRECTIONAL',
      },
    ],
    logPath: '/var/log/pods/x/app/3.log',
  };
  const wireContainer = responseOverTheWire('ContainerStatus', { status: containerStatus });
  assert.deepEqual(containerStatusFromWire(wireContainer.status as Record<string, unknown>), containerStatus);

  const image: Image = {
    id: 'sha256:abc',
    repoTags: ['docker.io/library/busybox:latest'],
    repoDigests: ['docker.io/library/busybox@sha256:def'],
    size: 5 * 2 ** 40,
    uid: { value: 65534 },
    username: 'nobody',
    spec: { image: 'busybox', annotations: { arch: 'amd64' } },
    pinned: true,
  };
  const wireImage = responseOverTheWire('ImageStatus', { image });
  assert.deepEqual(imageFromWire(wireImage.image as Record<string, unknown>), image);

  const stats: ContainerStats = {
    attributes: { id: 'c', metadata: { name: 'app', attempt: 0 }, labels: {}, annotations: {} },
    cpu: { timestamp: 1, usageCoreNanoSeconds: { value: 2 }, usageNanoCores: { value: 3 } },
    memory: {
      timestamp: 4,
      workingSetBytes: { value: 5 },
      availableBytes: { value: 6 },
      usageBytes: { value: 7 },
      rssBytes: { value: 8 },
      pageFaults: { value: 9 },
      majorPageFaults: { value: 10 },
    },
    writableLayer: {
      timestamp: 11,
      fsId: { mountpoint: '/' },
      usedBytes: { value: 12 },
      inodesUsed: { value: 13 },
    },
  };
  const wireStats = responseOverTheWire('ContainerStats', { stats });
  assert.deepEqual(containerStatsFromWire(wireStats.stats as Record<string, unknown>), stats);
});

test('ListContainers carries every container with its state name', () => {
  const states = ['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN'] as const;
  const wire = responseOverTheWire('ListContainers', {
    containers: states.map((state, i) => ({
      id: `c${i}`,
      podSandboxId: 'sb',
      state,
      metadata: { name: `n${i}` },
    })),
  });
  const containers = (wire.containers as Record<string, unknown>[]).map(containerFromWire);
  assert.deepEqual(
    containers.map((c) => c.state),
    [...states],
  );
  assert.equal(containers[2]?.metadata.name, 'n2');
});

test('an enum value newer than our proto decodes to the safe fallback, not a number', () => {
  const m = criMethod('ListContainers');
  // Hand-encoded Container { id = "x" (field 1), state = 9 (field 6) } inside ListContainersResponse.containers (field 1).
  const container = Buffer.from([0x0a, 0x01, 0x78, 0x30, 0x09]);
  const bytes = Buffer.concat([Buffer.from([0x0a, container.length]), container]);
  const decoded = m.deserializeResponse(bytes);
  const c = containerFromWire((decoded.containers as Record<string, unknown>[])[0]!);
  assert.equal(c.id, 'x');
  assert.equal(c.state, 'CONTAINER_UNKNOWN');
});

test('filters: an absent state stays absent on the wire; SANDBOX_READY, the zero value, is still sent', () => {
  const noState = overTheWire('ListPodSandbox', {
    filter: podSandboxFilterToWire({ labelSelector: { a: 'b' } }),
  });
  assert.deepEqual(podSandboxFilterFromWire(noState.filter as Record<string, unknown>), {
    labelSelector: { a: 'b' },
  });

  const ready = overTheWire('ListPodSandbox', { filter: podSandboxFilterToWire({ state: 'SANDBOX_READY' }) });
  assert.deepEqual(podSandboxFilterFromWire(ready.filter as Record<string, unknown>), {
    state: 'SANDBOX_READY',
  });

  const created = overTheWire('ListContainers', {
    filter: containerFilterToWire({
      id: 'c',
      podSandboxId: 'sb',
      state: 'CONTAINER_CREATED',
      labelSelector: { x: 'y' },
    }),
  });
  assert.deepEqual(containerFilterFromWire(created.filter as Record<string, unknown>), {
    id: 'c',
    podSandboxId: 'sb',
    state: 'CONTAINER_CREATED',
    labelSelector: { x: 'y' },
  });

  const none = overTheWire('ListContainers', { filter: containerFilterToWire(undefined) });
  assert.equal(none.filter, null);
});
