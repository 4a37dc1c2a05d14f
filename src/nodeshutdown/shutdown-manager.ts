/**
 * Graceful node shutdown (upstream: pkg/kubelet/nodeshutdown, its Linux managerImpl, v1.30).
 *
 * At start it takes a `delay` inhibitor lock from systemd-logind (after raising logind's
 * InhibitDelayMaxSec to the whole budget when it is lower) and watches PrepareForShutdown. When a
 * shutdown begins: a NodeShutdown event, the node turns NotReady ("node is shutting down"), new
 * pods are refused, and the active pods are stopped one priority group at a time, lowest first,
 * each group within its seconds (a pod's own shorter terminationGracePeriodSeconds wins), ending
 * Failed with reason Terminated and the DisruptionTarget condition. Then the lock is released and
 * the machine goes down. A cancelled shutdown (PrepareForShutdown false) takes the lock again and
 * the node becomes Ready.
 *
 * Without logind (containers, CI) start fails; the kubelet logs that once and goes on without it,
 * as upstream. A bus connection lost after start is retried every second. SIGUSR1 also starts a
 * shutdown: tskubelet's own way to try it by hand without powering the machine off. Upstream has no
 * such signal (its manager listens to logind's PrepareForShutdown alone).
 *
 * The start and end of the last shutdown are kept in <root-dir>/graceful_node_shutdown_state and
 * published at the next start as kubelet_graceful_shutdown_{start,end}_time_seconds.
 */
import type { Pod, PodStatus } from '../api/core-v1.js';
import { rfc3339Seconds } from '../api/rfc3339-seconds.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { Gauge, MetricsRegistry } from '../lib/metrics.js';
import type { DbusInhibiter, InhibitLock } from './logind-dbus.js';
import {
  groupByPriority,
  migrateConfig,
  periodRequestedMs,
  type ShutdownGracePeriodByPodPriority,
} from './priority-groups.js';
import { ShutdownStateStorage } from './shutdown-state-storage.js';

const log = logger('nodeshutdown');

export const NODE_SHUTDOWN_REASON = 'Terminated';
export const NODE_SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
export const NODE_SHUTDOWN_NOT_ADMITTED_REASON = 'NodeShutdown';
export const NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE = 'Pod was rejected as the node is shutting down.';
/** The node event's reason (kubeletevents.NodeShutdown). */
export const NODE_SHUTDOWN_EVENT_REASON = 'NodeShutdown';
/** What the Ready condition says while the node shuts down. */
export const NODE_SHUTTING_DOWN = 'node is shutting down';
const DBUS_RECONNECT_PERIOD_MS = 1000;

export interface ShutdownManagerConfig {
  featureGates: Readonly<Record<string, boolean>>;
  shutdownGracePeriodMs: number;
  shutdownGracePeriodCriticalPodsMs: number;
  shutdownGracePeriodByPodPriority: readonly ShutdownGracePeriodByPodPriority[];
  /** --root-dir: where the shutdown state file goes. */
  stateDirectory: string;
  clock: Clock;
  /** The pods that hold or may yet hold resources (the kubelet's GetActivePods). */
  getPods: () => Pod[];
  /** Stops the pod with the grace period, its status set by statusFn; resolves once it stopped or gave up. */
  killPod: (
    pod: Pod,
    gracePeriodSeconds: number,
    statusFn: (status: PodStatus) => PodStatus,
  ) => Promise<void>;
  /** Reports the node status now (the Ready condition reads shutdownStatus). */
  syncNodeStatus: () => void;
  /** An event on the Node (cluster mode). */
  recordNodeEvent?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** logind over the system bus by default. */
  connect?: () => Promise<DbusInhibiter>;
  metrics?: MetricsRegistry;
  /** Whether SIGUSR1 starts a shutdown (default true; unit tests turn it off). */
  handleSigusr1?: boolean;
}

export type ShutdownAdmitResult = { admit: true } | { admit: false; reason: string; message: string };

/**
 * The manager, or undefined when graceful shutdown is off (the GracefulNodeShutdown gate, or no
 * grace period configured): then, as upstream says, node shutdown will be immediate.
 */
