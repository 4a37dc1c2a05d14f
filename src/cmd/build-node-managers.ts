/**
 * Step 2 of buildKubelet: the node-level managers, which own the machine's resources rather than a
 * pod's (cgroups, devices, plugins, volumes), and the node as admission and the downward API read it.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Node, NodeAllocatable } from '../api/node.js';
import { createContainerManager, type ContainerManager } from '../cm/container-manager.js';
import { checkFailCgroupV1, checkKernelTunables } from '../cm/host-checks.js';
import { startKubeletCgroupEnforcer } from '../cm/kubelet-cgroup.js';
import { detectSwapSettings } from '../cm/swap.js';
import { createCPUManager, type CPUManager } from '../cm/cpumanager/cpu-manager.js';
import type { MemoryManager } from '../cm/memorymanager/memory-manager.js';
import { DEVICE_PLUGINS_DIR_NAME, DeviceManager } from '../cm/devicemanager/manager.js';
import { addTopologyHintProviders } from '../cm/topology-admission.js';
import { createTopologyManager, type TopologyManager } from '../cm/topologymanager/topology-manager.js';
import { nodeAnyWay, readInitialNode } from '../kubelet/admission.js';
import { SysctlAllowlist } from '../kubelet/sysctl-allowlist.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { withDevicePluginResources } from '../nodestatus/setters.js';
import { PluginType } from '../pluginmanager/cache/types.js';
import { PluginManager, pluginsRegistryDir } from '../pluginmanager/plugin-manager.js';
import { RuntimeClassManager } from '../runtimeclass/runtime-class-manager.js';
import { CsiDriversStore } from '../volume/csi/csi-drivers-store.js';
import { CsiRegistrationHandler } from '../volume/csi/csi-registration-handler.js';
import { ApiNodeInfoManager, standaloneNodeInfoManager } from '../volume/csi/node-info-manager.js';
import { VolumeManagerImpl } from '../volume/volume-manager.js';
import type { ChangeDetectionStrategy } from '../volume/volume-object-source.js';
import type { BuildContext } from './build-context.js';
import { buildMemoryManager } from './build-memory-manager.js';
import type { RuntimeClients } from './build-runtime-clients.js';
import { KUBELET_VERSION } from './version.js';
import type { SwapSettings } from '../kuberuntime/container-swap.js';

const log = logger('kubelet');

/** Where upstream keeps `<pod>_<ns>_<container>-<id>.log` symlinks for log shippers. */
const LEGACY_CONTAINER_LOGS_DIR = '/var/log/containers';

export interface NodeManagers {
  readonly containerManager: ContainerManager;
  readonly deviceManager: DeviceManager;
  /** Undefined under cpuManagerPolicy none. */
  readonly cpuManager: CPUManager | undefined;
  /** Under None too: it then manages nothing but keeps memory_manager_state, as upstream. */
  readonly memoryManager: MemoryManager;
  /** Admission's resource allocation: the CPU, memory and device managers under its policy. */
  readonly topologyManager: TopologyManager;
  readonly pluginManager: PluginManager;
  readonly volumeManager: VolumeManagerImpl;
  /** Made only with an API client: standalone pods' runtimeClassName is not looked up (upstream). */
  readonly runtimeClassManager: RuntimeClassManager | undefined;
  readonly sysctlAllowlist: SysctlAllowlist;
  /** The Node from the node informer; undefined standalone. */
  readonly apiNode: (() => Node | undefined) | undefined;
  /** The node as admission reads it (upstream getNodeAnyWay). */
  readonly getNode: () => Node | undefined;
  /** The Node's allocatable, for containers without limits (upstream defaultPodLimitsForDownwardAPI). */
  readonly nodeAllocatableForPods: () => NodeAllocatable | undefined;
  /** memorySwap.swapBehavior and the node's swap controller, for containers' swap limits. */
  readonly swap: SwapSettings;
}

