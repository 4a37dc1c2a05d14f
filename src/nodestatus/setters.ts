/**
 * The node status setters (upstream: pkg/kubelet/nodestatus/setters.go). Each is built from its
 * inputs and then fills one part of a Node in place. They are synchronous and pure apart from the
 * events they record: the kubelet gathers what they need (machine info, images, runtime state)
 * before running them, so the same inputs always give the same status.
 *
 * A setter that can only do part of its work throws; the caller logs it and runs the others, as
 * upstream's setNodeStatus does.
 */
import type { Image } from '../cri/types.js';
import { rfc3339Seconds } from '../api/rfc3339-seconds.js';
import { formatIP, ipFamily, isUnspecifiedIP } from './host-ip.js';
import type { MachineInfo } from './machine-info.js';
import {
  formatQuantity,
  milliQuantity,
  parseQuantity,
  quantityOf,
  subtractQuantity,
  valueOf,
  type ResourceQuantity,
} from '../api/quantity.js';
import { logger } from '../lib/log.js';
import type { ContainerImage, Node, NodeCondition, NodeStatus, NodeSystemInfo } from '../api/node.js';
import type { EventType } from '../api/core-v1.js';

const log = logger('kubelet');

export type Setter = (node: Node) => void;

/** Records an event about this node with upstream's message for a status change. */
export type RecordNodeStatusEvent = (type: EventType, reason: string) => void;
/** Records an event about this node with a message of its own. */
export type RecordNodeEvent = (type: EventType, reason: string, message: string) => void;

/** Upstream's MaxNamesPerImageInNodeStatus. */
export const MAX_NAMES_PER_IMAGE_IN_NODE_STATUS = 5;

/** Event reasons the node status code records (upstream: pkg/kubelet/events). */
export const NodeEventReason = {
  NodeReady: 'NodeReady',
  NodeNotReady: 'NodeNotReady',
  NodeSchedulable: 'NodeSchedulable',
  NodeNotSchedulable: 'NodeNotSchedulable',
  StartingKubelet: 'Starting',
  NodeRebooted: 'Rebooted',
  NodeHasSufficientMemory: 'NodeHasSufficientMemory',
  NodeHasInsufficientMemory: 'NodeHasInsufficientMemory',
  NodeHasNoDiskPressure: 'NodeHasNoDiskPressure',
  NodeHasDiskPressure: 'NodeHasDiskPressure',
  NodeHasSufficientPID: 'NodeHasSufficientPID',
  NodeHasInsufficientPID: 'NodeHasInsufficientPID',
} as const;

function status(node: Node): NodeStatus {
  node.status ??= {};
  return node.status;
}

function nodeInfo(node: Node): NodeSystemInfo {
  const s = status(node);
  s.nodeInfo ??= {
    machineID: '',
    systemUUID: '',
    bootID: '',
    kernelVersion: '',
    osImage: '',
    containerRuntimeVersion: '',
    kubeletVersion: '',
    kubeProxyVersion: '',
    operatingSystem: '',
    architecture: '',
  };
  return s.nodeInfo;
}

/**
 * utilerrors.NewAggregate(...).Error(): one message as it is, several deduplicated in brackets.
 * Nested aggregates are flattened first, so callers pass every message in one list.
 */
export function aggregateMessage(messages: readonly string[]): string | undefined {
  const seen: string[] = [];
  for (const m of messages) if (!seen.includes(m)) seen.push(m);
  if (seen.length === 0) return undefined;
  if (seen.length === 1) return seen[0];
  return `[${seen.join(', ')}]`;
}

// ---- addresses -------------------------------------------------------------------------------------

export interface NodeAddressInputs {
  /** --node-ip: zero, one or two (dual-stack) addresses, as given. */
  nodeIPs: readonly string[];
  hostname: string;
  /** Why an address cannot be the node's (upstream's validateNodeIP), or undefined. */
  validateNodeIP: (ip: string) => string | undefined;
  /**
   * Steps 3 and 4 of upstream's search, run beforehand: an address the node's name resolves to, else
   * the default route's; or why there is none.
   */
  discoveredIP: () => { ip: string } | { error: string };
}

