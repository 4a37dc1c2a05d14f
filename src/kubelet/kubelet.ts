/**
 * The kubelet proper: the sync loop that reads every input in one place (pod config updates, PLEG
 * events, the 1 s sync tick, housekeeping every 2 s) and hands pods to their workers, and the three
 * callbacks the workers run (syncPod, syncTerminatingPod, syncTerminatedPod). Upstream: pkg/kubelet/kubelet.go.
 */
import type { Pod, PodStatus } from '../api/core-v1.js';
import type { PodOperation, PodSource, PodUpdate } from '../config/types.js';
import { convertPodStatusToRunningPod } from '../kuberuntime/container-status.js';
import { backOffRequeueMs, hardFailures, reportCrashLoopNow } from '../kuberuntime/back-off-results.js';
import { podRef } from '../kuberuntime/format.js';
import { nodeRef } from '../api/node.js';
import type { KubePodStatus, Runtime, RunningPod } from '../kuberuntime/types.js';
import { Backoff } from '../lib/backoff.js';
import type { Clock, TimerHandle } from '../lib/clock.js';
import { DEFAULT_BUCKETS_SECONDS, type Histogram } from '../lib/metrics.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { POD_STARTUP_DURATION_BUCKETS } from './pod-startup-latency-tracker.js';
import { DEFAULT_RELIST_THRESHOLD_MS, type PodLifecycleEvent } from '../pleg/generic-pleg.js';
import { isMirrorPod, isStaticPod } from '../api/pod-source.js';
import { PodManager } from '../pod/pod-manager.js';
import {
  NETWORK_NOT_READY_ERROR_MSG,
  type PodWorkers,
  type SyncPodOutcome,
  type SyncPodType,
} from '../podworkers/pod-workers.js';
import type { ProbeUpdate } from '../prober/prober-manager.js';
import { pingCheck, logCheck, type HealthChecker } from '../server/healthz.js';
import type { ServerHost } from '../server/local-server.js';
import { needToReconcilePodReadiness } from '../status/pod-conditions.js';
import { ReasonCache } from '../status/reason-cache.js';
import { rfc3339Seconds } from '../api/rfc3339-seconds.js';
import { ActiveDeadlineHandler } from './active-deadline.js';
import { PREEMPT_MESSAGE, PREEMPT_REASON, preemptedPodStatus } from './admission.js';
import { runningPodToPod } from './running-pod.js';
import type { KubeletOptions } from './kubelet-options.js';
import { PodAdmitter, type AdmitVerdict } from './pod-admitter.js';
import { handlePodCleanups } from './pod-cleanups.js';
import { PodStatusGenerator } from './pod-status-generator.js';
import { makePodDataDirs } from './pod-data-dirs.js';
import { loopPeriodMs } from '../lib/loop-period.js';
import { compareStrings } from '../lib/compare.js';

const log = logger('kubelet');

/** Upstream: the sync loop's tick for pods whose work is due. */
const SYNC_TICK_MS = 1000;
/** Upstream: housekeepingPeriod. */
const HOUSEKEEPING_PERIOD_MS = 2000;
/** Upstream's ContainerGCPeriod: dead containers are collected once a minute. */
const CONTAINER_GC_PERIOD_MS = 60_000;
/** Crash-loop back-off: 10 s doubling to 5 min (upstream: MaxContainerBackOff), forgotten after 10 min of quiet. */
const BACKOFF_INITIAL_MS = 10_000;
const BACKOFF_MAX_MS = 300_000;
/** The sync loop counts as stuck past this without an iteration (upstream: the syncloop health check). */
const SYNC_LOOP_STALL_MS = 2 * 60_000;
/**
 * A pod only the runtime knows (left over from before a restart, or removed while the kubelet was
 * down) is stopped with this grace period, as upstream's HandlePodCleanups stops orphans: its
 * termination was already under way, or nobody wants it.
 */
const ORPHANED_POD_GRACE_PERIOD_SECONDS = 1;

export type { DeviceAdmission, KubeletOptions, TopologyAdmission } from './kubelet-options.js';

/** How long after a pod's containers stopped the PLEG is asked to relist (see syncTerminatingPod). */
const RELIST_AFTER_TERMINATION_MS = 50;

