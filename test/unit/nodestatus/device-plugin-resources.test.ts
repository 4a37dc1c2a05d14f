import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Node } from '../../../src/api/node.js';
import type { MachineInfo } from '../../../src/nodestatus/machine-info.js';
import {
  machineInfo,
  withDevicePluginResources,
  type DevicePluginResources,
} from '../../../src/nodestatus/setters.js';

const machine: MachineInfo = {
  numCores: 2,
  memoryCapacityBytes: 1024 * 1024 * 1024,
  hugePages: [],
  machineID: 'm',
  systemUUID: 'u',
  bootID: 'b',
  kernelVersion: 'k',
  osImage: 'o',
} as unknown as MachineInfo;

function run(node: Node, devices: DevicePluginResources): Node {
  machineInfo({
    nodeName: 'n',
    maxPods: 110,
    podsPerCore: 0,
    machineInfo: () => machine,
    ephemeralStorageCapacityBytes: () => undefined,
    allocatableReservation: () => ({}),
    recordEvent: () => undefined,
    devicePluginCapacity: () => devices,
  })(node);
  return node;
}

describe('device plugin resources in node status', () => {
  it('capacity counts every device, allocatable the healthy ones; a removed resource goes to 0', () => {
    const node: Node = { metadata: { name: 'n' }, status: {} };
    run(node, { capacity: { 'example.com/dev': 3 }, allocatable: { 'example.com/dev': 2 }, removed: [] });
    assert.equal(node.status?.capacity?.['example.com/dev'], '3');
    assert.equal(node.status?.allocatable?.['example.com/dev'], '2');
    assert.equal(node.status?.capacity?.cpu, '2');
    run(node, { capacity: {}, allocatable: {}, removed: ['example.com/dev'] });
    assert.equal(node.status?.capacity?.['example.com/dev'], '0');
    assert.equal(node.status?.allocatable?.['example.com/dev'], '0');
  });

  it('standalone: laid over the initial node without touching it', () => {
    const initial: Node = {
      metadata: { name: 'n' },
      status: { capacity: { cpu: '2' }, allocatable: { cpu: '2' } },
    };
    const node = withDevicePluginResources(initial, {
      capacity: { 'example.com/dev': 2 },
      allocatable: { 'example.com/dev': 1 },
      removed: ['example.com/old'],
    });
    assert.deepEqual(node.status?.capacity, { cpu: '2', 'example.com/dev': '2', 'example.com/old': '0' });
    assert.deepEqual(node.status?.allocatable, { cpu: '2', 'example.com/dev': '1', 'example.com/old': '0' });
    assert.deepEqual(initial.status?.capacity, { cpu: '2' });
  });
});