/** Upstream's NodeAddress without a cloud provider: InternalIP (one per family given) and Hostname. */
export function nodeAddress(inputs: NodeAddressInputs): Setter {
  const [nodeIP, secondaryNodeIP] = inputs.nodeIPs;
  const nodeIPSpecified = nodeIP !== undefined && nodeIP !== '' && !isUnspecifiedIP(nodeIP);
  const secondarySpecified =
    secondaryNodeIP !== undefined && secondaryNodeIP !== '' && !isUnspecifiedIP(secondaryNodeIP);
  return (node) => {
    if (nodeIPSpecified) {
      const why = inputs.validateNodeIP(nodeIP);
      if (why) throw new Error(`failed to validate nodeIP: ${why}`);
    }
    if (secondarySpecified) {
      const why = inputs.validateNodeIP(secondaryNodeIP);
      if (why) throw new Error(`failed to validate secondaryNodeIP: ${why}`);
    }
    if (nodeIPSpecified && secondarySpecified) {
      status(node).addresses = [
        { type: 'InternalIP', address: formatIP(nodeIP) },
        { type: 'InternalIP', address: formatIP(secondaryNodeIP) },
        { type: 'Hostname', address: inputs.hostname },
      ];
      return;
    }
    let ip: string;
    if (nodeIPSpecified) ip = nodeIP;
    else if (isIPText(inputs.hostname)) ip = inputs.hostname;
    else {
      const found = inputs.discoveredIP();
      if ('error' in found) {
        throw new Error(`can't get ip address of node ${node.metadata.name ?? ''}. error: ${found.error}`);
      }
      ip = found.ip;
    }
    status(node).addresses = [
      { type: 'InternalIP', address: formatIP(ip) },
      { type: 'Hostname', address: inputs.hostname },
    ];
  };
}

function isIPText(text: string): boolean {
  return ipFamily(text) !== undefined;
}

// ---- capacity and allocatable -----------------------------------------------------------------------

export interface MachineInfoInputs {
  nodeName: string;
  maxPods: number;
  /** 0: no per-core limit. */
  podsPerCore: number;
  /** The cached machine info, or why it could not be read. */
  machineInfo: () => MachineInfo | Error;
  /** The root dir's filesystem size, for ephemeral-storage; undefined when unknown. */
  ephemeralStorageCapacityBytes: () => number | undefined;
  /** What is kept from pods per resource (upstream's GetNodeAllocatableReservation), given the capacity. */
  allocatableReservation: (
    capacity: Readonly<Record<string, ResourceQuantity>>,
  ) => Record<string, ResourceQuantity>;
  recordEvent: RecordNodeEvent;
  /** The device plugins' resources (upstream: devicePluginResourceCapacityFunc); absent, none. */
  devicePluginCapacity?: () => DevicePluginResources;
}

/** What the device manager reports for node status (its GetCapacity). */
export interface DevicePluginResources {
  /** Devices per resource, healthy and unhealthy. */
  capacity: Readonly<Record<string, number>>;
  /** Healthy devices per resource. */
  allocatable: Readonly<Record<string, number>>;
  /** Resources whose plugin is gone for good: their capacity becomes 0, not absent. */
  removed: readonly string[];
}

/**
 * node with the device plugins' resources laid over its capacity and allocatable, as the MachineInfo
 * setter would lay them (for a node that is not re-read from the API: standalone mode's).
 */
export function withDevicePluginResources(node: Node, resources: DevicePluginResources): Node {
  const capacity: Record<string, string> = { ...(node.status?.capacity ?? {}) };
  const allocatable: Record<string, string> = { ...(node.status?.allocatable ?? {}) };
  for (const [k, n] of Object.entries(resources.capacity)) capacity[k] = String(n);
  for (const k of resources.removed) {
    capacity[k] = '0';
    allocatable[k] = '0';
  }
  for (const k of Object.keys(resources.capacity)) allocatable[k] = String(resources.allocatable[k] ?? 0);
  return { ...node, status: { ...node.status, capacity, allocatable } };
}