export function newShutdownManager(conf: ShutdownManagerConfig): ShutdownManager | undefined {
  if (!(conf.featureGates.GracefulNodeShutdown ?? true)) {
    log.info('Node graceful shutdown feature is disabled, node shutdown will be immediate');
    return undefined;
  }
  const byPriority = conf.featureGates.GracefulNodeShutdownBasedOnPodPriority ?? true;
  let periods = [...conf.shutdownGracePeriodByPodPriority];
  if (!byPriority || periods.length === 0)
    periods = migrateConfig(conf.shutdownGracePeriodMs, conf.shutdownGracePeriodCriticalPodsMs);
  if (periods.length === 0) {
    log.info('No graceful configuration specified, node shutdown will be immediate');
    return undefined;
  }
  periods.sort((a, b) => a.priority - b.priority);
  log.info('Creating node shutdown manager', {
    shutdownGracePeriodRequested: `${conf.shutdownGracePeriodMs / 1000}s`,
    shutdownGracePeriodCriticalPods: `${conf.shutdownGracePeriodCriticalPodsMs / 1000}s`,
    shutdownGracePeriodByPodPriority: periods,
  });
  return new ShutdownManager(conf, periods, byPriority);
}

/** A pod stopped for the shutdown: Failed (unless it already Succeeded), Terminated, DisruptionTarget. */
export function nodeShutdownPodStatus(current: PodStatus, nowIso: string): PodStatus {
  const status: PodStatus = structuredClone(current);
  if (status.phase !== 'Succeeded') status.phase = 'Failed';
  status.message = NODE_SHUTDOWN_MESSAGE;
  status.reason = NODE_SHUTDOWN_REASON;
  const conditions = (status.conditions ??= []);
  const next = {
    type: 'DisruptionTarget',
    status: 'True' as const,
    lastProbeTime: null,
    lastTransitionTime: nowIso,
    reason: 'TerminationByKubelet',
    message: NODE_SHUTDOWN_MESSAGE,
  };
  const i = conditions.findIndex((c) => c.type === next.type);
  if (i < 0) conditions.push(next);
  else {
    // podutil.UpdatePodCondition: the transition time holds while the status does.
    const old = conditions[i]!;
    if (old.status === next.status && old.lastTransitionTime)
      next.lastTransitionTime = old.lastTransitionTime;
    conditions[i] = next;
  }
  return status;
}

export class ShutdownManager {
  private readonly clock: Clock;
  private readonly storage: ShutdownStateStorage | undefined;
  private readonly startTimeGauge: Gauge | undefined;
  private readonly endTimeGauge: Gauge | undefined;
  private dbusCon: DbusInhibiter | undefined;
  private inhibitLock: InhibitLock | undefined;
  private nodeShuttingDownNow = false;
  /** Events are handled one after the other, as upstream's single goroutine does. */
  private events: Promise<void> = Promise.resolve();
  private readonly stopController = new AbortController();
  private reconnecting: Promise<void> | undefined;
  private sigusr1: (() => void) | undefined;

  constructor(
    private readonly conf: ShutdownManagerConfig,
    readonly periods: readonly ShutdownGracePeriodByPodPriority[],
    enableMetrics: boolean,
  ) {
    this.clock = conf.clock;
    // Upstream keeps the state (and its metrics) only with GracefulNodeShutdownBasedOnPodPriority.
    if (enableMetrics) {
      this.storage = new ShutdownStateStorage(conf.stateDirectory);
      this.startTimeGauge = conf.metrics?.gauge(
        'kubelet_graceful_shutdown_start_time_seconds',
        '[ALPHA] Last graceful shutdown start time since unix epoch in seconds',
      );
      this.endTimeGauge = conf.metrics?.gauge(
        'kubelet_graceful_shutdown_end_time_seconds',
        '[ALPHA] Last graceful shutdown end time since unix epoch in seconds',
      );
    }
  }

  /** Refuses every pod while the node shuts down (upstream's Admit). */
  admit(_pod: Pod): ShutdownAdmitResult {
    return this.nodeShuttingDownNow
      ? {
          admit: false,
          reason: NODE_SHUTDOWN_NOT_ADMITTED_REASON,
          message: NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE,
        }
      : { admit: true };
  }

  /** The Ready condition's error while the node shuts down. */
  shutdownStatus(): string | undefined {
    return this.nodeShuttingDownNow ? NODE_SHUTTING_DOWN : undefined;
  }

