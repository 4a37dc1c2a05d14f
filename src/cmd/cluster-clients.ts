/**
 * What cluster mode (--kubeconfig) adds to the wiring: the API clients, each with its own rate limit
 * as upstream (the kubelet's calls, events, and heartbeats without a limit), the event recorder, the
 * node and services informers, and the status manager's API half.
 */
import { ApiEventRecorder } from '../events/event-recorder.js';
import { Reflector } from '../k8s/reflector.js';
import { ApiServiceLister } from '../kubelet/service-lister.js';
import { defaultUserAgent, RestClient } from '../k8s/rest-client.js';
import type { Clock } from '../lib/clock.js';
import type { Pod } from '../api/core-v1.js';
import type { Node } from '../api/node.js';
import { ApiStatusSink } from '../status/api-status-sink.js';
import type { ResolvedKubeletConfig } from './kubelet-configuration.js';
import { KUBERNETES_VERSION } from './version.js';

export interface ClusterClients {
  /** The kubelet's own calls (pods, status), limited to kubeAPIQPS/kubeAPIBurst. */
  kubeClient: RestClient;
  /** Node status and the Lease: never held back by the rate limit, so the node does not go NotReady under load. */
  heartbeatClient: RestClient;
  recorder: ApiEventRecorder;
  /** Upstream's node informer: the pod watch waits for its first list, and node status reads it. */
  nodeReflector: Reflector<Node>;
  /** Upstream's services informer, for containers' service variables. */
  serviceLister: ApiServiceLister;
  statusSink: ApiStatusSink;
  /** Every client presents this pair from now on; their old connections are closed (certificate rotation). */
  setClientCertificate(certPem: string, keyPem: string): void;
  close(): Promise<void>;
}

export async function createClusterClients(
  kubeconfigPath: string,
  config: ResolvedKubeletConfig,
  nodeName: string,
  clock: Clock,
  getApiPod: (namespace: string, name: string) => ReturnType<ApiStatusSinkGetPod>,
  podCouldHaveRunningContainers: (uid: string) => boolean,
  onStatusPatched?: (pod: Pod) => void,
): Promise<ClusterClients> {
  const userAgent = defaultUserAgent(KUBERNETES_VERSION);
  const kubeClient = await RestClient.fromKubeconfig(kubeconfigPath, {
    qps: config.kubeAPIQPS,
    burst: config.kubeAPIBurst,
    userAgent,
    clock,
  });
  const eventClient = new RestClient({
    config: kubeClient.config,
    // eventRecordQPS 0 means no limit (KubeletConfiguration); client-go's 0 would mean 5.
    qps: config.eventRecordQPS === 0 ? -1 : config.eventRecordQPS,
    burst: config.eventBurst,
    userAgent,
    clock,
  });
  const heartbeatClient = new RestClient({ config: kubeClient.config, qps: -1, userAgent, clock });
  const recorder = new ApiEventRecorder({ client: eventClient, nodeName, clock });
  const nodeReflector = new Reflector<Node>({
    client: kubeClient,
    ref: { resource: 'nodes' },
    fieldSelector: `metadata.name=${nodeName}`,
    clock,
  });
  const serviceLister = new ApiServiceLister(kubeClient, clock);
  const statusSink = new ApiStatusSink({
    client: kubeClient,
    clock,
    getApiPod,
    podCouldHaveRunningContainers,
    onStatusPatched,
  });
  return {
    kubeClient,
    heartbeatClient,
    recorder,
    nodeReflector,
    serviceLister,
    statusSink,
    setClientCertificate(certPem, keyPem) {
      for (const c of [kubeClient, eventClient, heartbeatClient]) c.setClientCertificate(certPem, keyPem);
    },
    async close() {
      await statusSink.stop();
      await recorder.stop();
      kubeClient.close();
      eventClient.close();
      heartbeatClient.close();
    },
  };
}

type ApiStatusSinkGetPod = NonNullable<ConstructorParameters<typeof ApiStatusSink>[0]['getApiPod']>;
