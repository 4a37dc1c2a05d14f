/**
 * The kubelet's record of the status it reports for each pod (upstream: status.Manager). It keeps
 * each status monotonic (start time set once, condition transition times kept, no container going
 * back from terminated where the restart policy forbids it), versions every change, and hands each
 * new version to an optional sink: the seam where cluster mode will patch the API server.
 */
import type { ContainerStatus, Pod, PodCondition, PodStatus } from '../api/core-v1.js';
import { isTerminalPhase } from '../api/core-v1.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { mutableCopy, type DeepReadonly } from '../lib/deep-readonly.js';
import { logger } from '../lib/log.js';
import {
  generateContainersReadyCondition,
  generatePodReadyCondition,
  isConditionOwnedByKubelet,
  isConditionSharedByKubelet,
  updateLastTransitionTimes,
} from './pod-conditions.js';
import { rfc3339Seconds } from '../api/rfc3339-seconds.js';
import { isStaticPod } from '../api/pod-source.js';
import { compareStrings } from '../lib/compare.js';

const log = logger('status_manager');

/** Upstream's MaxPodTerminationMessageLogLength: the termination messages of all containers share it. */
const MAX_POD_TERMINATION_MESSAGE_BYTES = 1024 * 12;

export interface VersionedPodStatus {
  uid: string;
  podName: string;
  podNamespace: string;
  /** Shared, not copied: the status manager replaces a status, never edits it. */
  status: DeepReadonly<PodStatus>;
  /** Increases with each change of this pod's status. */
  version: number;
  /** The pod has finished terminating: its status will change no more (upstream: podIsFinished). */
  podIsFinished: boolean;
  /** When the first version not yet delivered was made, for status-latency measurements. */
  atMs: number;
}

/** Where new statuses go; cluster mode implements it by patching pods/status. */
export interface PodStatusSink {
  podStatusChanged(update: VersionedPodStatus): void;
}

export interface StatusManager {
  /** The stored status itself, not a copy: statuses are replaced, never changed in place. */
  getPodStatus(uid: string): DeepReadonly<PodStatus> | undefined;
  /** Records the status generateAPIPodStatus produced for pod. */
  setPodStatus(pod: Pod, status: DeepReadonly<PodStatus>): void;
  /** A readiness probe result changed: updates the container's ready and the Ready conditions. */
  setContainerReadiness(uid: string, containerID: string, ready: boolean): void;
  setContainerStartup(uid: string, containerID: string, started: boolean): void;
  /**
   * The pod has stopped: any container still shown as not terminated is reported terminated with
   * ContainerStatusUnknown (we cannot know it succeeded), and a pod from the API becomes Failed
   * unless already terminal.
   */
  terminatePod(pod: Pod): void;
  /** Forgets the statuses of pods not in desiredUids. */
  removeOrphanedStatuses(desiredUids: Iterable<string>): void;
}

export interface LocalStatusManagerOptions {
  clock: Clock;
  sink?: PodStatusSink;
}

interface Entry extends VersionedPodStatus {
  /** Built here, then never changed: replaced by the next version. */
  status: PodStatus;
  pod: Pod;
}

export class LocalStatusManager implements StatusManager {
  private readonly statuses = new Map<string, Entry>();
  private readonly clock: Clock;
  private readonly sink: PodStatusSink | undefined;

  constructor(opts: LocalStatusManagerOptions) {
    this.clock = opts.clock;
    this.sink = opts.sink;
  }

  getPodStatus(uid: string): DeepReadonly<PodStatus> | undefined {
    return this.statuses.get(uid)?.status;
  }

  /** The versioned record, for the API syncer and tests. */
  getVersionedPodStatus(uid: string): VersionedPodStatus | undefined {
    const e = this.statuses.get(uid);
    if (!e) return undefined;
    const { pod: _pod, ...versioned } = e;
    return versioned;
  }

  setPodStatus(pod: Pod, status: DeepReadonly<PodStatus>): void {
    // A pod being deleted must still be able to report its way to terminal.
    this.updateStatusInternal(
      pod,
      mutableCopy<PodStatus>(status),
      pod.metadata.deletionTimestamp !== undefined,
      false,
    );
  }

  setContainerReadiness(uid: string, containerID: string, ready: boolean): void {
    const e = this.statuses.get(uid);
    if (!e) {
      log.info('Container readiness changed before pod has synced', { podUID: uid, containerID });
      return;
    }
    const found = findContainerStatus(e.status, containerID);
    if (!found) {
      log.info('Container readiness changed for unknown container', { podUID: uid, containerID });
      return;
    }
    if (found.ready === ready) return;
    const status = mutableCopy<PodStatus>(e.status);
    findContainerStatus(status, containerID)!.ready = ready;
    const phase = status.phase ?? 'Pending';
    const all = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
    const conditions = status.conditions ?? [];
    replaceCondition(conditions, generatePodReadyCondition(e.pod, conditions, all, phase));
    replaceCondition(conditions, generateContainersReadyCondition(e.pod, all, phase));
    status.conditions = conditions;
    this.updateStatusInternal(e.pod, status, false, false);
  }