/** The resources a machine has, as upstream's CapacityFromMachineInfo reports them. */
export function capacityFromMachineInfo(info: MachineInfo): Record<string, ResourceQuantity> {
  const c: Record<string, ResourceQuantity> = {
    cpu: milliQuantity(info.numCores * 1000),
    memory: quantityOf(info.memoryCapacityBytes, 'BinarySI'),
  };
  for (const pool of info.hugePages) {
    const pageSizeBytes = pool.pageSizeKiB * 1024;
    c[hugePageResourceName(pageSizeBytes)] = quantityOf(
      BigInt(pageSizeBytes) * BigInt(pool.numPages),
      'BinarySI',
    );
  }
  return c;
}

/** `hugepages-2Mi` for a 2 MiB page. */
export function hugePageResourceName(pageSizeBytes: number): string {
  return `hugepages-${formatQuantity(quantityOf(pageSizeBytes, 'BinarySI'))}`;
}

function isHugePageResourceName(name: string): boolean {
  return name.startsWith('hugepages-');
}

/** Extended resources: a domain-qualified name outside kubernetes.io (upstream's IsExtendedResourceName). */
function isExtendedResourceName(name: string): boolean {
  if (name.startsWith('requests.')) return false;
  if (!name.includes('/')) return false;
  const domain = name.slice(0, name.indexOf('/'));
  return !(domain === 'kubernetes.io' || domain.endsWith('.kubernetes.io'));
}

function parseList(list: Record<string, string> | undefined): Record<string, ResourceQuantity> {
  const out: Record<string, ResourceQuantity> = {};
  for (const [k, v] of Object.entries(list ?? {})) {
    try {
      out[k] = parseQuantity(String(v));
    } catch {
      // A value the server holds but we cannot read is left as the server has it.
    }
  }
  return out;
}

