/**
 * What the runtime manager is given (upstream: NewKubeGenericRuntimeManager's arguments), and the two
 * lookups it asks of the layers above it (RuntimeClass handlers, image pull secrets).
 */
import type { Container, Pod } from '../api/core-v1.js';
import type { NodeAllocatable } from '../api/node.js';
import type { ImageService, Mount, RuntimeService } from '../cri/types.js';
import type { Backoff } from '../lib/backoff.js';
import { realClock, type Clock } from '../lib/clock.js';
import type { MetricsRegistry } from '../lib/metrics.js';
import type { ProbeResults } from './compute-pod-actions.js';
import type { DeviceRunOptions } from './container-config.js';
import type { SwapSettings } from './container-swap.js';
import type { EnvSources } from './container-env.js';
import type { GCPolicy } from './container-gc.js';
import { discardEvents, type EventRecorder } from './event-recorder.js';
import type { ImagePullerOptions, PodPullingTimeRecorder, PullObserver } from './image-puller.js';
import type { HandlerRunner } from './lifecycle-handler-runner.js';
import type { PodStartSlots } from './pod-start-slots.js';

export interface KubeGenericRuntimeManagerOptions {
  runtimeService: RuntimeService;
  imageService: ImageService;
  clock?: Clock;
  /** The runtime's name for container IDs (`containerd://…`); create() takes it from Version. */
  runtimeName?: string;
  /** --pod-logs-dir (podLogsDir in the config file); default /var/log/pods. */
  podLogsDir?: string;
  /** --root-dir; default /var/lib/kubelet. */
  rootDir?: string;
  /** The RuntimeClass handler for RunPodSandbox ('' is the runtime's default). */
  runtimeHandler?: string;
  /**
   * Resolves pods' runtimeClassName to a handler (cluster mode). Without it, as upstream without an
   * API client, runtimeClassName is not looked up and every sandbox gets runtimeHandler.
   */
  runtimeClassManager?: RuntimeClassLookup;
  /** --resolv-conf; '' for none. Default /etc/resolv.conf. */
  resolvConf?: string;
  clusterDNS?: string[];
  clusterDomain?: string;
  nodeName: string;
  /** The node's IPs, for status.hostIP(s) and DNS without resolv.conf. */
  nodeIPs?: string[];
  /**
   * The pods' cgroup parent. Upstream's cgroup manager computes `/kubepods/<qos>/pod<uid>`; until this
   * kubelet has one that creates those cgroups, the default '' lets the runtime choose.
   */
  cgroupParent?: string | ((pod: Pod) => string);
  /**
   * --pod-infra-container-image. Not pulled here: like upstream since 1.27, the sandbox image is the
   * runtime's own setting (containerd's sandbox_image); this only tells image GC what to spare.
   */
  podInfraContainerImage?: string;
  /** --cpu-cfs-quota (default true) and --cpu-cfs-quota-period (default 100 ms). */
  cpuCFSQuota?: boolean;
  cpuCFSQuotaPeriodUs?: number;
  /** memorySwap.swapBehavior with the node's swap controller and capacity (cm/swap.ts). */
  swap?: SwapSettings;
  /** --seccomp-default (default false). */
  seccompDefault?: boolean;
  /** The node's memory for OOM scores; default the machine's. */
  memoryCapacityBytes?: number;
  /** What downward-API resource limits default to; default the machine's CPUs and memory. */
  nodeAllocatable?: NodeAllocatable | (() => NodeAllocatable | undefined);
  /** Where the legacy `<pod>_<ns>_<container>-<id>.log` symlinks go; default /var/log/containers, '' for none. */
  legacyContainerLogsDir?: string;
  recorder?: EventRecorder;
  /** configMap, secret and service lookups for env; without them such references fail as upstream's do without a client. */
  envSources?: EnvSources;
  /** The pod's image pull secrets (cluster mode); without it pulls go without credentials. */
  pullSecrets?: PullSecretSource;
  /** The node's credential provider plugins, asked after the pod's pull secrets. */
  credentialProviders?: ImagePullerOptions['credentialProviders'];
  /** Bounds how many new sandboxes are being started at once (pod-start-slots.ts); none: no bound, as upstream. */
  podStartSlots?: PodStartSlots;
  /** Where upstream's pod-start metrics go (start-metrics.ts); absent, they are not kept. */
  metrics?: MetricsRegistry;
  /** serializeImagePulls (default true), maxParallelImagePulls, registryPullQPS (default 0 here: no limit) and registryBurst. */
  serializeImagePulls?: boolean;
  /** Told of each image pull while it runs (the node's pull progress tracker). */
  pullObserver?: PullObserver;
  /** Told of each pod's image pulls, for the pod startup latency SLI. */
  pullingTimeRecorder?: PodPullingTimeRecorder;
  maxParallelImagePulls?: number;
  registryPullQPS?: number;
  registryBurst?: number;
  /** Liveness and startup verdicts from the prober. */
  probeResults?: ProbeResults;
  /** What the container's devices bring, from the device manager; throws when a plugin fails it. */
  deviceRunContainerOptions?: (pod: Pod, container: Container) => Promise<DeviceRunOptions | undefined>;
  /** The cpuset a container is created with (the CPU manager's static policy); '' or absent: the runtime's default. */
  cpusetCpus?: (pod: Pod, container: Container) => string;
  /** The NUMA nodes a container's memory comes from (the memory manager's Static policy, "0,1"); '' or absent: any. */
  cpusetMems?: (pod: Pod, container: Container) => string;
  /** The container's volume mounts, from the volume manager (podIPs: for subPathExpr's env). */
  volumeMounts?: (pod: Pod, container: Container, podIPs: string[]) => Mount[] | Promise<Mount[]>;
  /** True once the pod is being deleted: a sandbox that then fails to start is not an error. */
  isPodTerminationRequested?: (uid: string) => boolean;
  /** Image pull back-off; default 10 s doubling to 300 s. */
  imageBackoff?: Backoff;
  gcPolicy?: GCPolicy;
  handlerRunner?: HandlerRunner;
  /** The Kubernetes version this kubelet implements, for HTTP hooks' User-Agent. */
  kubernetesVersion?: string;
  /** The node's hosts file, copied into host-network pods; default /etc/hosts. */
  nodeHostsFile?: string;
}

