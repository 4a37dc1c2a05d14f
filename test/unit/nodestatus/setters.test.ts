import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import type { MachineInfo } from '../../../src/nodestatus/machine-info.js';
import { parseQuantity as parseResourceQuantity } from '../../../src/api/quantity.js';
import {
  aggregateMessage,
  capacityFromMachineInfo,
  daemonEndpoints,
  diskPressureCondition,
  goArch,
  goRuntime,
  hardEvictionReservation,
  images,
  machineInfo,
  memoryPressureCondition,
  nodeAddress,
  nodeAllocatableReservation,
  pidPressureCondition,
  readyCondition,
  schedulableEvents,
  versionInfo,
  type MachineInfoInputs,
} from '../../../src/nodestatus/setters.js';
import type { EventType } from '../../../src/api/core-v1.js';
import type { Node } from '../../../src/api/node.js';
import { image } from './fixtures.js';

setLogSink(() => undefined);

const MACHINE: MachineInfo = {
  numCores: 2,
  memoryCapacityBytes: 24684092 * 1024,
  machineID: 'mid',
  systemUUID: 'uuid',
  bootID: 'boot-1',
  kernelVersion: '6.1.0',
  osImage: 'Debian GNU/Linux 12 (bookworm)',
  hugePages: [
    { pageSizeKiB: 2048, numPages: 0 },
    { pageSizeKiB: 1048576, numPages: 0 },
  ],
};

const DEFAULT_EVICTION = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
};

function emptyNode(name = 'n1'): Node {
  return { metadata: { name } };
}

function events() {
  const list: string[] = [];
  return {
    list,
    status: (type: EventType, reason: string) => list.push(`${type} ${reason}`),
    full: (type: EventType, reason: string, message: string) => list.push(`${type} ${reason} ${message}`),
  };
}

function machineInputs(overrides: Partial<MachineInfoInputs> = {}): MachineInfoInputs {
  return {
    nodeName: 'n1',
    maxPods: 110,
    podsPerCore: 0,
    machineInfo: () => MACHINE,
    ephemeralStorageCapacityBytes: () => 102_400_000_000,
    allocatableReservation: (capacity) =>
      nodeAllocatableReservation(capacity, {
        systemReserved: {},
        kubeReserved: {},
        evictionHard: DEFAULT_EVICTION,
      }),
    recordEvent: () => undefined,
    ...overrides,
  };
}

describe('nodeAddress', () => {
  const valid = () => undefined;
  const noDiscovery = () => ({ error: 'should not be asked' });

  it('uses --node-ip for InternalIP, then the hostname', () => {
    const node = emptyNode();
    nodeAddress({ nodeIPs: ['10.0.0.5'], hostname: 'n1', validateNodeIP: valid, discoveredIP: noDiscovery })(
      node,
    );
    assert.deepEqual(node.status?.addresses, [
      { type: 'InternalIP', address: '10.0.0.5' },
      { type: 'Hostname', address: 'n1' },
    ]);
  });

  it('reports both families of a dual-stack --node-ip', () => {
    const node = emptyNode();
    nodeAddress({
      nodeIPs: ['10.0.0.5', 'fd00::5'],
      hostname: 'n1',
      validateNodeIP: valid,
      discoveredIP: noDiscovery,
    })(node);
    assert.deepEqual(node.status?.addresses, [
      { type: 'InternalIP', address: '10.0.0.5' },
      { type: 'InternalIP', address: 'fd00::5' },
      { type: 'Hostname', address: 'n1' },
    ]);
  });

  it('falls back to the discovered address when --node-ip is unset or unspecified', () => {
    for (const nodeIPs of [[], ['0.0.0.0']]) {
      const node = emptyNode();
      nodeAddress({
        nodeIPs,
        hostname: 'n1',
        validateNodeIP: valid,
        discoveredIP: () => ({ ip: '192.0.2.2' }),
      })(node);
      assert.deepEqual(node.status?.addresses?.[0], { type: 'InternalIP', address: '192.0.2.2' });
    }
  });

  it('takes a hostname that is an IP as the InternalIP', () => {
    const node = emptyNode();
    nodeAddress({ nodeIPs: [], hostname: '10.1.2.3', validateNodeIP: valid, discoveredIP: noDiscovery })(
      node,
    );
    assert.deepEqual(node.status?.addresses?.[0], { type: 'InternalIP', address: '10.1.2.3' });
  });

  it('fails, leaving the addresses alone, for a --node-ip the host does not have or when nothing is found', () => {
    const node: Node = {
      metadata: { name: 'n1' },
      status: { addresses: [{ type: 'Hostname', address: 'old' }] },
    };
    assert.throws(
      () =>
        nodeAddress({
          nodeIPs: ['10.9.9.9'],
          hostname: 'n1',
          validateNodeIP: () => 'node IP: "10.9.9.9" not found in the host\'s network interfaces',
          discoveredIP: noDiscovery,
        })(node),
      /failed to validate nodeIP: node IP: "10.9.9.9" not found/,
    );
    assert.throws(
      () =>
        nodeAddress({
          nodeIPs: [],
          hostname: 'n1',
          validateNodeIP: valid,
          discoveredIP: () => ({ error: 'no route' }),
        })(node),
      /can't get ip address of node n1. error: no route/,
    );
    assert.deepEqual(node.status?.addresses, [{ type: 'Hostname', address: 'old' }]);
  });
});

