/**
 * One lane of work per pod UID (upstream: kubelet's podWorkers). Each pod moves one way through
 * three states: syncing (syncPod keeps it as its spec asks), terminating (syncTerminatingPod stops
 * its containers) and terminated (syncTerminatedPod releases what is left). A lane never runs two
 * syncs of its pod at once; updates that arrive meanwhile coalesce into one pending update, and a
 * request to kill is a state of the pod rather than an update, so no later update can undo it.
 */
import type { Pod } from '../api/core-v1.js';
import { isTerminalPhase } from '../api/core-v1.js';
import type { KubePodStatus, RunningPod } from '../kuberuntime/types.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { DEFAULT_BUCKETS_SECONDS, type Histogram, type MetricsRegistry } from '../lib/metrics.js';
import type { PodCache } from '../pleg/pod-cache.js';
import type { WorkQueue } from './work-queue.js';
import { isStaticPod } from '../api/pod-source.js';
import { loopPeriodMs } from '../lib/loop-period.js';
import {
  DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
  effectiveGracePeriod,
  isPodStatusCacheTerminal,
  isStarted,
  isTerminated,
  isTerminationRequested,
  mergeLastUpdate,
  replacePendingUpdate,
  newSyncStatus,
  podFromRunningPod,
  updateIdentity,
  workType,
  type PodSyncStatus,
} from './pod-sync-status.js';

export { DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS };

const log = logger('pod_workers');

/** Upstream's kubetypes.SyncPodType, in the words the sync loop uses. */
export type SyncPodType = 'create' | 'update' | 'sync' | 'kill';

/** Upstream's PodWorkerState names. */
export type PodWorkerState = 'SyncPod' | 'TerminatingPod' | 'TerminatedPod';

export interface KillPodOptions {
  /** A shorter grace period than the pod's own; once a pod is terminating its grace period only ever shrinks. */
  gracePeriodSecondsOverride?: number;
  /** The kubelet itself evicts the pod (its content may then be removed at once). */
  evict?: boolean;
  /** Called once the pod's containers have all stopped (upstream: KillPodOptions.CompletedCh). */
  onCompleted?: () => void;
}

export interface UpdatePodOptions {
  updateType: SyncPodType;
  /** The pod as configured; absent only for a runningPod being killed. */
  pod?: Pod;
  mirrorPod?: Pod;
  /** A pod found in the runtime with no configuration left: it can only be killed. */
  runningPod?: RunningPod;
  killPodOptions?: KillPodOptions;
  /** When the update was first seen, ms since the epoch (for latency measurements). */
  startTimeMs?: number;
  /**
   * A sync for a PLEG event: the cache's reading of the pod that the event came with. The sync is
   * not run when the pod's previous sync succeeded on this very reading with the same pod (see
   * syncedAlready).
   */
  plegReading?: KubePodStatus;
}

/** What a successful syncPod tells the worker about the pod's next sync. */
export interface SyncPodOutcome {
  /** The pod has run to completion under its restart policy. */
  isTerminal: boolean;
  /**
   * The pod waits only on back-offs: sync it again this soon, when the first runs out, rather than at
   * the resync interval (which still caps it).
   */
  requeueAfterMs?: number;
}

/** The kubelet's side of the lanes: what each state does. Errors are retried after a back-off. */
export interface PodSyncer {
  /** Brings the pod to its spec. */
  syncPod(
    updateType: SyncPodType,
    pod: Pod,
    mirrorPod: Pod | undefined,
    podStatus: KubePodStatus,
    signal: AbortSignal,
  ): Promise<SyncPodOutcome>;
  /** Stops every container of the pod within the grace period (undefined: the pod's own). */
  syncTerminatingPod(
    pod: Pod,
    podStatus: KubePodStatus,
    gracePeriodSeconds: number | undefined,
    signal: AbortSignal,
  ): Promise<void>;
  /** Stops a pod known only from the runtime. */
  syncTerminatingRuntimePod(runningPod: RunningPod, signal: AbortSignal): Promise<void>;
  /** Releases what a stopped pod still holds (volumes, cgroups) and reports its final status. */
  syncTerminatedPod(pod: Pod, podStatus: KubePodStatus, signal: AbortSignal): Promise<void>;
}

