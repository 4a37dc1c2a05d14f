/**
 * The device plugin manager (upstream: devicemanager.ManagerImpl, v1.30). It serves the
 * Registration service, keeps each registered plugin's devices from its ListAndWatch stream,
 * reports them as the node's capacity and allocatable, picks devices for containers at admission
 * and asks the plugin to Allocate them, hands the answer (env, mounts, device nodes, annotations) to
 * the container's config, and checkpoints who holds what so that a restart keeps it.
 *
 * Selection: devices an init container released first; then, when the topology manager chose a NUMA
 * affinity, the devices on its nodes (the plugin's preference among them first); then the plugin's
 * GetPreferredAllocation (when it offers one), then devices elsewhere, then those of no node.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Container, Pod } from '../../api/core-v1.js';
import { podLimits } from '../../api/pod-resources.js';
import { parseQuantity, valueOf } from '../../api/quantity.js';
import type { Clock } from '../../lib/clock.js';
import { errorMessage, KubeletError } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import {
  NODE_WITHOUT_TOPOLOGY,
  readCheckpointFile,
  writeCheckpointFile,
  type CheckpointData,
} from './checkpoint.js';
import { PluginEndpoint, StoppedEndpoint, type Endpoint } from './endpoint.js';
import type { Device, RegisterRequest } from './generated/deviceplugin/v1beta1/deviceplugin.js';
import { PodDevices, type DevicesPerNuma, type DeviceRunContainerOptions } from './pod-devices.js';
import { isExtendedResourceName, RegistrationServer, SUPPORTED_VERSIONS } from './registration-server.js';
import type { HintProvider, TopologyAffinityStore, TopologyHints } from '../topologymanager/topology-hint.js';
import { deviceTopologyHints, filterByAffinity, type DeviceHintSource } from './topology-hints.js';

export type { DeviceRunContainerOptions } from './pod-devices.js';

const log = logger('devicemanager');

/** Upstream's DevicePluginPath below the root dir: `<root-dir>/device-plugins`. */
export const DEVICE_PLUGINS_DIR_NAME = 'device-plugins';
export const HEALTHY = 'Healthy';

/** A device as the pod resources API reports it: its ID and NUMA nodes (none when the plugin gave none). */
export interface DeviceInstance {
  id: string;
  numaNodes: number[];
}

/** Per resource, per device ID (upstream: ResourceDeviceInstances). */
export type ResourceDeviceInstances = Map<string, Map<string, DeviceInstance>>;

export interface DevicePluginCapacity {
  /** Healthy plus unhealthy devices of each live (or recently gone) plugin. */
  capacity: Record<string, number>;
  /** Healthy devices only. */
  allocatable: Record<string, number>;
  /** Resources whose plugin has been gone past the grace period: reported as 0 from now on. */
  removed: string[];
}

/** An endpoint and the options the plugin gave (upstream: endpointInfo). */
interface EndpointInfo {
  e: Endpoint;
  preferredAllocationAvailable: boolean;
  preStartRequired: boolean;
}

/** What makes an endpoint for a registering plugin; tests pass fakes. */
export type EndpointFactory = (
  resourceName: string,
  socketPath: string,
  handler: {
    onDevices: (resourceName: string, devices: Device[]) => void;
    onDisconnected: (endpoint: Endpoint) => void;
  },
) => Promise<{
  endpoint: Endpoint;
  preferredAllocationAvailable: boolean;
  preStartRequired: boolean;
  run: () => void;
}>;

export interface DeviceManagerOptions {
  /** `<root-dir>/device-plugins`: kubelet.sock, the plugins' sockets and the checkpoint. */
  socketDir: string;
  clock: Clock;
  /** Default: dial the plugin's socket over gRPC. */
  endpointFactory?: EndpointFactory;
  /** The machine's NUMA nodes and the topology manager's chosen affinities; without them, no alignment. */
  topology?: { numaNodes: readonly number[]; affinity: Pick<TopologyAffinityStore, 'getAffinity'> };
}

/** A failed allocation, which admission reports as upstream's UnexpectedAdmissionError. */
export class DeviceAllocationError extends KubeletError {
  constructor(message: string) {
    super('DEVICE_ALLOCATION_FAILED', message);
    this.name = 'DeviceAllocationError';
  }
}

