/**
 * The entry point: configuration, wiring, start and stop order, signals.
 *
 * Start order: /healthz first (so a supervisor sees the process alive while the runtime is away),
 * then the runtime connection (retried with back-off until it answers), then the managers, the
 * sources and the sync loop, and last the read-only server.
 * Stop order (SIGTERM/SIGINT): the sources, the sync loop and its workers, then the servers, then
 * the runtime connection. Pods keep running, as upstream: a restarted kubelet adopts them.
 * A second signal exits at once.
 */
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import { createContainerManager, type ContainerManager } from '../cm/container-manager.js';
import { PodConfig } from '../config/pod-config.js';
import { FileSource } from '../config/file-source.js';
import { HttpSource } from '../config/http-source.js';
import { ApiSource } from '../config/api-source.js';
import { connectRuntime, type RuntimeConnection } from '../cri/connect-runtime.js';
import { instrumentCri } from '../cri/instrumented-runtime.js';
import { nodeAnyWay, readInitialNode } from '../kubelet/admission.js';
import { Kubelet } from '../kubelet/kubelet.js';
import { ClusterNode } from '../nodestatus/cluster-node.js';
import { KubeGenericRuntimeManager } from '../kuberuntime/runtime-manager.js';
import { SysctlAllowlist } from '../kubelet/sysctl-allowlist.js';
import { mustSucceed } from '../k8s/api-status.js';
import { realClock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger, setVerbosity } from '../lib/log.js';
import { MetricsRegistry } from '../lib/metrics.js';
import { GenericPLEG } from '../pleg/generic-pleg.js';
import { InMemoryPodCache } from '../pleg/pod-cache.js';
import type { Node } from '../nodestatus/types.js';
import { ApiMirrorClient } from '../pod/mirror-client.js';
import { MirrorPods } from '../pod/mirror-pods.js';
import { PodWorkersImpl, type PodWorkers } from '../podworkers/pod-workers.js';
import { BasicWorkQueue } from '../podworkers/work-queue.js';
import { podCacheContainerStatus } from '../prober/pod-cache-container-status.js';
import { ProberManager } from '../prober/prober-manager.js';
import type { ApiPoster } from '../server/delegated-auth.js';
import type { HealthCheck } from '../server/healthz.js';
import {
  startKubeletReadOnlyServer,
  startKubeletServer,
  type KubeletServerHost,
} from '../server/kubelet-server.js';
import { startLocalServer, type LocalServer, type ServerHost } from '../server/local-server.js';
import { addRuntimeStateMetrics } from '../server/runtime-state-metrics.js';
import { LocalStatusManager } from '../status/status-manager.js';
import { apiEnvSources } from './api-env-sources.js';
import { VolumeManagerImpl } from '../volume/volume-manager.js';
import { createClusterClients } from './cluster-clients.js';
import { loadKubeletConfig, type LoadedKubeletConfig } from './load-kubelet-config.js';
import { KUBELET_VERSION, KUBERNETES_VERSION } from './version.js';

const log = logger('kubelet');

/** Where upstream keeps `<pod>_<ns>_<container>-<id>.log` symlinks for log shippers. */
const LEGACY_CONTAINER_LOGS_DIR = '/var/log/containers';

type RunConfig = Extract<LoadedKubeletConfig, { action: 'run' }>;

/** Runs the kubelet until a signal stops it; exits the process with the right code. */
export async function main(argv: string[]): Promise<void> {
  let loaded: LoadedKubeletConfig;
  try {
    loaded = await loadKubeletConfig(argv);
  } catch (err) {
    process.stderr.write(`tskubelet: ${errorMessage(err)}\nRun 'tskubelet --help' for the flags.\n`);
    process.exit(1);
  }
  if (loaded.action !== 'run') {
    process.stdout.write(loaded.text);
    process.exit(0);
  }
  try {
    await run(loaded);
  } catch (err) {
    log.error('Kubelet failed', { err: errorMessage(err) });
    process.exit(1);
  }
}

/** The node's IPs: --node-ip when given, else the first non-loopback IPv4 address (upstream picks the default route's). */
function nodeIPs(flag: string): string[] {
  if (flag !== '') return flag.split(',').map((s) => s.trim());
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return [a.address];
  }
  return ['127.0.0.1'];
}