describe('machineInfo: capacity and allocatable', () => {
  it('reports the machine and subtracts the default hard eviction thresholds', () => {
    const node = emptyNode();
    machineInfo(machineInputs())(node);
    assert.deepEqual(node.status?.capacity, {
      cpu: '2',
      memory: '24684092Ki',
      'hugepages-2Mi': '0',
      'hugepages-1Gi': '0',
      pods: '110',
      'ephemeral-storage': '100000000Ki',
    });
    assert.deepEqual(node.status?.allocatable, {
      cpu: '2',
      memory: '24581692Ki',
      'hugepages-2Mi': '0',
      'hugepages-1Gi': '0',
      pods: '110',
      // 10% as float32 of 102,400,000,000 bytes is 10,240,000,152 bytes, as upstream computes it.
      'ephemeral-storage': '92159999848',
    });
    assert.equal(node.status?.nodeInfo?.machineID, 'mid');
    assert.equal(node.status?.nodeInfo?.systemUUID, 'uuid');
    assert.equal(node.status?.nodeInfo?.bootID, 'boot-1');
  });

  it('subtracts kubeReserved and systemReserved too, never below zero', () => {
    const node = emptyNode();
    machineInfo(
      machineInputs({
        allocatableReservation: (capacity) =>
          nodeAllocatableReservation(capacity, {
            systemReserved: { cpu: '100m', memory: '1Gi', pid: '100' },
            kubeReserved: { cpu: '3', 'ephemeral-storage': '1Gi' },
            evictionHard: { 'memory.available': '100Mi' },
          }),
      }),
    )(node);
    assert.equal(node.status?.allocatable?.cpu, '0');
    assert.equal(node.status?.allocatable?.memory, String(24684092 - 1048576 - 102400) + 'Ki');
    assert.equal(node.status?.allocatable?.['ephemeral-storage'], String(100000000 - 1048576) + 'Ki');
    assert.equal(node.status?.allocatable?.pid, undefined);
  });

  it('takes huge pages out of allocatable memory', () => {
    const node = emptyNode();
    const machine = { ...MACHINE, hugePages: [{ pageSizeKiB: 2048, numPages: 512 }] };
    machineInfo(machineInputs({ machineInfo: () => machine }))(node);
    assert.equal(node.status?.capacity?.['hugepages-2Mi'], '1Gi');
    assert.equal(node.status?.allocatable?.['hugepages-2Mi'], '1Gi');
    assert.equal(node.status?.allocatable?.memory, String(24684092 - 102400 - 1048576) + 'Ki');
  });

  it('limits pods by podsPerCore, and keeps extended resources the server has', () => {
    const node: Node = {
      metadata: { name: 'n1' },
      status: {
        capacity: { 'example.com/gpu': '2' },
        allocatable: { 'example.com/gpu': '2', 'example.com/gone': '1' },
      },
    };
    machineInfo(machineInputs({ podsPerCore: 10 }))(node);
    assert.equal(node.status?.capacity?.pods, '20');
    assert.equal(node.status?.capacity?.['example.com/gpu'], '2');
    assert.equal(node.status?.allocatable?.['example.com/gpu'], '2');
    assert.equal(node.status?.allocatable?.['example.com/gone'], undefined);
  });

  it('records Rebooted when the boot ID changes', () => {
    const ev = events();
    const node: Node = { metadata: { name: 'n1' }, status: {} };
    machineInfo(machineInputs({ recordEvent: ev.full }))(node);
    assert.deepEqual(ev.list, []);
    machineInfo(
      machineInputs({ recordEvent: ev.full, machineInfo: () => ({ ...MACHINE, bootID: 'boot-2' }) }),
    )(node);
    assert.deepEqual(ev.list, ['Warning Rebooted Node n1 has been rebooted, boot id: boot-2']);
  });

  it('reports zero cpu and memory when the machine cannot be read', () => {
    const node = emptyNode();
    assert.throws(
      () => machineInfo(machineInputs({ machineInfo: () => new Error('no /proc') }))(node),
      /no \/proc/,
    );
    assert.deepEqual(node.status?.capacity, { cpu: '0', memory: '0', pods: '110' });
  });

  it('names huge page resources as upstream', () => {
    const c = capacityFromMachineInfo(MACHINE);
    assert.deepEqual(Object.keys(c).sort(), ['cpu', 'hugepages-1Gi', 'hugepages-2Mi', 'memory']);
  });

  it('reads eviction percentages as float32 and ignores 0% and 100%', () => {
    const capacity = {
      memory: parseResourceQuantity('1000Mi'),
      'ephemeral-storage': parseResourceQuantity('1000'),
    };
    const r = hardEvictionReservation({ 'memory.available': '0%', 'nodefs.available': '7.5%' }, capacity);
    assert.equal(r.memory, undefined);
    assert.equal(r['ephemeral-storage']?.nano, 75n * 1_000_000_000n);
  });
});