/** What housekeeping learns of each worker (upstream: PodWorkerSync). */
export interface PodWorkerSync {
  state: PodWorkerState;
  /** No longer among the desired pods. */
  orphan: boolean;
  /** The worker has a configured pod (not only a runtime pod). */
  hasConfig: boolean;
  static: boolean;
}

export interface PodWorkers {
  updatePod(options: UpdatePodOptions): void;
  /**
   * Forgets the workers of pods that have finished and are no longer desired (or whose UID was
   * recreated), and reports the rest. The first call also means every desired pod has been handed
   * over, so a pod without a worker is known not to run.
   */
  syncKnownPods(desiredUids: Iterable<string>): Map<string, PodWorkerSync>;
  isPodKnownTerminated(uid: string): boolean;
  couldHaveRunningContainers(uid: string): boolean;
  shouldPodBeFinished(uid: string): boolean;
  isPodTerminationRequested(uid: string): boolean;
  shouldPodContainersBeTerminating(uid: string): boolean;
  shouldPodRuntimeBeRemoved(uid: string): boolean;
  shouldPodContentBeRemoved(uid: string): boolean;
  isPodForMirrorPodTerminatingByFullName(podFullName: string): boolean;
  /** Aborts the syncs under way and waits for every lane to stop; later updates are ignored. */
  stop(): Promise<void>;
}

export interface PodWorkersOptions {
  syncer: PodSyncer;
  podCache: PodCache;
  workQueue: WorkQueue;
  clock: Clock;
  /** After a successful sync (upstream: syncFrequency, 1 min). */
  resyncIntervalMs?: number;
  /** After a failed sync (upstream: 10 s). */
  backOffPeriodMs?: number;
  /** For jitter; tests pass () => 0. */
  random?: () => number;
  /** Where kubelet_pod_worker_duration_seconds goes; absent, it is not measured. */
  metrics?: MetricsRegistry;
}

export const DEFAULT_RESYNC_INTERVAL_MS = 60_000;
export const DEFAULT_BACK_OFF_PERIOD_MS = 10_000;
/** Retry soon when the pod network is merely not up yet (upstream: backOffOnTransientErrorPeriod). */
const TRANSIENT_BACK_OFF_MS = 1_000;
const JITTER_FACTOR = 0.5;
/**
 * The API server defaults terminationGracePeriodSeconds to 30; a pod from a source that did not apply
 * defaults gets the same, not upstream's last-resort floor of 1 s.
 */
/** Upstream matches this text in sync errors to retry sooner. */
export const NETWORK_NOT_READY_ERROR_MSG = 'network is not ready';

interface Lane {
  done: Promise<void>;
}

export class PodWorkersImpl implements PodWorkers {
  private readonly syncer: PodSyncer;
  private readonly podCache: PodCache;
  private readonly workQueue: WorkQueue;
  private readonly clock: Clock;
  private readonly workDuration: Histogram | undefined;
  private readonly resyncIntervalMs: number;
  private readonly backOffPeriodMs: number;
  private readonly random: () => number;

  private readonly statuses = new Map<string, PodSyncStatus>();
  private readonly lanes = new Map<string, Lane>();
  /** Static pods share a full name across UIDs (a changed manifest): one of them runs at a time, in arrival order. */
  private readonly startedStaticPodsByFullname = new Map<string, string>();
  private readonly waitingToStartStaticPodsByFullname = new Map<string, string[]>();
  private podsSynced = false;
  private stopped = false;

  constructor(opts: PodWorkersOptions) {
    this.syncer = opts.syncer;
    this.workDuration = opts.metrics?.histogram(
      'kubelet_pod_worker_duration_seconds',
      '[ALPHA] Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
      ['operation_type'],
      DEFAULT_BUCKETS_SECONDS,
    );
    this.podCache = opts.podCache;
    this.workQueue = opts.workQueue;
    this.clock = opts.clock;
    this.resyncIntervalMs = loopPeriodMs('pod resync', opts.resyncIntervalMs ?? DEFAULT_RESYNC_INTERVAL_MS);
    this.backOffPeriodMs = loopPeriodMs(
      'pod sync back-off',
      opts.backOffPeriodMs ?? DEFAULT_BACK_OFF_PERIOD_MS,
    );
    this.random = opts.random ?? Math.random;
  }

