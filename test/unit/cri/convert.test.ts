import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  containerConfigFromCri,
  containerFilterFromCri,
  containerFilterToCri,
  containerFromCri,
  containerStatsFromCri,
  containerStatusFromCri,
  imageFromCri,
  podSandboxConfigFromCri,
  podSandboxFilterFromCri,
  podSandboxFilterToCri,
  podSandboxStatusFromCri,
} from '../../../src/cri/convert.js';
import * as cri from '../../../src/cri/generated/runtime/v1/api.js';
import { grpcMethods } from '../../../src/lib/grpc-definitions.js';
import type { ContainerStats, ContainerStatus, Image, PodSandboxStatus } from '../../../src/cri/types.js';
import { fullContainerConfig, fullSandboxConfig } from './cri-fixtures.js';

const RS = grpcMethods(cri.RuntimeServiceDefinition);
const IS = grpcMethods(cri.ImageServiceDefinition);

/** Encodes a request the way the client does and decodes it the way the server does. */
function overTheWire<Request>(
  method: { requestSerialize(value: Request): Buffer; requestDeserialize(bytes: Buffer): Request },
  request: Request,
): Request {
  return method.requestDeserialize(method.requestSerialize(request));
}

/** Encodes a response (built from the fake server's plain objects, as it does) and decodes it as the client does. */
function responseOverTheWire<Response>(
  method: { responseSerialize(value: Response): Buffer; responseDeserialize(bytes: Buffer): Response },
  type: { fromPartial(value: never): Response },
  response: object,
): Response {
  return method.responseDeserialize(method.responseSerialize(type.fromPartial(response as never)));
}

test('a PodSandboxConfig with every field set survives the wire unchanged', () => {
  const config = fullSandboxConfig();
  const wire = overTheWire(
    RS.runPodSandbox,
    cri.RunPodSandboxRequest.fromPartial({ config, runtimeHandler: 'runc' }),
  );
  assert.equal(wire.runtimeHandler, 'runc');
  assert.deepEqual(podSandboxConfigFromCri(wire.config), config);
});

test('a ContainerConfig with every field set survives the wire unchanged, int64 and enums included', () => {
  const config = fullContainerConfig();
  const sandboxConfig = fullSandboxConfig();
  const wire = overTheWire(
    RS.createContainer,
    cri.CreateContainerRequest.fromPartial({ podSandboxId: 'sb', config, sandboxConfig }),
  );
  assert.equal(wire.podSandboxId, 'sb');
  assert.deepEqual(containerConfigFromCri(wire.config), config);
  assert.deepEqual(podSandboxConfigFromCri(wire.sandboxConfig), sandboxConfig);
});

