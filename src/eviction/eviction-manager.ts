/**
 * Upstream's eviction manager (pkg/kubelet/eviction/eviction_manager.go): every monitoring
 * interval it reads the summary, decides which thresholds are met (hard at once, soft after their
 * grace period, held until minimum reclaim), reports MemoryPressure / DiskPressure / PIDPressure
 * (kept for the pressure transition period), evicts pods past their local storage limits, and
 * under pressure first reclaims node-level resources (dead containers, unused images), then evicts
 * the first ranked pod: phase Failed, reason Evicted, an Evicted event. At most one pod per pass.
 */
import type { Pod, PodCondition, PodStatus } from '../api/core-v1.js';
import { podLimits } from '../api/pod-resources.js';
import { isMirrorPod, isStaticPod } from '../api/pod-source.js';
import type { ObjectEventRecorder } from '../events/event-recorder.js';
import { nodeRef } from '../api/node.js';
import type { Clock, TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { Counter, MetricsRegistry } from '../lib/metrics.js';
import { approximateValue, formatQuantity, parseQuantity, valueOf } from '../api/quantity.js';
import { getPodQOS } from '../api/qos.js';
import { rfc3339Seconds } from '../api/rfc3339-seconds.js';
import type { PodStats, Summary } from '../stats/summary-types.js';
import {
  buildSignalToRankFunc,
  containerEphemeralStorageMessage,
  emptyDirMessage,
  EVICTED_REASON,
  evictionMessage,
  makeSignalObservations,
  mergeThresholds,
  nodeConditionMessage,
  nodeConditions as conditionsOf,
  podDiskUsage,
  podEphemeralStorageMessage,
  sortByEvictionPriority,
  thresholdsMet,
  type RankFunc,
  type SignalObservations,
  type StatsFunc,
} from './helpers.js';
import {
  isHardEvictionThreshold,
  SIGNAL_TO_RESOURCE,
  thresholdKey,
  type NodeConditionType,
  type Signal,
  type Threshold,
} from './threshold.js';

const log = logger('eviction');

/** Upstream's monitoring interval: the kubelet's housekeeping period for eviction. */
export const EVICTION_MONITORING_PERIOD_MS = 10_000;
/** A hard threshold kills with this grace period (upstream immediateEvictionGracePeriodSeconds). */
const IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS = 1;
/** How long to wait for an evicted pod's resources to be released (upstream podCleanupTimeout). */
const POD_CLEANUP_TIMEOUT_MS = 30_000;
const POD_CLEANUP_POLL_MS = 1000;
/** System-critical pods (priority ≥ 2e9) are admitted under pressure, as upstream's IsCriticalPod. */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;
const MEMORY_PRESSURE_TAINT_KEY = 'node.kubernetes.io/memory-pressure';

export type AdmitResult = { admit: true } | { admit: false; reason: string; message: string };

/** Node-level reclaim, tried before any pod is evicted (upstream nodeReclaimFuncs). */
export interface NodeReclaimers {
  /** Upstream ContainerGC.DeleteAllUnusedContainers. */
  deleteAllUnusedContainers?(): Promise<void>;
  /** Upstream ImageGC.DeleteUnusedImages. */
  deleteUnusedImages?(): Promise<void>;
}

export interface EvictionManagerOptions {
  nodeName: string;
  thresholds: Threshold[];
  pressureTransitionPeriodMs: number;
  /** evictionMaxPodGracePeriod: the grace period of a soft eviction. */
  maxPodGracePeriodSeconds: number;
  /** Upstream's LocalStorageCapacityIsolation (on by default): emptyDir sizeLimit and ephemeral-storage limits. */
  localStorageCapacityIsolation?: boolean;
  clock: Clock;
  summaryProvider: { getSummary(signal?: AbortSignal): Promise<Summary> };
  /** Whether images live on another filesystem than rootDir (upstream HasDedicatedImageFs). */
  hasDedicatedImageFs: () => Promise<boolean>;
  activePods: () => Pod[];
  /** Kills the pod with the grace period, its status set by statusFn; resolves once its containers stopped. */
  killPod: (
    pod: Pod,
    gracePeriodSeconds: number,
    statusFn: (status: PodStatus) => PodStatus,
  ) => Promise<void>;
  /**
   * Whether an evicted pod's resources are released: its containers stopped and its volumes torn
   * down (upstream podCleanedUpFunc, the kubelet's podResourcesAreReclaimed); waits for the kill alone when absent.
   */
  podCleanedUp?: (pod: Pod) => boolean;
  recorder?: ObjectEventRecorder;
  reclaimers?: NodeReclaimers;
  metrics?: MetricsRegistry;
  monitoringPeriodMs?: number;
}

/** The status of an evicted pod (upstream evictPod's status function). */
export function evictedPodStatus(
  current: PodStatus,
  message: string,
  condition: PodCondition | undefined,
  nowIso: string,
): PodStatus {
  const status: PodStatus = structuredClone(current);
  status.phase = 'Failed';
  status.reason = EVICTED_REASON;
  status.message = message;
  if (condition) {
    const conditions = (status.conditions ??= []);
    const next = { ...condition, lastProbeTime: null, lastTransitionTime: nowIso };
    const i = conditions.findIndex((c) => c.type === condition.type);
    if (i < 0) conditions.push(next);
    else {
      const old = conditions[i] as PodCondition;
      if (old.status === next.status && old.lastTransitionTime)
        next.lastTransitionTime = old.lastTransitionTime;
      conditions[i] = next;
    }
  }
  return status;
}

function isCriticalPod(pod: Pod): boolean {
  return isStaticPod(pod) || isMirrorPod(pod) || (pod.spec.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY;
}

function toleratesMemoryPressure(pod: Pod): boolean {
  return (pod.spec.tolerations ?? []).some((t) => {
    if (t.effect && t.effect !== 'NoSchedule') return false;
    if (t.operator === 'Exists') return !t.key || t.key === MEMORY_PRESSURE_TAINT_KEY;
    return t.key === MEMORY_PRESSURE_TAINT_KEY && (t.value ?? '') === '';
  });
}

export type EvictionManagerState = 'NEW' | 'RUNNING' | 'STOPPED';

export class EvictionManager {
  private state: EvictionManagerState = 'NEW';
  private timer: TimerHandle | undefined;
  private readonly stopController = new AbortController();
  private nodeConditions: NodeConditionType[] = [];
  private nodeConditionsLastObservedAt = new Map<NodeConditionType, number>();
  private thresholdsFirstObservedAt = new Map<string, { threshold: Threshold; atMs: number }>();
  private thresholdsMetState: Threshold[] = [];
  private lastObservations: SignalObservations = new Map();
  private signalToRankFunc: Map<Signal, RankFunc> | undefined;
  private dedicatedImageFs = false;
  private readonly evictions: Counter | undefined;
  private readonly monitoringPeriodMs: number;

  constructor(private readonly opts: EvictionManagerOptions) {
    this.monitoringPeriodMs = Math.max(1000, opts.monitoringPeriodMs ?? EVICTION_MONITORING_PERIOD_MS);
    this.evictions = opts.metrics?.counter(
      'kubelet_evictions',
      '[ALPHA] Cumulative number of pod evictions by eviction signal',
      ['eviction_signal'],
    );
  }

  start(): void {
    if (this.state !== 'NEW') return;
    this.state = 'RUNNING';
    this.schedule(0);
  }

  stop(): void {
    this.state = 'STOPPED';
    this.stopController.abort(new Error('eviction manager stopped'));
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  isUnderMemoryPressure(): boolean {
    return this.nodeConditions.includes('MemoryPressure');
  }

  isUnderDiskPressure(): boolean {
    return this.nodeConditions.includes('DiskPressure');
  }

  isUnderPIDPressure(): boolean {
    return this.nodeConditions.includes('PIDPressure');
  }

  /** Upstream Admit: under memory pressure only BestEffort pods are refused; under any other, every pod. */
  admit(pod: Pod): AdmitResult {
    if (this.nodeConditions.length === 0) return { admit: true };
    if (isCriticalPod(pod)) return { admit: true };
    const onlyMemory = this.nodeConditions.length === 1 && this.nodeConditions[0] === 'MemoryPressure';
    if (onlyMemory && (getPodQOS(pod) !== 'BestEffort' || toleratesMemoryPressure(pod)))
      return { admit: true };
    log.info('Failed to admit pod to node', {
      pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
      nodeCondition: this.nodeConditions,
    });
    return { admit: false, reason: EVICTED_REASON, message: nodeConditionMessage(this.nodeConditions) };
  }

  private schedule(delayMs: number): void {
    if (this.state !== 'RUNNING') return;
    this.timer = this.opts.clock.setTimeout(() => {
      void this.synchronize()
        .then(async (evicted) => {
          if (evicted.length === 0) return this.monitoringPeriodMs;
          await this.waitForPodsCleanup(evicted);
          return POD_CLEANUP_POLL_MS;
        })
        .catch((err: unknown) => {
          log.error('Eviction manager: synchronize failed', { err: errorMessage(err) });
          return this.monitoringPeriodMs;
        })
        .then((next) => this.schedule(next));
    }, delayMs);
  }

  private async waitForPodsCleanup(pods: Pod[]): Promise<void> {
    const cleanedUp = this.opts.podCleanedUp;
    if (!cleanedUp) return;
    const deadline = this.opts.clock.now() + POD_CLEANUP_TIMEOUT_MS;
    while (this.state === 'RUNNING' && this.opts.clock.now() < deadline) {
      if (pods.every((p) => cleanedUp(p))) {
        log.info('Eviction manager: pods successfully cleaned up', { pods: pods.map(podName) });
        return;
      }
      await this.opts.clock.sleep(POD_CLEANUP_POLL_MS, this.stopController.signal).catch(() => undefined);
    }
    log.info('Eviction manager: timed out waiting for pods to be cleaned up', { pods: pods.map(podName) });
  }

  /** One pass (upstream synchronize); resolves with the pods it evicted. */
  async synchronize(): Promise<Pod[]> {
    const localStorage = this.opts.localStorageCapacityIsolation ?? true;
    if (this.opts.thresholds.length === 0 && !localStorage) return [];
    log.v(3, 'Eviction manager: synchronize housekeeping');
    if (!this.signalToRankFunc) {
      this.dedicatedImageFs = await this.opts.hasDedicatedImageFs().catch(() => false);
      this.signalToRankFunc = buildSignalToRankFunc(this.dedicatedImageFs);
    }
    const activePods = this.opts.activePods();
    let summary: Summary;
    try {
      summary = await this.opts.summaryProvider.getSummary(this.stopController.signal);
    } catch (err) {
      log.error('Eviction manager: failed to get summary stats', { err: errorMessage(err) });
      return [];
    }
    const { observations, statsFunc } = makeSignalObservations(summary);
    let thresholds = thresholdsMet(this.opts.thresholds, observations, false);
    if (this.thresholdsMetState.length > 0)
      thresholds = mergeThresholds(thresholds, thresholdsMet(this.thresholdsMetState, observations, true));

    const now = this.opts.clock.now();
    const firstObserved = new Map<string, { threshold: Threshold; atMs: number }>();
    for (const t of thresholds) {
      const key = thresholdKey(t);
      firstObserved.set(key, { threshold: t, atMs: this.thresholdsFirstObservedAt.get(key)?.atMs ?? now });
    }
    const observedConditions = conditionsOf(thresholds);
    if (observedConditions.length > 0)
      log.v(3, 'Eviction manager: node conditions - observed', { nodeCondition: observedConditions });
    const lastObservedAt = new Map(this.nodeConditionsLastObservedAt);
    for (const c of observedConditions) lastObservedAt.set(c, now);
    const conditions = [...lastObservedAt]
      .filter(([, at]) => now - at < this.opts.pressureTransitionPeriodMs)
      .map(([c]) => c);
    const graceMet = [...firstObserved.values()]
      .filter(({ threshold, atMs }) => {
        const ok = now - atMs >= threshold.gracePeriodMs;
        if (!ok)
          log.v(2, 'Eviction manager: eviction criteria not yet met', {
            threshold: threshold.signal,
            durationMs: now - atMs,
          });
        return ok;
      })
      .map(({ threshold }) => threshold);

    this.nodeConditions = conditions;
    this.thresholdsFirstObservedAt = firstObserved;
    this.nodeConditionsLastObservedAt = lastObservedAt;
    this.thresholdsMetState = graceMet;
    // Only thresholds whose stats moved since the last pass drive an eviction.
    const updated = graceMet.filter((t) => {
      const o = observations.get(t.signal);
      const last = this.lastObservations.get(t.signal);
      return o && (!last || o.timeMs > last.timeMs);
    });
    this.lastObservations = observations;

    if (localStorage) {
      const evicted = await this.localStorageEviction(activePods, statsFunc);
      if (evicted.length > 0) return evicted;
    }
    if (updated.length === 0) {
      log.v(3, 'Eviction manager: no resources are starved');
      return [];
    }
    const thresholdToReclaim = sortByEvictionPriority(updated)[0] as Threshold;
    const resourceToReclaim = SIGNAL_TO_RESOURCE[thresholdToReclaim.signal];
    log.info('Eviction manager: attempting to reclaim', { resourceName: resourceToReclaim });
    this.opts.recorder?.eventFor(
      nodeRef(this.opts.nodeName),
      'Warning',
      'EvictionThresholdMet',
      `Attempting to reclaim ${resourceToReclaim}`,
    );
    if (await this.reclaimNodeLevelResources(thresholdToReclaim.signal, resourceToReclaim)) {
      log.info('Eviction manager: able to reduce resource pressure without evicting pods.', {
        resourceName: resourceToReclaim,
      });
      return [];
    }
    log.info('Eviction manager: must evict pod(s) to reclaim', { resourceName: resourceToReclaim });
    const rank = this.signalToRankFunc.get(thresholdToReclaim.signal);
    if (!rank) return [];
    if (activePods.length === 0) {
      log.error('Eviction manager: eviction thresholds have been met, but no pods are active to evict');
      return [];
    }
    const ranked = [...activePods];
    rank(ranked, statsFunc);
    log.info('Eviction manager: pods ranked for eviction', { pods: ranked.map(podName) });
    for (const pod of ranked) {
      let grace = IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS;
      if (!isHardEvictionThreshold(thresholdToReclaim)) grace = this.opts.maxPodGracePeriodSeconds;
      const message = evictionMessage(resourceToReclaim, pod, statsFunc, updated, observations);
      const condition: PodCondition = {
        type: 'DisruptionTarget',
        status: 'True',
        reason: 'TerminationByKubelet',
        message,
      };
      if (await this.evictPod(pod, grace, message, condition)) {
        this.evictions?.inc({ eviction_signal: thresholdToReclaim.signal });
        return [pod];
      }
    }
    log.info('Eviction manager: unable to evict any pods from the node');
    return [];
  }

  /** Upstream reclaimNodeLevelResources: true when, after reclaiming, no threshold is met any more. */
  private async reclaimNodeLevelResources(signal: Signal, resource: string): Promise<boolean> {
    const reclaimers = this.opts.reclaimers;
    const funcs: (() => Promise<void>)[] = [];
    const diskSignal =
      SIGNAL_TO_RESOURCE[signal] === 'ephemeral-storage' || SIGNAL_TO_RESOURCE[signal] === 'inodes';
    if (diskSignal && reclaimers) {
      // With a dedicated image filesystem, nodefs pressure has nothing node-level to reclaim.
      const nodeFs = signal === 'nodefs.available' || signal === 'nodefs.inodesFree';
      if (!(this.dedicatedImageFs && nodeFs)) {
        if (reclaimers.deleteAllUnusedContainers) funcs.push(() => reclaimers.deleteAllUnusedContainers!());
        if (reclaimers.deleteUnusedImages) funcs.push(() => reclaimers.deleteUnusedImages!());
      }
    }
    if (funcs.length === 0) return false;
    for (const f of funcs) {
      try {
        await f();
      } catch (err) {
        log.info('Eviction manager: unexpected error when attempting to reduce resource pressure', {
          resourceName: resource,
          err: errorMessage(err),
        });
      }
    }
    let summary: Summary;
    try {
      summary = await this.opts.summaryProvider.getSummary(this.stopController.signal);
    } catch (err) {
      log.error('Eviction manager: failed to get summary stats after resource reclaim', {
        err: errorMessage(err),
      });
      return false;
    }
    const { observations } = makeSignalObservations(summary);
    return thresholdsMet(this.opts.thresholds, observations, true).length === 0;
  }

  private async localStorageEviction(pods: Pod[], statsFunc: StatsFunc): Promise<Pod[]> {
    const evicted: Pod[] = [];
    for (const pod of pods) {
      const stats = statsFunc(pod);
      if (!stats) continue;
      if (
        (await this.emptyDirLimitEviction(stats, pod)) ||
        (await this.podEphemeralStorageLimitEviction(stats, pod)) ||
        (await this.containerEphemeralStorageLimitEviction(stats, pod))
      )
        evicted.push(pod);
    }
    return evicted;
  }

  private async emptyDirLimitEviction(stats: PodStats, pod: Pod): Promise<boolean> {
    const used = new Map((stats.volume ?? []).map((v) => [v.name, v.usedBytes ?? 0]));
    for (const v of pod.spec.volumes ?? []) {
      const emptyDir = v['emptyDir'] as { sizeLimit?: string | number } | undefined;
      if (!emptyDir || emptyDir.sizeLimit === undefined) continue;
      const limit = parseQuantity(emptyDir.sizeLimit);
      const usage = used.get(v.name);
      if (usage === undefined || limit.nano <= 0n || usage <= Number(valueOf(limit))) continue;
      if (await this.evictPod(pod, 0, emptyDirMessage(v.name, formatQuantity(limit)))) {
        this.evictions?.inc({ eviction_signal: 'emptydirfs.limit' });
        return true;
      }
      return false;
    }
    return false;
  }

  private async podEphemeralStorageLimitEviction(stats: PodStats, pod: Pod): Promise<boolean> {
    const limit = podLimits(pod).get('ephemeral-storage');
    if (!limit) return false;
    // Writable layers, logs, local volumes and the etc-hosts file: what the summary's ephemeral-storage sums.
    const usage =
      stats['ephemeral-storage']?.usedBytes ??
      podDiskUsage(stats, pod, ['root', 'logs', 'localVolumeSource']).bytes;
    if (usage <= approximateValue(limit)) return false;
    const text = formatQuantity(limit);
    if (await this.evictPod(pod, 0, podEphemeralStorageMessage(text))) {
      this.evictions?.inc({ eviction_signal: 'ephemeralpodfs.limit' });
      return true;
    }
    return false;
  }

  private async containerEphemeralStorageLimitEviction(stats: PodStats, pod: Pod): Promise<boolean> {
    const limits = new Map<string, { value: number; text: string }>();
    for (const c of pod.spec.containers) {
      const raw = c.resources?.limits?.['ephemeral-storage'];
      if (raw === undefined) continue;
      const q = parseQuantity(raw);
      if (q.nano !== 0n) limits.set(c.name, { value: Number(valueOf(q)), text: formatQuantity(q) });
    }
    for (const cs of stats.containers) {
      const limit = limits.get(cs.name);
      if (!limit) continue;
      let used = cs.logs?.usedBytes ?? 0;
      if (!this.dedicatedImageFs) used += cs.rootfs?.usedBytes ?? 0;
      if (used <= limit.value) continue;
      if (await this.evictPod(pod, 0, containerEphemeralStorageMessage(cs.name, limit.text))) {
        this.evictions?.inc({ eviction_signal: 'ephemeralcontainerfs.limit' });
        return true;
      }
      return false;
    }
    return false;
  }

  /** Upstream evictPod: critical static pods are never evicted; the event comes first, then the kill. */
  private async evictPod(
    pod: Pod,
    gracePeriodSeconds: number,
    message: string,
    condition?: PodCondition,
  ): Promise<boolean> {
    if (isCriticalPod(pod) && isStaticPod(pod)) {
      log.error('Eviction manager: cannot evict a critical static pod', { pod: podName(pod) });
      return false;
    }
    this.opts.recorder?.event(pod, '', 'Warning', EVICTED_REASON, message);
    log.v(3, 'Evicting pod', { pod: podName(pod), podUID: pod.metadata.uid, message });
    const nowIso = rfc3339Seconds(this.opts.clock.now());
    try {
      await this.opts.killPod(pod, gracePeriodSeconds, (status) =>
        evictedPodStatus(status, message, condition, nowIso),
      );
      log.info('Eviction manager: pod is evicted successfully', { pod: podName(pod) });
    } catch (err) {
      log.error('Eviction manager: pod failed to evict', { pod: podName(pod), err: errorMessage(err) });
    }
    return true;
  }
}

function podName(pod: Pod): string {
  return `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
}