/** Upstream's MachineInfo setter: nodeInfo IDs, capacity and allocatable. */
export function machineInfo(inputs: MachineInfoInputs): Setter {
  return (node) => {
    const s = status(node);
    const existing = s.capacity ?? {};
    const capacity = parseList(existing);
    const info = inputs.machineInfo();
    let failure: Error | undefined;
    let devicePlugins: DevicePluginResources | undefined;
    if (info instanceof Error) {
      capacity.cpu = milliQuantity(0);
      capacity.memory = quantityOf(0, 'BinarySI');
      capacity.pods = quantityOf(inputs.maxPods, 'DecimalSI');
      failure = info;
    } else {
      const ni = nodeInfo(node);
      ni.machineID = info.machineID;
      ni.systemUUID = info.systemUUID;
      Object.assign(capacity, capacityFromMachineInfo(info));
      const pods =
        inputs.podsPerCore > 0
          ? Math.min(info.numCores * inputs.podsPerCore, inputs.maxPods)
          : inputs.maxPods;
      capacity.pods = quantityOf(pods, 'DecimalSI');
      if (ni.bootID !== '' && ni.bootID !== info.bootID) {
        inputs.recordEvent(
          'Warning',
          NodeEventReason.NodeRebooted,
          `Node ${inputs.nodeName} has been rebooted, boot id: ${info.bootID}`,
        );
      }
      ni.bootID = info.bootID;
      const storage = inputs.ephemeralStorageCapacityBytes();
      if (storage !== undefined) capacity['ephemeral-storage'] = quantityOf(storage, 'BinarySI');
      devicePlugins = inputs.devicePluginCapacity?.();
      for (const [k, n] of Object.entries(devicePlugins?.capacity ?? {})) {
        const old = capacity[k];
        if (!old || valueOf(old) !== BigInt(n))
          log.v(2, 'Updated capacity for device plugin', { plugin: k, capacity: n });
        capacity[k] = quantityOf(n, 'DecimalSI');
      }
      // Zero rather than absent: the resource stays known as a device plugin's, not a cluster-level one.
      for (const k of devicePlugins?.removed ?? []) {
        log.v(2, 'Set capacity for removed resource to 0 on device removal', { device: k });
        capacity[k] = quantityOf(0, 'DecimalSI');
      }
    }

    const capacityText: Record<string, string> = { ...existing };
    for (const [k, q] of Object.entries(capacity)) capacityText[k] = formatQuantity(q);
    s.capacity = capacityText;

    const allocatable: Record<string, string> = { ...(s.allocatable ?? {}) };
    // Extended resources gone from capacity leave allocatable too.
    for (const k of Object.keys(allocatable)) {
      if (!(k in capacityText) && isExtendedResourceName(k)) delete allocatable[k];
    }
    const reservation = inputs.allocatableReservation(capacity);
    const allocatableQ: Record<string, ResourceQuantity> = {};
    for (const [k, q] of Object.entries(capacity)) {
      let value = q;
      const r = reservation[k];
      if (r) value = subtractQuantity(value, r);
      if (value.nano < 0n) value = { nano: 0n, format: value.format };
      allocatableQ[k] = value;
    }
    // Memory set aside as huge pages is not there for pods' ordinary use.
    for (const [k, q] of Object.entries(capacity)) {
      if (!isHugePageResourceName(k) || !allocatableQ.memory) continue;
      let memory = subtractQuantity(allocatableQ.memory, q);
      if (memory.nano < 0n) memory = { nano: 0n, format: memory.format };
      allocatableQ.memory = memory;
    }
    for (const [k, n] of Object.entries(devicePlugins?.allocatable ?? {})) {
      const old = allocatableQ[k];
      if (!old || valueOf(old) !== BigInt(n)) log.v(2, 'Updated allocatable', { device: k, allocatable: n });
      allocatableQ[k] = quantityOf(n, 'DecimalSI');
    }
    for (const [k, q] of Object.entries(allocatableQ)) allocatable[k] = formatQuantity(q);
    s.allocatable = allocatable;
    if (failure) throw new Error(`Error getting machine info: ${failure.message}`);
  };
}

/**
 * Upstream's hardEvictionReservation: the memory.available and nodefs.available hard thresholds as
 * amounts of memory and ephemeral-storage. Percentages are float32, as upstream parses them, so a
 * 10% threshold of a disk comes out to the same byte.
 */
export function hardEvictionReservation(
  evictionHard: Readonly<Record<string, string>>,
  capacity: Readonly<Record<string, ResourceQuantity>>,
): Record<string, ResourceQuantity> {
  const out: Record<string, ResourceQuantity> = {};
  const signals: Record<string, string> = {
    'memory.available': 'memory',
    'nodefs.available': 'ephemeral-storage',
  };
  for (const [signal, resource] of Object.entries(signals)) {
    const value = evictionHard[signal];
    if (value === undefined) continue;
    const text = value.trim();
    if (text.endsWith('%')) {
      if (text === '0%' || text === '100%') continue;
      const percentage = Math.fround(Math.fround(Number(text.slice(0, -1))) / 100);
      if (!(percentage > 0 && percentage <= 1)) continue;
      const cap = capacity[resource];
      const capUnits = cap ? Number((cap.nano + 999_999_999n) / 1_000_000_000n) : 0;
      out[resource] = quantityOf(Math.trunc(capUnits * percentage), 'BinarySI');
    } else {
      try {
        const q = parseQuantity(text);
        if (q.nano > 0n) out[resource] = q;
      } catch {
        // Validation at start rejects these; an unreadable threshold reserves nothing.
      }
    }
  }
  return out;
}

/**
 * Upstream's GetNodeAllocatableReservation: systemReserved + kubeReserved + the hard eviction
 * thresholds, for each resource the node has.
 */