export class Kubelet implements ServerHost {
  readonly podManager = new PodManager();
  /** Crash-loop and image back-offs, shared by every sync (upstream: kl.backOff). */
  readonly backoff: Backoff;
  private readonly opts: KubeletOptions;
  private readonly clock: Clock;
  private readonly runtime: Runtime;
  private readonly admitter: PodAdmitter;
  /** spec.activeDeadlineSeconds: a sync loop handler and a pod sync handler (upstream activeDeadlineHandler). */
  private readonly activeDeadline: ActiveDeadlineHandler;
  private podWorkers!: PodWorkers;
  /** Why each container last failed to start, so the next status shows why it waits. */
  private readonly reasonCache = new ReasonCache();
  private readonly statuses: PodStatusGenerator;
  /** The sources the sync loop has received updates from (upstream: sourcesReady). */
  private readonly sourcesSeen = new Set<PodSource>();
  private readonly stopController = new AbortController();
  /** When this kubelet first saw each pod, until the pod runs (kubelet_pod_start_duration_seconds). */
  private readonly firstSeenMs = new Map<string, number>();
  private readonly podStartDuration: Histogram | undefined;
  private readonly podWorkerStartDuration: Histogram | undefined;
  private readonly timers: TimerHandle[] = [];
  /**
   * Admission that waits on a device plugin (Allocate is an RPC) runs here, one pod after another in
   * the order the pods came; pods that come meanwhile queue behind, so each is admitted against the
   * ones before it. A pod waiting here gets no work until its verdict.
   */
  private readonly unsubscribers: (() => void)[] = [];
  private plegLoop: Promise<void> | undefined;
  private housekeepingRunning = false;
  private lastContainerGcMs = 0;
  private lastLoopIterationMs = 0;
  /** When start() ran; 0 before. */
  private startedMs = 0;
  private state: 'NEW' | 'RUNNING' | 'STOPPING' | 'STOPPED' = 'NEW';

  constructor(opts: KubeletOptions) {
    this.opts = opts;
    this.clock = opts.clock;
    this.runtime = opts.runtime;
    this.backoff = new Backoff(opts.clock, BACKOFF_INITIAL_MS, BACKOFF_MAX_MS);
    this.podStartDuration = opts.metrics?.histogram(
      'kubelet_pod_start_duration_seconds',
      '[ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run',
      [],
      POD_STARTUP_DURATION_BUCKETS,
    );
    this.podWorkerStartDuration = opts.metrics?.histogram(
      'kubelet_pod_worker_start_duration_seconds',
      '[ALPHA] Duration in seconds from kubelet seeing a pod to starting a worker.',
      [],
      DEFAULT_BUCKETS_SECONDS,
    );
    this.admitter = new PodAdmitter({ ...opts, activePods: () => this.getActivePods() });
    this.activeDeadline = new ActiveDeadlineHandler(
      opts.clock,
      (uid) => opts.statusManager.getPodStatus(uid),
      (pod, reason, message) => opts.recorder?.event(pod, '', 'Normal', reason, message),
    );
    this.statuses = new PodStatusGenerator({
      ...opts,
      reasonCache: this.reasonCache,
      activeDeadline: this.activeDeadline,
    });
  }

  /** Starts the sync loop; returns at once. */
  start(): void {
    if (this.state !== 'NEW') throw new Error(`kubelet cannot start from state ${this.state}`);
    this.state = 'RUNNING';
    this.podWorkers = this.opts.podWorkers();
    this.startedMs = this.clock.now();
    this.lastLoopIterationMs = this.startedMs;
    this.opts.pleg.start();
    this.unsubscribers.push(
      this.opts.podConfig.onUpdate((u) => this.loopIteration(() => this.handleConfigUpdate(u))),
    );
    const prober = this.opts.prober;
    if (prober) {
      this.unsubscribers.push(prober.onUpdate((u) => this.loopIteration(() => this.handleProbeUpdate(u))));
    }
    this.plegLoop = this.consumePlegEvents();
    this.every('sync tick', SYNC_TICK_MS, () => this.loopIteration(() => this.handleSyncTick()));
    this.every('housekeeping', HOUSEKEEPING_PERIOD_MS, () => this.loopIteration(() => this.housekeeping()));
    log.info('Starting kubelet main sync loop');
  }

  /**
   * Stops in this order: no new input (config, timers), the PLEG, then the pod workers (their syncs are
   * aborted and awaited). Pods keep running, as upstream: a restarted kubelet adopts them.
   */
  async stop(): Promise<void> {
    if (this.state !== 'RUNNING') return;
    this.state = 'STOPPING';
    for (const unsubscribe of this.unsubscribers) unsubscribe();
    this.opts.prober?.stop();
    for (const t of this.timers) this.clock.clearTimeout(t);
    this.stopController.abort(new Error('kubelet stopping'));
    await this.opts.pleg.stop();
    await this.plegLoop?.catch(() => undefined);
    await this.podWorkers.stop();
    this.state = 'STOPPED';
    log.info('Sync loop stopped');
  }