  setContainerStartup(uid: string, containerID: string, started: boolean): void {
    const e = this.statuses.get(uid);
    if (!e) return;
    const found = findContainerStatus(e.status, containerID);
    if (!found || found.started === started) return;
    const status = mutableCopy<PodStatus>(e.status);
    findContainerStatus(status, containerID)!.started = started;
    this.updateStatusInternal(e.pod, status, false, false);
  }

  terminatePod(pod: Pod): void {
    const uid = pod.metadata.uid ?? '';
    const cached = this.statuses.get(uid);
    const status = mutableCopy<PodStatus>(cached?.status ?? pod.status ?? {});
    const unknown = (): ContainerStatus['state'] => ({
      terminated: {
        exitCode: 137,
        reason: 'ContainerStatusUnknown',
        message: 'The container could not be located when the pod was terminated',
      },
    });
    // Regular containers that never left waiting before initialization finished did not run: leave them waiting.
    if (hasPodInitialized(pod, status)) {
      for (const s of status.containerStatuses ?? []) if (!s.state?.terminated) s.state = unknown();
    }
    for (const s of initializedContainers(status.initContainerStatuses ?? [])) {
      if (!s.state?.terminated) s.state = unknown();
    }
    // Upstream does not yet force a terminal phase on static pods (kubernetes#116484).
    if (!isStaticPod(pod) && !isTerminalPhase(status.phase)) status.phase = 'Failed';
    this.updateStatusInternal(pod, status, true, true);
  }

  removeOrphanedStatuses(desiredUids: Iterable<string>): void {
    const desired = new Set(desiredUids);
    for (const uid of [...this.statuses.keys()]) {
      if (!desired.has(uid)) {
        log.v(5, 'Removing pod from status map.', { podUID: uid });
        this.statuses.delete(uid);
      }
    }
  }

  private updateStatusInternal(
    pod: Pod,
    status: PodStatus,
    forceUpdate: boolean,
    podIsFinished: boolean,
  ): void {
    const uid = pod.metadata.uid ?? '';
    const cached = this.statuses.get(uid);
    const oldStatus: PodStatus = cached?.status ?? pod.status ?? {};
    if (cached?.podIsFinished && !isStaticPod(pod)) podIsFinished = true;

    const restartPolicy = pod.spec.restartPolicy ?? 'Always';
    const illegal =
      illegalTransition(oldStatus.containerStatuses, status.containerStatuses, restartPolicy) ??
      // A sidecar (restartPolicy Always) is restarted whatever the pod's policy (upstream:
      // checkContainerStateTransition skips restartable init containers).
      illegalTransition(
        oldStatus.initContainerStatuses,
        status.initContainerStatuses,
        restartPolicy,
        (name) =>
          (pod.spec.initContainers ?? []).some((c) => c.name === name && c.restartPolicy === 'Always'),
      ) ??
      // Ephemeral containers are never restarted.
      illegalTransition(oldStatus.ephemeralContainerStatuses, status.ephemeralContainerStatuses, 'Never');
    if (illegal) {
      log.error('Status update on pod aborted', {
        pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
        err: illegal,
      });
      return;
    }

    const nowMs = this.clock.now();
    updateLastTransitionTimes(status, oldStatus, rfc3339Seconds(nowMs));
    status.startTime = oldStatus.startTime || status.startTime || rfc3339Seconds(nowMs);
    normalizeStatus(pod, status);

    if (cached && !forceUpdate && isPodStatusByKubeletEqual(cached.status, status)) {
      log.v(3, 'Ignoring same status for pod', { podUID: uid });
      return;
    }
    const entry: Entry = {
      uid,
      podName: pod.metadata.name ?? '',
      podNamespace: pod.metadata.namespace ?? '',
      status,
      version: (cached?.version ?? 0) + 1,
      podIsFinished,
      atMs: cached?.atMs ?? nowMs,
      pod,
    };
    this.statuses.set(uid, entry);
    if (this.sink) {
      try {
        this.sink.podStatusChanged(this.getVersionedPodStatus(uid)!);
      } catch (err) {
        log.error('Pod status sink failed', { podUID: uid, err: errorMessage(err) });
      }
    }
  }
}

function findContainerStatus(status: PodStatus, containerID: string): ContainerStatus | undefined {
  return (
    status.containerStatuses?.find((c) => c.containerID === containerID) ??
    status.initContainerStatuses?.find((c) => c.containerID === containerID)
  );
}