export function nodeAllocatableReservation(
  capacity: Readonly<Record<string, ResourceQuantity>>,
  reserved: {
    systemReserved: Readonly<Record<string, string>>;
    kubeReserved: Readonly<Record<string, string>>;
    evictionHard: Readonly<Record<string, string>>;
  },
): Record<string, ResourceQuantity> {
  const eviction = hardEvictionReservation(reserved.evictionHard, capacity);
  const out: Record<string, ResourceQuantity> = {};
  for (const k of Object.keys(capacity)) {
    let nano = 0n;
    for (const list of [reserved.systemReserved, reserved.kubeReserved]) {
      const v = list[k];
      if (v === undefined) continue;
      try {
        nano += parseQuantity(v).nano;
      } catch {
        // As above: validated at start.
      }
    }
    nano += eviction[k]?.nano ?? 0n;
    if (nano !== 0n) out[k] = { nano, format: 'DecimalSI' };
  }
  return out;
}

// ---- versions, endpoints, images, OS --------------------------------------------------------------

export interface VersionInfoInputs {
  /** undefined when the machine info could not be read (upstream: VersionInfo errors). */
  kernelVersion: string | undefined;
  osImage: string | undefined;
  /** The CRI runtimeName: `containerd`. */
  runtimeType: string;
  /** The CRI runtimeVersion, or undefined when the runtime did not answer (shown as Unknown). */
  runtimeVersion: () => string | undefined;
  kubeletVersion: string;
}

/** Upstream's VersionInfo; kubeProxyVersion is still the kubelet's in 1.30 (DisableNodeKubeProxyVersion is off). */
export function versionInfo(inputs: VersionInfoInputs): Setter {
  return (node) => {
    if (inputs.kernelVersion === undefined || inputs.osImage === undefined) {
      throw new Error('error getting version info: machine info is not available');
    }
    const ni = nodeInfo(node);
    ni.kernelVersion = inputs.kernelVersion;
    ni.osImage = inputs.osImage;
    ni.containerRuntimeVersion = `${inputs.runtimeType}://${inputs.runtimeVersion() ?? 'Unknown'}`;
    ni.kubeletVersion = inputs.kubeletVersion;
    ni.kubeProxyVersion = inputs.kubeletVersion;
  };
}

export function daemonEndpoints(kubeletPort: number): Setter {
  return (node) => {
    status(node).daemonEndpoints = { kubeletEndpoint: { Port: kubeletPort } };
  };
}

/**
 * Upstream's Images: the largest maxImages images (-1: all), each named by its digests then its tags,
 * at most five names. An image list that cannot be read empties the field, as upstream.
 */
export function images(maxImages: number, imageList: () => readonly Image[] | Error): Setter {
  return (node) => {
    const list = imageList();
    if (list instanceof Error) {
      delete status(node).images;
      throw new Error(`error getting image list: ${list.message}`);
    }
    const sorted = sortImagesBySize(list);
    const kept = maxImages > -1 && maxImages < sorted.length ? sorted.slice(0, maxImages) : sorted;
    const out: ContainerImage[] = kept.map((image) => ({
      names: [...image.repoDigests, ...image.repoTags].slice(0, MAX_NAMES_PER_IMAGE_IN_NODE_STATUS),
      sizeBytes: image.size,
    }));
    if (out.length === 0) delete status(node).images;
    else status(node).images = out;
  };
}

/** Largest first (upstream's image manager keeps its list so). */
export function sortImagesBySize(list: readonly Image[]): Image[] {
  return [...list].sort((a, b) => b.size - a.size);
}

/** Go's GOARCH for Node's process.arch. */
export function goArch(nodeArch: string = process.arch): string {
  const map: Record<string, string> = {
    x64: 'amd64',
    ia32: '386',
    arm64: 'arm64',
    arm: 'arm',
    ppc64: 'ppc64le',
    s390x: 's390x',
    riscv64: 'riscv64',
    loong64: 'loong64',
    mips: 'mips',
    mipsel: 'mipsle',
  };
  return map[nodeArch] ?? nodeArch;
}