  /** Runs fn every periodMs until stop; the Clock has no interval, so each run schedules the next. */
  private every(name: string, periodMs: number, fn: () => void): void {
    const slot = this.timers.length;
    const flooredMs = loopPeriodMs(name, periodMs);
    const schedule = () => {
      this.timers[slot] = this.clock.setTimeout(() => {
        if (this.state !== 'RUNNING') return;
        fn();
        schedule();
      }, flooredMs);
    };
    schedule();
  }

  /** Every input passes through here, so /healthz can tell a stuck loop (upstream: syncLoopIteration). */
  private loopIteration(fn: () => void | Promise<void>): void {
    this.lastLoopIterationMs = this.clock.now();
    try {
      const r = fn();
      if (r instanceof Promise)
        r.catch((err: unknown) => log.error('Sync loop step failed', { err: errorMessage(err) }));
    } catch (err) {
      log.error('Sync loop step failed', { err: errorMessage(err) });
    }
  }

  // ---- inputs ------------------------------------------------------------------------------------

  private handleConfigUpdate(update: PodUpdate): void {
    this.applyConfigUpdate(update);
    // Only a source whose whole update reached the pod manager counts as ready: until then, a pod it
    // sent could look unwanted to housekeeping (upstream marks sources ready as the loop receives them).
    this.sourcesSeen.add(update.source);
  }

  private applyConfigUpdate(update: PodUpdate): void {
    // Mirror pods are the API's view of static pods, never pods to run (upstream: handleMirrorPod).
    const mirrors = update.pods.filter(isMirrorPod);
    if (mirrors.length > 0) this.handleMirrorPods(update.op, mirrors);
    const u = { ...update, pods: update.pods.filter((p) => !isMirrorPod(p)) };
    log.v(2, 'SyncLoop', { op: u.op, source: u.source, pods: u.pods.map(podRef) });
    switch (u.op) {
      case 'ADD':
        return this.handlePodAdditions(u.pods);
      // A graceful deletion from the API is an update: the worker sees the deletionTimestamp (upstream does the same).
      case 'UPDATE':
      case 'DELETE':
        return this.handlePodUpdates(u.pods);
      case 'REMOVE':
        return this.handlePodRemoves(u.pods);
      case 'RECONCILE':
        return this.handlePodReconcile(u.pods);
    }
  }

  private async consumePlegEvents(): Promise<void> {
    const signal = this.stopController.signal;
    while (!signal.aborted) {
      let event: PodLifecycleEvent;
      try {
        event = await this.opts.pleg.events.receive(signal);
      } catch {
        return; // aborted
      }
      this.loopIteration(() => this.handlePlegEvent(event));
    }
  }

  private handlePlegEvent(e: PodLifecycleEvent): void {
    log.v(4, 'SyncLoop (PLEG): event for pod', { podUID: e.podUid, event: e.type, data: e.containerId });
    // A removed container changes nothing the pod's spec cares about.
    if (e.type === 'ContainerRemoved') return;
    const pod = this.podManager.getPodByUid(e.podUid);
    if (!pod) return;
    // The reading the event came with, or a newer one: the worker skips the sync if it synced on it
    // already. Not for a static pod whose mirror pod is missing in cluster mode: its sync also makes
    // the mirror pod, and a failed creation (logged, not a failed sync) is retried by the next sync.
    const mirrorMissing =
      this.opts.mirrorPods !== undefined && isStaticPod(pod) && !this.opts.mirrorPods.mirrorOf(pod);
    const plegReading = mirrorMissing ? undefined : this.opts.podCache.get(e.podUid).status;
    this.forPod(pod, 'sync', () => this.dispatchWork(pod, 'sync', plegReading));
  }