  updatePod(input: UpdatePodOptions): void {
    if (this.stopped) return;
    const options: UpdatePodOptions = { ...input };
    const identity = updateIdentity(options);
    if (!identity) return;
    const { uid, name, namespace, isRuntimePod } = identity;

    const now = this.clock.now();
    let firstTime = false;
    let status = this.statuses.get(uid);
    if (!status) {
      firstTime = true;
      status = newSyncStatus(`${name}_${namespace}`);
      // After a restart, a pod the API already shows finished and the runtime shows stopped is not
      // started again: it goes straight to terminated so its final cleanup still runs.
      if (options.pod && isTerminalPhase(options.pod.status?.phase)) {
        const cached = this.podCache.get(uid);
        if (!cached.error && isPodStatusCacheTerminal(cached.status)) {
          status.terminatedAtMs = now;
          status.terminatingAtMs = now;
          status.startedTerminating = true;
        }
      }
      this.statuses.set(uid, status);
    }

    // A runtime pod carries no spec: once a real pod is known for the UID, kill that instead.
    let pod: Pod;
    if (isRuntimePod) {
      const known = status.pendingUpdate?.pod ?? status.activeUpdate?.pod;
      if (known) {
        pod = known;
        options.pod = known;
        options.runningPod = undefined;
      } else {
        pod = podFromRunningPod(options.runningPod!);
      }
    } else {
      pod = options.pod!;
    }

    // The same UID created again while terminating: it may start only once the old one is gone (see syncKnownPods).
    if (!firstTime && isTerminationRequested(status) && options.updateType === 'create') {
      status.restartRequested = true;
      log.v(
        4,
        'Pod is terminating but has been requested to restart with same UID, will be reconciled later',
        {
          pod: `${namespace}/${name}`,
          podUID: uid,
        },
      );
      return;
    }

    if (status.finished) {
      log.v(4, 'Pod is finished processing, no further updates', {
        pod: `${namespace}/${name}`,
        podUID: uid,
      });
      return;
    }

    let becameTerminating = false;
    if (!isTerminationRequested(status)) {
      if (isRuntimePod) {
        status.deleted = true;
        becameTerminating = true;
      } else if (pod.metadata.deletionTimestamp) {
        status.deleted = true;
        becameTerminating = true;
      } else if (isTerminalPhase(pod.status?.phase)) {
        becameTerminating = true;
      } else if (options.updateType === 'kill') {
        if (options.killPodOptions?.evict) status.evicted = true;
        becameTerminating = true;
      }
      if (becameTerminating) {
        status.terminatingAtMs = now;
        log.v(4, 'Pod is being terminated', {
          pod: `${namespace}/${name}`,
          podUID: uid,
          updateType: options.updateType,
        });
      }
    }

    let gracePeriodShortened = false;
    if (isTerminated(status)) {
      // A runtime-only kill seen by housekeeping from a stale listing: the lane is already finishing.
      if (isRuntimePod) return;
      options.killPodOptions?.onCompleted?.();
      options.killPodOptions = undefined;
    } else if (isTerminationRequested(status)) {
      const kill: KillPodOptions = { ...options.killPodOptions };
      if (kill.onCompleted) status.notifyPostTerminating.push(kill.onCompleted);
      kill.onCompleted = undefined;
      const { gracePeriodSeconds, shortened } = effectiveGracePeriod(status, pod, kill);
      gracePeriodShortened = shortened;
      status.gracePeriodSeconds = gracePeriodSeconds;
      kill.gracePeriodSecondsOverride = gracePeriodSeconds;
      options.killPodOptions = kill;
    } else if (options.killPodOptions) {
      // Kill options mean nothing to a pod that is not terminating.
      options.killPodOptions.onCompleted?.();
      options.killPodOptions = undefined;
    }

    if (!isStarted(status) && isStaticPod(pod)) {
      const waiting = this.waitingToStartStaticPodsByFullname.get(status.fullname) ?? [];
      if (!waiting.includes(uid)) waiting.push(uid);
      this.waitingToStartStaticPodsByFullname.set(status.fullname, waiting);
    }

    // Keep the oldest start time among coalesced updates, so latency counts from the first of them.
    const pendingStart = status.pendingUpdate?.startTimeMs;
    if (pendingStart && (!options.startTimeMs || pendingStart < options.startTimeMs)) {
      options.startTimeMs = pendingStart;
    }
    // Cancel before waking the lane, so that the cancellation reaches the sync under way, not the next one.
    if (
      (becameTerminating || gracePeriodShortened) &&
      status.controller &&
      !status.controller.signal.aborted
    ) {
      log.v(3, 'Cancelling current pod sync', {
        pod: `${namespace}/${name}`,
        podUID: uid,
        workType: workType(status),
      });
      status.controller.abort(new Error('pod sync cancelled: pod is terminating'));
    }
    replacePendingUpdate(status, options);
    status.working = true;
    this.ensureLane(uid);
  }