/** Go's GOOS for Node's process.platform. */
export function goOS(platform: string = process.platform): string {
  return platform === 'win32' ? 'windows' : platform;
}

/** Upstream's GoRuntime: the OS and architecture the kubelet runs on. */
export function goRuntime(operatingSystem = goOS(), architecture = goArch()): Setter {
  return (node) => {
    const ni = nodeInfo(node);
    ni.operatingSystem = operatingSystem;
    ni.architecture = architecture;
  };
}

// ---- conditions ------------------------------------------------------------------------------------

interface PressureSpec {
  type: string;
  trueReason: string;
  trueMessage: string;
  trueEvent: string;
  falseReason: string;
  falseMessage: string;
  falseEvent: string;
}

const MEMORY_PRESSURE: PressureSpec = {
  type: 'MemoryPressure',
  trueReason: 'KubeletHasInsufficientMemory',
  trueMessage: 'kubelet has insufficient memory available',
  trueEvent: NodeEventReason.NodeHasInsufficientMemory,
  falseReason: 'KubeletHasSufficientMemory',
  falseMessage: 'kubelet has sufficient memory available',
  falseEvent: NodeEventReason.NodeHasSufficientMemory,
};

const DISK_PRESSURE: PressureSpec = {
  type: 'DiskPressure',
  trueReason: 'KubeletHasDiskPressure',
  trueMessage: 'kubelet has disk pressure',
  trueEvent: NodeEventReason.NodeHasDiskPressure,
  falseReason: 'KubeletHasNoDiskPressure',
  falseMessage: 'kubelet has no disk pressure',
  falseEvent: NodeEventReason.NodeHasNoDiskPressure,
};

const PID_PRESSURE: PressureSpec = {
  type: 'PIDPressure',
  trueReason: 'KubeletHasInsufficientPID',
  trueMessage: 'kubelet has insufficient PID available',
  trueEvent: NodeEventReason.NodeHasInsufficientPID,
  falseReason: 'KubeletHasSufficientPID',
  falseMessage: 'kubelet has sufficient PID available',
  falseEvent: NodeEventReason.NodeHasSufficientPID,
};

/**
 * The three pressure conditions: the heartbeat always moves; status, reason, message and the
 * transition time only when the pressure changes (a new condition starts Unknown, so it transitions
 * and records its event at once).
 */
function pressureCondition(
  spec: PressureSpec,
  nowMs: () => number,
  underPressure: () => boolean,
  recordEvent: RecordNodeStatusEvent,
): Setter {
  return (node) => {
    const s = status(node);
    const now = rfc3339Seconds(nowMs());
    s.conditions ??= [];
    let condition = s.conditions.find((c) => c.type === spec.type);
    if (!condition) {
      condition = { type: spec.type, status: 'Unknown' };
      s.conditions.push(condition);
    }
    condition.lastHeartbeatTime = now;
    if (underPressure()) {
      if (condition.status !== 'True') {
        condition.status = 'True';
        condition.reason = spec.trueReason;
        condition.message = spec.trueMessage;
        condition.lastTransitionTime = now;
        recordEvent('Normal', spec.trueEvent);
      }
    } else if (condition.status !== 'False') {
      condition.status = 'False';
      condition.reason = spec.falseReason;
      condition.message = spec.falseMessage;
      condition.lastTransitionTime = now;
      recordEvent('Normal', spec.falseEvent);
    }
    s.conditions[s.conditions.indexOf(condition)] = orderCondition(condition);
  };
}

export function memoryPressureCondition(
  nowMs: () => number,
  underPressure: () => boolean,
  recordEvent: RecordNodeStatusEvent,
): Setter {
  return pressureCondition(MEMORY_PRESSURE, nowMs, underPressure, recordEvent);
}

export function diskPressureCondition(
  nowMs: () => number,
  underPressure: () => boolean,
  recordEvent: RecordNodeStatusEvent,
): Setter {
  return pressureCondition(DISK_PRESSURE, nowMs, underPressure, recordEvent);
}

