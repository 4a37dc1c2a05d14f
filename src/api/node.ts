/**
 * The core/v1 Node and coordination.k8s.io/v1 Lease, as far as the kubelet writes or reads them, with
 * the API's own field names. Like src/api/core-v1.ts these are open: fields the kubelet does not know
 * are kept on objects read from the server and sent back untouched.
 */
import type { ConditionStatus, ObjectMeta, Quantity } from './core-v1.js';

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
  timeAdded?: string;
}

export interface NodeSpec {
  podCIDR?: string;
  podCIDRs?: string[];
  providerID?: string;
  unschedulable?: boolean;
  taints?: Taint[];
  [field: string]: unknown;
}

export type NodeConditionType = 'Ready' | 'MemoryPressure' | 'DiskPressure' | 'PIDPressure' | string;

export interface NodeCondition {
  type: NodeConditionType;
  status: ConditionStatus;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export type NodeAddressType = 'Hostname' | 'InternalIP' | 'ExternalIP' | 'InternalDNS' | 'ExternalDNS';

export interface NodeAddress {
  type: NodeAddressType;
  address: string;
}

export interface NodeSystemInfo {
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  containerRuntimeVersion: string;
  kubeletVersion: string;
  kubeProxyVersion: string;
  operatingSystem: string;
  architecture: string;
}

export interface ContainerImage {
  names?: string[];
  sizeBytes?: number;
}

/** Resource name → quantity text, as the API serializes a ResourceList. */
export type ResourceList = Record<string, string>;

export interface NodeStatus {
  capacity?: ResourceList;
  allocatable?: ResourceList;
  conditions?: NodeCondition[];
  addresses?: NodeAddress[];
  daemonEndpoints?: { kubeletEndpoint?: { Port: number } };
  nodeInfo?: NodeSystemInfo;
  images?: ContainerImage[];
  volumesInUse?: string[];
  [field: string]: unknown;
}

export interface Node {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: NodeSpec;
  status?: NodeStatus;
}

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  /** MicroTime: RFC 3339 with microseconds. */
  renewTime?: string;
  leaseTransitions?: number;
  [field: string]: unknown;
}

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
