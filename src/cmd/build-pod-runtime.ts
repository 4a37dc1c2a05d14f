/**
 * Step 3 of buildKubelet: what runs pods on the runtime and watches them there: the pod cache, the
 * prober, the runtime manager (kuberuntime) with its image pulls, and the PLEG.
 */
import os from 'node:os';
import { ContentStatusClient } from '../cri/containerd-content/list-ingest-statuses.js';
import { K8S_NAMESPACE, subscribeTaskEvents } from '../cri/containerd-events/subscribe-task-events.js';
import { createPluginProviders, pluginMetrics } from '../credentialprovider/register-plugins.js';
import { PullProgressTracker } from '../images/pull-progress.js';
import { defaultMaxParallelPodStarts, PodStartSlots } from '../kuberuntime/pod-start-slots.js';
import { KubeGenericRuntimeManager } from '../kuberuntime/runtime-manager.js';
import { EventedPLEG } from '../pleg/evented-pleg.js';
import { GenericPLEG, type PodLifecycleEventGenerator } from '../pleg/generic-pleg.js';
import { registerPlegMetrics } from '../pleg/pleg-metrics.js';
import { InMemoryPodCache } from '../pleg/pod-cache.js';
import { podCacheContainerStatus } from '../prober/pod-cache-container-status.js';
import { ProberManager } from '../prober/prober-manager.js';
import { apiEnvSources } from './api-env-sources.js';
import type { BuildContext } from './build-context.js';
import type { NodeManagers } from './build-node-managers.js';
import type { RuntimeClients } from './build-runtime-clients.js';
import { LateBound } from './late-bound.js';
import { KUBERNETES_VERSION } from './version.js';

/** A sync this soon after the pod's last one asks the PLEG for a relist (see the pod cache below). */
const PROMPT_RELIST_WINDOW_MS = 2000;

export interface PodRuntime {
  readonly podCache: InMemoryPodCache;
  readonly prober: ProberManager;
  readonly runtime: KubeGenericRuntimeManager;
  readonly pleg: PodLifecycleEventGenerator;
  /** The image pulls running and recently finished (the node page reads it). */
  readonly pullProgress: PullProgressTracker;
  /** containerd's content store client that pullProgress reads; closed with it. */
  readonly contentStatuses: ContentStatusClient;
}

export function buildPodRuntime(ctx: BuildContext, clients: RuntimeClients, node: NodeManagers): PodRuntime {
  const { config, clock } = ctx;
  // The cache is the PLEG's own input, so the PLEG is made after it; the cache asks for a relist only
  // once a pod worker waits on it, after start.
  const plegRef = new LateBound<PodLifecycleEventGenerator>('the PLEG');
  // A worker that must wait for a newer reading soon after its last sync (it just started or
  // stopped containers, or an event woke it) asks for a relist: the wait lasts one relist, not up to
  // a relist period. A periodic resync, long after the last sync, waits for the next relist as
  // before: asking for one each time made the steady state relist every few seconds.
  const podCache = new InMemoryPodCache({
    onWait: (_uid, minTimeMs) => {
      if (clock.now() - minTimeMs < PROMPT_RELIST_WINDOW_MS) plegRef.get().requestRelist?.();
    },
  });
  const prober = new ProberManager({
    runtimeService: clients.runtime,
    getContainerStatus: podCacheContainerStatus(podCache),
    kubernetesVersion: KUBERNETES_VERSION,
    clock,
    // Unhealthy and ProbeWarning go to the API server as upstream's prober records them.
    recorder: ctx.recorder,
  });
  // Pull progress from containerd's content store, on the runtime's own socket and namespace.
  const contentStatuses = new ContentStatusClient(config.containerRuntimeEndpoint, K8S_NAMESPACE);
  const pullProgress = new PullProgressTracker({
    listStatuses: (o) => contentStatuses.listStatuses(o),
    clock,
  });
  const runtime = runtimeManager(ctx, clients, node, prober, pullProgress);
  const pleg = podLifecycleEventGenerator(ctx, clients, runtime, podCache, () => plegRef.get());
  plegRef.set(pleg);
  return { podCache, prober, runtime, pleg, pullProgress, contentStatuses };
}

