/**
 * What runs before the runtime answers its handshake: the API clients (cluster mode), the event
 * recorder, the certificate managers, /healthz and the runtime connection. The rest of the graph
 * (build-kubelet.ts) needs the runtime's answer (its name, the node it makes).
 */
import { nodeRef } from '../api/node.js';
import { connectRuntime } from '../cri/connect-runtime.js';
import type { ObjectEventRecorder } from '../events/event-recorder.js';
import { EventStore } from '../events/event-store.js';
import { makeKubeletEventRecorder } from '../events/kubelet-event-recorder.js';
import type { ApiSource } from '../config/api-source.js';
import type { Kubelet } from '../kubelet/kubelet.js';
import type { PodStartupLatencyTracker } from '../kubelet/pod-startup-latency-tracker.js';
import { realClock, type Clock } from '../lib/clock.js';
import { asComponent, type Component } from '../lib/component.js';
import type { NodePageHandler } from '../nodepage/node-page-handler.js';
import type { PodWorkersImpl } from '../podworkers/pod-workers.js';
import type { HealthChecker } from '../server/healthz.js';
import { localListenerComponents } from '../server/local-listeners.js';
import type { ServerHost } from '../server/local-server.js';
import type { BuildOptions, ConnectedRuntime, RunConfig } from './build-context.js';
import { nodeIPs } from './build-context.js';
import { createClusterClients, type ClusterClients } from './cluster-clients.js';
import {
  bootstrapClientCertificate,
  needsCertificateManagers,
  startKubeletCertificates,
  type KubeletCertificates,
} from './kubelet-certificates.js';

/** What is handed on from the bootstrap to the rest of the graph. */
export interface KubeletBootstrap {
  readonly components: Component[];
  readonly cluster: ClusterClients | undefined;
  /** Client and serving certificate managers (rotateCertificates, --bootstrap-kubeconfig, serverTLSBootstrap). */
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
  /**
   * Set by buildKubelet: the parts the servers and the cluster clients read once they exist. These
   * serve before the runtime answers, so each reader says what it answers while a part is unset.
   */
  readonly late: {
    kubelet?: Kubelet;
    apiSource?: ApiSource;
    podWorkers?: PodWorkersImpl;
    nodePage?: NodePageHandler;
    podStartupLatency?: PodStartupLatencyTracker;
  };
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
  const recorder = makeKubeletEventRecorder({ store: eventStore, nodeName, clock, api: cluster?.recorder });
  const certificates =
    cluster && needsCertificateManagers(config, flags)
      ? await startKubeletCertificates({
          config,
          flags,
          nodeName,
          clock,
          cluster,
          nodeIPs: nodeIPs(flags.nodeIP),
          recordNodeEvent: (type, reason, message) =>
            recorder.eventFor(nodeRef(nodeName), type, reason, message),
          ...(opts.fatal ? { fatal: opts.fatal } : {}),
        })
      : undefined;
  const runtime = runtimeConnection(cfg, clock, opts);
  const host = bootstrapHost(late, runtime, opts);

  const components: (Component | false | undefined)[] = [
    cluster && asComponent('apiclients', { stop: () => cluster.close() }),
    cluster && asComponent('events', { stop: () => cluster.recorder.stop() }),
    certificates && asComponent('certificates', { stop: () => certificates.stop() }),
    ...localListenerComponents(host, {
      rootDir: flags.rootDirectory,
      nodePageGroup: flags.nodePageGroup,
      ...(config.healthzPort > 0
        ? { healthz: { address: config.healthzBindAddress, port: config.healthzPort } }
        : {}),
    }),
    runtime.component,
  ];
  return {
    components: components.filter((c): c is Component => !!c),
    cluster,
    certificates,
    eventStore,
    recorder,
    runtime: () => {
      const connection = runtime.connection();
      if (!connection) throw new Error('the container runtime is not connected');
      return connection;
    },
    host,
    late,
  };
}

interface RuntimeConnection {
  readonly component: Component;
  /** undefined until the runtime has answered. */
  connection(): ConnectedRuntime | undefined;
}

/** The 'runtime' component: retries with back-off until the runtime answers; a stop during that aborts the retries. */
function runtimeConnection({ config }: RunConfig, clock: Clock, opts: BuildOptions): RuntimeConnection {
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
  const component = asComponent('runtime', {
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
  return { component, connection: () => connection };
}

/** Until the kubelet exists, /healthz answers for the process alone, plus "the runtime is not reachable yet". */
function bootstrapHost(
  late: KubeletBootstrap['late'],
  runtime: RuntimeConnection,
  opts: BuildOptions,
): ServerHost {
  const runtimeCheck: HealthChecker = {
    name: 'runtime',
    check: () => (runtime.connection() ? undefined : 'container runtime not connected yet'),
  };
  return {
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
}
