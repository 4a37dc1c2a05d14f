/**
 * Wiring: the kubelet's object graph built from the resolved configuration, as components listed in
 * the order they start (they stop in reverse; see ComponentRunner). Nothing here starts anything.
 *
 * It comes in two parts because most of the graph needs the runtime's answer to its handshake
 * (its name, the node it makes): buildBootstrap gives what runs before the runtime answers
 * (the API clients, /healthz, the runtime connection), buildKubelet the rest once it has.
 *
 * Start order (written here once; docs/architecture.md shows it):
 *   apiclients, events, healthz, runtime,
 *   containermanager, volumemanager, devicemanager, podresources, pluginmanager, statusmanager,
 *   nodeinformer, nodestatus, nodelease, prober, podworkers, pleg, syncloop, nodeshutdownmanager,
 *   podconfig, nodepage, sources (api, file, http),
 *   kubeletserver, readonlyserver.
 * To add a part, add one entry to the list in buildKubelet where it belongs in that order.
 */
import { RuntimeClassManager } from '../runtimeclass/runtime-class-manager.js';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import {
  createContainerManager as createRealContainerManager,
  type ContainerManager,
  type ContainerManagerOptions,
} from '../cm/container-manager.js';
import { realCgroupFs } from '../cm/cgroup-fs.js';
import { detectCgroupSubsystems } from '../cm/cgroup-subsystems.js';
import { ApiSource } from '../config/api-source.js';
import { FileSource } from '../config/file-source.js';
import { HttpSource } from '../config/http-source.js';
import { PodConfig } from '../config/pod-config.js';
import { connectRuntime } from '../cri/connect-runtime.js';
import { instrumentCri } from '../cri/instrumented-runtime.js';
import type { ImageService, RuntimeService, VersionResponse } from '../cri/types.js';
import type { ObjectEventRecorder } from '../events/event-recorder.js';
import { EventStore, fanOutRecorder, StoreEventRecorder } from '../events/event-store.js';
import { EvictionManager } from '../eviction/eviction-manager.js';
import { parseThresholdConfig } from '../eviction/threshold.js';
import { ImageGCManager } from '../images/image-gc-manager.js';
import { PullProgressTracker, type PullsView } from '../images/pull-progress.js';
import { ContentStatusClient } from '../cri/containerd-content/list-ingest-statuses.js';
import { mustSucceed } from '../k8s/api-status.js';
import { ContainerLogManager } from '../logs/container-log-manager.js';
import { HeapTrimmer } from '../lib/heap-trim.js';
import { nodeAnyWay, readInitialNode } from '../kubelet/admission.js';
import { Kubelet } from '../kubelet/kubelet.js';
import { SysctlAllowlist } from '../kubelet/sysctl-allowlist.js';
import { KubeGenericRuntimeManager } from '../kuberuntime/runtime-manager.js';
import { realClock, type Clock } from '../lib/clock.js';
import { asComponent, loopComponent, type Component, type ComponentStatus } from '../lib/component.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { MetricsRegistry } from '../lib/metrics.js';
import { ClusterNode } from '../nodestatus/cluster-node.js';
import type { Pod } from '../api/core-v1.js';
import { nodeRef, type Node, type NodeAllocatable } from '../api/node.js';
import { runOomWatcher } from '../oom/oom-watcher.js';
import { newShutdownManager } from '../nodeshutdown/shutdown-manager.js';
import { GenericPLEG, type PodLifecycleEventGenerator } from '../pleg/generic-pleg.js';
import { defaultMaxParallelPodStarts, PodStartSlots } from '../kuberuntime/pod-start-slots.js';
import { PodStartupLatencyTracker } from '../kubelet/pod-startup-latency-tracker.js';
import { EventedPLEG } from '../pleg/evented-pleg.js';
import { registerPlegMetrics } from '../pleg/pleg-metrics.js';
import { K8S_NAMESPACE, subscribeTaskEvents } from '../cri/containerd-events/subscribe-task-events.js';
import { InMemoryPodCache } from '../pleg/pod-cache.js';
import { ApiMirrorClient } from '../pod/mirror-client.js';
import { MirrorPods } from '../pod/mirror-pods.js';
import { PodWorkersImpl } from '../podworkers/pod-workers.js';
import { BasicWorkQueue } from '../podworkers/work-queue.js';
import { podCacheContainerStatus } from '../prober/pod-cache-container-status.js';
import { ProberManager } from '../prober/prober-manager.js';
import { getStableKey } from '../kuberuntime/compute-pod-actions.js';
import { NodePageFeed } from '../nodepage/node-page-feed.js';
import { nodePageHandler, type NodePageHandler } from '../nodepage/node-page-handler.js';
import type { NodePageSource } from '../nodepage/node-page-model.js';
import { podLogReader } from '../server/pod-log-reader.js';
import type { ApiPoster } from '../server/delegated-auth.js';
import type { HealthChecker } from '../server/healthz.js';
import {
  startKubeletReadOnlyServer,
  startKubeletServer,
  type KubeletServer,
  type KubeletServerHost,
} from '../server/kubelet-server.js';
import { readMachineInfo } from '../server/cadvisor-metrics.js';
import { startLocalServer, type LocalServer, type ServerHost } from '../server/local-server.js';
import { addRuntimeStateMetrics } from '../server/runtime-state-metrics.js';
import { CgroupStatsReader } from '../stats/cgroup-stats.js';
import { FsResourceAnalyzer } from '../stats/fs-resource-analyzer.js';
import { StatsProvider } from '../stats/stats-provider.js';
import { LocalStatusManager } from '../status/status-manager.js';
import { VolumeManagerImpl } from '../volume/volume-manager.js';
import path from 'node:path';
import { DEVICE_PLUGINS_DIR_NAME, DeviceManager } from '../cm/devicemanager/manager.js';
import { withDevicePluginResources } from '../nodestatus/setters.js';
import { POD_RESOURCES_DIR_NAME, PodResourcesServer } from '../podresources/server.js';
import { CsiDriversStore } from '../volume/csi/csi-drivers-store.js';
import { CsiRegistrationHandler } from '../volume/csi/csi-registration-handler.js';
import { ApiNodeInfoManager, standaloneNodeInfoManager } from '../volume/csi/node-info-manager.js';
import { PluginType } from '../pluginmanager/cache/types.js';
import { PluginManager, pluginsRegistryDir } from '../pluginmanager/plugin-manager.js';
import { apiEnvSources } from './api-env-sources.js';
import { createClusterClients, type ClusterClients } from './cluster-clients.js';
import {
  bootstrapClientCertificate,
  startKubeletCertificates,
  type KubeletCertificates,
} from './kubelet-certificates.js';
import type { LoadedKubeletConfig } from './load-kubelet-config.js';
import { KUBELET_VERSION, KUBERNETES_VERSION } from './version.js';

