/**
 * Step 5 of buildKubelet: the node's own lifecycle: graceful node shutdown and, in cluster mode, the
 * Node object's status and Lease (ClusterNode), which report the managers made before them.
 */
import { nodeRef } from '../api/node.js';
import type { Kubelet } from '../kubelet/kubelet.js';
import { newShutdownManager, type ShutdownManager } from '../nodeshutdown/shutdown-manager.js';
import { ClusterNode } from '../nodestatus/cluster-node.js';
import type { BuildContext } from './build-context.js';
import type { NodeManagers } from './build-node-managers.js';
import type { PodRuntime } from './build-pod-runtime.js';
import type { ResourceManagers } from './build-resource-managers.js';
import type { RuntimeClients } from './build-runtime-clients.js';
import { LateBound } from './late-bound.js';
import { KUBELET_VERSION } from './version.js';

export interface NodeStatus {
  /** Graceful node shutdown (upstream: nodeshutdown.NewManager); undefined when it is off. */
  readonly shutdownManager: ShutdownManager | undefined;
  /** Node status and Lease; undefined standalone. */
  readonly clusterNode: ClusterNode | undefined;
}

/** `kubelet` is bound once the kubelet exists; the shutdown manager reads it only on a shutdown. */
export function buildNodeStatus(
  ctx: BuildContext,
  clients: RuntimeClients,
  node: NodeManagers,
  podRuntime: PodRuntime,
  resources: ResourceManagers,
  kubelet: LateBound<Kubelet>,
): NodeStatus {
  const { config, flags, nodeName, clock, cluster, recorder } = ctx;
  // The shutdown manager asks for a node status sync, and the node status reports a shutdown: the
  // node status is made second and read only on a shutdown event, long after both exist.
  const clusterNodeRef = new LateBound<ClusterNode | undefined>('the node status');
  const shutdownManager = newShutdownManager({
    featureGates: config.featureGates,
    shutdownGracePeriodMs: config.shutdownGracePeriodMs,
    shutdownGracePeriodCriticalPodsMs: config.shutdownGracePeriodCriticalPodsMs,
    shutdownGracePeriodByPodPriority: config.shutdownGracePeriodByPodPriority,
    stateDirectory: flags.rootDirectory,
    clock,
    getPods: () => kubelet.get().getActivePods(),
    // Upstream's killPodNow with isEvicted false.
    killPod: (pod, grace, statusFn) => kubelet.get().killPodNow(pod, grace, statusFn, false),
    syncNodeStatus: () => {
      const clusterNode = clusterNodeRef.get();
      if (clusterNode) void clusterNode.nodeStatus.syncNow();
    },
    recordNodeEvent: cluster
      ? (type, reason, message) => cluster.recorder.eventFor(nodeRef(nodeName), type, reason, message)
      : undefined,
    metrics: clients.metrics,
  });
  const { pleg } = podRuntime;
  const { evictionManager } = resources;
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
      runtimeService: clients.runtime,
      imageService: clients.images,
      runtimeName: clients.runtimeName,
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
      devicePluginCapacity: () => node.deviceManager.getCapacity(),
      updatePodCIDR: (cidr) => clients.podCIDR.update(cidr),
    });
  clusterNodeRef.set(clusterNode);
  return { shutdownManager, clusterNode };
}
