/**
 * Step 7 of buildKubelet: what the kubelet serves: the pod resources socket, the kubelet API's host
 * (upstream ListenAndServeKubeletServer; the read-only port shares its /metrics) and the node page.
 * The listeners themselves start last (kubelet-components.ts).
 */
import path from 'node:path';
import { mustSucceed } from '../k8s/api-status.js';
import { getStableKey } from '../kuberuntime/compute-pod-actions.js';
import { MetricsRegistry } from '../lib/metrics.js';
import { NodePageFeed } from '../nodepage/node-page-feed.js';
import { nodePageHandler, type NodePageHandler } from '../nodepage/node-page-handler.js';
import type { NodePageSource } from '../nodepage/node-page-model.js';
import { POD_RESOURCES_DIR_NAME, PodResourcesServer } from '../podresources/server.js';
import { readMachineInfo } from '../server/cadvisor-metrics.js';
import type { ApiPoster } from '../server/delegated-auth.js';
import type { KubeletServerHost } from '../server/kubelet-server.js';
import { podLogReader } from '../server/pod-log-reader.js';
import type { ServerHost } from '../server/local-server.js';
import { addRuntimeStateMetrics } from '../server/runtime-state-metrics.js';
import type { EventStore } from '../events/event-store.js';
import type { BuildContext } from './build-context.js';
import type { PodManagerInputs, PodManagers } from './build-pod-managers.js';
import { KUBELET_VERSION } from './version.js';

export interface Servers {
  readonly podResourcesServer: PodResourcesServer;
  /** What the kubelet API and the read-only port serve. */
  readonly apiHost: KubeletServerHost;
  /** Delegated authentication and authorization's calls to the API server; undefined standalone. */
  readonly apiPoster: ApiPoster | undefined;
  readonly nodePageFeed: NodePageFeed;
  readonly nodePage: NodePageHandler;
}

export interface ServerInputs extends PodManagerInputs {
  readonly pods: PodManagers;
  /** The bootstrap's host: what /healthz serves, which the kubelet API serves too. */
  readonly host: ServerHost;
  readonly eventStore: EventStore;
}

export async function buildServers(ctx: BuildContext, parts: ServerInputs): Promise<Servers> {
  const { flags, clock, cluster, config } = ctx;
  const { kubelet } = parts.pods;
  const podResourcesServer = new PodResourcesServer({
    socketDir: path.join(flags.rootDirectory, POD_RESOURCES_DIR_NAME),
    clock,
    pods: {
      getPods: () => kubelet.podManager.getPods(),
      getPodByName: (namespace, name) => kubelet.podManager.getPodByFullName(`${name}_${namespace}`),
    },
    devices: parts.node.deviceManager,
    ...(parts.node.cpuManager ? { cpus: parts.node.cpuManager } : {}),
    memory: parts.node.memoryManager,
    getEnabled: config.featureGates.KubeletPodResourcesGet ?? false,
  });
  const apiHost = await kubeletApiHost(ctx, parts);
  const apiPoster: ApiPoster | undefined = cluster && {
    post: async (path, body, s) =>
      mustSucceed(
        await cluster.kubeClient.call({ method: 'POST', path, body }, { signal: s }),
        `POST ${path}`,
      ),
  };
  const nodePageSource = nodePageSourceOf(ctx, parts);
  const nodePageFeed = new NodePageFeed(nodePageSource, { clock });
  // The node page (/node/ on the loopback /healthz listener and the authenticated kubelet API).
  const nodePage = nodePageHandler({
    source: nodePageSource,
    feed: nodePageFeed,
    maxSubscribers: flags.nodePageMaxSubscribers,
    maxLogFollows: flags.nodePageMaxLogFollows,
    logs: podLogReader({
      runtime: parts.clients.runtime,
      getPod: (ns, name) =>
        kubelet.getPods().find((p) => p.metadata.namespace === ns && p.metadata.name === name),
      clock,
      runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
    }),
  });
  return { podResourcesServer, apiHost, apiPoster, nodePageFeed, nodePage };
}

/** The kubelet API's host and the read-only port's, sharing one /metrics. */
async function kubeletApiHost(
  { config, clock }: BuildContext,
  { clients, node, podRuntime, resources, pods, host }: ServerInputs,
): Promise<KubeletServerHost> {
  const { prober } = podRuntime;
  const { containerManager } = node;
  const { statsProvider } = resources;
  const criRuntime = clients.runtime;
  const probeMetrics = new MetricsRegistry();
  probeMetrics.addCollector(() => {
    const snapshot = prober.metricsSnapshot();
    return [
      { ...snapshot, samples: snapshot.samples.map((s) => ({ labels: { ...s.labels }, value: s.value })) },
    ];
  });
  addRuntimeStateMetrics(clients.metrics, criRuntime, config.runtimeRequestTimeoutMs);
  const machineInfo = await readMachineInfo();
  return {
    ...host,
    runtime: criRuntime,
    metrics: clients.metrics,
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
        const pod = pods.kubelet.getActivePods().find((p) => p.metadata.uid === uid);
        return pod && containerManager.podCgroupParent(pod);
      },
      cgroupDriver: containerManager.status().cgroupDriver,
      machine: () => machineInfo,
      nowMs: () => clock.now(),
    },
  };
}

function nodePageSourceOf(
  { nodeName, clock }: BuildContext,
  { clients, node, podRuntime, resources, pods, eventStore }: ServerInputs,
): NodePageSource {
  const { kubelet } = pods;
  const { pleg, prober } = podRuntime;
  const { evictionManager, statsProvider } = resources;
  return {
    nodeName,
    kubeletVersion: KUBELET_VERSION,
    runtime: { name: clients.runtimeName, version: clients.runtimeVersion },
    startedAtMs: clock.now() - process.uptime() * 1000,
    now: () => clock.now(),
    pods: () => kubelet.getPods(),
    node: () => node.getNode(),
    pleg: () => pleg.healthy(),
    pressure: () => ({
      memory: evictionManager.isUnderMemoryPressure(),
      disk: evictionManager.isUnderDiskPressure(),
      pid: evictionManager.isUnderPIDPressure(),
    }),
    summary: (s) => statsProvider.getSummary(s),
    probe: (uid, name, kind) => prober.getWorker(uid, name, kind)?.status,
    backoffDelayMs: (pod, container) => kubelet.backoff.get(getStableKey(pod, container)),
    events: eventStore,
    pulls: podRuntime.pullProgress,
  };
}