const log = logger('kubelet');

/** Where upstream keeps `<pod>_<ns>_<container>-<id>.log` symlinks for log shippers. */
const LEGACY_CONTAINER_LOGS_DIR = '/var/log/containers';

export type RunConfig = Extract<LoadedKubeletConfig, { action: 'run' }>;

/** The runtime once it has answered the handshake (RuntimeConnection, or a fake in tests). */
export interface ConnectedRuntime {
  readonly runtime: RuntimeService;
  readonly images: ImageService;
  readonly version: VersionResponse;
  close(): void;
}

export interface BuildOptions {
  clock?: Clock;
  /** Every component's state, for /healthz?verbose (the runner's snapshots). */
  componentStatuses?: () => readonly ComponentStatus[];
  /** Dials the runtime until it answers or signal aborts; connectRuntime by default. */
  connectRuntime?: (signal: AbortSignal) => Promise<ConnectedRuntime>;
  /** createContainerManager by default. */
  createContainerManager?: (opts: ContainerManagerOptions) => Promise<ContainerManager>;
  legacyContainerLogsDir?: string;
  /** False in tests that may not remount --root-dir. */
  makeRootDirShared?: boolean;
  /** Cuts short a TLS bootstrap waiting for its certificate (the first signal). */
  signal?: AbortSignal;
}

/** What is handed on from the bootstrap to the rest of the graph. */
export interface KubeletBootstrap {
  readonly components: Component[];
  readonly cluster: ClusterClients | undefined;
  /** Client and serving certificate managers (rotateCertificates, serverTLSBootstrap). */
  readonly certificates: KubeletCertificates | undefined;
  /** The node's last events, in every mode (the node page and `tskubelet events` read it). */
  readonly eventStore: EventStore;
  /**
   * Where every part records events: the store (and, standalone, the log), plus the API server in
   * cluster mode.
   */
  readonly recorder: ObjectEventRecorder;
  /** The runtime once its component has started; throws before. */
  runtime(): ConnectedRuntime;
  /** What the servers read; it answers for the process alone until the kubelet is set. */
  readonly host: ServerHost;
  /** Set by buildKubelet: the parts the servers and the cluster clients read once they exist. */
  readonly late: {
    kubelet?: Kubelet;
    apiSource?: ApiSource;
    podWorkers?: PodWorkersImpl;
    nodePage?: NodePageHandler;
    podStartupLatency?: PodStartupLatencyTracker;
  };
}

export interface KubeletGraph {
  /** In start order; the runner stops them in reverse. */
  readonly components: Component[];
  readonly kubelet: Kubelet;
  /** The image pulls running and recently finished (the node page reads it). */
  readonly pulls: PullsView;
}

/** The node's IPs: --node-ip when given, else the first non-loopback IPv4 address (upstream picks the default route's). */
function nodeIPs(flag: string): string[] {
  if (flag !== '') return flag.split(',').map((s) => s.trim());
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return [a.address];
  }
  return ['127.0.0.1'];
}

/** Full garbage collections when the kubelet settles after a burst of work (src/lib/heap-trim.ts). */
function heapTrimComponent(): Component {
  const trimmer = new HeapTrimmer();
  return loopComponent('heaptrim', (signal) => trimmer.run(signal), { detail: () => trimmer.detail() });
}

function serverComponent(name: string, listen: () => Promise<LocalServer | KubeletServer>, optional = false) {
  let server: LocalServer | KubeletServer | undefined;
  return asComponent(
    name,
    {
      start: async () => {
        server = await listen();
      },
      stop: () => server?.close(),
      detail: () => (server ? { port: server.port } : undefined),
    },
    { optional },
  );
}

/** The kubelet server under serverTLSBootstrap: it listens from the first issued certificate on. */
function servedWhenIssued(
  certificates: KubeletCertificates,
  listen: (pair: { certPem: string; keyPem: string }) => Promise<KubeletServer>,
): Component {
  let server: KubeletServer | undefined;
  return asComponent(
    'kubeletserver',
    {
      start: () =>
        certificates.serveWith(async (pair) => {
          server = await listen(pair);
          return server;
        }),
      stop: () => server?.close(),
      detail: () => (server ? { port: server.port } : { waitingFor: 'serving certificate' }),
    },
    { optional: true },
  );
}