/** The RuntimeClass handler a pod's sandbox runs with (upstream runtimeclass.Manager). */
export interface RuntimeClassLookup {
  /** '' for no class; throws when the class is not known. */
  lookupRuntimeHandler(runtimeClassName: string | undefined): string;
}

/** Where a pod's image pull secrets come from: the secret's type and decoded data, undefined when it does not exist. */
export interface PullSecretSource {
  getImagePullSecret(
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<{ type?: string; data: Record<string, string> } | undefined>;
}

/** The options' defaults applied once, as the manager and its sandbox and container halves read them. */
export interface RuntimeDefaults {
  readonly clock: Clock;
  /** The runtime's name for container IDs (`containerd://…`). */
  readonly runtimeName: string;
  readonly podLogsDir: string;
  readonly rootDir: string;
  readonly runtimeHandler: string;
  readonly resolvConf: string;
  readonly recorder: EventRecorder;
  readonly legacyContainerLogsDir: string;
}

export function runtimeDefaults(opts: KubeGenericRuntimeManagerOptions): RuntimeDefaults {
  return {
    clock: opts.clock ?? realClock,
    runtimeName: opts.runtimeName ?? 'containerd',
    podLogsDir: opts.podLogsDir ?? '/var/log/pods',
    rootDir: opts.rootDir ?? '/var/lib/kubelet',
    runtimeHandler: opts.runtimeHandler ?? '',
    resolvConf: opts.resolvConf ?? '/etc/resolv.conf',
    recorder: opts.recorder ?? discardEvents,
    legacyContainerLogsDir: opts.legacyContainerLogsDir ?? '/var/log/containers',
  };
}