test('an empty message decodes to the facade defaults, with required sub-messages filled in', () => {
  const status = containerStatusFromCri(
    responseOverTheWire(RS.containerStatus, cri.ContainerStatusResponse, { status: {} }).status!,
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
  const sandbox = podSandboxStatusFromCri(
    responseOverTheWire(RS.podSandboxStatus, cri.PodSandboxStatusResponse, { status: {} }).status!,
  );
  assert.equal(sandbox.network, undefined);
  assert.equal(sandbox.linux, undefined);
  assert.deepEqual(sandbox.metadata, { name: '', uid: '', namespace: '', attempt: 0 });
});

test('nanosecond timestamps come back as the same numbers', () => {
  const createdAt = 1_700_000_000_123_456_768; // a double near 1.7e18 holds multiples of 256 exactly
  const status = containerStatusFromCri(
    responseOverTheWire(RS.containerStatus, cri.ContainerStatusResponse, {
      status: { id: 'c', createdAt, startedAt: createdAt, exitCode: -1 },
    }).status!,
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
  const wireSandbox = responseOverTheWire(RS.podSandboxStatus, cri.PodSandboxStatusResponse, {
    status: sandboxStatus,
    info: { k: 'v' },
  });
  assert.deepEqual(podSandboxStatusFromCri(wireSandbox.status!), sandboxStatus);
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
  const wireContainer = responseOverTheWire(RS.containerStatus, cri.ContainerStatusResponse, {
    status: containerStatus,
  });
  assert.deepEqual(containerStatusFromCri(wireContainer.status!), containerStatus);

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
  const wireImage = responseOverTheWire(IS.imageStatus, cri.ImageStatusResponse, { image });
  assert.deepEqual(imageFromCri(wireImage.image!), image);

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
  const wireStats = responseOverTheWire(RS.containerStats, cri.ContainerStatsResponse, { stats });
  assert.deepEqual(containerStatsFromCri(wireStats.stats!), stats);
});

test('ListContainers carries every container with its state name', () => {
  const states = ['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN'] as const;
  const wire = responseOverTheWire(RS.listContainers, cri.ListContainersResponse, {
    containers: states.map((state, i) => ({
      id: `c${i}`,
      podSandboxId: 'sb',
      state,
      metadata: { name: `n${i}` },
    })),
  });
  const containers = wire.containers.map(containerFromCri);
  assert.deepEqual(
    containers.map((c) => c.state),
    [...states],
  );
  assert.equal(containers[2]?.metadata.name, 'n2');
});

test('an enum value newer than our proto decodes to the safe fallback, not a number', () => {
  // Hand-encoded Container { id = "x" (field 1), state = 9 (field 6) } inside ListContainersResponse.containers (field 1).
  const container = Buffer.from([0x0a, 0x01, 0x78, 0x30, 0x09]);
  const bytes = Buffer.concat([Buffer.from([0x0a, container.length]), container]);
  const decoded = RS.listContainers.responseDeserialize(bytes);
  const c = containerFromCri(decoded.containers[0]!);
  assert.equal(c.id, 'x');
  assert.equal(c.state, 'CONTAINER_UNKNOWN');
});

test('filters: an absent state stays absent on the wire; SANDBOX_READY, the zero value, is still sent', () => {
  const noState = overTheWire(
    RS.listPodSandbox,
    cri.ListPodSandboxRequest.fromPartial({ filter: podSandboxFilterToCri({ labelSelector: { a: 'b' } }) }),
  );
  assert.deepEqual(podSandboxFilterFromCri(noState.filter), {
    labelSelector: { a: 'b' },
  });

  const ready = overTheWire(
    RS.listPodSandbox,
    cri.ListPodSandboxRequest.fromPartial({ filter: podSandboxFilterToCri({ state: 'SANDBOX_READY' }) }),
  );
  assert.deepEqual(podSandboxFilterFromCri(ready.filter), {
    state: 'SANDBOX_READY',
  });

  const created = overTheWire(
    RS.listContainers,
    cri.ListContainersRequest.fromPartial({
      filter: containerFilterToCri({
        id: 'c',
        podSandboxId: 'sb',
        state: 'CONTAINER_CREATED',
        labelSelector: { x: 'y' },
      }),
    }),
  );
  assert.deepEqual(containerFilterFromCri(created.filter), {
    id: 'c',
    podSandboxId: 'sb',
    state: 'CONTAINER_CREATED',
    labelSelector: { x: 'y' },
  });

  const none = overTheWire(
    RS.listContainers,
    cri.ListContainersRequest.fromPartial({ filter: containerFilterToCri(undefined) }),
  );
  assert.equal(none.filter, undefined);
});

test('a request field the proto does not have is a type error, not a field silently dropped', () => {
  const request = cri.StopContainerRequest.fromPartial({
    containerId: 'c',
    // @ts-expect-error misspelled on purpose: fromPartial's exact type refuses it
    timeoutSecond: 30,
  });
  assert.equal(request.timeout, 0n);
  // @ts-expect-error a config's field misspelled inside a nested message is refused too
  cri.RunPodSandboxRequest.fromPartial({ config: { hostName: 'h' } });
});
