/**
 * The device manager against fake plugin endpoints; registration goes through its real
 * kubelet.sock with the real Registration API.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Pod } from '../../../../src/api/core-v1.js';
import {
  DEVICE_MANAGER_CHECKPOINT,
  unmarshalCheckpoint,
} from '../../../../src/cm/devicemanager/checkpoint.js';
import { ENDPOINT_STOP_GRACE_PERIOD_MS, type Endpoint } from '../../../../src/cm/devicemanager/endpoint.js';
import type {
  AllocateResponse,
  Device,
} from '../../../../src/cm/devicemanager/generated/deviceplugin/v1beta1/deviceplugin.js';
import {
  DeviceManager,
  type DeviceManagerOptions,
  type EndpointFactory,
} from '../../../../src/cm/devicemanager/manager.js';
import { validateRegistration } from '../../../../src/cm/devicemanager/registration-server.js';
import { FakeClock } from '../../../../src/lib/clock.js';
import { TestDevicePlugin } from '../../../helpers/test-device-plugin.js';

const RES = 'example.com/dev';

class FakeEndpoint implements Endpoint {
  stoppedAtMs: number | undefined;
  allocations: string[][] = [];
  preferred: string[] | undefined;
  constructor(
    readonly resourceName: string,
    readonly handler: { onDevices: (r: string, d: Device[]) => void; onDisconnected: (e: Endpoint) => void },
  ) {}
  isStopped(): boolean {
    return this.stoppedAtMs !== undefined;
  }
  stopGracePeriodExpired(nowMs: number): boolean {
    return this.stoppedAtMs !== undefined && nowMs - this.stoppedAtMs > ENDPOINT_STOP_GRACE_PERIOD_MS;
  }
  async getPreferredAllocation(available: string[], _must: string[], size: number) {
    return { containerResponses: [{ deviceIDs: (this.preferred ?? available).slice(0, size) }] };
  }
  async allocate(ids: string[]): Promise<AllocateResponse> {
    this.allocations.push(ids);
    return {
      containerResponses: [
        {
          envs: { IDS: ids.join(',') },
          mounts: [{ containerPath: '/data', hostPath: `/host/${ids[0]}`, readOnly: true }],
          devices: [{ containerPath: '/dev/x', hostPath: '/dev/null', permissions: 'rw' }],
          annotations: { a: 'b' },
          cdiDevices: [],
        },
      ],
    };
  }
  async preStartContainer(): Promise<void> {}
  push(devices: { id: string; healthy?: boolean; numa?: number[] }[]): void {
    this.handler.onDevices(
      this.resourceName,
      devices.map((d) => ({
        ID: d.id,
        health: d.healthy === false ? 'Unhealthy' : 'Healthy',
        topology: d.numa ? { nodes: d.numa.map((ID) => ({ ID })) } : undefined,
      })),
    );
  }
  disconnect(now: number): void {
    this.stoppedAtMs = now;
    this.handler.onDisconnected(this);
  }
}

function pod(uid: string, count: number | string, initCount?: number): Pod {
  return {
    metadata: { name: uid, namespace: 'default', uid },
    spec: {
      ...(initCount !== undefined
        ? {
            initContainers: [
              { name: 'init', image: 'i', resources: { limits: { [RES]: String(initCount) } } },
            ],
          }
        : {}),
      containers: [{ name: 'main', image: 'i', resources: { limits: { [RES]: String(count) } } }],
    },
  } as Pod;
}

describe('device manager', () => {
  let dir: string;
  let clock: FakeClock;
  let endpoints: FakeEndpoint[];
  let manager: DeviceManager;
  let active: Pod[];
  let preferredAvailable: boolean;

  const factory: EndpointFactory = async (resourceName, _socket, handler) => {
    const e = new FakeEndpoint(resourceName, handler);
    endpoints.push(e);
    return {
      endpoint: e,
      preferredAllocationAvailable: preferredAvailable,
      preStartRequired: false,
      run: () => undefined,
    };
  };

  const newManager = async (topology?: DeviceManagerOptions['topology']): Promise<DeviceManager> => {
    const m = new DeviceManager({
      socketDir: dir,
      clock,
      endpointFactory: factory,
      ...(topology ? { topology } : {}),
    });
    await m.start(
      () => active,
      () => true,
    );
    return m;
  };

  const register = async (resourceName = RES): Promise<FakeEndpoint> => {
    const plugin = new TestDevicePlugin({ pluginDir: dir, resourceName, endpoint: 'p.sock', devices: [] });
    await plugin.register();
    const e = endpoints.at(-1);
    assert.ok(e);
    return e;
  };

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'devicemanager-'));
    clock = new FakeClock();
    endpoints = [];
    active = [];
    preferredAvailable = false;
    manager = await newManager();
  });

  afterEach(async () => {
    await manager.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test("topology hints from the devices' ListAndWatch topology, and allocation aligned to the chosen affinity", async () => {
    await manager.stop();
    let affinity: number[] | null = [1];
    manager = await newManager({
      numaNodes: [0, 1],
      affinity: { getAffinity: () => ({ numaNodeAffinity: affinity, preferred: true }) },
    });
    const e = await register();
    e.push([{ id: 'a', numa: [0] }, { id: 'b', numa: [1] }, { id: 'c', numa: [1] }, { id: 'd' }]);
    const one = pod('p1', 1);
    const main = one.spec.containers[0]!;
    const hint = (nodes: number[], preferred: boolean) => ({ numaNodeAffinity: nodes, preferred });
    assert.deepEqual(
      manager.getTopologyHints(one, main),
      new Map([[RES, [hint([0], true), hint([1], true), hint([0, 1], false)]]]),
    );
    assert.deepEqual(
      manager.getPodTopologyHints(pod('p1', 2)),
      new Map([[RES, [hint([1], true), hint([0, 1], false)]]]),
    );
    // Three devices have a node, so three fit only on both nodes; five do not fit at all.
    const three = pod('p1', 3);
    const five = pod('p1', 5);
    assert.deepEqual(
      manager.getTopologyHints(three, three.spec.containers[0]!),
      new Map([[RES, [hint([0, 1], true)]]]),
    );
    assert.deepEqual(manager.getTopologyHints(five, five.spec.containers[0]!), new Map([[RES, []]]));
    // Affinity to node 1: its device, not the lowest-named one.
    active.push(one);
    await manager.allocate(one, main);
    assert.deepEqual(e.allocations, [['b']]);
    // Two asked with affinity to node 0: its one device, then one from elsewhere.
    affinity = [0];
    const two = pod('p2', 2);
    active.push(two);
    await manager.allocate(two, two.spec.containers[0]!);
    assert.deepEqual(e.allocations.at(-1), ['a', 'c']);
    // A pod that asks for no device allocates nothing, at once.
    assert.equal(manager.allocate(pod('p3', 0), main), undefined);
  });

  test('a resource whose devices report no NUMA node has no preference', async () => {
    const e = await register();
    e.push([{ id: 'a' }, { id: 'b' }]);
    assert.deepEqual(
      manager.getTopologyHints(pod('p1', 1), pod('p1', 1).spec.containers[0]!),
      new Map([[RES, [{ numaNodeAffinity: null, preferred: true }]]]),
    );
  });

  test('registration is refused for an unknown version or a resource that is not extended', async () => {
    const plugin = new TestDevicePlugin({
      pluginDir: dir,
      resourceName: RES,
      endpoint: 'p.sock',
      devices: [],
    });
    await assert.rejects(
      plugin.register({ version: 'v1alpha' }),
      /requested API version "v1alpha" is not supported by kubelet. Supported versions are \["v1beta1"\]/,
    );
    await assert.rejects(plugin.register({ resourceName: 'cpu' }), /the ResourceName "cpu" is invalid/);
    assert.equal(
      validateRegistration({ version: 'v1beta1', resourceName: 'kubernetes.io/x', endpoint: 'a' }),
      'the ResourceName "kubernetes.io/x" is invalid',
    );
    assert.match(
      validateRegistration({ version: 'v1beta1', resourceName: RES, endpoint: '../x' }) ?? '',
      /not a file name/,
    );
    assert.equal(endpoints.length, 0);
  });

  test('healthy devices are capacity and allocatable; unhealthy ones only capacity', async () => {
    const e = await register();
    e.push([{ id: 'a' }, { id: 'b' }, { id: 'c', healthy: false }]);
    assert.deepEqual(manager.getCapacity(), {
      capacity: { [RES]: 3 },
      allocatable: { [RES]: 2 },
      removed: [],
    });
    e.push([{ id: 'a' }]);
    assert.deepEqual(manager.getCapacity(), {
      capacity: { [RES]: 1 },
      allocatable: { [RES]: 1 },
      removed: [],
    });
  });

  test('a plugin gone: allocatable 0 at once, the resource removed after the grace period', async () => {
    const e = await register();
    e.push([{ id: 'a' }, { id: 'b' }]);
    e.disconnect(clock.now());
    assert.deepEqual(manager.getCapacity(), {
      capacity: { [RES]: 2 },
      allocatable: { [RES]: 0 },
      removed: [],
    });
    clock.advance(ENDPOINT_STOP_GRACE_PERIOD_MS + 1);
    assert.deepEqual(manager.getCapacity(), { capacity: {}, allocatable: {}, removed: [RES] });
    assert.deepEqual(manager.getCapacity().removed, []);
  });

  test('allocation: env, mounts and devices for the container; too many is refused as upstream words it', async () => {
    const e = await register();
    e.push([{ id: 'a' }, { id: 'b' }]);
    const p1 = pod('p1', 1);
    active.push(p1);
    assert.equal(manager.podRequestsDevices(p1), true);
    await manager.allocatePod(p1);
    assert.deepEqual(e.allocations, [['a']]);
    const opts = await manager.getDeviceRunContainerOptions(p1, p1.spec.containers[0]!);
    assert.deepEqual(opts?.envs, [{ name: 'IDS', value: 'a' }]);
    assert.deepEqual(
      opts?.mounts.map((m) => [m.containerPath, m.hostPath, m.readonly]),
      [['/data', '/host/a', true]],
    );
    assert.deepEqual(opts?.devices, [{ containerPath: '/dev/x', hostPath: '/dev/null', permissions: 'rw' }]);
    assert.deepEqual(opts?.annotations, [{ name: 'a', value: 'b' }]);
    assert.deepEqual(manager.allocatedDeviceCounts(), new Map([[RES, 1]]));

    await assert.rejects(
      manager.allocatePod(pod('p3', 3)),
      /^DeviceAllocationError: requested number of devices unavailable for example.com\/dev. Requested: 3, Available: 1$/,
    );
    // The refused pod holds nothing.
    assert.deepEqual(manager.allocatedDeviceCounts(), new Map([[RES, 1]]));
    // Once p1 is gone its device is free again.
    active = [];
    const p2 = pod('p2', 2);
    active.push(p2);
    await manager.allocatePod(p2);
    assert.deepEqual(e.allocations.at(-1), ['a', 'b']);
  });

  test("the plugin's preferred allocation is taken when it offers one", async () => {
    preferredAvailable = true;
    const e = await register();
    e.push([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    e.preferred = ['c', 'b', 'a'];
    const p = pod('p', 1);
    active.push(p);
    await manager.allocatePod(p);
    assert.deepEqual(e.allocations, [['c']]);
  });

  test("an init container's devices are reused by the containers after it", async () => {
    const e = await register();
    e.push([{ id: 'a' }, { id: 'b' }]);
    const p = pod('p', 2, 1);
    active.push(p);
    await manager.allocatePod(p);
    assert.deepEqual(e.allocations, [['a'], ['a', 'b']]);
  });

  test('allocations and registered resources survive a restart through the checkpoint', async () => {
    const e = await register();
    e.push([{ id: 'a' }, { id: 'b' }]);
    const p = pod('p', 1);
    active.push(p);
    await manager.allocatePod(p);
    const text = await readFile(path.join(dir, DEVICE_MANAGER_CHECKPOINT), 'utf8');
    const data = unmarshalCheckpoint(text);
    assert.deepEqual(data.RegisteredDevices, { [RES]: ['a', 'b'] });
    assert.equal(data.PodDeviceEntries?.[0]?.PodUID, 'p');
    assert.deepEqual(data.PodDeviceEntries?.[0]?.DeviceIDs, { '-1': ['a'] });
    await manager.stop();

    manager = await newManager();
    // Zero devices until the plugin comes back; the allocation is kept and the container's options still there.
    assert.deepEqual(manager.getCapacity(), {
      capacity: { [RES]: 0 },
      allocatable: { [RES]: 0 },
      removed: [],
    });
    assert.deepEqual(manager.allocatedDeviceCounts(), new Map([[RES, 1]]));
    const opts = await manager.getDeviceRunContainerOptions(p, p.spec.containers[0]!);
    assert.deepEqual(opts?.envs, [{ name: 'IDS', value: 'a' }]);
    // Admitted again after the restart: it keeps its device, no new Allocate.
    await manager.allocatePod(p);
    const e2 = await register();
    e2.push([{ id: 'a' }, { id: 'b' }]);
    assert.deepEqual(e2.allocations, []);
    const other = pod('q', 1);
    active.push(other);
    await manager.allocatePod(other);
    assert.deepEqual(e2.allocations, [['b']]);
  });

  test('a checkpoint from before a restart with no plugin coming back is dropped after the grace period', async () => {
    const e = await register();
    e.push([{ id: 'a' }]);
    await manager.stop();
    manager = await newManager();
    clock.advance(ENDPOINT_STOP_GRACE_PERIOD_MS + 1);
    assert.deepEqual(manager.getCapacity(), { capacity: {}, allocatable: {}, removed: [RES] });
  });

  test('the pod resources view: devices per container and the allocatable ones', async () => {
    const e = await register();
    e.push([{ id: 'a' }, { id: 'b' }, { id: 'c', healthy: false }]);
    const p = pod('p', 1);
    active.push(p);
    await manager.allocatePod(p);
    assert.deepEqual(
      manager.getDevices('p', 'main'),
      new Map([[RES, new Map([['a', { id: 'a', numaNodes: [] }]])]]),
    );
    assert.deepEqual([...(manager.getAllocatableDevices().get(RES)?.keys() ?? [])], ['a', 'b']);
  });
  test('the plugin watcher handler validates and registers DevicePlugin-type plugins', async () => {
    const h = manager.pluginWatcherHandler();
    assert.throws(
      () => h.validatePlugin(RES, '/x.sock', ['v1alpha']),
      /is not among plugin supported versions/,
    );
    assert.throws(
      () => h.validatePlugin('cpu', '/x.sock', ['v1beta1']),
      /invalid name of device plugin socket/,
    );
    h.validatePlugin(RES, '/x.sock', ['v1beta1']);
    await h.registerPlugin(RES, '/x.sock', ['v1beta1']);
    endpoints.at(-1)!.push([{ id: 'a' }]);
    assert.deepEqual(manager.getCapacity().allocatable, { [RES]: 1 });
    h.deRegisterPlugin(RES);
    assert.deepEqual(manager.getCapacity(), {
      capacity: { [RES]: 1 },
      allocatable: { [RES]: 0 },
      removed: [],
    });
  });
});