async function run(loaded: RunConfig): Promise<void> {
  const { config, flags, nodeName } = loaded;
  setVerbosity(config.logging.verbosity);
  log.info('Starting tskubelet', {
    version: KUBELET_VERSION,
    nodeName,
    configFile: loaded.configFile || undefined,
  });

  const stopController = new AbortController();
  const clock = realClock;
  let runtimeConnection: RuntimeConnection | undefined;
  // Set once the runtime answers; the servers and the signal handler read it before then too.
  const started: {
    kubelet?: Kubelet;
    clusterNode?: ClusterNode;
    containerManager?: ContainerManager;
    volumeManager?: VolumeManagerImpl;
  } = {};
  const servers: LocalServer[] = [];
  const sources: { start(): void; stop(): void }[] = [];

  // Cluster mode: the API clients and what rides on them. The API pod source comes later, with PodConfig.
  let apiSource: ApiSource | undefined;
  const cluster =
    flags.kubeConfig !== ''
      ? await createClusterClients(flags.kubeConfig, config, nodeName, clock, (ns, name) =>
          apiSource?.getPod(ns, name),
        )
      : undefined;

  // Until the kubelet exists, /healthz answers for the process alone, plus "the runtime is not reachable yet".
  const runtimeCheck: HealthCheck = {
    name: 'runtime',
    check: () => (runtimeConnection ? undefined : 'container runtime not connected yet'),
  };
  const host: ServerHost = {
    getPods: () => started.kubelet?.getPods() ?? [],
    getRunningPods: async () => (started.kubelet ? started.kubelet.getRunningPods() : []),
    healthChecks: () => started.kubelet?.healthChecks() ?? [runtimeCheck],
  };
  if (config.healthzPort > 0) {
    servers.push(
      await startLocalServer(host, {
        address: config.healthzBindAddress,
        port: config.healthzPort,
        readOnly: false,
      }),
    );
  }

  let stopping: Promise<void> | undefined;
  const shutdown = (signal: string) => {
    if (stopping) {
      log.warn('Second signal: exiting now', { signal });
      process.exit(1);
    }
    log.info('Shutting down', { signal });
    stopping = (async () => {
      stopController.abort(new Error(`received ${signal}`));
      sources.forEach((s) => s.stop());
      await started.clusterNode?.stop();
      await started.kubelet?.stop();
      await started.volumeManager?.stop();
      started.containerManager?.stop();
      await cluster?.close();
      await Promise.all(servers.map((s) => s.close()));
      runtimeConnection?.close();
    })();
    stopping.then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('Shutdown failed', { err: errorMessage(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  try {
    runtimeConnection = await connectRuntime(config.containerRuntimeEndpoint, {
      imageEndpoint: config.imageServiceEndpoint,
      runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
      signal: stopController.signal,
      clock,
    });
  } catch (err) {
    if (stopController.signal.aborted) return;
    throw err;
  }

  // Every CRI call the kubelet makes is counted and timed (kubelet_runtime_operations_*).
  const kubeletMetrics = new MetricsRegistry();
  const criRuntime = instrumentCri(runtimeConnection.runtime, kubeletMetrics);
  const criImages = instrumentCri(runtimeConnection.images, kubeletMetrics);
  const relistDuration = kubeletMetrics.histogram(
    'kubelet_pleg_relist_duration_seconds',
    '[ALPHA] Duration in seconds for relisting pods in PLEG.',
  );

  // Upstream makes these at start: the pod log folder and the legacy /var/log/containers symlink folder.
  await mkdir(config.podLogsDir, { recursive: true });
  await mkdir(LEGACY_CONTAINER_LOGS_DIR, { recursive: true });
  const ips = nodeIPs(flags.nodeIP);
  const containerManager = await createContainerManager({ config, clock });
  started.containerManager = containerManager;
  const podCache = new InMemoryPodCache();
  const prober = new ProberManager({
    runtimeService: criRuntime,
    getContainerStatus: podCacheContainerStatus(podCache),
    kubernetesVersion: KUBERNETES_VERSION,
    // Unhealthy and ProbeWarning events reach the API server, as every other pod event does.
    recorder: cluster?.recorder,
    clock,
  });
  // Refused at start, as upstream refuses to start with a sysctl it cannot allow.
  const sysctlAllowlist = SysctlAllowlist.forNode(config.allowedUnsafeSysctls);
  const apiSources = cluster ? apiEnvSources(cluster.kubeClient) : undefined;
  // The node admission reads, set below; no container starts before it is.
  let nodeAnyWayForDownwardAPI: () => Node | undefined = () => undefined;
  // Volumes set up by an earlier run are read back from disk before any pod syncs.
  const volumeManager = new VolumeManagerImpl({
    rootDir: flags.rootDirectory,
    nodeName,
    clock,
    client: cluster?.kubeClient,
    recorder: cluster?.recorder,
    nodeLabels: () => cluster?.nodeReflector.get(undefined, nodeName)?.metadata.labels,
    hostIPs: ips,
    // configMaps and secrets are re-read at most once per sync period, as a pod's periodic sync does upstream.
    objectCacheTtlMs: config.syncFrequencyMs,
  });
  await volumeManager.start();
  started.volumeManager = volumeManager;
  const runtime = new KubeGenericRuntimeManager({
    runtimeService: criRuntime,
    imageService: criImages,
    runtimeName: runtimeConnection.version.runtimeName,
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
    recorder: cluster?.recorder,
    kubernetesVersion: KUBERNETES_VERSION,
    seccompDefault: config.seccompDefault,
    serializeImagePulls: config.serializeImagePulls,
    maxParallelImagePulls: config.maxParallelImagePulls,
    registryPullQPS: config.registryPullQPS,
    registryBurst: config.registryBurst,
    envSources: apiSources,
    pullSecrets: apiSources,
    // A container without limits sees the node's allocatable (upstream defaultPodLimitsForDownwardAPI).
    nodeAllocatable: () => {
      const a = nodeAnyWayForDownwardAPI()?.status?.allocatable;
      return a?.cpu && a.memory
        ? { cpu: a.cpu, memory: a.memory, 'ephemeral-storage': a['ephemeral-storage'] }
        : undefined;
    },
    volumeMounts: (pod, container, podIPs) => volumeManager.getMounts(pod, container, podIPs),
  });
  const pleg = new GenericPLEG({
    runtime,
    cache: podCache,
    clock,
    onRelist: (ms) => relistDuration.observe(undefined, ms / 1000),
  });
  const workQueue = new BasicWorkQueue(clock);
  const podConfig = new PodConfig({ clock });
  if (cluster) {
    apiSource = new ApiSource({
      client: cluster.kubeClient,
      nodeName,
      send: podConfig.channel('api'),
      clock,
      nodeHasSynced: () => cluster.nodeReflector.hasSynced(),
    });
    sources.push(apiSource);
  }
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
        runtimeName: runtimeConnection.version.runtimeName,
      },
      stopController.signal,
    );
  } catch (err) {
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
  const getNode = nodeAnyWay(apiNode, initialNode);
  nodeAnyWayForDownwardAPI = getNode;
  const kl: Kubelet = new Kubelet({
    nodeName,
    rootDir: flags.rootDirectory,
    getNode,
    mirrorPods,
    recorder: cluster?.recorder,
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
    volumeManager,
    podWorkers: (): PodWorkers =>
      new PodWorkersImpl({
        syncer: kl,
        podCache,
        workQueue,
        clock,
        resyncIntervalMs: config.syncFrequencyMs,
      }),
  });
  started.kubelet = kl;

  if (config.staticPodPath !== '') {
    const source = new FileSource({
      path: config.staticPodPath,
      nodeName,
      periodMs: config.fileCheckFrequencyMs,
      send: podConfig.channel('file'),
      clock,
    });
    sources.push(source);
  }
  if (config.staticPodURL !== '') {
    const source = new HttpSource({
      url: config.staticPodURL,
      headers: config.staticPodURLHeader,
      nodeName,
      periodMs: config.httpCheckFrequencyMs,
      send: podConfig.channel('http'),
      clock,
    });
    sources.push(source);
  }
  if (sources.length === 0)
    log.warn('No pod sources configured: set staticPodPath (--pod-manifest-path) or staticPodURL');

  await containerManager.start(() => kl.getActivePods());
  kl.start();

  if (cluster) {
    cluster.statusSink.start();
    void cluster.nodeReflector.run(stopController.signal);
    const heartbeatClient = cluster.heartbeatClient;
    started.clusterNode = new ClusterNode({
      nodeName,
      config,
      flags,
      client: heartbeatClient,
      clock,
      recorder: cluster.recorder,
      nodeLister: () => cluster.nodeReflector.get(undefined, nodeName),
      kubeletVersion: KUBELET_VERSION,
      runtimeService: criRuntime,
      imageService: criImages,
      runtimeName: runtimeConnection.version.runtimeName,
      plegHealth: () => pleg.healthy(),
      onRepeatedHeartbeatFailure: () => heartbeatClient.close(),
    });
    started.clusterNode.start();
  }
  for (const s of sources) s.start();

  // The kubelet API (upstream ListenAndServeKubeletServer) and the read-only port, sharing one /metrics.
  const probeMetrics = new MetricsRegistry();
  probeMetrics.addCollector(() => {
    const snapshot = prober.metricsSnapshot();
    return [
      { ...snapshot, samples: snapshot.samples.map((s) => ({ labels: { ...s.labels }, value: s.value })) },
    ];
  });
  addRuntimeStateMetrics(kubeletMetrics, criRuntime, config.runtimeRequestTimeoutMs);
  const apiHost: KubeletServerHost = {
    ...host,
    runtime: criRuntime,
    metrics: kubeletMetrics,
    probeMetrics,
    configz: () => config,
  };
  const apiPoster: ApiPoster | undefined = cluster && {
    post: async (path, body, signal) =>
      mustSucceed(await cluster.kubeClient.call({ method: 'POST', path, body }, { signal }), `POST ${path}`),
  };
  if (config.enableServer) {
    try {
      servers.push(
        await startKubeletServer(apiHost, {
          config,
          nodeName,
          certDirectory: flags.certDirectory,
          apiPoster,
          nodeLogsSymlinkRoots: [config.podLogsDir],
        }),
      );
    } catch (err) {
      // Upstream exits here. Standalone with a config file's defaults (webhook authentication and
      // authorization, but no API client) could then never start, so this runs on without the API.
      log.error('Unable to serve the kubelet API', { err: errorMessage(err) });
    }
  }
  if (config.readOnlyPort > 0) {
    servers.push(
      await startKubeletReadOnlyServer(apiHost, {
        address: config.address,
        port: config.readOnlyPort,
        nodeName,
      }),
    );
  }
  log.info('Kubelet started', { nodeName, pods: config.staticPodPath || undefined });
}