  syncKnownPods(desiredUids: Iterable<string>): Map<string, PodWorkerSync> {
    const known = new Set(desiredUids);
    const workers = new Map<string, PodWorkerSync>();
    this.podsSynced = true;
    for (const [uid, status] of [...this.statuses]) {
      const orphan = !known.has(uid);
      if ((status.restartRequested || orphan) && this.removeTerminatedWorker(uid, status, orphan)) continue;
      const pod = status.activeUpdate?.pod ?? status.pendingUpdate?.pod;
      workers.set(uid, {
        state: workType(status),
        orphan,
        hasConfig: pod !== undefined,
        static: pod !== undefined && isStaticPod(pod),
      });
    }
    return workers;
  }

  isPodKnownTerminated(uid: string): boolean {
    const s = this.statuses.get(uid);
    return s ? isTerminated(s) : false;
  }

  couldHaveRunningContainers(uid: string): boolean {
    const s = this.statuses.get(uid);
    if (s) return !isTerminated(s);
    // Until every desired pod has been handed over, an unknown pod may yet turn out to be running.
    return !this.podsSynced;
  }

  shouldPodBeFinished(uid: string): boolean {
    const s = this.statuses.get(uid);
    return s ? s.finished : this.podsSynced;
  }

  isPodTerminationRequested(uid: string): boolean {
    const s = this.statuses.get(uid);
    return s ? isTerminationRequested(s) : false;
  }

  shouldPodContainersBeTerminating(uid: string): boolean {
    const s = this.statuses.get(uid);
    // Only once the lane has begun terminating is it certain syncPod will not start another container.
    return s ? s.startedTerminating : this.podsSynced;
  }

  shouldPodRuntimeBeRemoved(uid: string): boolean {
    const s = this.statuses.get(uid);
    return s ? isTerminated(s) : this.podsSynced;
  }

  shouldPodContentBeRemoved(uid: string): boolean {
    const s = this.statuses.get(uid);
    return s ? s.evicted || (s.deleted && isTerminated(s)) : this.podsSynced;
  }

