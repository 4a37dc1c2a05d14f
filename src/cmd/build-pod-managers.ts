/**
 * Step 6 of buildKubelet: the pod sources and the kubelet itself: PodConfig and its sources (API,
 * file, http), the status manager, mirror pods, the sync loop (Kubelet) and the pod workers.
 */
import type { Pod } from '../api/core-v1.js';
import { ApiSource } from '../config/api-source.js';
import { FileSource } from '../config/file-source.js';
import { HttpSource } from '../config/http-source.js';
import { PodConfig } from '../config/pod-config.js';
import { Kubelet } from '../kubelet/kubelet.js';
import { logger } from '../lib/log.js';
import { ApiMirrorClient } from '../pod/mirror-client.js';
import { MirrorPods } from '../pod/mirror-pods.js';
import { PodWorkersImpl } from '../podworkers/pod-workers.js';
import { BasicWorkQueue } from '../podworkers/work-queue.js';
import { LocalStatusManager } from '../status/status-manager.js';
import type { BuildContext } from './build-context.js';
import type { NodeManagers } from './build-node-managers.js';
import type { NodeStatus } from './build-node-status.js';
import type { PodRuntime } from './build-pod-runtime.js';
import type { ResourceManagers } from './build-resource-managers.js';
import type { RuntimeClients } from './build-runtime-clients.js';
import { LateBound } from './late-bound.js';

const log = logger('kubelet');

export interface PodManagers {
  readonly podConfig: PodConfig;
  readonly apiSource: ApiSource | undefined;
  readonly fileSource: FileSource | undefined;
  readonly httpSource: HttpSource | undefined;
  readonly kubelet: Kubelet;
  readonly podWorkers: PodWorkersImpl;
}

/** What buildPodManagers joins: every part made before it. */
export interface PodManagerInputs {
  readonly clients: RuntimeClients;
  readonly node: NodeManagers;
  readonly podRuntime: PodRuntime;
  readonly resources: ResourceManagers;
  readonly nodeStatus: NodeStatus;
}

export function buildPodManagers(ctx: BuildContext, parts: PodManagerInputs): PodManagers {
  const { config, nodeName, clock, cluster } = ctx;
  const podConfig = new PodConfig({
    clock,
    observePodOnWatch: (pod, whenMs) => parts.clients.podStartupLatency.observedPodOnWatch(pod, whenMs),
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
  const workQueue = new BasicWorkQueue(clock);
  // The kubelet drives the pod workers and they call back into it (its syncPod): the workers are
  // made second and handed to the kubelet when it starts.
  const podWorkersRef = new LateBound<PodWorkersImpl>('the pod workers');
  const kubelet = newKubelet(ctx, parts, podConfig, workQueue, () => podWorkersRef.get());
  const podWorkers = new PodWorkersImpl({
    syncer: kubelet,
    podCache: parts.podRuntime.podCache,
    workQueue,
    clock,
    resyncIntervalMs: config.syncFrequencyMs,
    metrics: parts.clients.metrics,
  });
  podWorkersRef.set(podWorkers);
  const { fileSource, httpSource } = staticPodSources(ctx, podConfig);
  if (!apiSource && !fileSource && !httpSource)
    log.warn('No pod sources configured: set staticPodPath (--pod-manifest-path) or staticPodURL');
  return { podConfig, apiSource, fileSource, httpSource, kubelet, podWorkers };
}

function newKubelet(
  ctx: BuildContext,
  { clients, node, podRuntime, resources, nodeStatus }: PodManagerInputs,
  podConfig: PodConfig,
  workQueue: BasicWorkQueue,
  podWorkers: () => PodWorkersImpl,
): Kubelet {
  const { flags, nodeName, clock, cluster, recorder } = ctx;
  const { shutdownManager, clusterNode } = nodeStatus;
  const mirrorPods =
    cluster && node.apiNode
      ? new MirrorPods({
          client: new ApiMirrorClient({ client: cluster.kubeClient, nodeName, getNode: node.apiNode }),
          getNode: node.apiNode,
        })
      : undefined;
  return new Kubelet({
    evictionAdmit: (pod) => resources.evictionManager.admit(pod),
    ...(shutdownManager ? { shutdownAdmit: (pod: Pod) => shutdownManager.admit(pod) } : {}),
    deviceAdmission: node.deviceManager,
    topologyAdmission: node.topologyManager,
    nodeName,
    rootDir: flags.rootDirectory,
    getNode: node.getNode,
    mirrorPods,
    recorder,
    // The node's runtime state is kept in cluster mode (read only once pods sync).
    networkErrors: () => clusterNode?.runtimeState.networkErrors() ?? [],
    sysctlAllowlist: node.sysctlAllowlist,
    clock,
    runtime: podRuntime.runtime,
    podConfig,
    podCache: podRuntime.podCache,
    pleg: podRuntime.pleg,
    workQueue,
    statusManager: new LocalStatusManager({ clock, sink: cluster?.statusSink }),
    // Upstream fills hostIP/hostIPs in pod status only when it has an API client.
    statusHostIPs: cluster ? ctx.ips : undefined,
    containerManager: node.containerManager,
    prober: podRuntime.prober,
    metrics: clients.metrics,
    podStartupLatency: clients.podStartupLatency,
    volumeManager: node.volumeManager,
    podWorkers,
  });
}

/** Static pods from the manifest folder (--pod-manifest-path) and the manifest URL, each when configured. */
function staticPodSources(
  { config, nodeName, clock, recorder }: BuildContext,
  podConfig: PodConfig,
): { fileSource: FileSource | undefined; httpSource: HttpSource | undefined } {
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
  return { fileSource, httpSource };
}