/** What runs before the runtime answers: the API clients (cluster mode), /healthz, the runtime connection. */
export async function buildBootstrap(cfg: RunConfig, opts: BuildOptions = {}): Promise<KubeletBootstrap> {
  const { config, flags, nodeName } = cfg;
  const clock = opts.clock ?? realClock;
  const late: KubeletBootstrap['late'] = {};
  // TLS bootstrap: a client certificate from --bootstrap-kubeconfig when --kubeconfig has none.
  await bootstrapClientCertificate(flags, nodeName, clock, opts.signal ?? new AbortController().signal);
  const cluster =
    flags.kubeConfig !== ''
      ? await createClusterClients(
          flags.kubeConfig,
          config,
          nodeName,
          clock,
          (ns, name) => late.apiSource?.getPod(ns, name),
          // Upstream's podDeletionSafety: a terminal phase waits until the pod workers know the pod
          // cannot be running (before they exist, assume it could).
          (uid) => late.podWorkers?.couldHaveRunningContainers(uid) ?? true,
          // Upstream marks a pod started for its startup SLI when the API server took the status.
          (pod) => late.podStartupLatency?.recordStatusUpdated(pod),
        )
      : undefined;
  const eventStore = new EventStore();
  const storeRecorder = new StoreEventRecorder({
    store: eventStore,
    nodeName,
    clock,
    // Cluster mode logs each event in the API recorder already (at --v=3, as upstream).
    ...(cluster ? {} : { logVerbosity: 0 }),
  });
  const recorder = cluster ? fanOutRecorder(cluster.recorder, storeRecorder) : storeRecorder;
  const certificates =
    cluster && (config.rotateCertificates || config.serverTLSBootstrap)
      ? await startKubeletCertificates({
          config,
          flags,
          nodeName,
          clock,
          cluster,
          nodeIPs: nodeIPs(flags.nodeIP),
        })
      : undefined;

  let connection: ConnectedRuntime | undefined;
  let connecting: AbortController | undefined;
  const connect =
    opts.connectRuntime ??
    ((signal: AbortSignal) =>
      connectRuntime(config.containerRuntimeEndpoint, {
        imageEndpoint: config.imageServiceEndpoint,
        runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
        signal,
        clock,
      }));
  // Retries with back-off until the runtime answers; a stop during that aborts the retries.
  const runtime = asComponent('runtime', {
    start: async () => {
      connecting = new AbortController();
      connection = await connect(connecting.signal);
    },
    stop: () => {
      connecting?.abort(new Error('kubelet stopping'));
      connection?.close();
    },
    detail: () =>
      connection
        ? { runtimeName: connection.version.runtimeName, runtimeVersion: connection.version.runtimeVersion }
        : undefined,
  });

  // Until the kubelet exists, /healthz answers for the process alone, plus "the runtime is not reachable yet".
  const runtimeCheck: HealthChecker = {
    name: 'runtime',
    check: () => (connection ? undefined : 'container runtime not connected yet'),
  };
  const host: ServerHost = {
    getPods: () => late.kubelet?.getPods() ?? [],
    getRunningPods: async () => (late.kubelet ? late.kubelet.getRunningPods() : []),
    healthChecks: () => late.kubelet?.healthChecks() ?? [runtimeCheck],
    componentStatuses: () => opts.componentStatuses?.() ?? [],
    nodePage: async (r) => {
      if (late.nodePage) return late.nodePage(r);
      r.res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8', 'Retry-After': '2' });
      r.res.end('the kubelet is starting: the container runtime has not answered yet\n');
    },
  };

  const components: (Component | false | undefined)[] = [
    cluster && asComponent('apiclients', { stop: () => cluster.close() }),
    cluster && asComponent('events', { stop: () => cluster.recorder.stop() }),
    certificates && asComponent('certificates', { stop: () => certificates.stop() }),
    config.healthzPort > 0 &&
      serverComponent('healthz', () =>
        startLocalServer(host, {
          address: config.healthzBindAddress,
          port: config.healthzPort,
          readOnly: false,
        }),
      ),
    runtime,
  ];
  return {
    components: components.filter((c): c is Component => !!c),
    cluster,
    certificates,
    eventStore,
    recorder,
    runtime: () => {
      if (!connection) throw new Error('the container runtime is not connected');
      return connection;
    },
    host,
    late,
  };
}

/** A sync this soon after the pod's last one asks the PLEG for a relist (see the pod cache below). */
const PROMPT_RELIST_WINDOW_MS = 2000;

