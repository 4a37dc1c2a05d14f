/**
 * The core/v1 Node and coordination.k8s.io/v1 Lease, from the `kubernetes-types` package (see
 * core-v1.ts for why and how they are wrapped): the metadata is required, a few enums are closed,
 * and a ResourceList is quantity text, as the API serializes it.
 */
import os from 'node:os';
import type * as coordination from 'kubernetes-types/coordination/v1.js';
import type * as v1 from 'kubernetes-types/core/v1.js';
import type { ConditionStatus, ObjectMeta, ObjectReference, Quantity } from './core-v1.js';

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
export type Taint = Omit<v1.Taint, 'effect'> & { effect: TaintEffect };
export type NodeSpec = Omit<v1.NodeSpec, 'taints'> & { taints?: Taint[] };

export type NodeConditionType = 'Ready' | 'MemoryPressure' | 'DiskPressure' | 'PIDPressure' | string;
export type NodeCondition = Omit<v1.NodeCondition, 'status'> & { status: ConditionStatus };

export type NodeAddressType = 'Hostname' | 'InternalIP' | 'ExternalIP' | 'InternalDNS' | 'ExternalDNS';
export type NodeAddress = Omit<v1.NodeAddress, 'type'> & { type: NodeAddressType };
export type NodeSystemInfo = v1.NodeSystemInfo;
export type ContainerImage = v1.ContainerImage;

/** Resource name → quantity text, as the API serializes a ResourceList. */
export type ResourceList = Record<string, string>;

export type NodeStatus = Omit<v1.NodeStatus, 'conditions' | 'addresses'> & {
  conditions?: NodeCondition[];
  addresses?: NodeAddress[];
};

export interface Node {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: NodeSpec;
  status?: NodeStatus;
}

export type LeaseSpec = coordination.LeaseSpec;

export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: LeaseSpec;
}

/** What the node offers pods: the defaults for containers' downward-API limits when they set none. */
export interface NodeAllocatable {
  cpu: Quantity;
  memory: Quantity;
  'ephemeral-storage'?: Quantity;
}

/**
 * The machine's own CPUs and memory, for where no Node gives its allocatable (standalone, or before
 * the Node is read). os.cpus() and os.totalmem() read /proc synchronously: call it once, when a
 * manager is made, never per container.
 */
export function machineAllocatable(): NodeAllocatable {
  return { cpu: String(os.cpus().length), memory: String(os.totalmem()) };
}

/** upstream's kl.nodeRef: the node's UID in events is its name, not the API object's UID. */
export function nodeRef(nodeName: string): ObjectReference {
  return { kind: 'Node', name: nodeName, uid: nodeName, namespace: '' };
}
