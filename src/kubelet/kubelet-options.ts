/** What the Kubelet is built from, and what admission asks of the CPU and device managers. */
import type { Pod } from '../api/core-v1.js';
import type { ContainerManager } from '../cm/container-manager.js';
import type { PodConfig } from '../config/pod-config.js';
import type { ObjectEventRecorder } from '../events/event-recorder.js';
import type { Runtime } from '../kuberuntime/types.js';
import type { Clock } from '../lib/clock.js';
import type { MetricsRegistry } from '../lib/metrics.js';
import type { PodStartupLatencyTracker } from './pod-startup-latency-tracker.js';
import type { PodLifecycleEventGenerator } from '../pleg/generic-pleg.js';
import type { PodCache } from '../pleg/pod-cache.js';
import type { Node } from '../api/node.js';
import type { MirrorPods } from '../pod/mirror-pods.js';
import type { PodWorkers } from '../podworkers/pod-workers.js';
import type { ProberManager } from '../prober/prober-manager.js';
import type { WorkQueue } from '../podworkers/work-queue.js';
import type { HealthChecker } from '../server/healthz.js';
import type { StatusManager } from '../status/status-manager.js';
import type { VolumeManager } from '../volume/volume-manager.js';

import type { SysctlAllowlist } from './sysctl-allowlist.js';
import type { AppArmorValidator } from './apparmor-validator.js';

export interface KubeletOptions {
  nodeName: string;
  rootDir: string;
  /**
   * The Node admission checks pods against (upstream: getNodeAnyWay): the API's copy in cluster mode,
   * else the node this kubelet would register.
   */
  getNode: () => Node | undefined;
  /** Cluster mode: the mirror pods of the static pods. */
  mirrorPods?: MirrorPods;
  /**
   * What admission asks of the device manager beyond allocation: whether a pod must wait in the
   * admission queue for a plugin, and the devices held (the predicates' allocatable).
   */
  deviceAdmission?: DeviceAdmission;
  /**
   * The topology manager's admit handler, asked after AppArmor and before the predicates: it merges
   * the CPU, memory and device managers' NUMA hints under its policy and has each allocate in turn.
   */
  topologyAdmission?: TopologyAdmission;
  /** The eviction manager's admit handler, asked first (upstream adds it before the others). */
  evictionAdmit?: (pod: Pod) => { admit: true } | { admit: false; reason: string; message: string };
  /** The node shutdown manager's admit handler, asked last (upstream adds it after the others). */
  shutdownAdmit?: (pod: Pod) => { admit: true } | { admit: false; reason: string; message: string };
  /** Where admission rejections and preemptions are reported (cluster mode: the API's Events). */
  recorder?: ObjectEventRecorder;
  /**
   * Why the runtime's network is not ready, if it is not (upstream: runtimeState.networkErrors);
   * pods that do not use the host network wait for it.
   */
  networkErrors?: () => string[];
  /** The sysctls pods may set (safe ones and allowedUnsafeSysctls); default the safe ones. */
  sysctlAllowlist?: SysctlAllowlist;
  /** Whether pods' AppArmor profiles can be enforced here; default: checks this host. */
  appArmorValidator?: AppArmorValidator;
  /** The sources the kubelet waits to hear from before removing runtime pods it does not know. */
  clock: Clock;
  runtime: Runtime;
  podConfig: PodConfig;
  podCache: PodCache;
  pleg: PodLifecycleEventGenerator;
  /** Built by the caller with this kubelet as its syncer (see createPodWorkers in cmd). */
  podWorkers: () => PodWorkers;
  workQueue: WorkQueue;
  statusManager: StatusManager;
  /**
   * The node's IPs, primary first, for hostIP/hostIPs in pod status. Upstream fills those only when it
   * has an API client, so standalone mode leaves this out.
   */
  statusHostIPs?: string[];
  /** The node's cgroup layout: kubepods, the QoS tiers and a cgroup per pod. */
  containerManager: ContainerManager;
  /** Liveness, readiness and startup probes; absent, containers are not probed. */
  prober?: ProberManager;
  /** Sets up the pods' volumes before their containers start, and tears them down after. */
  volumeManager?: VolumeManager;
  /** Where kubelet_pod_start_duration_seconds goes; absent, it is not measured. */
  metrics?: MetricsRegistry;
  /** The pod startup latency SLI of API pods: forgets a pod when its source removes it. */
  podStartupLatency?: PodStartupLatencyTracker;
  /** Extra health checks for /healthz (the runtime's, for one). */
  healthChecks?: HealthChecker[];
}

/** The topology manager's admit handler (upstream: the AllocateResourcesPodAdmitHandler). */
export interface TopologyAdmission {
  /**
   * The verdict on the pod, its resources allocated when admitted; synchronous unless a provider
   * answers later (a device plugin). activePods are the pods holding resources now.
   */
  admit(
    pod: Pod,
    activePods: readonly Pod[],
  ):
    | { admit: true }
    | { admit: false; reason: string; message: string }
    | Promise<{ admit: true } | { admit: false; reason: string; message: string }>;
}

/** What admission asks of the device manager. */
export interface DeviceAdmission {
  /** Whether any container of pod asks for a device plugin's resource (so admission must wait for the plugin). */
  podRequestsDevices(pod: Pod): boolean;
  /** Devices held per resource: the node's allocatable is never counted below them. */
  allocatedDeviceCounts(): ReadonlyMap<string, number>;
}