  /**
   * Takes the lock and starts watching; rejects when logind cannot be reached (the caller logs it
   * once and goes on without graceful shutdown). Afterwards a lost connection is retried.
   */
  async start(): Promise<void> {
    await this.startWatch();
    if (this.conf.handleSigusr1 ?? true) {
      this.sigusr1 = () => {
        log.v(1, 'Received shutdown signal from USR1');
        this.enqueue(true);
      };
      process.on('SIGUSR1', this.sigusr1);
    }
    await this.setMetrics();
  }

  async stop(): Promise<void> {
    this.stopController.abort(new Error('node shutdown manager stopping'));
    if (this.sigusr1) process.off('SIGUSR1', this.sigusr1);
    await this.reconnecting;
    await this.events;
    this.releaseLock();
    this.dbusCon?.close();
    this.dbusCon = undefined;
  }

  /** Whether a shutdown is being handled now. */
  get shuttingDown(): boolean {
    return this.nodeShuttingDownNow;
  }

  private async startWatch(): Promise<void> {
    // dbus-next (and its XML parser) is loaded only when graceful shutdown is on: about 1.5 MiB of heap.
    const con = await (
      this.conf.connect ?? (() => import('./logind-dbus.js').then((m) => m.connectLogind()))
    )();
    try {
      this.dbusCon = con;
      const currentInhibitDelayMs = await con.currentInhibitDelayMs();
      const requestedMs = periodRequestedMs(this.periods);
      // A lower InhibitDelayMaxSec would let logind go ahead before the pods are stopped.
      if (requestedMs > currentInhibitDelayMs) {
        try {
          await con.overrideInhibitDelay(requestedMs);
        } catch (err) {
          throw new Error(`unable to override inhibit delay by shutdown manager: ${errorMessage(err)}`, {
            cause: err,
          });
        }
        await con.reloadLogindConf();
        const updatedMs = await con.currentInhibitDelayMs();
        if (requestedMs > updatedMs) {
          throw new Error(
            `node shutdown manager was unable to update logind InhibitDelayMaxSec to ${requestedMs / 1000}s (ShutdownGracePeriod), current value of InhibitDelayMaxSec (${updatedMs / 1000}s) is less than requested ShutdownGracePeriod`,
          );
        }
      }
      await this.acquireInhibitLock();
      try {
        await con.monitorShutdown(
          (shuttingDown) => this.enqueue(shuttingDown),
          (err) => this.onConnectionLost(con, err),
        );
      } catch (err) {
        this.releaseLock();
        throw new Error(`failed to monitor shutdown: ${errorMessage(err)}`, { cause: err });
      }
    } catch (err) {
      con.close();
      if (this.dbusCon === con) this.dbusCon = undefined;
      throw err;
    }
  }

  /** Upstream's restart loop: every second until a watch is up again or the kubelet stops. */
  private onConnectionLost(con: DbusInhibiter, err: Error): void {
    if (this.stopController.signal.aborted) return;
    log.error('Ended to watching the node for shutdown events', { err: errorMessage(err) });
    con.close();
    const signal = this.stopController.signal;
    this.reconnecting = (async () => {
      while (!signal.aborted) {
        try {
          await this.clock.sleep(DBUS_RECONNECT_PERIOD_MS, signal);
        } catch {
          return;
        }
        log.v(1, 'Restarting watch for node shutdown events');
        try {
          await this.startWatch();
          return;
        } catch (e) {
          log.error('Unable to watch the node for shutdown events', { err: errorMessage(e) });
        }
      }
    })();
  }

  private enqueue(shuttingDown: boolean): void {
    this.events = this.events
      .then(() => this.handleEvent(shuttingDown))
      .catch((err: unknown) =>
        log.error('Shutdown manager failed to handle an event', { err: errorMessage(err) }),
      );
  }

  private async handleEvent(isShuttingDown: boolean): Promise<void> {
    log.v(1, 'Shutdown manager detected new shutdown event', {
      event: isShuttingDown ? 'shutdown' : 'cancelled',
    });
    this.conf.recordNodeEvent?.(
      'Normal',
      NODE_SHUTDOWN_EVENT_REASON,
      isShuttingDown
        ? 'Shutdown manager detected shutdown event'
        : 'Shutdown manager detected shutdown cancellation',
    );
    this.nodeShuttingDownNow = isShuttingDown;
    if (isShuttingDown) {
      // The Ready condition turns False at once, not at the next status round.
      this.conf.syncNodeStatus();
      await this.processShutdownEvent();
    } else {
      await this.acquireInhibitLock().catch((err: unknown) =>
        log.error('Shutdown manager failed to take the inhibitor lock again', { err: errorMessage(err) }),
      );
    }
  }