export function pidPressureCondition(
  nowMs: () => number,
  underPressure: () => boolean,
  recordEvent: RecordNodeStatusEvent,
): Setter {
  return pressureCondition(PID_PRESSURE, nowMs, underPressure, recordEvent);
}

export interface ReadyConditionInputs {
  nowMs: () => number;
  /** The runtime's errors, flattened: not yet checked or down, failing health checks (PLEG), not ready. */
  runtimeErrors: () => string[];
  /** The runtime's network not being ready. */
  networkErrors: () => string[];
  /** Errors of other parts (storage, shutdown manager), if any. */
  otherErrors?: () => string[];
  /** ephemeral-storage is required too unless local storage capacity isolation is off. */
  localStorageCapacityIsolation: boolean;
  recordEvent: RecordNodeStatusEvent;
}

/**
 * Upstream's ReadyCondition: True with KubeletReady, or False with KubeletNotReady and every reason
 * in one message. It stays the last condition, and its transition time moves only with its status;
 * the NodeReady and NodeNotReady events mark a change of status, never the first report.
 */
export function readyCondition(inputs: ReadyConditionInputs): Setter {
  return (node) => {
    const s = status(node);
    const now = rfc3339Seconds(inputs.nowMs());
    const errors = [...inputs.runtimeErrors(), ...inputs.networkErrors(), ...(inputs.otherErrors?.() ?? [])];
    const required = ['cpu', 'memory', 'pods'];
    if (inputs.localStorageCapacityIsolation) required.push('ephemeral-storage');
    const missing = required.filter((r) => !(r in (s.capacity ?? {})));
    if (missing.length > 0) errors.push(`missing node capacity for resources: ${missing.join(', ')}`);
    const message = aggregateMessage(errors);
    const next: NodeCondition =
      message === undefined
        ? {
            type: 'Ready',
            status: 'True',
            lastHeartbeatTime: now,
            reason: 'KubeletReady',
            message: 'kubelet is posting ready status',
          }
        : { type: 'Ready', status: 'False', lastHeartbeatTime: now, reason: 'KubeletNotReady', message };

    s.conditions ??= [];
    const i = s.conditions.findIndex((c) => c.type === 'Ready');
    let transitioned = false;
    if (i >= 0) {
      const old = s.conditions[i]!;
      if (old.status === next.status) next.lastTransitionTime = old.lastTransitionTime;
      else {
        next.lastTransitionTime = now;
        transitioned = true;
      }
      s.conditions[i] = orderCondition(next);
    } else {
      next.lastTransitionTime = now;
      s.conditions.push(orderCondition(next));
    }
    if (transitioned) {
      inputs.recordEvent(
        'Normal',
        next.status === 'True' ? NodeEventReason.NodeReady : NodeEventReason.NodeNotReady,
      );
    }
  };
}

/** The API's field order, so conditions read the same as the server's. */
function orderCondition(c: NodeCondition): NodeCondition {
  const out: NodeCondition = { type: c.type, status: c.status };
  if (c.lastHeartbeatTime !== undefined) out.lastHeartbeatTime = c.lastHeartbeatTime;
  if (c.lastTransitionTime !== undefined) out.lastTransitionTime = c.lastTransitionTime;
  if (c.reason !== undefined) out.reason = c.reason;
  if (c.message !== undefined) out.message = c.message;
  return out;
}

/**
 * Upstream's recordNodeSchedulableEvent: an event each time spec.unschedulable changes (cordon,
 * uncordon), the first one when it differs from schedulable.
 */
export function schedulableEvents(recordEvent: RecordNodeStatusEvent): Setter {
  let lastUnschedulable = false;
  return (node) => {
    const unschedulable = node.spec?.unschedulable === true;
    if (unschedulable === lastUnschedulable) return;
    recordEvent(
      'Normal',
      unschedulable ? NodeEventReason.NodeNotSchedulable : NodeEventReason.NodeSchedulable,
    );
    lastUnschedulable = unschedulable;
  };
}