const realEndpointFactory =
  (clock: Clock): EndpointFactory =>
  async (resourceName, socketPath, handler) => {
    const endpoint = new PluginEndpoint(resourceName, socketPath, handler, () => clock.now());
    try {
      await endpoint.connect();
    } catch (err) {
      endpoint.stop();
      throw err;
    }
    return {
      endpoint,
      preferredAllocationAvailable: endpoint.options.getPreferredAllocationAvailable,
      preStartRequired: endpoint.options.preStartRequired,
      run: () => endpoint.run(),
    };
  };

function sorted(set: Iterable<string>): string[] {
  return [...set].sort();
}

/** The whole number of a quantity (upstream: Quantity.Value(), rounding up). */
function wholeValue(q: string | number): number {
  try {
    return Number(valueOf(parseQuantity(q)));
  } catch {
    return 0;
  }
}

export class DeviceManager implements HintProvider {
  readonly socketDir: string;
  private readonly clock: Clock;
  private readonly endpointFactory: EndpointFactory;
  private readonly server: RegistrationServer;
  private readonly endpoints = new Map<string, EndpointInfo>();
  private readonly healthyDevices = new Map<string, Set<string>>();
  private readonly unhealthyDevices = new Map<string, Set<string>>();
  private readonly allDevices = new Map<string, Map<string, Device>>();
  private allocatedDevices = new Map<string, Set<string>>();
  private readonly podDevices = new PodDevices();
  /** Devices released by a pod's init containers, for the containers after them (upstream: devicesToReuse). */
  private devicesToReuse = new Map<string, Map<string, Set<string>>>();
  /** The pod being admitted: its devices are not garbage even before it is active. */
  private pendingAdmissionPod: Pod | undefined;
  private activePods: () => Pod[] = () => [];
  private sourcesReady: () => boolean = () => false;
  private checkpointWrite: Promise<void> = Promise.resolve();
  private started = false;
  private readonly topology: DeviceManagerOptions['topology'];

  constructor(opts: DeviceManagerOptions) {
    this.socketDir = opts.socketDir;
    this.topology = opts.topology;
    this.clock = opts.clock;
    this.endpointFactory = opts.endpointFactory ?? realEndpointFactory(opts.clock);
    this.server = new RegistrationServer(this.socketDir, (name, socket, req) =>
      this.connectPlugin(name, socket, req),
    );
  }

  /** `<socketDir>/kubelet.sock`. */
  get registrationSocket(): string {
    return this.server.socketPath;
  }