  private async acquireInhibitLock(): Promise<void> {
    if (!this.dbusCon) throw new Error('not connected to logind');
    const lock = await this.dbusCon.inhibitShutdown();
    this.releaseLock();
    this.inhibitLock = lock;
  }

  private releaseLock(): void {
    if (this.inhibitLock === undefined || !this.dbusCon) return;
    try {
      this.dbusCon.releaseInhibitLock(this.inhibitLock);
    } catch (err) {
      log.error('Shutdown manager failed to release the inhibitor lock', { err: errorMessage(err) });
    }
    this.inhibitLock = undefined;
  }

  /** Stops the active pods group by group; the lock goes whatever happens. */
  private async processShutdownEvent(): Promise<void> {
    log.v(1, 'Shutdown manager processing shutdown event');
    const activePods = this.conf.getPods();
    const startMs = this.clock.now();
    try {
      if (this.storage) {
        await this.storage
          .store({ startMs, endMs: 0 })
          .catch((err: unknown) =>
            log.error('Failed to store graceful shutdown state', { err: errorMessage(err) }),
          );
        this.startTimeGauge?.set(undefined, Math.floor(startMs / 1000));
        this.endTimeGauge?.set(undefined, 0);
      }
      for (const group of groupByPriority(this.periods, activePods)) {
        // No pods in this range: no reason to wait for it.
        if (group.pods.length === 0) continue;
        const kills = group.pods.map((pod) => this.killPod(pod, group.shutdownGracePeriodSeconds));
        const budget = new AbortController();
        const timedOut = this.clock.sleep(group.shutdownGracePeriodSeconds * 1000, budget.signal).then(
          () => true,
          () => false,
        );
        const done = Promise.all(kills).then(() => false);
        if (await Promise.race([done, timedOut])) {
          log.v(1, 'Shutdown manager pod killing time out', {
            gracePeriod: group.shutdownGracePeriodSeconds,
            priority: group.priority,
          });
        }
        budget.abort();
      }
    } finally {
      if (this.storage) {
        const endMs = this.clock.now();
        await this.storage
          .store({ startMs, endMs })
          .catch((err: unknown) =>
            log.error('Failed to store graceful shutdown state', { err: errorMessage(err) }),
          );
        this.endTimeGauge?.set(undefined, Math.floor(endMs / 1000));
      }
      this.releaseLock();
      log.v(1, 'Shutdown manager completed processing shutdown event, node will shutdown shortly');
    }
  }

  private async killPod(pod: Pod, groupSeconds: number): Promise<void> {
    let gracePeriodOverride = groupSeconds;
    // The pod's own termination grace period, when shorter, is kept.
    const own = pod.spec.terminationGracePeriodSeconds;
    if (own !== undefined && own !== null && own <= gracePeriodOverride) gracePeriodOverride = own;
    const ref = `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
    log.v(1, 'Shutdown manager killing pod with gracePeriod', { pod: ref, gracePeriod: gracePeriodOverride });
    try {
      await this.conf.killPod(pod, gracePeriodOverride, (status) =>
        nodeShutdownPodStatus(status, rfc3339Seconds(this.clock.now())),
      );
      log.v(1, 'Shutdown manager finished killing pod', { pod: ref });
    } catch (err) {
      log.v(1, 'Shutdown manager failed killing pod', { pod: ref, err: errorMessage(err) });
    }
  }

  /** The last shutdown's times, from the state file, as the metrics (upstream setMetrics). */
  private async setMetrics(): Promise<void> {
    if (!this.storage) return;
    try {
      const state = await this.storage.load();
      if (state.startMs > 0) this.startTimeGauge?.set(undefined, Math.floor(state.startMs / 1000));
      if (state.endMs > 0) this.endTimeGauge?.set(undefined, Math.floor(state.endMs / 1000));
    } catch (err) {
      log.error('Failed to load graceful shutdown state', { err: errorMessage(err) });
    }
  }
}