/** The rest of the kubelet, once the runtime has answered. `signal` cuts the build short on a stop. */
export async function buildKubelet(
  cfg: RunConfig,
  boot: KubeletBootstrap,
  signal: AbortSignal,
  opts: BuildOptions = {},
): Promise<KubeletGraph> {
  const { config, flags, nodeName } = cfg;
  const { cluster, late, recorder } = boot;
  const clock = opts.clock ?? realClock;
  const connection = boot.runtime();
  const runtimeName = connection.version.runtimeName;

  // Every CRI call the kubelet makes is counted and timed (kubelet_runtime_operations_*).
  const kubeletMetrics = new MetricsRegistry();
  const criRuntime = instrumentCri(connection.runtime, kubeletMetrics);
  const criImages = instrumentCri(connection.images, kubeletMetrics);
  // The pod startup latency SLI measures API pods (it needs a watch); its series exist in any mode, as upstream's.
  const podStartupLatency = new PodStartupLatencyTracker(kubeletMetrics, clock);
  late.podStartupLatency = podStartupLatency;

  // Upstream makes these at start: the pod log folder and the legacy /var/log/containers symlink folder.
  await mkdir(config.podLogsDir, { recursive: true });
  await mkdir(opts.legacyContainerLogsDir ?? LEGACY_CONTAINER_LOGS_DIR, { recursive: true });
  const ips = nodeIPs(flags.nodeIP);
  const containerManager = await (opts.createContainerManager ?? createRealContainerManager)({
    config,
    clock,
    ...(cluster ? { recorder: cluster.recorder, nodeName } : {}),
  });
  // A worker that must wait for a newer reading soon after its last sync (it just started or
  // stopped containers, or an event woke it) asks for a relist: the wait lasts one relist, not up to
  // a relist period. A periodic resync, long after the last sync, waits for the next relist as
  // before: asking for one each time made the steady state relist every few seconds.
  const podCache = new InMemoryPodCache({
    onWait: (_uid, minTimeMs) => {
      if (clock.now() - minTimeMs < PROMPT_RELIST_WINDOW_MS) pleg.requestRelist?.();
    },
  });
  const prober = new ProberManager({
    runtimeService: criRuntime,
    getContainerStatus: podCacheContainerStatus(podCache),
    kubernetesVersion: KUBERNETES_VERSION,
    clock,
    // Unhealthy and ProbeWarning go to the API server as upstream's prober records them.
    recorder,
  });
  // Refused at start, as upstream refuses to start with a sysctl it cannot allow.
  const sysctlAllowlist = SysctlAllowlist.forNode(config.allowedUnsafeSysctls);
  const apiSources = cluster ? apiEnvSources(cluster.kubeClient) : undefined;
  // The node admission reads, set below; no container starts before it is.
  let nodeAnyWayForDownwardAPI: () => Node | undefined = () => undefined;
  // What a container without limits sees through the downward API (env and volumes), and what bounds
  // a memory emptyDir: the Node's allocatable (upstream defaultPodLimitsForDownwardAPI); the machine's
  // while there is no Node (standalone).
  const nodeAllocatableForPods = (): NodeAllocatable | undefined => {
    const a = nodeAnyWayForDownwardAPI()?.status?.allocatable;
    return a?.cpu && a.memory
      ? { cpu: a.cpu, memory: a.memory, 'ephemeral-storage': a['ephemeral-storage'] }
      : undefined;
  };
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
  // Volumes set up by an earlier run are read back from disk (at its start) before any pod syncs.
  const volumeManager = new VolumeManagerImpl({
    csiDrivers,
    rootDir: flags.rootDirectory,
    nodeName,
    clock,
    client: cluster?.kubeClient,
    recorder,
    nodeLabels: () => cluster?.nodeReflector.get(undefined, nodeName)?.metadata.labels,
    hostIPs: ips,
    nodeAllocatable: nodeAllocatableForPods,
    // configMaps and secrets are re-read at most once per sync period, as a pod's periodic sync does upstream.
    objectCacheTtlMs: config.syncFrequencyMs,
    ...(opts.makeRootDirShared === false ? { makeRootDirShared: false } : {}),
  });
  // Device plugins register on <root-dir>/device-plugins/kubelet.sock (upstream: /var/lib/kubelet/device-plugins).
  const deviceManager = new DeviceManager({
    socketDir: path.join(flags.rootDirectory, DEVICE_PLUGINS_DIR_NAME),
    clock,
  });
  // A device plugin may also join through plugins_registry, as upstream's watcher allows.
  pluginManager.addHandler(PluginType.DevicePlugin, deviceManager.pluginWatcherHandler());
  // Pull progress from containerd's content store, on the runtime's own socket and namespace.
  const contentStatuses = new ContentStatusClient(config.containerRuntimeEndpoint, K8S_NAMESPACE);
  const pullProgress = new PullProgressTracker({
    listStatuses: (o) => contentStatuses.listStatuses(o),
    clock,
  });
  // Upstream makes one only with an API client: standalone pods' runtimeClassName is not looked up.
  const runtimeClassManager = cluster ? new RuntimeClassManager(cluster.kubeClient, clock) : undefined;
  const maxParallelPodStarts =
    flags.maxParallelPodStarts ?? defaultMaxParallelPodStarts(os.availableParallelism());
  const runtime = new KubeGenericRuntimeManager({
    runtimeClassManager,
    runtimeService: criRuntime,
    imageService: criImages,
    runtimeName,
    clock,
    rootDir: flags.rootDirectory,
    podLogsDir: config.podLogsDir,
    nodeName,
    nodeIPs: ips,
    resolvConf: config.resolvConf,
    clusterDNS: config.clusterDNS,
    clusterDomain: config.clusterDomain,
    cgroupParent: (pod) => containerManager.podCgroupParent(pod),
    cpuCFSQuota: config.cpuCFSQuota,
    cpuCFSQuotaPeriodUs: config.cpuCFSQuotaPeriodMs * 1000,
    podInfraContainerImage: flags.podInfraContainerImage,
    probeResults: prober.runtimeProbeResults,
    recorder,
    kubernetesVersion: KUBERNETES_VERSION,
    seccompDefault: config.seccompDefault,
    serializeImagePulls: config.serializeImagePulls,
    pullObserver: pullProgress,
    pullingTimeRecorder: podStartupLatency,
    maxParallelImagePulls: config.maxParallelImagePulls,
    registryPullQPS: config.registryPullQPS,
    registryBurst: config.registryBurst,
    envSources: apiSources,
    pullSecrets: apiSources,
    podStartSlots: maxParallelPodStarts > 0 ? new PodStartSlots(maxParallelPodStarts, clock) : undefined,
    metrics: kubeletMetrics,
    nodeAllocatable: nodeAllocatableForPods,
    volumeMounts: (pod, container, podIPs) => volumeManager.getMounts(pod, container, podIPs),
    deviceRunContainerOptions: (pod, container) => deviceManager.getDeviceRunContainerOptions(pod, container),
  });
  // Read at scrape time only, once the PLEG below exists.
  const plegHooks = registerPlegMetrics(kubeletMetrics, () => pleg.metrics());
  const genericPleg = new GenericPLEG({
    runtime,
    cache: podCache,
    clock,
    onRelist: plegHooks.onRelist,
    onRelistStart: plegHooks.onRelistStart,
  });
  // EventedPLEG is on by default with containerd, whose task events on the same socket it reads
  // (docs/architecture.md, "Where tskubelet chooses differently"); other runtimes only relist.
  const pleg: PodLifecycleEventGenerator =
    runtimeName === 'containerd' && (config.featureGates.EventedPLEG ?? true)
      ? new EventedPLEG({
          generic: genericPleg,
          clock,
          subscribe: (onEvent, s, hooks) =>
            subscribeTaskEvents(config.containerRuntimeEndpoint, K8S_NAMESPACE, [], onEvent, s, {
              ...hooks,
              clock,
            }),
        })
      : genericPleg;
  const workQueue = new BasicWorkQueue(clock);
  const podConfig = new PodConfig({
    clock,
    observePodOnWatch: (pod, whenMs) => podStartupLatency.observedPodOnWatch(pod, whenMs),
  });
  const apiSource = cluster
    ? new ApiSource({
        client: cluster.kubeClient,
        nodeName,
        send: podConfig.channel('api'),
        clock,
        nodeHasSynced: () => cluster.nodeReflector.hasSynced(),
      })
    : undefined;
  late.apiSource = apiSource;
  const statusManager = new LocalStatusManager({ clock, sink: cluster?.statusSink });
  // Admission reads the node (upstream: getNodeAnyWay): the node informer's copy in cluster mode, and
  // until it has one (or without an API server) the node this kubelet would register.
  let initialNode: Node | undefined;
  try {
    initialNode = await readInitialNode(
      {
        nodeName,
        config,
        flags,
        clock,
        kubeletVersion: KUBELET_VERSION,
        runtimeService: criRuntime,
        imageService: criImages,
        runtimeName,
      },
      signal,
    );
  } catch (err) {
    signal.throwIfAborted();
    log.error('Unable to construct v1.Node object for kubelet', { err: errorMessage(err) });
  }
  const apiNode = cluster ? () => cluster.nodeReflector.get(undefined, nodeName) : undefined;
  const mirrorPods =
    cluster && apiNode
      ? new MirrorPods({
          client: new ApiMirrorClient({ client: cluster.kubeClient, nodeName, getNode: apiNode }),
          getNode: apiNode,
        })
      : undefined;
  // Standalone, the node is the one this kubelet would register, with the device plugins' resources
  // as they are now (upstream's initialNode asks the device manager each time).
  const getNode = cluster
    ? nodeAnyWay(apiNode, initialNode)
    : () => initialNode && withDevicePluginResources(initialNode, deviceManager.getCapacity());
  nodeAnyWayForDownwardAPI = getNode;

  // The resource plane: volume usage walked in the background (upstream fsResourceAnalyzer), the
  // stats provider over CRI, cgroups and statfs, and the eviction manager that reads it.
  const fsResourceAnalyzer = new FsResourceAnalyzer({
    rootDir: flags.rootDirectory,
    clock,
    periodMs: config.volumeStatsAggPeriodMs,
    pods: () => kubelet.getActivePods(),
  });
  const cgroupStats = await detectCgroupSubsystems(realCgroupFs()).then(
    (subsystems) => new CgroupStatsReader(realCgroupFs(), subsystems),
    (err: unknown) => {
      log.warn('Unable to read cgroups: pod stats are the sums of their containers', {
        err: errorMessage(err),
      });
      return undefined;
    },
  );
  const statsProvider = new StatsProvider({
    runtime: criRuntime,
    images: criImages,
    clock,
    nodeName,
    rootDir: flags.rootDirectory,
    podLogsDir: config.podLogsDir,
    runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
    pods: () => kubelet.getActivePods(),
    fsResourceAnalyzer,
    cgroups: cgroupStats,
    podCgroupPath: (pod) =>
      containerManager.status().cgroupsPerQOS ? containerManager.podCgroupParent(pod) : undefined,
    podsCgroupPath: () => containerManager.status().nodeAllocatableCgroup,
  });
  const imageGCManager = new ImageGCManager({
    runtimeService: criRuntime,
    imageService: criImages,
    imageFsStats: () => statsProvider.imageFsStats(),
    sandboxImage: flags.podInfraContainerImage,
    policy: {
      highThresholdPercent: config.imageGCHighThresholdPercent,
      lowThresholdPercent: config.imageGCLowThresholdPercent,
      minAgeMs: config.imageMinimumGCAgeMs,
      maxAgeMs: config.imageMaximumGCAgeMs,
    },
    clock,
    nodeName,
    recorder,
    runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
  });
  const evictionManager = new EvictionManager({
    nodeName,
    thresholds: parseThresholdConfig(config),
    pressureTransitionPeriodMs: config.evictionPressureTransitionPeriodMs,
    maxPodGracePeriodSeconds: config.evictionMaxPodGracePeriod,
    clock,
    summaryProvider: statsProvider,
    hasDedicatedImageFs: () => statsProvider.hasDedicatedImageFs(),
    activePods: () => kubelet.getActivePods(),
    killPod: (pod, grace, statusFn) => kubelet.killPodNow(pod, grace, statusFn),
    // Upstream podResourcesAreReclaimed: no container may still run, and every volume is torn down.
    podCleanedUp: (pod) =>
      !kubelet.podCouldHaveRunningContainers(pod.metadata.uid ?? '') &&
      !volumeManager.podHasMountedVolumes(pod.metadata.uid ?? ''),
    recorder,
    reclaimers: {
      deleteAllUnusedContainers: () => kubelet.deleteAllUnusedContainers(),
      deleteUnusedImages: () => imageGCManager.deleteUnusedImages(),
    },
    metrics: kubeletMetrics,
  });
  const containerLogManager = new ContainerLogManager({
    runtimeService: criRuntime,
    clock,
    policy: { maxSizeBytes: config.containerLogMaxSizeBytes, maxFiles: config.containerLogMaxFiles },
    maxWorkers: config.containerLogMaxWorkers,
    monitorIntervalMs: config.containerLogMonitorIntervalMs,
    runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
  });

  // Graceful node shutdown (upstream: nodeshutdown.NewManager); undefined when it is off.
  const shutdownManager = newShutdownManager({
    featureGates: config.featureGates,
    shutdownGracePeriodMs: config.shutdownGracePeriodMs,
    shutdownGracePeriodCriticalPodsMs: config.shutdownGracePeriodCriticalPodsMs,
    shutdownGracePeriodByPodPriority: config.shutdownGracePeriodByPodPriority,
    stateDirectory: flags.rootDirectory,
    clock,
    getPods: () => kubelet.getActivePods(),
    // Upstream's killPodNow with isEvicted false.
    killPod: (pod, grace, statusFn) => kubelet.killPodNow(pod, grace, statusFn, false),
    // Called on a shutdown event, long after clusterNode (below) exists.
    syncNodeStatus: () => {
      if (clusterNode) void clusterNode.nodeStatus.syncNow();
    },
    recordNodeEvent: cluster
      ? (type, reason, message) => cluster.recorder.eventFor(nodeRef(nodeName), type, reason, message)
      : undefined,
    metrics: kubeletMetrics,
  });

  const kubelet: Kubelet = new Kubelet({
    evictionAdmit: (pod) => evictionManager.admit(pod),
    ...(shutdownManager ? { shutdownAdmit: (pod: Pod) => shutdownManager.admit(pod) } : {}),
    deviceAdmission: deviceManager,
    nodeName,
    rootDir: flags.rootDirectory,
    getNode,
    mirrorPods,
    recorder,
    // The node's runtime state is kept in cluster mode (made below, read only once pods sync).
    networkErrors: () => clusterNode?.runtimeState.networkErrors() ?? [],
    sysctlAllowlist,
    clock,
    runtime,
    podConfig,
    podCache,
    pleg,
    workQueue,
    statusManager,
    // Upstream fills hostIP/hostIPs in pod status only when it has an API client.
    statusHostIPs: cluster ? ips : undefined,
    containerManager,
    prober,
    metrics: kubeletMetrics,
    podStartupLatency,
    volumeManager,
    podWorkers: () => podWorkers,
  });
  const podWorkers = new PodWorkersImpl({
    syncer: kubelet,
    podCache,
    workQueue,
    clock,
    resyncIntervalMs: config.syncFrequencyMs,
    metrics: kubeletMetrics,
  });
  late.kubelet = kubelet;
  late.podWorkers = podWorkers;

  const fileSource =
    config.staticPodPath !== ''
      ? new FileSource({
          path: config.staticPodPath,
          nodeName,
          periodMs: config.fileCheckFrequencyMs,
          send: podConfig.channel('file'),
          clock,
          recorder,
        })
      : undefined;
  const httpSource =
    config.staticPodURL !== ''
      ? new HttpSource({
          url: config.staticPodURL,
          headers: config.staticPodURLHeader,
          nodeName,
          periodMs: config.httpCheckFrequencyMs,
          send: podConfig.channel('http'),
          clock,
        })
      : undefined;
  if (!apiSource && !fileSource && !httpSource)
    log.warn('No pod sources configured: set staticPodPath (--pod-manifest-path) or staticPodURL');

  const clusterNode =
    cluster &&
    new ClusterNode({
      nodeName,
      config,
      flags,
      client: cluster.heartbeatClient,
      clock,
      recorder,
      nodeLister: () => cluster.nodeReflector.get(undefined, nodeName),
      kubeletVersion: KUBELET_VERSION,
      runtimeService: criRuntime,
      imageService: criImages,
      runtimeName,
      plegHealth: () => pleg.healthy(),
      pressure: {
        memory: () => evictionManager.isUnderMemoryPressure(),
        disk: () => evictionManager.isUnderDiskPressure(),
        pid: () => evictionManager.isUnderPIDPressure(),
      },
      onRepeatedHeartbeatFailure: () => cluster.heartbeatClient.close(),
      otherErrors: () => {
        const shuttingDown = shutdownManager?.shutdownStatus();
        return shuttingDown ? [shuttingDown] : [];
      },
      devicePluginCapacity: () => deviceManager.getCapacity(),
    });
  const podResourcesServer = new PodResourcesServer({
    socketDir: path.join(flags.rootDirectory, POD_RESOURCES_DIR_NAME),
    clock,
    pods: {
      getPods: () => kubelet.podManager.getPods(),
      getPodByName: (namespace, name) => kubelet.podManager.getPodByFullName(`${name}_${namespace}`),
    },
    devices: deviceManager,
    getEnabled: config.featureGates.KubeletPodResourcesGet ?? false,
  });

  // The kubelet API (upstream ListenAndServeKubeletServer) and the read-only port, sharing one /metrics.
  const probeMetrics = new MetricsRegistry();
  probeMetrics.addCollector(() => {
    const snapshot = prober.metricsSnapshot();
    return [
      { ...snapshot, samples: snapshot.samples.map((s) => ({ labels: { ...s.labels }, value: s.value })) },
    ];
  });
  addRuntimeStateMetrics(kubeletMetrics, criRuntime, config.runtimeRequestTimeoutMs);
  const machineInfo = await readMachineInfo();
  const apiHost: KubeletServerHost = {
    ...boot.host,
    runtime: criRuntime,
    metrics: kubeletMetrics,
    probeMetrics,
    configz: () => config,
    statsProvider,
    cadvisor: {
      stats: statsProvider,
      listContainers: (signal) =>
        criRuntime.listContainers({}, { timeoutMs: config.runtimeRequestTimeoutMs, signal }),
      listPodSandbox: (signal) =>
        criRuntime.listPodSandbox({}, { timeoutMs: config.runtimeRequestTimeoutMs, signal }),
      podCgroupPath: (uid) => {
        if (!containerManager.status().cgroupsPerQOS) return undefined;
        const pod = kubelet.getActivePods().find((p) => p.metadata.uid === uid);
        return pod && containerManager.podCgroupParent(pod);
      },
      cgroupDriver: containerManager.status().cgroupDriver,
      machine: () => machineInfo,
      nowMs: () => clock.now(),
    },
  };
  const apiPoster: ApiPoster | undefined = cluster && {
    post: async (path, body, s) =>
      mustSucceed(
        await cluster.kubeClient.call({ method: 'POST', path, body }, { signal: s }),
        `POST ${path}`,
      ),
  };

  // The node page (/node/ on the loopback /healthz listener and the authenticated kubelet API).
  const nodePageSource: NodePageSource = {
    nodeName,
    kubeletVersion: KUBELET_VERSION,
    runtime: { name: runtimeName, version: connection.version.runtimeVersion },
    startedAtMs: clock.now() - process.uptime() * 1000,
    now: () => clock.now(),
    pods: () => kubelet.getPods(),
    node: () => getNode(),
    pleg: () => pleg.healthy(),
    pressure: () => ({
      memory: evictionManager.isUnderMemoryPressure(),
      disk: evictionManager.isUnderDiskPressure(),
      pid: evictionManager.isUnderPIDPressure(),
    }),
    summary: (s) => statsProvider.getSummary(s),
    probe: (uid, name, kind) => prober.getWorker(uid, name, kind)?.status,
    backoffDelayMs: (pod, container) => kubelet.backoff.get(getStableKey(pod, container)),
    events: boot.eventStore,
    pulls: pullProgress,
  };
  const nodePageFeed = new NodePageFeed(nodePageSource, { clock });
  late.nodePage = nodePageHandler({
    source: nodePageSource,
    feed: nodePageFeed,
    logs: podLogReader({
      runtime: criRuntime,
      getPod: (ns, name) =>
        kubelet.getPods().find((p) => p.metadata.namespace === ns && p.metadata.name === name),
      clock,
      runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
    }),
  });

  // The start order; the runner stops them in reverse.
  const components: (Component | false | undefined)[] = [
    asComponent('containermanager', {
      start: () => containerManager.start(() => kubelet.getActivePods()),
      stop: () => containerManager.stop(),
      detail: () => ({ ...containerManager.status() }),
    }),
    asComponent('volumemanager', { start: () => volumeManager.start(), stop: () => volumeManager.stop() }),
    // Before the sync loop: allocations come back from the checkpoint before any pod is admitted.
    asComponent('devicemanager', {
      start: () =>
        deviceManager.start(
          () => kubelet.getActivePods(),
          () => kubelet.allSourcesReady(),
        ),
      stop: () => deviceManager.stop(),
    }),
    asComponent('podresources', {
      start: () => podResourcesServer.start(),
      stop: () => podResourcesServer.stop(),
    }),
    asComponent('pluginmanager', {
      start: () => pluginManager.start(),
      stop: () => pluginManager.stop(),
      detail: () => pluginManager.status(),
    }),
    cluster &&
      asComponent('statusmanager', {
        start: () => cluster.statusSink.start(),
        stop: () => cluster.statusSink.stop(),
      }),
    runtimeClassManager &&
      loopComponent('runtimeclassmanager', (s) => runtimeClassManager.run(s), {
        detail: () => ({ ...runtimeClassManager.status() }),
      }),
    cluster &&
      loopComponent('nodeinformer', (s) => cluster.nodeReflector.run(s), {
        detail: () => ({ ...cluster.nodeReflector.status() }),
      }),
    // ClusterNode starts the runtime-up loop, node status and the Lease side by side; listed apart,
    // the Lease stops first (its start here finds it running).
    clusterNode &&
      asComponent('nodestatus', { start: () => clusterNode.start(), stop: () => clusterNode.stop() }),
    clusterNode &&
      asComponent('nodelease', {
        start: () => clusterNode.lease.start(),
        stop: () => clusterNode.lease.stop(),
        detail: () => ({ renewals: clusterNode.lease.renewCount }),
      }),
    // SystemOOM events on the node from the kernel log (upstream starts its OOM watcher with the runtime).
    cluster &&
      loopComponent('oomwatcher', (s) =>
        runOomWatcher(
          {
            nodeRef: nodeRef(nodeName),
            recordEvent: (ref, type, reason, message) =>
              cluster.recorder.eventFor(ref, type, reason, message),
            clock,
          },
          s,
        ),
      ),
    asComponent('prober', { stop: () => prober.stop() }),
    asComponent('podworkers', { stop: () => podWorkers.stop() }),
    asComponent('pleg', {
      start: () => pleg.start(),
      stop: () => pleg.stop(),
      detail: () => ({
        healthy: pleg.healthy().healthy,
        // Whether containerd's task events drive it, and whether their stream is open now.
        evented: pleg instanceof EventedPLEG,
        ...(pleg instanceof EventedPLEG ? { subscribed: pleg.metrics().subscribed } : {}),
      }),
    }),
    // The sync loop stops its inputs first, then the PLEG and the pod workers it drives.
    asComponent('syncloop', { start: () => kubelet.start(), stop: () => kubelet.stop() }),
    // Not critical: without logind (containers, CI) the kubelet says so once and goes on (upstream).
    shutdownManager &&
      asComponent('nodeshutdownmanager', {
        start: () =>
          shutdownManager
            .start()
            .catch((err: unknown) =>
              log.error('Failed to start node shutdown manager', { err: errorMessage(err) }),
            ),
        stop: () => shutdownManager.stop(),
        detail: () => ({ shuttingDown: shutdownManager.shuttingDown }),
      }),
    asComponent('fsresourceanalyzer', {
      start: () => fsResourceAnalyzer.start(),
      stop: () => fsResourceAnalyzer.stop(),
    }),
    // Upstream: imageGCHighThresholdPercent 100 disables image garbage collection (not the eviction's reclaim).
    config.imageGCHighThresholdPercent < 100 &&
      asComponent('imagegcmanager', {
        start: () => imageGCManager.start(),
        stop: () => imageGCManager.stop(),
      }),
    asComponent('pullprogress', {
      stop: () => {
        pullProgress.stop();
        contentStatuses.close();
      },
    }),
    asComponent('evictionmanager', {
      start: () => evictionManager.start(),
      stop: () => evictionManager.stop(),
    }),
    asComponent('containerlogmanager', {
      start: () => containerLogManager.start(),
      stop: () => containerLogManager.stop(),
    }),
    asComponent('podconfig', { stop: () => podConfig.stop() }),
    heapTrimComponent(),
    asComponent('nodepage', {
      stop: () => nodePageFeed.stop(),
      detail: () => ({ pages: nodePageFeed.subscribers }),
    }),
    apiSource &&
      asComponent('apisource', {
        start: () => apiSource.start(),
        stop: () => apiSource.stop(),
        detail: () => ({ ...apiSource.status() }),
      }),
    fileSource &&
      asComponent('filesource', { start: () => fileSource.start(), stop: () => fileSource.stop() }),
    httpSource &&
      asComponent('httpsource', { start: () => httpSource.start(), stop: () => httpSource.stop() }),
    // Upstream exits when it cannot serve the API. Standalone with a config file's defaults (webhook
    // authentication and authorization, but no API client) could then never start, so this is optional.
    config.enableServer &&
      !boot.certificates?.servingCertificates &&
      serverComponent(
        'kubeletserver',
        () =>
          startKubeletServer(apiHost, {
            config,
            nodeName,
            certDirectory: flags.certDirectory,
            apiPoster,
            nodeLogsSymlinkRoots: [config.podLogsDir],
          }),
        true,
      ),
    // serverTLSBootstrap: served once the first serving certificate is issued, then swapped as it rotates.
    config.enableServer &&
      boot.certificates?.servingCertificates &&
      servedWhenIssued(boot.certificates, (servingCertificate) =>
        startKubeletServer(apiHost, {
          config,
          nodeName,
          certDirectory: flags.certDirectory,
          apiPoster,
          nodeLogsSymlinkRoots: [config.podLogsDir],
          servingCertificate,
        }),
      ),
    config.readOnlyPort > 0 &&
      serverComponent('readonlyserver', () =>
        startKubeletReadOnlyServer(apiHost, { address: config.address, port: config.readOnlyPort, nodeName }),
      ),
  ];
  return { components: components.filter((c): c is Component => !!c), kubelet, pulls: pullProgress };
}