describe('versionInfo, daemonEndpoints, goRuntime', () => {
  it('reports the runtime as name://version and the kubelet version twice', () => {
    const node = emptyNode();
    versionInfo({
      kernelVersion: '6.1.0',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      runtimeType: 'containerd',
      runtimeVersion: () => '1.6.20~ds1',
      kubeletVersion: 'v1.30.0+tskubelet.0.1.0',
    })(node);
    const ni = node.status?.nodeInfo;
    assert.equal(ni?.containerRuntimeVersion, 'containerd://1.6.20~ds1');
    assert.equal(ni?.kernelVersion, '6.1.0');
    assert.equal(ni?.osImage, 'Debian GNU/Linux 12 (bookworm)');
    assert.equal(ni?.kubeletVersion, 'v1.30.0+tskubelet.0.1.0');
    assert.equal(ni?.kubeProxyVersion, 'v1.30.0+tskubelet.0.1.0');
  });

  it('says Unknown for a runtime that does not answer', () => {
    const node = emptyNode();
    versionInfo({
      kernelVersion: 'k',
      osImage: 'o',
      runtimeType: 'containerd',
      runtimeVersion: () => undefined,
      kubeletVersion: 'v',
    })(node);
    assert.equal(node.status?.nodeInfo?.containerRuntimeVersion, 'containerd://Unknown');
  });

  it('publishes the kubelet port and the Go names of OS and architecture', () => {
    const node = emptyNode();
    daemonEndpoints(10250)(node);
    goRuntime()(node);
    assert.deepEqual(node.status?.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
    assert.equal(node.status?.nodeInfo?.operatingSystem, 'linux');
    assert.equal(goArch('x64'), 'amd64');
    assert.equal(goArch('arm64'), 'arm64');
    assert.equal(goArch('ia32'), '386');
    assert.equal(node.status?.nodeInfo?.architecture, goArch(process.arch));
  });
});

describe('images', () => {
  const list = [
    image('a', 100, ['small:1']),
    image('b', 300, ['big:1', 'big:latest'], ['big@sha256:b']),
    image('c', 200, ['t1', 't2', 't3', 't4'], ['d1', 'd2']),
  ];

  it('lists the largest images first, digests before tags, at most five names each', () => {
    const node = emptyNode();
    images(50, () => list)(node);
    assert.deepEqual(node.status?.images, [
      { names: ['big@sha256:b', 'big:1', 'big:latest'], sizeBytes: 300 },
      { names: ['d1', 'd2', 't1', 't2', 't3'], sizeBytes: 200 },
      { names: ['small:1'], sizeBytes: 100 },
    ]);
  });

  it('keeps at most nodeStatusMaxImages, all of them at -1', () => {
    const node = emptyNode();
    images(1, () => list)(node);
    assert.equal(node.status?.images?.length, 1);
    images(-1, () => list)(node);
    assert.equal(node.status?.images?.length, 3);
  });

  it('empties the list when the runtime cannot list images', () => {
    const node: Node = { metadata: { name: 'n1' }, status: { images: [{ names: ['x'], sizeBytes: 1 }] } };
    assert.throws(
      () => images(50, () => new Error('unavailable'))(node),
      /error getting image list: unavailable/,
    );
    assert.equal(node.status?.images, undefined);
  });
});

describe('pressure conditions', () => {
  it('start False with their reasons and an event each, then move only the heartbeat', () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 0));
    const ev = events();
    const node = emptyNode();
    const setters = [
      memoryPressureCondition(
        () => clock.now(),
        () => false,
        ev.status,
      ),
      diskPressureCondition(
        () => clock.now(),
        () => false,
        ev.status,
      ),
      pidPressureCondition(
        () => clock.now(),
        () => false,
        ev.status,
      ),
    ];
    for (const s of setters) s(node);
    assert.deepEqual(node.status?.conditions, [
      {
        type: 'MemoryPressure',
        status: 'False',
        lastHeartbeatTime: '2026-01-01T00:00:00Z',
        lastTransitionTime: '2026-01-01T00:00:00Z',
        reason: 'KubeletHasSufficientMemory',
        message: 'kubelet has sufficient memory available',
      },
      {
        type: 'DiskPressure',
        status: 'False',
        lastHeartbeatTime: '2026-01-01T00:00:00Z',
        lastTransitionTime: '2026-01-01T00:00:00Z',
        reason: 'KubeletHasNoDiskPressure',
        message: 'kubelet has no disk pressure',
      },
      {
        type: 'PIDPressure',
        status: 'False',
        lastHeartbeatTime: '2026-01-01T00:00:00Z',
        lastTransitionTime: '2026-01-01T00:00:00Z',
        reason: 'KubeletHasSufficientPID',
        message: 'kubelet has sufficient PID available',
      },
    ]);
    assert.deepEqual(ev.list, [
      'Normal NodeHasSufficientMemory',
      'Normal NodeHasNoDiskPressure',
      'Normal NodeHasSufficientPID',
    ]);

    clock.advance(10_000);
    for (const s of setters) s(node);
    assert.equal(ev.list.length, 3);
    for (const c of node.status?.conditions ?? []) {
      assert.equal(c.lastHeartbeatTime, '2026-01-01T00:00:10Z');
      assert.equal(c.lastTransitionTime, '2026-01-01T00:00:00Z');
    }
  });

  it('turn True under pressure, with a transition and an event', () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const ev = events();
    let pressure = false;
    const node = emptyNode();
    const setter = memoryPressureCondition(
      () => clock.now(),
      () => pressure,
      ev.status,
    );
    setter(node);
    clock.advance(5000);
    pressure = true;
    setter(node);
    const c = node.status?.conditions?.[0];
    assert.equal(c?.status, 'True');
    assert.equal(c?.reason, 'KubeletHasInsufficientMemory');
    assert.equal(c?.message, 'kubelet has insufficient memory available');
    assert.equal(c?.lastTransitionTime, '2026-01-01T00:00:05Z');
    assert.deepEqual(ev.list, ['Normal NodeHasSufficientMemory', 'Normal NodeHasInsufficientMemory']);
  });
});

