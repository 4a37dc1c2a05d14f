/**
 * The container runtime as the kubelet's managers see it (upstream: kubecontainer.Runtime and
 * its PodStatus). kuberuntime implements it over CRI; the managers above import only this file.
 */
import type { Pod } from '../api/core-v1.js';
import type { PodSandboxStatus, VersionResponse } from '../cri/types.js';
import type { Backoff } from '../lib/backoff.js';

/** A container's state as the kubelet reasons about it (upstream: kubecontainer.State). */
export type KubeContainerState = 'created' | 'running' | 'exited' | 'unknown';

/** One container as read back from the runtime, with what the kubelet stored in its labels and annotations. */
export interface KubeContainerStatus {
  /** `containerd://<id>`: the runtime's type and its ID, as pod status shows it. */
  containerID: string;
  /** The runtime's own ID, for CRI calls. */
  id: string;
  name: string;
  state: KubeContainerState;
  /** Milliseconds since the epoch; 0 when not known. */
  createdAtMs: number;
  startedAtMs: number;
  finishedAtMs: number;
  exitCode: number;
  /** The image as the spec named it. */
  image: string;
  /** The runtime's resolved reference (imageRef / image ID). */
  imageRef: string;
  /** The container spec hash the kubelet stored when creating it (`io.kubernetes.container.hash`). */
  hash: string;
  restartCount: number;
  reason: string;
  message: string;
  /** The sandbox this container belongs to. */
  podSandboxId: string;
}

/** Everything the runtime knows of one pod (upstream: kubecontainer.PodStatus). */
export interface KubePodStatus {
  uid: string;
  name: string;
  namespace: string;
  /** The pod's IPs, from its newest ready sandbox. */
  ips: string[];
  /** Newest first. */
  sandboxStatuses: PodSandboxStatus[];
  /** Newest first per container name (all attempts, including exited ones). */
  containerStatuses: KubeContainerStatus[];
  /** When this status was read, ms since the epoch. */
  timestampMs: number;
}

/** A container of a running pod, as the runtime's labels describe it (upstream: kubecontainer.Container). */
export interface RunningContainer {
  id: string;
  name: string;
  image: string;
  imageRef: string;
  hash: string;
  state: KubeContainerState;
  podSandboxId: string;
}

export interface RunningSandbox {
  id: string;
  state: 'ready' | 'notready';
  createdAtMs: number;
  /** The runtime's creation time in nanoseconds, which orders a pod's sandboxes. */
  createdAtNs: number;
}

/** A pod as found in the runtime (upstream: kubecontainer.Pod). */
export interface RunningPod {
  uid: string;
  name: string;
  namespace: string;
  /** From the sandbox's annotation, for killing with the right grace period after a restart. */
  terminationGracePeriodSeconds?: number;
  /** Frozen, as the whole pod: getPods hands back the same object while the pod is unchanged. */
  readonly sandboxes: readonly RunningSandbox[];
  readonly containers: readonly RunningContainer[];
}

/** What SyncPod tried and what failed (upstream: kubecontainer.PodSyncResult). */
export interface SyncResult {
  action:
    'StartContainer' | 'KillContainer' | 'CreatePodSandbox' | 'KillPodSandbox' | 'ConfigPodSandbox' | 'Init';
  target: string;
  /** Upstream's reason when it failed: CrashLoopBackOff, ErrImagePull, ImagePullBackOff, CreateContainerConfigError, CreateContainerError, RunContainerError, … */
  reason?: string;
  message?: string;
  /** For a back-off (CrashLoopBackOff, ImagePullBackOff): how long until it runs out and a retry may go ahead. */
  retryAfterMs?: number;
}

export interface PodSyncResult {
  results: SyncResult[];
  /** True when any step failed. */
  failed: boolean;
  /** A failure of the sync as a whole rather than of one step (upstream PodSyncResult.SyncError), e.g. reading the new sandbox's status. */
  error?: string;
}

export interface Runtime {
  /** "containerd", for `containerd://` IDs. */
  readonly type: string;
  version(): Promise<VersionResponse>;
  /** Brings the runtime's state for pod to what its spec asks for (upstream: kubeGenericRuntimeManager.SyncPod). */
  syncPod(pod: Pod, status: KubePodStatus, backoff: Backoff, signal?: AbortSignal): Promise<PodSyncResult>;
  /**
   * Stops every container of the pod, then its sandboxes, within the grace period: the override when given,
   * else the pod's terminationGracePeriodSeconds (default 30), else what the runtime's annotations recorded.
   */
  killPod(pod: Pod | undefined, runningPod: RunningPod, gracePeriodOverrideSeconds?: number): Promise<void>;
  /**
   * The pod's sandboxes and containers as the runtime reports them now. With `listed` (the pod as a
   * relist just found it) the sandboxes and containers are taken from that listing instead of being
   * listed again, so the status is as new as that listing, not newer. With `previous` (the last
   * status read), a sandbox listed in the state it had then is not read again.
   */
  getPodStatus(
    uid: string,
    name: string,
    namespace: string,
    listed?: RunningPod,
    previous?: KubePodStatus,
  ): Promise<KubePodStatus>;
  /**
   * The pods the runtime has; with all=false only those with a ready sandbox or a running container.
   * Frozen: while nothing in the runtime changed, the very array of the last call (the PLEG then
   * compares nothing).
   */
  getPods(all: boolean): Promise<readonly RunningPod[]>;
  /** Removes dead containers and sandboxes beyond what the GC policy keeps, and those of pods no longer wanted. */
  garbageCollect(isPodWanted: (uid: string) => boolean): Promise<void>;
}