export async function buildNodeManagers(
  ctx: BuildContext,
  clients: RuntimeClients,
  signal: AbortSignal,
): Promise<NodeManagers> {
  const { config, flags, nodeName, clock, cluster, opts } = ctx;
  // Upstream makes these at start: the pod log folder and the legacy /var/log/containers symlink folder.
  await mkdir(config.podLogsDir, { recursive: true });
  await mkdir(opts.legacyContainerLogsDir ?? LEGACY_CONTAINER_LOGS_DIR, { recursive: true });
  // Upstream refuses these hosts before it makes the container manager, and sets the kernel's tunables.
  await checkFailCgroupV1(config.failCgroupV1);
  await checkKernelTunables(config.protectKernelDefaults);
  const swap = await detectSwapSettings(config);
  await startKubeletCgroupEnforcer(config.kubeletCgroups, signal);
  const containerManager = await (opts.createContainerManager ?? createContainerManager)({
    config,
    clock,
    ...(cluster ? { recorder: cluster.recorder, nodeName } : {}),
  });
  // Refused at start, as upstream refuses to start with a sysctl it cannot allow.
  const sysctlAllowlist = SysctlAllowlist.forNode(config.allowedUnsafeSysctls);
  // CSI drivers join through the plugin watcher (<root-dir>/plugins_registry); the CSI volume plugin
  // dials the ones registered. Device plugins register through the device manager's own socket
  // (or the watcher, below).
  const csiDrivers = new CsiDriversStore();
  const pluginManager = new PluginManager({ socketDir: pluginsRegistryDir(flags.rootDirectory), clock });
  pluginManager.addHandler(
    PluginType.CSIPlugin,
    new CsiRegistrationHandler(
      csiDrivers,
      cluster ? new ApiNodeInfoManager(cluster.kubeClient, nodeName) : standaloneNodeInfoManager,
    ),
  );
  // The resource managers read the NUMA affinity it chooses, so it comes first (as upstream's).
  const topologyManager = await createTopologyManager({
    policyName: config.topologyManagerPolicy,
    scopeName: config.topologyManagerScope,
    policyOptions: config.topologyManagerPolicyOptions,
    featureGates: config.featureGates,
  });
  // Device plugins register on <root-dir>/device-plugins/kubelet.sock (upstream: /var/lib/kubelet/device-plugins).
  const deviceManager = new DeviceManager({
    socketDir: path.join(flags.rootDirectory, DEVICE_PLUGINS_DIR_NAME),
    clock,
    topology: { numaNodes: topologyManager.numaNodes, affinity: topologyManager },
  });
  // A device plugin may also join through plugins_registry, as upstream's watcher allows.
  pluginManager.addHandler(PluginType.DevicePlugin, deviceManager.pluginWatcherHandler());
  const cpuManager = await createCPUManager({
    policyName: config.cpuManagerPolicy,
    policyOptions: config.cpuManagerPolicyOptions,
    reconcilePeriodMs: config.cpuManagerReconcilePeriodMs,
    reservedSystemCPUs: config.reservedSystemCPUs,
    reservedCPU: [config.systemReserved.cpu, config.kubeReserved.cpu],
    rootDir: flags.rootDirectory,
    featureGates: config.featureGates,
    topologyManagerPolicy: config.topologyManagerPolicy,
    clock,
    runtime: clients.runtime,
    affinity: topologyManager,
  });
  const memoryManager = await buildMemoryManager(ctx, topologyManager);
  addTopologyHintProviders(topologyManager, { cpuManager, memoryManager, deviceManager });

  const initialNode = await initialNodeOrUndefined(ctx, clients, signal);
  const apiNode = cluster ? () => cluster.nodeReflector.get(undefined, nodeName) : undefined;
  // Admission reads the node (upstream: getNodeAnyWay): the node informer's copy in cluster mode, and
  // until it has one (or without an API server) the node this kubelet would register. Standalone,
  // that node has the device plugins' resources as they are now (upstream's initialNode asks the
  // device manager each time).
  const getNode = cluster
    ? nodeAnyWay(apiNode, initialNode)
    : () => initialNode && withDevicePluginResources(initialNode, deviceManager.getCapacity());
  // What a container without limits sees through the downward API (env and volumes), and what bounds
  // a memory emptyDir: the Node's allocatable; the machine's while there is no Node (standalone).
  const nodeAllocatableForPods = (): NodeAllocatable | undefined => {
    const a = getNode()?.status?.allocatable;
    return a?.cpu && a.memory
      ? { cpu: a.cpu, memory: a.memory, 'ephemeral-storage': a['ephemeral-storage'] }
      : undefined;
  };
  // Volumes set up by an earlier run are read back from disk (at its start) before any pod syncs.
  const volumeManager = new VolumeManagerImpl({
    csiDrivers,
    rootDir: flags.rootDirectory,
    nodeName,
    clock,
    client: cluster?.kubeClient,
    recorder: ctx.recorder,
    nodeLabels: () => cluster?.nodeReflector.get(undefined, nodeName)?.metadata.labels,
    hostIPs: ctx.ips,
    nodeAllocatable: nodeAllocatableForPods,
    // configMaps and secrets are re-read at most once per sync period, as a pod's periodic sync does upstream.
    objectCacheTtlMs: config.syncFrequencyMs,
    objectChangeDetection: config.configMapAndSecretChangeDetectionStrategy as ChangeDetectionStrategy,
    ...(opts.makeRootDirShared === false ? { makeRootDirShared: false } : {}),
  });
  return {
    containerManager,
    deviceManager,
    cpuManager,
    memoryManager,
    topologyManager,
    pluginManager,
    volumeManager,
    runtimeClassManager: cluster ? new RuntimeClassManager(cluster.kubeClient, clock) : undefined,
    sysctlAllowlist,
    apiNode,
    getNode,
    nodeAllocatableForPods,
    swap,
  };
}

/** The node this kubelet would register, from the machine and the runtime; undefined when it cannot be read. */
async function initialNodeOrUndefined(
  { config, flags, nodeName, clock }: BuildContext,
  clients: RuntimeClients,
  signal: AbortSignal,
): Promise<Node | undefined> {
  try {
    return await readInitialNode(
      {
        nodeName,
        config,
        flags,
        clock,
        kubeletVersion: KUBELET_VERSION,
        runtimeService: clients.runtime,
        imageService: clients.images,
        runtimeName: clients.runtimeName,
      },
      signal,
    );
  } catch (err) {
    signal.throwIfAborted();
    log.error('Unable to construct v1.Node object for kubelet', { err: errorMessage(err) });
    return undefined;
  }
}
