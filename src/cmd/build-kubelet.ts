/**
 * Wiring: the kubelet's object graph built from the resolved configuration. Nothing here starts
 * anything; the runner (src/lib/component-runner.ts) starts the components in the order
 * kubelet-components.ts lists them, and stops them in reverse.
 *
 * It comes in two parts because most of the graph needs the runtime's answer to its handshake
 * (its name, the node it makes): buildBootstrap (build-bootstrap.ts) gives what runs before the
 * runtime answers (the API clients, /healthz, the runtime connection), buildKubelet the rest once it
 * has. buildKubelet calls one builder per layer, each given what the ones before it returned, so no
 * part is used before it exists:
 *   1. runtime clients   (build-runtime-clients.ts)   the instrumented CRI clients, metrics
 *   2. node managers     (build-node-managers.ts)     cgroups, devices, plugins, volumes, the node
 *   3. pod runtime       (build-pod-runtime.ts)       pod cache, prober, runtime manager, PLEG
 *   4. resource managers (build-resource-managers.ts) stats, image GC, eviction, log rotation
 *   5. node status       (build-node-status.ts)       graceful shutdown, node status and Lease
 *   6. pod managers      (build-pod-managers.ts)      pod sources, the sync loop, the pod workers
 *   7. servers           (build-servers.ts)           pod resources, the kubelet API, the node page
 * The true cycles are each closed by a LateBound set once, right after the later part is made
 * (late-bound.ts): the managers of steps 4 and 5 ask the kubelet for its pods while the kubelet
 * admits pods through them; the pod cache asks the PLEG that reads it for a relist; the shutdown
 * manager and the node status report each other; the kubelet and the pod workers call each other.
 *
 * The start order is written once, in kubelet-components.ts (the bootstrap's parts first, in
 * build-bootstrap.ts); docs/architecture.md's "Start and stop" lists it, and a test holds the two together.
 */
import { withReservedSystemCPUs } from '../cm/cpumanager/reserved-system-cpus.js';
import type { PullsView } from '../images/pull-progress.js';
import type { Kubelet } from '../kubelet/kubelet.js';
import { realClock } from '../lib/clock.js';
import type { Component } from '../lib/component.js';
import type { KubeletBootstrap } from './build-bootstrap.js';
import { nodeIPs, type BuildContext, type BuildOptions, type RunConfig } from './build-context.js';
import { buildNodeManagers } from './build-node-managers.js';
import { buildNodeStatus } from './build-node-status.js';
import { buildPodManagers } from './build-pod-managers.js';
import { buildPodRuntime } from './build-pod-runtime.js';
import { buildResourceManagers } from './build-resource-managers.js';
import { buildRuntimeClients } from './build-runtime-clients.js';
import { buildServers } from './build-servers.js';
import { kubeletComponents } from './kubelet-components.js';
import { LateBound } from './late-bound.js';

export { buildBootstrap, type KubeletBootstrap } from './build-bootstrap.js';
export type { BuildOptions, ConnectedRuntime, RunConfig } from './build-context.js';

export interface KubeletGraph {
  /** In start order; the runner stops them in reverse. */
  readonly components: Component[];
  readonly kubelet: Kubelet;
  /** The image pulls running and recently finished (the node page reads it). */
  readonly pulls: PullsView;
}

/** The rest of the kubelet, once the runtime has answered. `signal` cuts the build short on a stop. */
export async function buildKubelet(
  cfg: RunConfig,
  boot: KubeletBootstrap,
  signal: AbortSignal,
  opts: BuildOptions = {},
): Promise<KubeletGraph> {
  const { late } = boot;
  const ctx: BuildContext = {
    // Upstream applies reservedSystemCPUs to the reservations before anything reads them.
    config: await withReservedSystemCPUs(cfg.config),
    flags: cfg.flags,
    nodeName: cfg.nodeName,
    clock: opts.clock ?? realClock,
    cluster: boot.cluster,
    recorder: boot.recorder,
    ips: nodeIPs(cfg.flags.nodeIP),
    credentialProviders: cfg.credentialProviders,
    opts,
  };
  const clients = buildRuntimeClients(boot.runtime(), ctx.clock);
  late.podStartupLatency = clients.podStartupLatency;
  await clients.podCIDR.updateFromConfig(ctx.config.podCIDR);
  const node = await buildNodeManagers(ctx, clients, signal);
  const podRuntime = buildPodRuntime(ctx, clients, node);
  // Steps 4 and 5 are made before the kubelet, which admits pods through them; they ask it for its pods once running.
  const kubeletRef = new LateBound<Kubelet>('the kubelet');
  const resources = await buildResourceManagers(ctx, clients, node, kubeletRef);
  const nodeStatus = buildNodeStatus(ctx, clients, node, podRuntime, resources, kubeletRef);
  const made = { clients, node, podRuntime, resources, nodeStatus };
  const pods = buildPodManagers(ctx, made);
  kubeletRef.set(pods.kubelet);
  late.apiSource = pods.apiSource;
  late.kubelet = pods.kubelet;
  late.podWorkers = pods.podWorkers;
  const servers = await buildServers(ctx, { ...made, pods, host: boot.host, eventStore: boot.eventStore });
  late.nodePage = servers.nodePage;
  return {
    components: kubeletComponents(ctx, { ...made, pods, servers, certificates: boot.certificates }),
    kubelet: pods.kubelet,
    pulls: podRuntime.pullProgress,
  };
}