describe('readyCondition', () => {
  const capacity = { cpu: '2', memory: '1Gi', pods: '110', 'ephemeral-storage': '10Gi' };

  function setup(errors: { runtime?: string[]; network?: string[] } = {}) {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const ev = events();
    const state = { runtime: errors.runtime ?? [], network: errors.network ?? [] };
    const setter = readyCondition({
      nowMs: () => clock.now(),
      runtimeErrors: () => state.runtime,
      networkErrors: () => state.network,
      localStorageCapacityIsolation: true,
      recordEvent: ev.status,
    });
    const node: Node = { metadata: { name: 'n1' }, status: { capacity: { ...capacity } } };
    return { clock, ev, state, setter, node };
  }

  it('is True with KubeletReady when nothing is wrong, without an event the first time', () => {
    const { setter, node, ev } = setup();
    setter(node);
    assert.deepEqual(node.status?.conditions, [
      {
        type: 'Ready',
        status: 'True',
        lastHeartbeatTime: '2026-01-01T00:00:00Z',
        lastTransitionTime: '2026-01-01T00:00:00Z',
        reason: 'KubeletReady',
        message: 'kubelet is posting ready status',
      },
    ]);
    assert.deepEqual(ev.list, []);
  });

  it('is False with KubeletNotReady and upstream messages', () => {
    const cases: [string[], string[], string][] = [
      [['container runtime is down'], [], 'container runtime is down'],
      [
        [],
        [
          'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized',
        ],
        'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized',
      ],
      [
        ['PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s'],
        [],
        'PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s',
      ],
      [
        [
          'container runtime status check may not have completed yet',
          'PLEG is not healthy: pleg has yet to be successful',
        ],
        [],
        '[container runtime status check may not have completed yet, PLEG is not healthy: pleg has yet to be successful]',
      ],
    ];
    for (const [runtime, network, message] of cases) {
      const { setter, node } = setup({ runtime, network });
      setter(node);
      const c = node.status?.conditions?.[0];
      assert.equal(c?.status, 'False');
      assert.equal(c?.reason, 'KubeletNotReady');
      assert.equal(c?.message, message);
    }
  });

  it('is False while a required capacity is missing', () => {
    const { setter, node } = setup();
    delete node.status!.capacity!['ephemeral-storage'];
    delete node.status!.capacity!.pods;
    setter(node);
    assert.equal(
      node.status?.conditions?.[0]?.message,
      'missing node capacity for resources: pods, ephemeral-storage',
    );
  });

  it('moves the transition time and records NodeReady / NodeNotReady only when the status changes', () => {
    const { setter, node, ev, state, clock } = setup({ runtime: ['container runtime is down'] });
    setter(node);
    clock.advance(10_000);
    state.runtime = ['PLEG is not healthy: pleg has yet to be successful'];
    setter(node);
    let c = node.status?.conditions?.[0];
    assert.equal(c?.lastTransitionTime, '2026-01-01T00:00:00Z', 'a new reason is not a transition');
    assert.equal(c?.lastHeartbeatTime, '2026-01-01T00:00:10Z');
    assert.deepEqual(ev.list, []);

    clock.advance(10_000);
    state.runtime = [];
    setter(node);
    c = node.status?.conditions?.[0];
    assert.equal(c?.status, 'True');
    assert.equal(c?.lastTransitionTime, '2026-01-01T00:00:20Z');
    assert.deepEqual(ev.list, ['Normal NodeReady']);

    clock.advance(10_000);
    state.network = ['container runtime network not ready: <nil>'];
    setter(node);
    assert.deepEqual(ev.list, ['Normal NodeReady', 'Normal NodeNotReady']);
    assert.equal(node.status?.conditions?.[0]?.lastTransitionTime, '2026-01-01T00:00:30Z');
  });

  it('aggregates like utilerrors: duplicates dropped, brackets only for several', () => {
    assert.equal(aggregateMessage([]), undefined);
    assert.equal(aggregateMessage(['a']), 'a');
    assert.equal(aggregateMessage(['a', 'a']), 'a');
    assert.equal(aggregateMessage(['a', 'b', 'a']), '[a, b]');
  });
});

describe('schedulableEvents', () => {
  it('records NodeNotSchedulable on cordon and NodeSchedulable on uncordon', () => {
    const ev = events();
    const setter = schedulableEvents(ev.status);
    const node: Node = { metadata: { name: 'n1' }, spec: {} };
    setter(node);
    node.spec!.unschedulable = true;
    setter(node);
    setter(node);
    node.spec!.unschedulable = false;
    setter(node);
    assert.deepEqual(ev.list, ['Normal NodeNotSchedulable', 'Normal NodeSchedulable']);
  });
});