  /**
   * Runs one pod's part of a loop step: what goes wrong for that pod is logged against it and the
   * step goes on with the others (upstream: a failure in one pod's handling never aborts the batch).
   */
  private forPod(pod: Pod, step: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      log.error('Sync loop step failed for pod', { pod: podRef(pod), step, err: errorMessage(err) });
    }
  }

  private handleSyncTick(): void {
    const due = new Set(this.opts.workQueue.getReady());
    // Pods past their active deadline are synced now, to be failed (upstream getPodsToSync).
    for (const pod of this.podManager.getPods())
      this.forPod(pod, 'activeDeadline', () => {
        if (this.activeDeadline.shouldSync(pod)) due.add(pod.metadata.uid ?? '');
      });
    for (const uid of due) {
      const pod = this.podManager.getPodByUid(uid);
      if (pod) this.forPod(pod, 'sync', () => this.dispatchWork(pod, 'sync'));
    }
  }

  /**
   * A probe verdict changed (upstream: the liveness, readiness and startup channels of the loop).
   * Readiness and startup go into the status; any change syncs the pod, so a failed liveness probe
   * restarts its container at once.
   */
  private handleProbeUpdate(u: ProbeUpdate): void {
    if (u.probeType === 'readiness') {
      this.opts.statusManager.setContainerReadiness(u.podUid, u.containerID, u.result === 'Success');
    } else if (u.probeType === 'startup') {
      this.opts.statusManager.setContainerStartup(u.podUid, u.containerID, u.result === 'Success');
    }
    const pod = this.podManager.getPodByUid(u.podUid);
    if (pod) this.dispatchWork(pod, 'sync');
  }

  // ---- handlers (upstream: SyncHandler) ------------------------------------------------------------

  private handlePodAdditions(pods: Pod[]): void {
    const createdAt = (p: Pod) => String(p.metadata.creationTimestamp ?? '');
    const sorted = [...pods].sort((a, b) => compareStrings(createdAt(a), createdAt(b)));
    for (const pod of sorted) this.forPod(pod, 'add', () => this.handlePodAddition(pod));
  }

  private handlePodAddition(pod: Pod): void {
    const uid = pod.metadata.uid ?? '';
    const known = this.podManager.getPodByUid(uid) !== undefined;
    if (!known && !this.firstSeenMs.has(uid)) this.firstSeenMs.set(uid, this.clock.now());
    // First of all, so that the pod counts as wanted whatever happens to it next.
    this.podManager.addPod(pod);
    if (!known && !this.podWorkers.isPodTerminationRequested(uid)) {
      if (this.admitter.mustQueue(pod)) {
        this.admitter.admitLater(pod, (verdict) => this.admitted(uid, verdict));
        return;
      }
      const verdict = this.admitter.admitPod(pod);
      if (!verdict.admit) {
        this.rejectPod(pod, verdict.reason, verdict.message);
        return;
      }
      for (const victim of verdict.preempt)
        this.forPod(victim, 'preempt', () => this.preemptPod(victim, pod));
    }
    this.dispatchWork(pod, 'create');
  }

  /** A queued admission's verdict, applied to the pod as it is now: it may have changed, or gone, meanwhile. */
  private admitted(uid: string, verdict: AdmitVerdict): void {
    const current = this.podManager.getPodByUid(uid);
    if (!current || this.stopController.signal.aborted) return;
    if (!verdict.admit) {
      this.rejectPod(current, verdict.reason, verdict.message);
      return;
    }
    for (const victim of verdict.preempt)
      this.forPod(victim, 'preempt', () => this.preemptPod(victim, current));
    this.dispatchWork(current, 'create');
  }

  private handlePodUpdates(pods: Pod[]): void {
    for (const pod of pods)
      this.forPod(pod, 'update', () => {
        this.podManager.updatePod(pod);
        this.dispatchWork(pod, 'update');
      });
  }

  private handlePodRemoves(pods: Pod[]): void {
    for (const pod of pods)
      this.forPod(pod, 'remove', () => {
        this.opts.podStartupLatency?.deletePodStartupState(pod.metadata.uid ?? '');
        this.podManager.removePod(pod);
        this.opts.prober?.removePod(pod);
        this.podWorkers.updatePod({ updateType: 'kill', pod, startTimeMs: this.clock.now() });
      });
  }

  /** The API changed only a pod's status (upstream HandlePodReconcile). */
  private handlePodReconcile(pods: Pod[]): void {
    for (const pod of pods)
      this.forPod(pod, 'reconcile', () => {
        this.podManager.updatePod(pod);
        // A readiness gate's condition changed: Ready is worked out again now, not at the next resync.
        if (needToReconcilePodReadiness(pod)) this.dispatchWork(pod, 'sync');
      });
  }

  /** A mirror pod came, changed or went: its static pod syncs, which puts the mirror pod right. */
  private handleMirrorPods(op: PodOperation, mirrors: Pod[]): void {
    const mirrorPods = this.opts.mirrorPods;
    if (!mirrorPods) return;
    for (const fullName of mirrorPods.apply(op, mirrors)) {
      const staticPod = this.podManager.getPodByFullName(fullName);
      if (staticPod) this.forPod(staticPod, 'mirror', () => this.dispatchWork(staticPod, 'update'));
    }
  }

  private dispatchWork(pod: Pod, updateType: SyncPodType, plegReading?: KubePodStatus): void {
    // Its admission dispatches it once decided.
    if (this.admitter.isPending(pod.metadata.uid ?? '')) return;
    const mirrorPod = this.opts.mirrorPods?.mirrorOf(pod);
    this.podWorkers.updatePod({ pod, mirrorPod, updateType, startTimeMs: this.clock.now(), plegReading });
  }

  /**
   * A pod that may not run here (upstream: rejectPod): a Warning event and a status of only the phase
   * Failed, the reason and `Pod was rejected: <message>`. No qosClass, as v1.28's rejectPod: its API
   * server lets the patch clear the one it set at create (the side-by-side run shows none), and from
   * v1.29 the API server backfills it, so the pod keeps it there as a v1.29+ kubelet's would. The pod
   * never reaches the pod workers, so it gets no container statuses and no conditions of the
   * kubelet's; the status manager's merge drops the API copy's PodScheduled, which the kubelet owns.
   */
  private rejectPod(pod: Pod, reason: string, message: string): void {
    log.warn('Pod rejected at admission', { pod: podRef(pod), reason, message });
    // Each part on its own: the pod must end Failed even if its event cannot be made.
    this.forPod(pod, 'reject: event', () => this.opts.recorder?.event(pod, '', 'Warning', reason, message));
    this.forPod(pod, 'reject: status', () =>
      this.opts.statusManager.setPodStatus(pod, {
        phase: 'Failed',
        reason,
        message: `Pod was rejected: ${message}`,
      }),
    );
  }

  /** Makes room for a critical pod: the victim fails as Preempting and is killed (upstream: CriticalPodAdmissionHandler). */
  private preemptPod(victim: Pod, criticalPod: Pod): void {
    log.info('Preempting pod to free up resources', {
      pod: podRef(victim),
      requestingPod: podRef(criticalPod),
    });
    this.opts.recorder?.event(victim, '', 'Warning', PREEMPT_REASON, PREEMPT_MESSAGE);
    this.statuses.setStatusFn(victim, (status) =>
      preemptedPodStatus(status, rfc3339Seconds(this.clock.now())),
    );
    this.podWorkers.updatePod({
      pod: victim,
      updateType: 'kill',
      killPodOptions: { evict: true },
      startTimeMs: this.clock.now(),
    });
  }

  /**
   * Kills the pod now with the grace period, its status set by statusFn (upstream killPodNow, the
   * eviction manager's killPodFunc). Resolves once its containers have stopped, or after the grace
   * period and a margin if they never report so.
   */
  killPodNow(
    pod: Pod,
    gracePeriodSeconds: number,
    statusFn: (status: PodStatus) => PodStatus,
    evict = true,
  ): Promise<void> {
    this.statuses.setStatusFn(pod, statusFn);
    // Upstream waits the grace period and half again, at least 10 s.
    const timeoutMs = Math.max(10, gracePeriodSeconds + gracePeriodSeconds / 2) * 1000;
    return new Promise<void>((resolve) => {
      const timer = this.clock.setTimeout(() => {
        log.warn('Timed out waiting for pod to be killed', { pod: podRef(pod) });
        this.opts.recorder?.event(
          pod,
          '',
          'Warning',
          'ExceededGracePeriod',
          'Container runtime did not kill the pod within specified grace period.',
        );
        resolve();
      }, timeoutMs);
      this.podWorkers.updatePod({
        pod,
        updateType: 'kill',
        killPodOptions: {
          evict,
          gracePeriodSecondsOverride: gracePeriodSeconds,
          onCompleted: () => {
            this.clock.clearTimeout(timer);
            resolve();
          },
        },
        startTimeMs: this.clock.now(),
      });
    });
  }

  /** Whether the pod's containers may still run (the eviction manager waits until they cannot). */
  podCouldHaveRunningContainers(uid: string): boolean {
    return this.podWorkers.couldHaveRunningContainers(uid);
  }

  /**
   * Removes every dead container the GC may remove, those of terminated pods included (upstream
   * ContainerGC.DeleteAllUnusedContainers, the eviction manager's first node-level reclaim).
   */
  async deleteAllUnusedContainers(): Promise<void> {
    // Upstream's evictNonDeletedPods: the runtime of a pod that has stopped goes even if it is not deleted.
    await this.runtime.garbageCollect(
      (uid) =>
        !this.podWorkers.shouldPodContentBeRemoved(uid) && !this.podWorkers.shouldPodRuntimeBeRemoved(uid),
    );
  }

  // ---- the workers' callbacks (upstream: SyncPod, SyncTerminatingPod, SyncTerminatedPod) -----------

  async syncPod(
    updateType: SyncPodType,
    pod: Pod,
    _mirrorPod: Pod | undefined,
    podStatus: KubePodStatus,
    signal: AbortSignal,
  ): Promise<SyncPodOutcome> {
    const uid = pod.metadata.uid ?? '';
    // A pod's first sync: how long it waited for its worker since this kubelet first saw it.
    const seenMs = updateType === 'create' ? this.firstSeenMs.get(uid) : undefined;
    if (seenMs !== undefined)
      this.podWorkerStartDuration?.observe(undefined, (this.clock.now() - seenMs) / 1000);
    const apiStatus = this.statuses.generate(pod, podStatus, false);
    this.opts.statusManager.setPodStatus(pod, apiStatus);
    this.observePodStart(uid, apiStatus);
    // A pod whose restart policy has run its course is finished: the worker moves it on to terminating.
    if (apiStatus.phase === 'Succeeded' || apiStatus.phase === 'Failed') {
      log.v(2, 'Pod is terminal, not syncing', { pod: podRef(pod), phase: apiStatus.phase, updateType });
      return { isTerminal: true };
    }
    // Only host-network pods may start while the runtime's network is not ready.
    const networkErrors = this.opts.networkErrors?.() ?? [];
    if (networkErrors.length > 0 && pod.spec.hostNetwork !== true) {
      // utilerrors.NewAggregate's text: one error alone, several in brackets.
      const why = networkErrors.length === 1 ? networkErrors[0]! : `[${networkErrors.join(', ')}]`;
      const message = `${NETWORK_NOT_READY_ERROR_MSG}: ${why}`;
      this.opts.recorder?.event(pod, '', 'Warning', 'NetworkNotReady', message);
      throw new KubeletError('NETWORK_NOT_READY', message);
    }
    // A static pod shows in the API as its mirror pod (upstream: syncPod, before the data dirs).
    await this.opts.mirrorPods?.reconcile(pod, signal);
    try {
      await makePodDataDirs(this.opts.rootDir, uid, undefined, { likelyNew: updateType === 'create' });
    } catch (err) {
      this.opts.recorder?.event(
        pod,
        '',
        'Warning',
        'Failed',
        `error making pod data directories: ${errorMessage(err)}`,
      );
      log.error('Unable to make pod data directories for pod', { pod: podRef(pod), err: errorMessage(err) });
      throw err;
    }
    // The pod cgroup holds the pod-level limits; containerd puts the sandbox and containers in it.
    if (!this.podWorkers.isPodTerminationRequested(uid)) {
      try {
        await this.opts.containerManager.ensurePodCgroup(pod);
      } catch (err) {
        this.opts.recorder?.event(
          pod,
          '',
          'Warning',
          'FailedCreatePodContainer',
          `unable to ensure pod container exists: ${errorMessage(err)}`,
        );
        throw new KubeletError(
          'CGROUP_ERROR',
          `failed to ensure that the pod: ${uid} cgroups exist and are correctly applied: ${errorMessage(err)}`,
          { cause: err },
        );
      }
    }
    // Volumes first (upstream: WaitForAttachAndMount); a failure ends this sync and the next one retries.
    if (this.opts.volumeManager && !this.podWorkers.isPodTerminationRequested(uid))
      await this.opts.volumeManager.waitForAttachAndMount(pod, signal);
    // Upstream adds the probes here, so an updated spec's new probes start too.
    this.opts.prober?.addPod(pod);
    const result = await this.runtime.syncPod(pod, podStatus, this.backoff, signal);
    this.reasonCache.update(uid, result);
    if (result.failed) {
      const hard = hardFailures(result.results);
      if (hard.length > 0) {
        throw new KubeletError(
          'CRI_ERROR',
          hard
            .map((r) => `failed to "${r.action}" for "${r.target}" with ${r.reason}: "${r.message ?? ''}"`)
            .join('; '),
        );
      }
      // The status set above was made before this sync met the back-offs (see reportCrashLoopNow).
      if (reportCrashLoopNow(result.results))
        this.opts.statusManager.setPodStatus(pod, this.statuses.generate(pod, podStatus, false));
      // Only back-offs: look again when the first runs out, so the container restarts when its back-off
      // says rather than at the next resync as upstream does (up to 1.5 min later).
      return { isTerminal: false, requeueAfterMs: backOffRequeueMs(result.results) };
    }
    return { isTerminal: false };
  }

  async syncTerminatingPod(
    pod: Pod,
    podStatus: KubePodStatus,
    gracePeriodSeconds: number | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    signal.throwIfAborted();
    log.v(2, 'Pod terminating', { pod: podRef(pod), gracePeriodSeconds });
    // A probe must not restart a container the kubelet is stopping.
    this.opts.prober?.stopLivenessAndStartup(pod);
    this.opts.statusManager.setPodStatus(pod, this.statuses.generate(pod, podStatus, false));
    try {
      await this.runtime.killPod(pod, convertPodStatusToRunningPod(podStatus), gracePeriodSeconds);
    } catch (err) {
      this.opts.recorder?.event(
        pod,
        '',
        'Warning',
        'FailedKillPod',
        `error killing pod: ${errorMessage(err)}`,
      );
      throw err;
    }
    // The burstable tier's share shrinks with the pods in it.
    await this.opts.containerManager
      .updateQOSCgroups()
      .catch((err: unknown) => log.v(2, 'Failed to update QoS cgroups', { err: errorMessage(err) }));
    // Confirm with a fresh read: the pod counts as stopped only when the runtime says so.
    const stopped = await this.runtime.getPodStatus(
      pod.metadata.uid ?? '',
      pod.metadata.name ?? '',
      pod.metadata.namespace ?? '',
    );
    const running = stopped.containerStatuses.filter((c) => c.state === 'running');
    if (running.length > 0) {
      throw new KubeletError(
        'KILL_FAILED',
        `detected running containers after a successful KillPod: ${running.map((c) => c.name).join(', ')}`,
      );
    }
    this.opts.statusManager.setPodStatus(pod, this.statuses.generate(pod, stopped, true));
    // The terminated sync waits for a PLEG reading newer than this one, whose cache keeps the pod's
    // IP (the fresh read above has none once the sandbox stopped). Upstream's generic PLEG brings it
    // within its 1 s relist; with task events, nothing else would until the 10 s safety relist. A
    // moment later, so that the relist starts after this sync has ended (the worker's lastSyncTime).
    this.clock.setTimeout(() => this.opts.pleg.requestRelist?.(), RELIST_AFTER_TERMINATION_MS);
    log.v(2, 'Pod termination stopped all running containers', { pod: podRef(pod) });
  }

  async syncTerminatingRuntimePod(runningPod: RunningPod, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    log.info('Stopping a pod the runtime has but no source wants', {
      pod: `${runningPod.namespace}/${runningPod.name}`,
      podUID: runningPod.uid,
    });
    await this.runtime.killPod(undefined, runningPod, ORPHANED_POD_GRACE_PERIOD_SECONDS);
  }

  async syncTerminatedPod(pod: Pod, podStatus: KubePodStatus, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const uid = pod.metadata.uid ?? '';
    this.opts.statusManager.setPodStatus(pod, this.statuses.generate(pod, podStatus, true));
    // The containers are gone: their volumes go too (upstream: WaitForUnmount); a failure is retried.
    await this.opts.volumeManager?.unmountAndCleanup(uid, signal);
    this.opts.statusManager.terminatePod(pod);
    this.opts.prober?.removePod(pod);
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers])
      this.reasonCache.remove(uid, c.name);
    this.firstSeenMs.delete(uid);
    // A cgroup that still has processes is left for housekeeping to retry.
    if (!(await this.opts.containerManager.removePodCgroup(uid))) {
      log.v(2, 'Pod cgroup is still busy; housekeeping will retry', { pod: podRef(pod) });
    }
    log.v(2, 'Pod is terminated', { pod: podRef(pod) });
  }

  /** Once per pod, the time from first sight to Running (upstream observes it in syncPod too). */
  private observePodStart(uid: string, status: PodStatus): void {
    const seenMs = this.firstSeenMs.get(uid);
    if (seenMs === undefined || status.phase !== 'Running') return;
    this.firstSeenMs.delete(uid);
    this.podStartDuration?.observe(undefined, (this.clock.now() - seenMs) / 1000);
  }

  // ---- housekeeping (upstream: HandlePodCleanups) -------------------------------------------------

  private async housekeeping(): Promise<void> {
    // Every cleanup below (unwanted runtime pods, pod folders and volumes, pod cgroups, dead containers
    // and log folders) removes what no source claims: until all have spoken, one may still claim it.
    if (!this.allSourcesReady()) return;
    if (this.housekeepingRunning) return;
    this.housekeepingRunning = true;
    try {
      await handlePodCleanups({
        podManager: this.podManager,
        podWorkers: this.podWorkers,
        runtime: this.runtime,
        opts: this.opts,
        podStatusFns: this.statuses.statusFns,
        clock: this.clock,
        signal: this.stopController.signal,
      });

      const now = this.clock.now();
      if (now - this.lastContainerGcMs >= CONTAINER_GC_PERIOD_MS) {
        this.lastContainerGcMs = now;
        try {
          // Asked of the pod workers at each decision, as upstream's ShouldPodContentBeRemoved: a pod
          // that started and finished since `desired` was read keeps its dead containers and logs
          // (the e2e framework reads a succeeded pod's logs) until it is deleted or evicted.
          await this.runtime.garbageCollect((uid) => !this.podWorkers.shouldPodContentBeRemoved(uid));
        } catch (err) {
          // Upstream's StartGarbageCollection: every failed pass is logged and told on the node.
          log.error('Container garbage collection failed', { err: errorMessage(err) });
          this.opts.recorder?.eventFor(
            nodeRef(this.opts.nodeName),
            'Warning',
            'ContainerGCFailed',
            errorMessage(err),
          );
        }
        this.backoff.gc();
      }
    } catch (err) {
      log.error('Failed cleaning pods', { err: errorMessage(err) });
    } finally {
      this.housekeepingRunning = false;
    }
  }

  /**
   * Upstream's sourcesReady.AllReady: every registered source has sent its whole state, and the sync
   * loop has taken each one in completely.
   */
  allSourcesReady(): boolean {
    return this.opts.podConfig.seenAllSources(this.sourcesSeen);
  }

  // ---- what the servers read (ServerHost) ----------------------------------------------------------

  getPods(): Pod[] {
    // Static pods have no API object: their status lives only here (upstream does the same, see kubernetes#57106).
    // The pods and statuses themselves, not copies: callers read them (and serialise them), never
    // change them; a status is replaced in the status manager, never edited in place.
    return this.podManager.getPods().map((pod) => {
      const status = this.opts.statusManager.getPodStatus(pod.metadata.uid ?? '');
      return status ? { ...pod, status: status as PodStatus } : pod;
    });
  }

  /** Pods that hold or may yet hold resources: admitted, not terminal, and not finished terminating. */
  getActivePods(): Pod[] {
    return this.podManager.getPods().filter((pod) => {
      const phase = this.opts.statusManager.getPodStatus(pod.metadata.uid ?? '')?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') return false;
      return !this.podWorkers.isPodKnownTerminated(pod.metadata.uid ?? '');
    });
  }

  async getRunningPods(): Promise<Pod[]> {
    return (await this.runtime.getPods(false)).map(runningPodToPod);
  }

  healthChecks(): readonly HealthChecker[] {
    return [
      pingCheck,
      logCheck,
      {
        name: 'syncloop',
        check: () => {
          // Not started yet is not a stall (upstream's syncLoopHealthCheck passes a zero monitor).
          if (this.lastLoopIterationMs === 0) return undefined;
          const idleMs = this.clock.now() - this.lastLoopIterationMs;
          return idleMs > SYNC_LOOP_STALL_MS
            ? `sync Loop took longer than expected: ${idleMs} ms`
            : undefined;
        },
      },
      {
        name: 'pleg',
        check: () => {
          const health = this.opts.pleg.healthy();
          // Before its first relist (and before the kubelet starts it) the PLEG is starting, not
          // stalled: /healthz stays 200 from its first 200 on (the Node's Ready condition still
          // waits for that relist, as upstream's).
          const starting =
            this.opts.pleg.metrics().lastRelistTimeMs === 0 &&
            (this.startedMs === 0 || this.clock.now() - this.startedMs <= DEFAULT_RELIST_THRESHOLD_MS);
          return health.healthy || starting ? undefined : health.message;
        },
      },
      ...(this.opts.healthChecks ?? []),
    ];
  }
}