function runtimeManager(
  { config, flags, nodeName, clock, cluster, recorder, ips, credentialProviders }: BuildContext,
  clients: RuntimeClients,
  node: NodeManagers,
  prober: ProberManager,
  pullProgress: PullProgressTracker,
): KubeGenericRuntimeManager {
  const apiSources = cluster ? apiEnvSources(cluster.kubeClient, cluster.serviceLister) : undefined;
  const maxParallelPodStarts =
    flags.maxParallelPodStarts ?? defaultMaxParallelPodStarts(os.availableParallelism());
  const { containerManager, volumeManager, deviceManager } = node;
  return new KubeGenericRuntimeManager({
    runtimeClassManager: node.runtimeClassManager,
    runtimeService: clients.runtime,
    imageService: clients.images,
    runtimeName: clients.runtimeName,
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
    swap: node.swap,
    podInfraContainerImage: flags.podInfraContainerImage,
    probeResults: prober.runtimeProbeResults,
    recorder,
    kubernetesVersion: KUBERNETES_VERSION,
    seccompDefault: config.seccompDefault,
    serializeImagePulls: config.serializeImagePulls,
    pullObserver: pullProgress,
    pullingTimeRecorder: clients.podStartupLatency,
    maxParallelImagePulls: config.maxParallelImagePulls,
    registryPullQPS: config.registryPullQPS,
    registryBurst: config.registryBurst,
    envSources: apiSources,
    pullSecrets: apiSources,
    credentialProviders:
      credentialProviders &&
      createPluginProviders(credentialProviders, { clock, observer: pluginMetrics(clients.metrics) }),
    podStartSlots: maxParallelPodStarts > 0 ? new PodStartSlots(maxParallelPodStarts, clock) : undefined,
    metrics: clients.metrics,
    nodeAllocatable: node.nodeAllocatableForPods,
    volumeMounts: (pod, container, podIPs) => volumeManager.getMounts(pod, container, podIPs),
    deviceRunContainerOptions: (pod, container) => deviceManager.getDeviceRunContainerOptions(pod, container),
    cpusetCpus: (pod, container) => node.cpuManager?.cpusetFor(pod.metadata.uid ?? '', container.name) ?? '',
    cpusetMems: (pod, container) => node.memoryManager.cpusetMemsFor(pod, container),
  });
}

/**
 * EventedPLEG is on by default with containerd, whose task events on the same socket it reads
 * (docs/architecture.md, "Where tskubelet chooses differently"); other runtimes only relist.
 * `self` is the PLEG returned here: its metrics are read at scrape time, once it exists.
 */
function podLifecycleEventGenerator(
  { config, clock }: BuildContext,
  clients: RuntimeClients,
  runtime: KubeGenericRuntimeManager,
  podCache: InMemoryPodCache,
  self: () => PodLifecycleEventGenerator,
): PodLifecycleEventGenerator {
  const plegHooks = registerPlegMetrics(clients.metrics, () => self().metrics());
  const genericPleg = new GenericPLEG({
    runtime,
    cache: podCache,
    clock,
    onRelist: plegHooks.onRelist,
    onRelistStart: plegHooks.onRelistStart,
  });
  if (!(clients.runtimeName === 'containerd' && (config.featureGates.EventedPLEG ?? true)))
    return genericPleg;
  return new EventedPLEG({
    generic: genericPleg,
    clock,
    subscribe: (onEvent, s, hooks) =>
      subscribeTaskEvents(config.containerRuntimeEndpoint, K8S_NAMESPACE, [], onEvent, s, {
        ...hooks,
        clock,
      }),
  });
}