  isPodForMirrorPodTerminatingByFullName(fullname: string): boolean {
    const uid = this.startedStaticPodsByFullname.get(fullname);
    if (uid === undefined) return false;
    const s = this.statuses.get(uid);
    return s !== undefined && isTerminationRequested(s) && !isTerminated(s);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const s of this.statuses.values()) s.controller?.abort(new Error('pod workers stopped'));
    await Promise.all([...this.lanes.values()].map((l) => l.done));
  }

  private ensureLane(uid: string): void {
    if (this.lanes.has(uid)) return;
    const lane: Lane = { done: Promise.resolve() };
    this.lanes.set(uid, lane);
    lane.done = this.runLane(uid, lane);
  }

  private exitLane(uid: string, lane: Lane): void {
    if (this.lanes.get(uid) === lane) this.lanes.delete(uid);
  }

  /** Takes the pending update and decides whether the lane may act on it (upstream: startPodSync). */
  private startPodSync(uid: string):
    | {
        kind: 'run';
        update: UpdatePodOptions;
        workType: PodWorkerState;
        signal: AbortSignal;
        status: PodSyncStatus;
      }
    | { kind: 'idle' | 'wait' | 'never' } {
    const status = this.statuses.get(uid);
    if (!status) return { kind: 'idle' };
    const update = status.pendingUpdate;
    if (!update) {
      status.working = false;
      return { kind: 'idle' };
    }
    const type = workType(status);
    status.pendingUpdate = undefined;
    if (!status.controller || status.controller.signal.aborted) status.controller = new AbortController();
    const signal = status.controller.signal;
    const run = { kind: 'run' as const, update, workType: type, signal, status };

    if (isStarted(status)) {
      mergeLastUpdate(status, update);
      return run;
    }
    if (update.runningPod && type === 'TerminatingPod') {
      mergeLastUpdate(status, update);
      return run;
    }
    if (!update.pod) {
      mergeLastUpdate(status, update);
      return { kind: 'never' };
    }
    const { canStart, canEverStart } = this.allowPodStart(uid, update.pod, status);
    if (!canEverStart) {
      this.cleanupUnstartedPod(uid, status);
      return { kind: 'never' };
    }
    if (!canStart) {
      // The only path where an update is not consumed: it waits for the next requeue.
      status.pendingUpdate = update;
      status.working = false;
      return { kind: 'wait' };
    }
    status.startedAtMs = this.clock.now();
    mergeLastUpdate(status, update);
    return run;
  }

  private allowPodStart(
    uid: string,
    pod: Pod,
    status: PodSyncStatus,
  ): { canStart: boolean; canEverStart: boolean } {
    if (!isStaticPod(pod)) return { canStart: true, canEverStart: true };
    if (isTerminationRequested(status)) return { canStart: false, canEverStart: false };
    if (!this.allowStaticPodStart(status.fullname, uid)) {
      this.workQueue.enqueue(uid, this.jitter(this.backOffPeriodMs));
      return { canStart: false, canEverStart: true };
    }
    return { canStart: true, canEverStart: true };
  }

  private allowStaticPodStart(fullname: string, uid: string): boolean {
    const startedUid = this.startedStaticPodsByFullname.get(fullname);
    if (startedUid !== undefined) return startedUid === uid;
    let waiting = this.waitingToStartStaticPodsByFullname.get(fullname) ?? [];
    for (let i = 0; i < waiting.length; i++) {
      const waitingUid = waiting[i]!;
      const s = this.statuses.get(waitingUid);
      if (!s || isTerminationRequested(s) || isTerminated(s)) continue;
      if (waitingUid !== uid) {
        this.waitingToStartStaticPodsByFullname.set(fullname, waiting.slice(i));
        return false;
      }
      waiting = waiting.slice(i + 1);
      break;
    }
    if (waiting.length > 0) this.waitingToStartStaticPodsByFullname.set(fullname, waiting);
    else this.waitingToStartStaticPodsByFullname.delete(fullname);
    this.startedStaticPodsByFullname.set(fullname, uid);
    return true;
  }

  private async runLane(uid: string, lane: Lane): Promise<void> {
    for (;;) {
      if (this.stopped) return this.exitLane(uid, lane);
      const start = this.startPodSync(uid);
      if (start.kind !== 'run') return this.exitLane(uid, lane);
      const { update, status, signal } = start;
      const type = start.workType;
      if (type === 'SyncPod' && syncedAlready(update, status)) {
        log.v(4, 'Skipping pod sync: its previous sync acted on the same pod and runtime state', {
          podUID: uid,
        });
        if (this.takeNextUpdate(uid)) continue;
        return this.exitLane(uid, lane);
      }
      const pod = update.pod ?? podFromRunningPod(update.runningPod!);
      const podRef = `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
      log.v(4, 'Processing pod event', { pod: podRef, podUID: uid, updateType: type });

      let outcome: SyncPodOutcome = { isTerminal: false };
      let syncError: unknown;
      try {
        outcome = await this.runSync(uid, type, update, status, signal);
      } catch (err) {
        syncError = err ?? new Error('sync failed');
      }

      if (syncError !== undefined && signal.aborted) {
        log.v(2, 'Sync exited with context cancellation error', {
          pod: podRef,
          podUID: uid,
          updateType: type,
        });
      } else if (syncError !== undefined) {
        log.error('Error syncing pod, skipping', { pod: podRef, podUID: uid, err: errorMessage(syncError) });
      }

      let phaseTransition = false;
      if (syncError === undefined) {
        if (type === 'TerminatedPod') {
          this.completeTerminated(uid);
          this.observeWork(update, 'terminated');
          log.v(4, 'Processing pod event done', { pod: podRef, podUID: uid, updateType: type });
          return this.exitLane(uid, lane);
        }
        if (type === 'TerminatingPod') {
          if (update.runningPod) {
            this.completeTerminatingRuntimePod(uid);
            this.observeWork(update, update.updateType);
            return this.exitLane(uid, lane);
          }
          this.completeTerminating(uid);
          phaseTransition = true;
        } else if (outcome.isTerminal) {
          log.v(4, 'Pod is terminal', { pod: podRef, podUID: uid });
          this.completeSync(uid);
          phaseTransition = true;
        }
      }
      this.completeWork(uid, phaseTransition, syncError, outcome.requeueAfterMs);
      this.observeWork(update, update.updateType);
      if (!this.takeNextUpdate(uid)) return this.exitLane(uid, lane);
    }
  }

  /** Whether an update is waiting for the lane; when none is, the pod's worker is idle. */
  private takeNextUpdate(uid: string): boolean {
    const current = this.statuses.get(uid);
    if (current?.pendingUpdate) return true;
    if (current) current.working = false;
    return false;
  }

  /** From the update's arrival to the end of the work it caused, as upstream's podWorkerLoop observes it. */
  private observeWork(update: UpdatePodOptions, operation: string): void {
    if (this.workDuration && update.startTimeMs !== undefined)
      this.workDuration.observe(
        { operation_type: operation },
        (this.clock.now() - update.startTimeMs) / 1000,
      );
  }

  private async runSync(
    uid: string,
    type: PodWorkerState,
    update: UpdatePodOptions,
    status: PodSyncStatus,
    signal: AbortSignal,
  ): Promise<SyncPodOutcome> {
    let podStatus: KubePodStatus | undefined;
    if (!update.runningPod) {
      // Decide on state the PLEG has read since this pod's last sync, never on what the last sync already saw.
      const entry = await this.podCache.getNewerThan(uid, status.lastSyncTimeMs, signal);
      if (entry.error)
        throw new Error(`error determining status: ${entry.error.message}`, { cause: entry.error });
      podStatus = entry.status;
    }
    // From here on the sync counts as done at its end, failed or not: the next one needs fresher state.
    status.lastSynced = undefined;
    try {
      const outcome = await this.dispatchSync(type, update, podStatus, status, signal);
      if (type === 'SyncPod' && podStatus)
        status.lastSynced = { pod: update.pod, mirrorPod: update.mirrorPod, podStatus };
      return outcome;
    } finally {
      status.lastSyncTimeMs = this.clock.now();
    }
  }

  private async dispatchSync(
    type: PodWorkerState,
    update: UpdatePodOptions,
    podStatus: KubePodStatus | undefined,
    status: PodSyncStatus,
    signal: AbortSignal,
  ): Promise<SyncPodOutcome> {
    switch (type) {
      case 'TerminatedPod':
        await this.syncer.syncTerminatedPod(update.pod!, podStatus!, signal);
        break;
      case 'TerminatingPod':
        status.startedTerminating = true;
        if (update.runningPod) await this.syncer.syncTerminatingRuntimePod(update.runningPod, signal);
        else {
          const grace = update.killPodOptions?.gracePeriodSecondsOverride;
          await this.syncer.syncTerminatingPod(update.pod!, podStatus!, grace, signal);
        }
        break;
      case 'SyncPod':
        return await this.syncer.syncPod(
          update.updateType,
          update.pod!,
          update.mirrorPod,
          podStatus!,
          signal,
        );
    }
    return { isTerminal: false };
  }

  /**
   * Requeues the pod: at once after a state change; when its containers wait out a back-off, as it runs
   * out; after the resync interval when well; after the error back-off when not.
   */
  private completeWork(
    uid: string,
    phaseTransition: boolean,
    syncError: unknown,
    requeueAfterMs: number | undefined,
  ): void {
    if (phaseTransition) this.workQueue.enqueue(uid, 0);
    else if (syncError === undefined && requeueAfterMs !== undefined) {
      this.workQueue.enqueue(uid, Math.min(Math.max(0, requeueAfterMs), this.resyncIntervalMs));
    } else if (syncError === undefined) this.workQueue.enqueue(uid, this.jitter(this.resyncIntervalMs));
    else if (errorMessage(syncError).includes(NETWORK_NOT_READY_ERROR_MSG)) {
      this.workQueue.enqueue(uid, this.jitter(TRANSIENT_BACK_OFF_MS));
    } else this.workQueue.enqueue(uid, this.jitter(this.backOffPeriodMs));
  }

  /** syncPod found the pod done: move it to terminating and replay its last update to get there at once. */
  private completeSync(uid: string): void {
    const status = this.statuses.get(uid);
    if (!status) return;
    if (status.terminatingAtMs === 0) status.terminatingAtMs = this.clock.now();
    status.startedTerminating = true;
    this.requeueLastPodUpdate(status);
  }

  private completeTerminating(uid: string): void {
    const status = this.statuses.get(uid);
    if (!status) return;
    status.terminatedAtMs = this.clock.now();
    const notify = status.notifyPostTerminating;
    status.notifyPostTerminating = [];
    for (const fn of notify) {
      try {
        fn();
      } catch (err) {
        log.error('Pod termination callback failed', { podUID: uid, err: errorMessage(err) });
      }
    }
    this.requeueLastPodUpdate(status);
  }

  private completeTerminated(uid: string): void {
    const status = this.statuses.get(uid);
    if (!status) return;
    status.finished = true;
    status.working = false;
    status.pendingUpdate = undefined;
    if (this.startedStaticPodsByFullname.get(status.fullname) === uid) {
      this.startedStaticPodsByFullname.delete(status.fullname);
    }
  }

  private completeTerminatingRuntimePod(uid: string): void {
    const status = this.statuses.get(uid);
    if (!status) return;
    if (this.startedStaticPodsByFullname.get(status.fullname) === uid) {
      this.startedStaticPodsByFullname.delete(status.fullname);
    }
    // A runtime pod is not part of the desired state: once stopped there is nothing to remember.
    this.statuses.delete(uid);
  }

  private cleanupUnstartedPod(uid: string, status: PodSyncStatus): void {
    status.finished = true;
    status.working = false;
    status.terminatedAtMs = this.clock.now();
    status.pendingUpdate = undefined;
    if (this.startedStaticPodsByFullname.get(status.fullname) === uid) {
      this.startedStaticPodsByFullname.delete(status.fullname);
    }
  }

  private requeueLastPodUpdate(status: PodSyncStatus): void {
    if (status.pendingUpdate || !status.activeUpdate) return;
    status.pendingUpdate = { ...status.activeUpdate };
    status.working = true;
  }

  private removeTerminatedWorker(uid: string, status: PodSyncStatus, orphaned: boolean): boolean {
    if (!status.finished) {
      // A pod that left the configuration counts as deleted: its content may go once it has stopped.
      if (orphaned) status.deleted = true;
      return false;
    }
    this.statuses.delete(uid);
    if (this.startedStaticPodsByFullname.get(status.fullname) === uid) {
      this.startedStaticPodsByFullname.delete(status.fullname);
    }
    log.v(4, 'Pod has been terminated and is no longer wanted under this UID, remove all history', {
      podUID: uid,
      restartRequested: status.restartRequested,
    });
    return true;
  }

  private jitter(ms: number): number {
    return Math.round(ms + this.random() * JITTER_FACTOR * ms);
  }
}

/**
 * A PLEG event tells that the runtime's state of the pod changed, as of a reading of it. When the
 * pod's previous sync succeeded on that very reading, with the same pod, that sync already acted on
 * the change, and another would find nothing to do: the same status, no container to start or stop.
 * This happens at each pod start: a worker waiting for a fresher reading is woken by the relist's
 * reading of its pod, and the relist then sends the event that reading was for.
 */
function syncedAlready(update: UpdatePodOptions, status: PodSyncStatus): boolean {
  const last = status.lastSynced;
  return (
    update.plegReading !== undefined &&
    last !== undefined &&
    update.updateType === 'sync' &&
    last.podStatus === update.plegReading &&
    last.pod === update.pod &&
    last.mirrorPod === update.mirrorPod
  );
}
