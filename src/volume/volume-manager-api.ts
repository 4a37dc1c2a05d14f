/**
 * What the volume manager offers the rest of the kubelet: its interface, options, error and event
 * reasons, and the volumes a pod waits for.
 */
import type { Container, Pod } from '../api/core-v1.js';
import type { Mount } from '../cri/types.js';
import type { RestClient } from '../k8s/rest-client.js';
import type { EnvSources } from '../kuberuntime/container-env.js';
import type { EventRecorder } from '../kuberuntime/event-recorder.js';
import type { Clock } from '../lib/clock.js';
import { KubeletError } from '../lib/errors.js';
import type { CsiDriversStore } from './csi/csi-drivers-store.js';
import type { CsiObjectSource } from './csi/csi-objects.js';
import type { Mounter } from './mounter.js';
import type { TokenManager } from './token-manager.js';
import type { ChangeDetectionStrategy, VolumeObjectSource } from './volume-object-source.js';
import type { NodeAllocatable } from '../api/node.js';

/** upstream: podAttachAndMountTimeout, 2 min 3 s. */
export const DEFAULT_MOUNT_TIMEOUT_MS = 123_000;
/** How stale a configMap or secret may be when a volume is refreshed (upstream re-reads on the pod's sync). */
export const DEFAULT_OBJECT_CACHE_TTL_MS = 60_000;

/** The event reasons of pkg/kubelet/events that the volume manager emits. */
export const VolumeEventReason = {
  FailedMountVolume: 'FailedMount',
  FailedUnmountVolume: 'FailedUnMount',
} as const;

/** A syncPod that cannot go on because the pod's volumes are not ready. */
export class VolumeMountError extends KubeletError {
  constructor(
    message: string,
    /** True when it only timed out or was cancelled: upstream records no event for those. */
    readonly interrupted: boolean,
    options?: { cause?: unknown },
  ) {
    super('VOLUME_MOUNT_FAILED', message, options);
    this.name = 'VolumeMountError';
  }
}

export interface VolumeManager {
  /** Reads back from disk what an earlier run set up. */
  start(): Promise<void>;
  /** Cancels the operations under way and waits for them. */
  stop(): Promise<void>;
  /** Until every volume the pod's containers mount is set up; throws VolumeMountError. */
  waitForAttachAndMount(pod: Pod, signal?: AbortSignal): Promise<void>;
  /** The CRI mounts for one container (the runtime manager's volumeMounts option). */
  getMounts(pod: Pod, container: Container, podIPs?: string[]): Promise<Mount[]>;
  /** Tears down every volume of a terminated pod; throws while some remain. */
  unmountAndCleanup(podUid: string, signal?: AbortSignal): Promise<void>;
  /** Removes the folders of pods that are gone (keep says which are not). */
  cleanupOrphanedPodDirs(keep: ReadonlySet<string> | ((podUid: string) => boolean)): Promise<void>;
  /** True while something of the pod's volumes may still be set up (upstream: podVolumesExist). */
  podHasMountedVolumes(podUid: string): boolean;
}

export interface VolumeManagerOptions {
  /** --root-dir. */
  rootDir: string;
  nodeName: string;
  clock?: Clock;
  mounter?: Mounter;
  /** Cluster mode: configMaps, secrets, claims and tokens come from here. */
  client?: RestClient;
  /** Instead of client (tests). Neither: standalone mode. */
  objects?: VolumeObjectSource;
  recorder?: EventRecorder;
  /** The node's labels, for PersistentVolume node affinity. */
  nodeLabels?: () => Record<string, string> | undefined;
  /**
   * What downward-API limits default to and what bounds a memory emptyDir: a fixed value, or one
   * asked for each time (the Node's allocatable, which may come later); the machine's when absent.
   */
  nodeAllocatable?: NodeAllocatable | (() => NodeAllocatable | undefined);
  objectCacheTtlMs?: number;
  /** How configMaps and secrets are read from the API server (default "Cache"; the kubelet's default is "Watch"). */
  objectChangeDetection?: ChangeDetectionStrategy;
  /** How long waitForAttachAndMount waits (default 2 min 3 s, as upstream). */
  mountTimeoutMs?: number;
  /** For subPathExpr: the node's IPs and the env's configMap and secret lookups. */
  hostIPs?: string[];
  envSources?: EnvSources;
  /** SELinux relabelling of managed volumes; default: whether the host has SELinux. */
  selinuxEnabled?: boolean;
  tokenManager?: TokenManager;
  /** Make --root-dir a shared mount at start, for mount propagation (default true, as upstream). */
  makeRootDirShared?: boolean;
  /** The CSI drivers the plugin watcher registered (shared with the CSI registration handler). */
  csiDrivers?: CsiDriversStore;
  /** Instead of client, for CSIDriver and VolumeAttachment objects (tests). */
  csiObjects?: CsiObjectSource;
}

/** The volumes the pod's containers mount (upstream: GetPodVolumeNames): the ones worth waiting for. */
export function expectedVolumes(pod: Pod): string[] {
  const names = new Set<string>();
  const containers = [
    ...(pod.spec.initContainers ?? []),
    ...pod.spec.containers,
    ...((pod.spec.ephemeralContainers ?? []) as Container[]),
  ];
  for (const c of containers) for (const m of c.volumeMounts ?? []) names.add(m.name);
  return [...names];
}
