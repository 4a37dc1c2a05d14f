/**
 * The start order of everything buildKubelet made (the runner stops them in reverse). It differs
 * from the order they are made in: a part is made once what it needs exists, and started once what
 * it drives can run (the sync loop after the PLEG and pod workers, the sources after the sync loop,
 * the listeners last). To add a part, add one entry where it belongs in this order.
 */
import { nodeRef } from '../api/node.js';
import { fullGarbageCollection, HeapTrimmer } from '../lib/heap-trim.js';
import { asComponent, loopComponent, type Component } from '../lib/component.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { runOomWatcher } from '../oom/oom-watcher.js';
import { EventedPLEG } from '../pleg/evented-pleg.js';
import { startKubeletReadOnlyServer, startKubeletServer } from '../server/kubelet-server.js';
import type { KubeletBootstrap } from './build-bootstrap.js';
import type { BuildContext } from './build-context.js';
import type { ServerInputs, Servers } from './build-servers.js';
import { servedWhenIssued, serverComponent } from './server-components.js';

const log = logger('kubelet');

export interface ComponentInputs extends Omit<ServerInputs, 'host' | 'eventStore'> {
  readonly servers: Servers;
  readonly certificates: KubeletBootstrap['certificates'];
}

export function kubeletComponents(ctx: BuildContext, parts: ComponentInputs): Component[] {
  const components: (Component | false | undefined)[] = [
    ...nodeManagerComponents(ctx, parts),
    ...syncLoopComponents(parts),
    ...resourceComponents(ctx, parts),
    ...sourceAndServerComponents(ctx, parts),
  ];
  return components.filter((c): c is Component => !!c);
}

type MaybeComponent = Component | false | undefined;

/** The machine's managers, then (cluster mode) the API-facing ones and the node's status and Lease. */
function nodeManagerComponents(
  { cluster, nodeName, clock }: BuildContext,
  { node, pods, servers, nodeStatus }: ComponentInputs,
): MaybeComponent[] {
  const { containerManager, volumeManager, deviceManager, cpuManager, memoryManager } = node;
  const { pluginManager, runtimeClassManager } = node;
  const { kubelet } = pods;
  const { podResourcesServer } = servers;
  const { clusterNode } = nodeStatus;
  return [
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
    // Also before the sync loop: admission allocates CPUs and frees those of pods no longer active.
    cpuManager &&
      asComponent('cpumanager', {
        start: () => cpuManager.start(() => kubelet.getActivePods()),
        stop: () => cpuManager.stop(),
      }),
    asComponent('memorymanager', {
      start: () => memoryManager.start(() => kubelet.getActivePods()),
      stop: () => memoryManager.stop(),
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
    cluster &&
      loopComponent('serviceinformer', (s) => cluster.serviceLister.run(s), {
        detail: () => ({ ...cluster.serviceLister.status() }),
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
  ];
}

/** What the sync loop drives, then the loop, then the node shutdown manager that may stop its pods. */
function syncLoopComponents({ podRuntime, pods, nodeStatus }: ComponentInputs): MaybeComponent[] {
  const { prober, pleg } = podRuntime;
  const { kubelet, podWorkers } = pods;
  const { shutdownManager } = nodeStatus;
  return [
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
  ];
}

/** The resource plane's loops. */
function resourceComponents(
  { config }: BuildContext,
  { podRuntime, resources }: ComponentInputs,
): MaybeComponent[] {
  const { fsResourceAnalyzer, imageGCManager, evictionManager, containerLogManager } = resources;
  const { pullProgress, contentStatuses } = podRuntime;
  return [
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
  ];
}

/** The pod sources once the sync loop runs, then the listeners. */
function sourceAndServerComponents(
  { config, flags, nodeName }: BuildContext,
  { pods, servers, certificates }: ComponentInputs,
): MaybeComponent[] {
  const { podConfig, apiSource, fileSource, httpSource } = pods;
  const { apiHost, apiPoster, nodePageFeed } = servers;
  // tskubelet's own bounds (--max-connections-per-listener, --max-streaming-sessions); unset: the defaults.
  const limits = {
    maxConnectionsPerListener: flags.maxConnectionsPerListener,
    maxStreamingSessions: flags.maxStreamingSessions,
  };
  const serverOptions = {
    config,
    nodeName,
    certDirectory: flags.certDirectory,
    apiPoster,
    nodeLogsSymlinkRoots: [config.podLogsDir],
    limits,
  };
  return [
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
      !certificates?.servingCertificates &&
      serverComponent('kubeletserver', () => startKubeletServer(apiHost, serverOptions), true),
    // serverTLSBootstrap: served once the first serving certificate is issued, then swapped as it rotates.
    config.enableServer &&
      certificates?.servingCertificates &&
      servedWhenIssued(certificates, (servingCertificate) =>
        startKubeletServer(apiHost, { ...serverOptions, servingCertificate }),
      ),
    config.readOnlyPort > 0 &&
      serverComponent('readonlyserver', () =>
        startKubeletReadOnlyServer(apiHost, {
          address: config.address,
          port: config.readOnlyPort,
          nodeName,
          limits,
        }),
      ),
  ];
}

/** Full garbage collections when the kubelet settles after its start-up and after a burst of work (src/lib/heap-trim.ts). */
function heapTrimComponent(): Component {
  const trimmer = new HeapTrimmer({
    collectAfterStartUp: fullGarbageCollection({ passes: 2, compact: true, flushBytecode: true }),
  });
  return loopComponent('heaptrim', (signal) => trimmer.run(signal), { detail: () => trimmer.detail() });
}
