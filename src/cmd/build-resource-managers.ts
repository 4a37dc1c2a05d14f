/**
 * Step 4 of buildKubelet: the resource plane: volume usage walked in the background (upstream
 * fsResourceAnalyzer), the stats provider over CRI, cgroups and statfs, and what acts on it (image
 * garbage collection, eviction, container log rotation).
 */
import { realCgroupFs } from '../cm/cgroup-fs.js';
import { detectCgroupSubsystems } from '../cm/cgroup-subsystems.js';
import { EvictionManager } from '../eviction/eviction-manager.js';
import { parseThresholdConfig } from '../eviction/threshold.js';
import { ImageGCManager } from '../images/image-gc-manager.js';
import type { Kubelet } from '../kubelet/kubelet.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { ContainerLogManager } from '../logs/container-log-manager.js';
import { CgroupStatsReader } from '../stats/cgroup-stats.js';
import { FsResourceAnalyzer } from '../stats/fs-resource-analyzer.js';
import { StatsProvider } from '../stats/stats-provider.js';
import type { BuildContext } from './build-context.js';
import type { NodeManagers } from './build-node-managers.js';
import type { RuntimeClients } from './build-runtime-clients.js';
import type { LateBound } from './late-bound.js';

const log = logger('kubelet');

export interface ResourceManagers {
  readonly fsResourceAnalyzer: FsResourceAnalyzer;
  readonly statsProvider: StatsProvider;
  readonly imageGCManager: ImageGCManager;
  readonly evictionManager: EvictionManager;
  readonly containerLogManager: ContainerLogManager;
}

/** `kubelet` is bound once the kubelet exists; these read it only once running. */
export async function buildResourceManagers(
  ctx: BuildContext,
  clients: RuntimeClients,
  node: NodeManagers,
  kubelet: LateBound<Kubelet>,
): Promise<ResourceManagers> {
  const { config, flags, nodeName, clock } = ctx;
  const { containerManager } = node;
  const fsResourceAnalyzer = new FsResourceAnalyzer({
    rootDir: flags.rootDirectory,
    clock,
    periodMs: config.volumeStatsAggPeriodMs,
    pods: () => kubelet.get().getActivePods(),
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
    runtime: clients.runtime,
    images: clients.images,
    clock,
    nodeName,
    rootDir: flags.rootDirectory,
    podLogsDir: config.podLogsDir,
    runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
    pods: () => kubelet.get().getActivePods(),
    fsResourceAnalyzer,
    cgroups: cgroupStats,
    podCgroupPath: (pod) =>
      containerManager.status().cgroupsPerQOS ? containerManager.podCgroupParent(pod) : undefined,
    podsCgroupPath: () => containerManager.status().nodeAllocatableCgroup,
  });
  const imageGCManager = new ImageGCManager({
    runtimeService: clients.runtime,
    imageService: clients.images,
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
    recorder: ctx.recorder,
    runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
  });
  const evictionManager = newEvictionManager(ctx, clients, node, kubelet, statsProvider, imageGCManager);
  const containerLogManager = new ContainerLogManager({
    runtimeService: clients.runtime,
    clock,
    policy: { maxSizeBytes: config.containerLogMaxSizeBytes, maxFiles: config.containerLogMaxFiles },
    maxWorkers: config.containerLogMaxWorkers,
    monitorIntervalMs: config.containerLogMonitorIntervalMs,
    runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
  });
  return { fsResourceAnalyzer, statsProvider, imageGCManager, evictionManager, containerLogManager };
}

function newEvictionManager(
  { config, nodeName, clock, recorder }: BuildContext,
  clients: RuntimeClients,
  node: NodeManagers,
  kubelet: LateBound<Kubelet>,
  statsProvider: StatsProvider,
  imageGCManager: ImageGCManager,
): EvictionManager {
  return new EvictionManager({
    nodeName,
    thresholds: parseThresholdConfig(config),
    pressureTransitionPeriodMs: config.evictionPressureTransitionPeriodMs,
    maxPodGracePeriodSeconds: config.evictionMaxPodGracePeriod,
    clock,
    summaryProvider: statsProvider,
    hasDedicatedImageFs: () => statsProvider.hasDedicatedImageFs(),
    activePods: () => kubelet.get().getActivePods(),
    killPod: (pod, grace, statusFn) => kubelet.get().killPodNow(pod, grace, statusFn),
    // Upstream podResourcesAreReclaimed: no container may still run, and every volume is torn down.
    podCleanedUp: (pod) =>
      !kubelet.get().podCouldHaveRunningContainers(pod.metadata.uid ?? '') &&
      !node.volumeManager.podHasMountedVolumes(pod.metadata.uid ?? ''),
    recorder,
    reclaimers: {
      deleteAllUnusedContainers: () => kubelet.get().deleteAllUnusedContainers(),
      deleteUnusedImages: () => imageGCManager.deleteUnusedImages(),
    },
    metrics: clients.metrics,
  });
}