function replaceCondition(conditions: PodCondition[], condition: PodCondition): void {
  const i = conditions.findIndex((c) => c.type === condition.type);
  // The transition time is settled afterwards by updateLastTransitionTimes against the cached status.
  const merged: PodCondition = { type: condition.type, status: condition.status, lastProbeTime: null };
  if (condition.reason !== undefined) merged.reason = condition.reason;
  if (condition.message !== undefined) merged.message = condition.message;
  if (i >= 0) conditions[i] = merged;
  else {
    log.info('PodStatus missing condition type', { conditionType: condition.type });
    conditions.push(merged);
  }
}

/** Evidence that the pod got past its init containers (upstream: hasPodInitialized, on the status being terminated). */
function hasPodInitialized(pod: Pod, status: PodStatus): boolean {
  if ((pod.spec.initContainers?.length ?? 0) === 0) return true;
  for (const s of status.containerStatuses ?? []) {
    if (s.lastState?.terminated || !s.state?.waiting) return true;
  }
  const last = status.initContainerStatuses?.at(-1);
  if (last) {
    if (last.lastState?.terminated && last.lastState.terminated.exitCode === 0) return true;
    if (last.state?.terminated && last.state.terminated.exitCode === 0) return true;
  }
  return false;
}

/** All init container statuses but the trailing ones that never started; at least the first. */
function initializedContainers(statuses: ContainerStatus[]): ContainerStatus[] {
  for (let i = statuses.length - 1; i >= 0; i--) {
    const s = statuses[i]!;
    if (!s.state?.waiting || s.lastState?.terminated) return statuses.slice(0, i + 1);
  }
  return statuses.slice(0, 1);
}

/** A container shown terminated may not be shown otherwise later, unless its restart policy restarts it. */
function illegalTransition(
  oldStatuses: ContainerStatus[] | undefined,
  newStatuses: ContainerStatus[] | undefined,
  restartPolicy: string,
  mayRestart: (name: string) => boolean = () => false,
): string | undefined {
  if (restartPolicy === 'Always') return undefined;
  for (const old of oldStatuses ?? []) {
    if (mayRestart(old.name)) continue;
    const terminated = old.state?.terminated;
    if (!terminated) continue;
    if (terminated.exitCode !== 0 && restartPolicy === 'OnFailure') continue;
    const next = newStatuses?.find((s) => s.name === old.name);
    if (next && !next.state?.terminated) {
      return `terminated container ${old.name} attempted illegal transition to non-terminated state`;
    }
  }
  return undefined;
}

/** Bounds termination messages and orders container statuses, as the API comparison expects. */
function normalizeStatus(pod: Pod, status: PodStatus): void {
  const containers = pod.spec.containers.length + (pod.spec.initContainers?.length ?? 0);
  const bytesPerStatus =
    containers > 0
      ? Math.floor(MAX_POD_TERMINATION_MESSAGE_BYTES / containers)
      : MAX_POD_TERMINATION_MESSAGE_BYTES;
  const truncate = (s: ContainerStatus) => {
    for (const state of [s.state, s.lastState]) {
      const t = state?.terminated;
      if (t?.message && Buffer.byteLength(t.message) > bytesPerStatus) {
        t.message = Buffer.from(t.message).subarray(0, bytesPerStatus).toString();
      }
    }
  };
  status.containerStatuses?.forEach(truncate);
  status.initContainerStatuses?.forEach(truncate);
  status.ephemeralContainerStatuses?.forEach(truncate);
  const byName = (a: { name: string }, b: { name: string }): number => compareStrings(a.name, b.name);
  status.containerStatuses?.sort(byName);
  status.ephemeralContainerStatuses?.sort(byName);
  if (status.initContainerStatuses) {
    const order = new Map((pod.spec.initContainers ?? []).map((c, i) => [c.name, i]));
    status.initContainerStatuses.sort(
      (a, b) => (order.get(a.name) ?? Infinity) - (order.get(b.name) ?? Infinity),
    );
  }
}

/** Equal as far as the kubelet is concerned: conditions others own do not count. */
function isPodStatusByKubeletEqual(oldStatus: PodStatus, status: PodStatus): boolean {
  for (const c of status.conditions ?? []) {
    if (!isConditionOwnedByKubelet(c.type) && !isConditionSharedByKubelet(c.type)) continue;
    const o = oldStatus.conditions?.find((x) => x.type === c.type);
    if (!o || o.status !== c.status || o.message !== c.message || o.reason !== c.reason) return false;
  }
  const { conditions: _a, ...oldRest } = oldStatus;
  const { conditions: _b, ...newRest } = status;
  return deepEqual(oldRest, newRest);
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
