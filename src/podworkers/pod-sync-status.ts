/**
 * What the pod workers know of each pod (upstream: podSyncStatus) and the small rules read off it:
 * the lane's state, the grace period a kill uses, and whose update an update is.
 */
import type { Pod } from '../api/core-v1.js';
import { podFullName } from '../api/core-v1.js';
import type { KubePodStatus, RunningPod } from '../kuberuntime/types.js';
import { logger } from '../lib/log.js';
import type { KillPodOptions, PodWorkerState, UpdatePodOptions } from './pod-workers.js';

const log = logger('pod_workers');

/** Upstream's default terminationGracePeriodSeconds, for pods that say nothing. */
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;

export interface PodSyncStatus {
  fullname: string;
  startedAtMs: number;
  terminatingAtMs: number;
  terminatedAtMs: number;
  /** 0 until a kill fixes it; then only ever decreases. */
  gracePeriodSeconds: number;
  startedTerminating: boolean;
  deleted: boolean;
  evicted: boolean;
  finished: boolean;
  restartRequested: boolean;
  working: boolean;
  pendingUpdate?: UpdatePodOptions;
  /** The last update the lane acted on, merged (upstream: activeUpdate); replayed on state changes. */
  activeUpdate?: UpdatePodOptions;
  controller?: AbortController;
  notifyPostTerminating: (() => void)[];
  /** When the last sync of this pod ended; the lane waits for a cache newer than this. */
  lastSyncTimeMs: number;
  /** What the last sync of the pod acted on, when it succeeded (a failed sync leaves none). */
  lastSynced?: { pod: Pod | undefined; mirrorPod: Pod | undefined; podStatus: KubePodStatus };
}

export function isTerminationRequested(s: PodSyncStatus): boolean {
  return s.terminatingAtMs !== 0;
}
export function isTerminated(s: PodSyncStatus): boolean {
  return s.terminatedAtMs !== 0;
}
export function isStarted(s: PodSyncStatus): boolean {
  return s.startedAtMs !== 0;
}
export function workType(s: PodSyncStatus): PodWorkerState {
  if (isTerminated(s)) return 'TerminatedPod';
  if (isTerminationRequested(s)) return 'TerminatingPod';
  return 'SyncPod';
}

/** No running container and no ready sandbox: what a pod looks like once it has been fully stopped. */
export function isPodStatusCacheTerminal(status: KubePodStatus): boolean {
  return (
    !status.containerStatuses.some((c) => c.state === 'running') &&
    !status.sandboxStatuses.some((s) => s.state === 'SANDBOX_READY')
  );
}

/** A placeholder pod for a runtime-only pod, so logs and the lane have a name to show. */
export function podFromRunningPod(running: RunningPod): Pod {
  return {
    metadata: { uid: running.uid, name: running.name, namespace: running.namespace },
    spec: { containers: [], terminationGracePeriodSeconds: running.terminationGracePeriodSeconds },
  };
}

/**
 * The grace period a kill should use: the API's deletion grace period and any kubelet override can
 * only shorten what is already in force; with neither, the pod's own; never below 1 s.
 */
export function effectiveGracePeriod(
  status: PodSyncStatus,
  pod: Pod,
  options: KillPodOptions | undefined,
): { gracePeriodSeconds: number; shortened: boolean } {
  let grace = status.gracePeriodSeconds;
  let overridden = false;
  const fromApi = pod.metadata.deletionGracePeriodSeconds;
  if (fromApi !== undefined && (grace === 0 || fromApi < grace)) {
    grace = fromApi;
    overridden = true;
  }
  const fromKubelet = options?.gracePeriodSecondsOverride;
  if (fromKubelet !== undefined && (grace === 0 || fromKubelet < grace)) {
    grace = fromKubelet;
    overridden = true;
  }
  if (!overridden && grace === 0) {
    grace = pod.spec.terminationGracePeriodSeconds ?? DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
  }
  if (grace < 1) grace = 1;
  return {
    gracePeriodSeconds: grace,
    shortened: status.gracePeriodSeconds !== 0 && status.gracePeriodSeconds !== grace,
  };
}

export function podIdentity(pod: Pod): { uid: string; name: string; namespace: string } {
  return {
    uid: pod.metadata.uid ?? podFullName(pod),
    name: pod.metadata.name ?? '',
    namespace: pod.metadata.namespace ?? '',
  };
}

export function newSyncStatus(fullname: string): PodSyncStatus {
  return {
    fullname,
    startedAtMs: 0,
    terminatingAtMs: 0,
    terminatedAtMs: 0,
    gracePeriodSeconds: 0,
    startedTerminating: false,
    deleted: false,
    evicted: false,
    finished: false,
    restartRequested: false,
    working: false,
    notifyPostTerminating: [],
    lastSyncTimeMs: 0,
  };
}

/** The update the lane takes next, in place of any waiting: the newest pod and reading count. */
export function replacePendingUpdate(status: PodSyncStatus, options: UpdatePodOptions): void {
  // A PLEG event's sync may be skipped (syncedAlready) only if the update it replaces could be too.
  if (status.pendingUpdate && !status.pendingUpdate.plegReading) options.plegReading = undefined;
  status.pendingUpdate = options;
}

/** Remembers the newest pod, mirror pod and kill options the lane has seen, for replay. */
export function mergeLastUpdate(status: PodSyncStatus, other: UpdatePodOptions): void {
  // A replayed update is a plain sync, whatever brought the pod here.
  const active: UpdatePodOptions = status.activeUpdate ?? { updateType: 'sync' };
  status.activeUpdate = active;
  if (!active.pod || !other.runningPod) active.pod = other.pod;
  active.runningPod = other.runningPod;
  if (other.mirrorPod) active.mirrorPod = other.mirrorPod;
  if (other.killPodOptions) active.killPodOptions = other.killPodOptions;
}

/**
 * Whose update this is: the pod's, or a runtime pod's (a kill only). A runtime pod given beside the
 * pod is dropped from options. undefined when the update is ignored (logged here).
 */
export function updateIdentity(
  options: UpdatePodOptions,
): { uid: string; name: string; namespace: string; isRuntimePod: boolean } | undefined {
  if (options.runningPod) {
    if (!options.pod) {
      if (options.updateType !== 'kill') {
        log.info('Pod update is ignored, runtime pods can only be killed', {
          podUID: options.runningPod.uid,
          updateType: options.updateType,
        });
        return undefined;
      }
      const { uid, name, namespace } = options.runningPod;
      return { uid, name, namespace, isRuntimePod: true };
    }
    options.runningPod = undefined;
    return { ...podIdentity(options.pod), isRuntimePod: false };
  }
  if (options.pod) return { ...podIdentity(options.pod), isRuntimePod: false };
  log.error('Pod update has neither a pod nor a running pod, ignoring', {
    updateType: options.updateType,
  });
  return undefined;
}