  /**
   * Reads the checkpoint (allocations survive a restart; each resource it names reports 0 devices
   * until its plugin registers again) and serves the Registration service.
   */
  async start(activePods: () => Pod[], sourcesReady: () => boolean): Promise<void> {
    log.v(2, 'Starting Device Plugin manager');
    this.activePods = activePods;
    this.sourcesReady = sourcesReady;
    await mkdir(this.socketDir, { recursive: true, mode: 0o750 });
    try {
      await this.readCheckpoint();
    } catch (err) {
      log.warn(
        'Continue after failing to read checkpoint file. Device allocation info may NOT be up-to-date',
        {
          err: errorMessage(err),
        },
      );
    }
    await this.server.start();
    this.started = true;
  }

  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.server.stop();
    for (const info of this.endpoints.values()) if (info.e instanceof PluginEndpoint) info.e.stop();
    await this.checkpointWrite;
  }

  // ---- plugins ----------------------------------------------------------------------------------

  /**
   * The handler for plugins of type `DevicePlugin` found by the plugin watcher in `plugins_registry`
   * (upstream: the device manager's ValidatePlugin/RegisterPlugin/DeRegisterPlugin). Such a plugin
   * names its resource as the plugin name and its socket as the endpoint.
   */
  pluginWatcherHandler(): {
    validatePlugin(pluginName: string, endpoint: string, versions: readonly string[]): void;
    registerPlugin(pluginName: string, endpoint: string, versions: readonly string[]): Promise<void>;
    deRegisterPlugin(pluginName: string): void;
  } {
    return {
      validatePlugin: (pluginName, endpoint, versions) => {
        log.v(2, 'Got plugin at endpoint with versions', { plugin: pluginName, endpoint, versions });
        if (!versions.some((v) => (SUPPORTED_VERSIONS as readonly string[]).includes(v)))
          throw new Error(
            `manager version, ${SUPPORTED_VERSIONS[0]}, is not among plugin supported versions [${versions.join(' ')}]`,
          );
        if (!isExtendedResourceName(pluginName))
          throw new Error(
            `invalid name of device plugin socket: the ResourceName "${pluginName}" is invalid`,
          );
      },
      registerPlugin: (pluginName, endpoint) =>
        this.connectPlugin(pluginName, endpoint, {
          version: SUPPORTED_VERSIONS[0],
          endpoint,
          resourceName: pluginName,
          options: undefined,
        }),
      deRegisterPlugin: (pluginName) => {
        const info = this.endpoints.get(pluginName);
        if (!info) return;
        if (info.e instanceof PluginEndpoint) info.e.stop();
        this.markResourceUnhealthy(pluginName);
      },
    };
  }

  private async connectPlugin(
    resourceName: string,
    socketPath: string,
    _req: RegisterRequest,
  ): Promise<void> {
    const made = await this.endpointFactory(resourceName, socketPath, {
      onDevices: (name, devices) => this.genericDeviceUpdateCallback(name, devices),
      onDisconnected: (endpoint) => this.pluginDisconnected(endpoint),
    });
    const old = this.endpoints.get(resourceName);
    this.endpoints.set(resourceName, {
      e: made.endpoint,
      preferredAllocationAvailable: made.preferredAllocationAvailable,
      preStartRequired: made.preStartRequired,
    });
    // A plugin that registers again replaces its old connection.
    if (old?.e instanceof PluginEndpoint) old.e.stop();
    log.v(2, 'Device plugin connected', { resourceName });
    made.run();
  }

  private pluginDisconnected(endpoint: Endpoint): void {
    const info = this.endpoints.get(endpoint.resourceName);
    // A replaced connection's end says nothing about the plugin that replaced it.
    if (info?.e !== endpoint) return;
    this.markResourceUnhealthy(endpoint.resourceName);
    log.v(2, 'Endpoint became unhealthy', { resourceName: endpoint.resourceName });
  }

  private markResourceUnhealthy(resourceName: string): void {
    log.v(2, 'Mark all resources Unhealthy for resource', { resourceName });
    const healthy = this.healthyDevices.get(resourceName) ?? new Set<string>();
    this.healthyDevices.set(resourceName, new Set());
    const unhealthy = this.unhealthyDevices.get(resourceName) ?? new Set<string>();
    for (const id of healthy) unhealthy.add(id);
    this.unhealthyDevices.set(resourceName, unhealthy);
  }

  /** Each ListAndWatch answer is the plugin's whole list: it replaces what was known. */
  private genericDeviceUpdateCallback(resourceName: string, devices: Device[]): void {
    const healthy = new Set<string>();
    const unhealthy = new Set<string>();
    const all = new Map<string, Device>();
    for (const dev of devices) {
      all.set(dev.ID, dev);
      if (dev.health === HEALTHY) healthy.add(dev.ID);
      else unhealthy.add(dev.ID);
    }
    this.healthyDevices.set(resourceName, healthy);
    this.unhealthyDevices.set(resourceName, unhealthy);
    this.allDevices.set(resourceName, all);
    this.writeCheckpointInBackground();
    log.v(2, 'Processed device updates for resource', {
      resourceName,
      totalCount: devices.length,
      healthyCount: healthy.size,
    });
  }

  /**
   * The device plugins' resources for node status (upstream: GetCapacity). A resource whose plugin
   * has been gone past the grace period is forgotten and reported once in `removed`.
   */
  getCapacity(): DevicePluginCapacity {
    const capacity: Record<string, number> = {};
    const allocatable: Record<string, number> = {};
    const removed = new Set<string>();
    let changed = false;
    const now = this.clock.now();
    const expired = (resource: string): boolean => {
      const info = this.endpoints.get(resource);
      return !info || info.e.stopGracePeriodExpired(now);
    };
    for (const [resource, devices] of this.healthyDevices) {
      if (expired(resource)) {
        this.endpoints.delete(resource);
        this.healthyDevices.delete(resource);
        removed.add(resource);
        changed = true;
      } else {
        capacity[resource] = devices.size;
        allocatable[resource] = devices.size;
      }
    }
    for (const [resource, devices] of this.unhealthyDevices) {
      if (expired(resource)) {
        this.endpoints.delete(resource);
        this.unhealthyDevices.delete(resource);
        removed.add(resource);
        changed = true;
      } else {
        capacity[resource] = (capacity[resource] ?? 0) + devices.size;
      }
    }
    if (changed) this.writeCheckpointInBackground();
    return { capacity, allocatable, removed: [...removed] };
  }

  /** Whether resource is a device plugin's, live or holding allocations (upstream: isDevicePluginResource). */
  isDevicePluginResource(resource: string): boolean {
    return this.healthyDevices.has(resource) || this.allocatedDevices.has(resource);
  }

  /** Whether admitting pod means asking a device plugin (any container's limit names a plugin's resource). */
  podRequestsDevices(pod: Pod): boolean {
    const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
    return containers.some((c) =>
      Object.entries(c.resources?.limits ?? {}).some(
        ([k, v]) => this.isDevicePluginResource(k) && wholeValue(v) > 0,
      ),
    );
  }

  /** How many devices of each resource are held: admission never counts allocatable below that (upstream: sanitizeNodeAllocatable). */
  allocatedDeviceCounts(): Map<string, number> {
    return new Map([...this.allocatedDevices].map(([r, s]) => [r, s.size]));
  }

  // ---- allocation --------------------------------------------------------------------------------

  /**
   * Frees the devices of pods that are no longer active (upstream: UpdateAllocatedDevices); only once
   * every pod source has been heard from, so that a restarted kubelet frees nothing it will see again.
   */
  updateAllocatedDevices(): void {
    if (!this.sourcesReady()) return;
    const keep = new Set(this.activePods().map((p) => p.metadata.uid ?? ''));
    if (this.pendingAdmissionPod) keep.add(this.pendingAdmissionPod.metadata.uid ?? '');
    const remove = [...this.podDevices.pods()].filter((uid) => !keep.has(uid));
    if (remove.length === 0) return;
    log.v(3, 'Pods to be removed', { podUIDs: remove.sort() });
    this.podDevices.delete(remove);
    this.allocatedDevices = this.podDevices.devices();
  }

  /**
   * The admit handler's allocation for one container (upstream: Allocate): nothing at all for a pod
   * that asks for no device (so its admission stays synchronous), else allocateContainer.
   */
  allocate(pod: Pod, container: Container): void | Promise<void> {
    if (!this.podRequestsDevices(pod)) return undefined;
    return this.allocateContainer(pod, container);
  }

  /** Where the container's devices could come from (upstream: GetTopologyHints). */
  getTopologyHints(pod: Pod, container: Container): TopologyHints {
    this.pendingAdmissionPod = pod;
    this.updateAllocatedDevices();
    const uid = pod.metadata.uid ?? '';
    const requests = new Map<string, number>();
    for (const [resource, q] of Object.entries(container.resources?.limits ?? {}))
      if (this.isDevicePluginResource(resource)) requests.set(resource, wholeValue(q));
    return deviceTopologyHints(
      this.hintSource(),
      requests,
      (r) => this.podDevices.containerDevices(uid, container.name, r),
      (r) => this.devicesToReuse.get(uid)?.get(r) ?? new Set(),
    );
  }

  /** Where the pod's devices could come from (upstream: GetPodTopologyHints). */
  getPodTopologyHints(pod: Pod): TopologyHints {
    this.pendingAdmissionPod = pod;
    this.updateAllocatedDevices();
    const uid = pod.metadata.uid ?? '';
    const requests = new Map<string, number>();
    for (const [resource, q] of podLimits(pod))
      if (this.isDevicePluginResource(resource)) requests.set(resource, Number(valueOf(q)));
    return deviceTopologyHints(
      this.hintSource(),
      requests,
      (r) => this.podDevices.podDevices(uid, r),
      () => new Set(),
    );
  }

  private hintSource(): DeviceHintSource {
    return {
      numaNodes: this.topology?.numaNodes ?? [],
      devicesOf: (r) => this.allDevices.get(r),
      availableOf: (r) => {
        const inUse = this.allocatedDevices.get(r) ?? new Set<string>();
        return new Set([...(this.healthyDevices.get(r) ?? [])].filter((d) => !inUse.has(d)));
      },
    };
  }

  /**
   * Allocates devices for one container of a pod being admitted: the caller goes through the init
   * containers first, then the others. Throws DeviceAllocationError.
   */
  async allocateContainer(pod: Pod, container: Container): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    this.pendingAdmissionPod = pod;
    let reuse = this.devicesToReuse.get(uid);
    if (!reuse) {
      reuse = new Map();
      // Only the pod being admitted keeps devices to reuse.
      this.devicesToReuse = new Map([[uid, reuse]]);
    }
    const init = (pod.spec.initContainers ?? []).find((c) => c.name === container.name);
    await this.allocateContainerResources(pod, container, reuse);
    if (init && init.restartPolicy !== 'Always') {
      // A regular init container has finished before the next starts: its devices can be reused.
      this.podDevices.addContainerAllocatedResources(uid, container.name, reuse);
    } else {
      this.podDevices.removeContainerAllocatedResources(uid, container.name, reuse);
    }
  }

  /** Allocates every container of pod in upstream's order; the admission entry point. */
  async allocatePod(pod: Pod): Promise<void> {
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers])
      await this.allocateContainer(pod, c);
  }

  private async allocateContainerResources(
    pod: Pod,
    container: Container,
    devicesToReuse: Map<string, Set<string>>,
  ): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    const name = container.name;
    let updated = false;
    let needsCheckpoint = false;
    // Extended resources are never overcommitted: requests equal limits, so limits say it all.
    for (const [resource, quantity] of Object.entries(container.resources?.limits ?? {})) {
      const needed = wholeValue(quantity);
      if (!this.isDevicePluginResource(resource)) continue;
      if (!updated) {
        this.updateAllocatedDevices();
        updated = true;
      }
      const allocDevices = await this.devicesToAllocate(
        uid,
        name,
        resource,
        needed,
        devicesToReuse.get(resource) ?? new Set(),
      );
      if (!allocDevices || allocDevices.size === 0) continue;
      needsCheckpoint = true;
      const info = this.endpoints.get(resource);
      if (!info) {
        this.allocatedDevices = this.podDevices.devices();
        throw new DeviceAllocationError(`unknown Device Plugin ${resource}`);
      }
      const devs = sorted(allocDevices);
      log.v(3, 'Making allocation request for device plugin', { devices: devs, resourceName: resource });
      let resp;
      try {
        resp = await info.e.allocate(devs);
      } catch (err) {
        this.allocatedDevices = this.podDevices.devices();
        throw new DeviceAllocationError(`rpc error: ${errorMessage(err)}`);
      }
      const first = resp.containerResponses[0];
      if (!first) {
        this.allocatedDevices = this.podDevices.devices();
        throw new DeviceAllocationError(
          `no containers return in allocation response ${JSON.stringify(resp)}`,
        );
      }
      const perNuma: DevicesPerNuma = new Map();
      const add = (numa: number, id: string): void => {
        const list = perNuma.get(numa) ?? [];
        list.push(id);
        perNuma.set(numa, list);
      };
      for (const id of devs) {
        const nodes = this.allDevices.get(resource)?.get(id)?.topology?.nodes ?? [];
        if (nodes.length === 0) add(NODE_WITHOUT_TOPOLOGY, id);
        else for (const n of nodes) add(n.ID, id);
      }
      this.podDevices.insert(uid, name, resource, perNuma, first);
    }
    if (needsCheckpoint) await this.writeCheckpoint();
  }

  /** Picks the devices of resource for a container (upstream: devicesToAllocate); undefined when none are needed. */
  private async devicesToAllocate(
    podUid: string,
    container: string,
    resource: string,
    required: number,
    reusable: Set<string>,
  ): Promise<Set<string> | undefined> {
    let needed = required;
    // A container that restarts keeps what it had.
    const had = this.podDevices.containerDevices(podUid, container, resource);
    if (had) {
      log.v(3, 'Found pre-allocated devices for resource on pod', {
        resourceName: resource,
        podUID: podUid,
        containerName: container,
      });
      needed -= had.size;
      if (needed !== 0)
        throw new DeviceAllocationError(
          `pod "${podUid}" container "${container}" changed request for resource "${resource}" from ${had.size} to ${required}`,
        );
    }
    if (needed === 0) return undefined;
    if (!this.healthyDevices.has(resource))
      throw new DeviceAllocationError(`cannot allocate unregistered device ${resource}`);

    let inUse = this.allocatedDevices.get(resource);
    if (!inUse) this.allocatedDevices.set(resource, (inUse = new Set()));
    const allocated = new Set<string>();
    const allocateRemainingFrom = (devices: Iterable<string>): boolean => {
      for (const d of sorted(devices)) {
        if (allocated.has(d)) continue;
        inUse.add(d);
        allocated.add(d);
        if (--needed === 0) return true;
      }
      return false;
    };
    if (allocateRemainingFrom(reusable)) return allocated;

    const available = new Set([...(this.healthyDevices.get(resource) ?? [])].filter((d) => !inUse.has(d)));
    if (available.size < needed)
      throw new DeviceAllocationError(
        `requested number of devices unavailable for ${resource}. Requested: ${needed}, Available: ${available.size}`,
      );
    const affinity = this.topology?.affinity.getAffinity(podUid, container).numaNodeAffinity ?? null;
    const { aligned, unaligned, noAffinity } = filterByAffinity(
      affinity,
      this.allDevices.get(resource),
      available,
    );
    // More aligned devices than needed: the plugin chooses among them.
    if (needed < aligned.size) {
      const preferred = await this.callGetPreferredAllocationIfAvailable(
        resource,
        new Set([...aligned, ...allocated]),
        allocated,
        required,
      );
      if (allocateRemainingFrom([...preferred].filter((d) => aligned.has(d)))) return allocated;
      if (allocateRemainingFrom(aligned)) return allocated;
      throw new DeviceAllocationError(
        `unexpectedly allocated less resources than required. Requested: ${required}, Got: ${required - needed}`,
      );
    }
    if (allocateRemainingFrom(aligned)) return allocated;
    const preferred = await this.callGetPreferredAllocationIfAvailable(
      resource,
      new Set([...available, ...allocated]),
      allocated,
      required,
    );
    if (allocateRemainingFrom([...preferred].filter((d) => available.has(d)))) return allocated;
    if (allocateRemainingFrom(unaligned)) return allocated;
    if (allocateRemainingFrom(noAffinity)) return allocated;
    throw new DeviceAllocationError(
      `unexpectedly allocated less resources than required. Requested: ${required}, Got: ${required - needed}`,
    );
  }

  private async callGetPreferredAllocationIfAvailable(
    resource: string,
    available: Set<string>,
    mustInclude: Set<string>,
    size: number,
  ): Promise<Set<string>> {
    const info = this.endpoints.get(resource);
    if (!info)
      throw new DeviceAllocationError(`endpoint not found in cache for a registered resource: ${resource}`);
    if (!info.preferredAllocationAvailable) {
      log.v(4, 'Plugin options indicate to skip GetPreferredAllocation for resource', {
        resourceName: resource,
      });
      return new Set();
    }
    let resp;
    try {
      resp = await info.e.getPreferredAllocation(sorted(available), sorted(mustInclude), size);
    } catch (err) {
      throw new DeviceAllocationError(
        `device plugin GetPreferredAllocation rpc failed with err: ${errorMessage(err)}`,
      );
    }
    return new Set(resp.containerResponses[0]?.deviceIDs ?? []);
  }

  /**
   * What the container's devices bring to its config (upstream: GetDeviceRunContainerOptions):
   * PreStartContainer first where the plugin asks for it; a container whose allocation was lost
   * (a restart raced its admission) is allocated again.
   */
  async getDeviceRunContainerOptions(
    pod: Pod,
    container: Container,
  ): Promise<DeviceRunContainerOptions | undefined> {
    const uid = pod.metadata.uid ?? '';
    let needsReAllocate = false;
    for (const [resource, quantity] of Object.entries(container.resources?.limits ?? {})) {
      if (!this.isDevicePluginResource(resource) || wholeValue(quantity) === 0) continue;
      await this.callPreStartContainerIfNeeded(uid, container.name, resource);
      if (!this.activePods().some((p) => p.metadata.uid === uid)) {
        log.error('pod deleted from activePods, skip to reAllocate', {
          podUID: uid,
          containerName: container.name,
        });
        continue;
      }
      if (!this.podDevices.containerDevices(uid, container.name, resource)) needsReAllocate = true;
    }
    if (needsReAllocate) {
      log.v(2, 'Needs to re-allocate device plugin resources for pod', {
        podUID: uid,
        containerName: container.name,
      });
      await this.allocateContainer(pod, container);
    }
    return this.podDevices.deviceRunContainerOptions(uid, container.name);
  }

  private async callPreStartContainerIfNeeded(
    podUid: string,
    container: string,
    resource: string,
  ): Promise<void> {
    const info = this.endpoints.get(resource);
    if (!info) throw new Error(`endpoint not found in cache for a registered resource: ${resource}`);
    if (!info.preStartRequired) {
      log.v(4, 'Plugin options indicate to skip PreStartContainer for resource', { resourceName: resource });
      return;
    }
    const devices = this.podDevices.containerDevices(podUid, container, resource);
    if (!devices)
      throw new Error(
        `no devices found allocated in local cache for pod ${podUid}, container ${container}, resource ${resource}`,
      );
    log.v(4, 'Issuing a PreStartContainer call for container', { containerName: container, podUID: podUid });
    try {
      await info.e.preStartContainer(sorted(devices));
    } catch (err) {
      throw new Error(`device plugin PreStartContainer rpc failed with err: ${errorMessage(err)}`);
    }
  }

  // ---- what the pod resources API reads -------------------------------------------------------------

  /** The devices each container of a pod holds (upstream: GetDevices). */
  getDevices(podUid: string, container: string): ResourceDeviceInstances {
    const out: ResourceDeviceInstances = new Map();
    for (const [resource, perNuma] of this.podDevices.containerResources(podUid, container)) {
      const devs = new Map<string, DeviceInstance>();
      for (const [numa, ids] of perNuma)
        for (const id of ids) {
          const d = devs.get(id) ?? { id, numaNodes: [] };
          if (numa !== NODE_WITHOUT_TOPOLOGY) d.numaNodes.push(numa);
          devs.set(id, d);
        }
      out.set(resource, devs);
    }
    return out;
  }

  /** Every healthy device the plugins report (upstream: GetAllocatableDevices). */
  getAllocatableDevices(): ResourceDeviceInstances {
    const out: ResourceDeviceInstances = new Map();
    for (const [resource, devices] of this.allDevices) {
      const healthy = this.healthyDevices.get(resource);
      if (!healthy) continue;
      const devs = new Map<string, DeviceInstance>();
      for (const [id, d] of devices)
        if (healthy.has(id)) devs.set(id, { id, numaNodes: (d.topology?.nodes ?? []).map((n) => n.ID) });
      out.set(resource, devs);
    }
    return out;
  }

  // ---- checkpoint --------------------------------------------------------------------------------

  private checkpointData(): CheckpointData {
    const registered: Record<string, string[]> = {};
    for (const [resource, devices] of this.healthyDevices) registered[resource] = sorted(devices);
    return { PodDeviceEntries: this.podDevices.toCheckpointData(), RegisteredDevices: registered };
  }

  /** Writes the checkpoint; writes are queued so that the file always ends with the latest state. */
  private writeCheckpoint(): Promise<void> {
    const next = this.checkpointWrite.then(() => writeCheckpointFile(this.socketDir, this.checkpointData()));
    this.checkpointWrite = next.catch(() => undefined);
    return next.catch((err: unknown) => {
      throw new DeviceAllocationError(
        `failed to write checkpoint file "${path.join(this.socketDir, 'kubelet_internal_checkpoint')}": ${errorMessage(err)}`,
      );
    });
  }

  private writeCheckpointInBackground(): void {
    this.writeCheckpoint().catch((err: unknown) =>
      log.error('Writing checkpoint encountered', { err: errorMessage(err) }),
    );
  }

  private async readCheckpoint(): Promise<void> {
    const data = await readCheckpointFile(this.socketDir);
    if (!data) return;
    this.podDevices.fromCheckpointData(data.PodDeviceEntries ?? []);
    this.allocatedDevices = this.podDevices.devices();
    const now = this.clock.now();
    for (const resource of Object.keys(data.RegisteredDevices ?? {})) {
      // Zero devices until the plugin registers again, and gone after the grace period if it never does.
      this.healthyDevices.set(resource, new Set());
      this.unhealthyDevices.set(resource, new Set());
      this.endpoints.set(resource, {
        e: new StoppedEndpoint(resource, now),
        preferredAllocationAvailable: false,
        preStartRequired: false,
      });
    }
  }
}
