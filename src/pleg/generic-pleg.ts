/**
 * The pod lifecycle event generator (upstream: pleg.GenericPLEG). Every relistPeriodMs it lists all
 * pods in the runtime, compares each container's and sandbox's state with the previous listing, turns
 * the differences into events, refreshes the PodCache for the pods that changed, and then marks the
 * whole cache as current so that pod workers waiting on quiet pods move on.
 */
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { KubeContainerState, KubePodStatus, Runtime, RunningPod } from '../kuberuntime/types.js';
import { BoundedChannel } from './bounded-channel.js';
import { formatGoDuration } from '../lib/go-duration.js';
import type { PodCache } from './pod-cache.js';
import { loopPeriodMs } from '../lib/loop-period.js';

const log = logger('pleg');

/** Upstream's PodLifeCycleEventType values. */
export type PodLifecycleEventType =
  'ContainerStarted' | 'ContainerDied' | 'ContainerRemoved' | 'ContainerChanged';

export interface PodLifecycleEvent {
  podUid: string;
  type: PodLifecycleEventType;
  /** The runtime's ID of the container or sandbox the event is about. */
  containerId: string;
}

export interface PlegHealth {
  healthy: boolean;
  /** Why not, in upstream's words; absent when healthy. */
  message?: string;
}

/** Numbers for kubelet_pleg_relist_duration_seconds and friends. */
export interface PlegMetrics {
  /** Relists attempted, including those the runtime failed. */
  relistCount: number;
  relistFailures: number;
  /** Duration of the last relist, successful or not; 0 before the first. */
  lastRelistDurationMs: number;
  /** Start time of the last successful relist (ms since the epoch); 0 before the first. */
  lastRelistTimeMs: number;
  /** Events dropped because the consumer let the channel fill up. */
  discardedEvents: number;
}

/** What the sync loop needs of a PLEG (upstream: pleg.PodLifecycleEventGenerator). */
export interface PodLifecycleEventGenerator {
  start(): void;
  /** Stops relisting and waits for a relist under way to finish. */
  stop(): Promise<void>;
  /** The events, for the sync loop to consume; full means events are dropped, not that the PLEG waits. */
  readonly events: BoundedChannel<PodLifecycleEvent>;
  healthy(): PlegHealth;
  metrics(): PlegMetrics;
  /** Asks for a relist soon, for a change the kubelet made itself (a pod's containers and sandbox stopped). */
  requestRelist?(): void;
}

export const DEFAULT_RELIST_PERIOD_MS = 1000;
/** Upstream's RelistThreshold: past this without a successful relist the node is reported unhealthy. */
export const DEFAULT_RELIST_THRESHOLD_MS = 3 * 60 * 1000;
export const DEFAULT_EVENT_CHANNEL_CAPACITY = 1000;

export interface GenericPlegOptions {
  runtime: Pick<Runtime, 'getPods' | 'getPodStatus'>;
  cache: PodCache;
  clock: Clock;
  relistPeriodMs?: number;
  relistThresholdMs?: number;
  eventChannelCapacity?: number;
  /** Told each relist's duration, for kubelet_pleg_relist_duration_seconds. */
  onRelist?: (durationMs: number) => void;
  /** Told at each relist's start the time since the last successful one began (kubelet_pleg_relist_interval_seconds). */
  onRelistStart?: (sinceLastRelistMs: number) => void;
}

/** A container's state as the PLEG compares it (upstream: plegContainerState). */
type PlegContainerState = 'running' | 'exited' | 'unknown' | 'non-existent';

/** A pod as the events sent so far describe it (old) and as the last listing has it (current). */
interface PodRecord {
  old?: RunningPod;
  current?: RunningPod;
}

function plegState(state: KubeContainerState): PlegContainerState {
  switch (state) {
    case 'running':
      return 'running';
    case 'exited':
      return 'exited';
    // The kubelet makes no use of "created", so a created container counts as unknown, as upstream.
    case 'created':
    case 'unknown':
      return 'unknown';
  }
}

/** Sandboxes take part in relist as if they were containers: a ready one is running, any other has exited. */
function containerStates(pod: RunningPod | undefined): Map<string, PlegContainerState> {
  const states = new Map<string, PlegContainerState>();
  if (!pod) return states;
  for (const s of pod.sandboxes) states.set(s.id, s.state === 'ready' ? 'running' : 'exited');
  for (const c of pod.containers) states.set(c.id, plegState(c.state));
  return states;
}

function generateEvents(
  podUid: string,
  containerId: string,
  oldState: PlegContainerState,
  newState: PlegContainerState,
): PodLifecycleEvent[] {
  if (oldState === newState) return [];
  const event = (type: PodLifecycleEventType): PodLifecycleEvent => ({ podUid, type, containerId });
  switch (newState) {
    case 'running':
      return [event('ContainerStarted')];
    case 'exited':
      return [event('ContainerDied')];
    case 'unknown':
      return [event('ContainerChanged')];
    case 'non-existent':
      // A container seen exited was already reported dead; one that vanished while running dies and goes at once.
      return oldState === 'exited'
        ? [event('ContainerRemoved')]
        : [event('ContainerDied'), event('ContainerRemoved')];
  }
}

/** The events that turn the old listing of a pod into the current one, sandboxes first, in listing order. */
export function computePodEvents(
  podUid: string,
  oldPod: RunningPod | undefined,
  currentPod: RunningPod | undefined,
): PodLifecycleEvent[] {
  const oldStates = containerStates(oldPod);
  const newStates = containerStates(currentPod);
  const ids = new Set([...oldStates.keys(), ...newStates.keys()]);
  const events: PodLifecycleEvent[] = [];
  for (const id of ids) {
    events.push(
      ...generateEvents(podUid, id, oldStates.get(id) ?? 'non-existent', newStates.get(id) ?? 'non-existent'),
    );
  }
  return events;
}

/** How many changed pods one relist reads at a time (each read is a few runtime calls). */
export const RELIST_STATUS_CONCURRENCY = 8;

/** Runs fn on every item, at most `limit` at a time; resolves when all have settled (fn must not throw). */
async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export class GenericPLEG implements PodLifecycleEventGenerator {
  readonly events: BoundedChannel<PodLifecycleEvent>;
  private readonly runtime: GenericPlegOptions['runtime'];
  private readonly cache: PodCache;
  private readonly clock: Clock;
  private relistPeriodMs: number;
  private readonly relistThresholdMs: number;
  private readonly onRelist: ((durationMs: number) => void) | undefined;
  private readonly onRelistStart: ((sinceLastRelistMs: number) => void) | undefined;

  private readonly records = new Map<string, PodRecord>();
  /** The last listing, as getPods returned it. */
  private listing: readonly RunningPod[] | undefined;
  /** The pods whose record's current is not its old: the only ones a relist compares. */
  private readonly unsettled = new Set<string>();
  /** Pods whose cache update failed: looked at again on the next relist even without events. */
  private podsToReinspect = new Set<string>();
  private relistInFlight: Promise<void> | undefined;
  /** Set by requestRelist: the loop relists again as soon as the current relist ends. */
  private relistRequested = false;
  /** Ends the loop's current sleep early, while it sleeps. */
  private wakeLoop: (() => void) | undefined;
  private loop: { controller: AbortController; done: Promise<void> } | undefined;
  private readonly counters: PlegMetrics = {
    relistCount: 0,
    relistFailures: 0,
    lastRelistDurationMs: 0,
    lastRelistTimeMs: 0,
    discardedEvents: 0,
  };

  /** The reason relists fail, while they do (reported once per change). */
  private relistError: string | undefined;
  private failedRelistsInARow = 0;

  constructor(opts: GenericPlegOptions) {
    this.runtime = opts.runtime;
    this.cache = opts.cache;
    this.clock = opts.clock;
    this.relistPeriodMs = loopPeriodMs('pleg relist', opts.relistPeriodMs ?? DEFAULT_RELIST_PERIOD_MS);
    this.relistThresholdMs = opts.relistThresholdMs ?? DEFAULT_RELIST_THRESHOLD_MS;
    this.events = new BoundedChannel(opts.eventChannelCapacity ?? DEFAULT_EVENT_CHANNEL_CAPACITY);
    this.onRelist = opts.onRelist;
    this.onRelistStart = opts.onRelistStart;
  }

  /**
   * Relists now, then relistPeriodMs after each relist ends (so relists never overlap), or at once
   * when requestRelist asks for one.
   */
  start(): void {
    if (this.loop) return;
    const controller = new AbortController();
    const run = async () => {
      while (!controller.signal.aborted) {
        this.relistRequested = false;
        await this.relist();
        const endMs = this.clock.now();
        if (!this.relistRequested) {
          const wake = new AbortController();
          this.wakeLoop = () => wake.abort();
          try {
            await this.clock.sleep(this.relistPeriodMs, AbortSignal.any([controller.signal, wake.signal]));
            continue;
          } catch {
            if (controller.signal.aborted) return;
          } finally {
            this.wakeLoop = undefined;
          }
        }
        // Asked for: at once, but no sooner than twice the last relist's length after it. While many
        // pods start, requests come faster than relists end, and back-to-back relists of 100 pods
        // took as much CPU as starting them; this keeps relisting to a third of the time.
        const pauseMs =
          Math.min(2 * this.counters.lastRelistDurationMs, this.relistPeriodMs) - (this.clock.now() - endMs);
        if (pauseMs > 0) await this.clock.sleep(pauseMs, controller.signal).catch(() => undefined);
      }
    };
    this.loop = { controller, done: run() };
  }

  /**
   * Asks for a relist as soon as possible: at once while the loop sleeps, right after the relist
   * under way otherwise (that one may have listed before the change it is asked about).
   */
  requestRelist(): void {
    this.relistRequested = true;
    this.wakeLoop?.();
  }

  /** Changes the pause between relists from the next pause on. */
  setRelistPeriod(periodMs: number): void {
    this.relistPeriodMs = loopPeriodMs('pleg relist', periodMs);
  }

  get relistPeriod(): number {
    return this.relistPeriodMs;
  }

  async stop(): Promise<void> {
    const loop = this.loop;
    if (!loop) return;
    this.loop = undefined;
    loop.controller.abort();
    await loop.done;
  }

  healthy(): PlegHealth {
    const lastMs = this.counters.lastRelistTimeMs;
    if (lastMs === 0) return { healthy: false, message: 'pleg has yet to be successful' };
    const elapsedMs = this.clock.now() - lastMs;
    if (elapsedMs > this.relistThresholdMs) {
      return {
        healthy: false,
        message:
          `pleg was last seen active ${formatGoDuration(elapsedMs)} ago; ` +
          `threshold is ${formatGoDuration(this.relistThresholdMs)}`,
      };
    }
    return { healthy: true };
  }

  metrics(): PlegMetrics {
    return { ...this.counters };
  }

  /** One relist; a call while one is under way joins it instead of starting another. */
  relist(): Promise<void> {
    if (!this.relistInFlight) {
      this.relistInFlight = this.doRelist().finally(() => {
        this.relistInFlight = undefined;
      });
    }
    return this.relistInFlight;
  }

  private async doRelist(): Promise<void> {
    const startMs = this.clock.now();
    if (this.counters.lastRelistTimeMs > 0) this.onRelistStart?.(startMs - this.counters.lastRelistTimeMs);
    this.counters.relistCount++;
    try {
      await this.relistOnce(startMs);
      if (this.relistError !== undefined) {
        log.info('GenericPLEG: Retrieving pods works again', { failedRelists: this.failedRelistsInARow });
        this.relistError = undefined;
        this.failedRelistsInARow = 0;
      }
    } catch (err) {
      // The runtime is down or failing: healthy() falls once this has lasted relistThresholdMs.
      this.counters.relistFailures++;
      this.failedRelistsInARow++;
      this.reportRelistError(errorMessage(err));
    } finally {
      this.counters.lastRelistDurationMs = this.clock.now() - startMs;
      this.onRelist?.(this.counters.lastRelistDurationMs);
    }
  }

  /**
   * Once per state change, not once a second: the first failure and each new reason are errors, the
   * same reason again is only logged at verbosity 4 (the count shows in the metrics and, past the
   * threshold, in healthy()).
   */
  private reportRelistError(message: string): void {
    if (message === this.relistError) {
      log.v(4, 'GenericPLEG: Unable to retrieve pods', {
        err: message,
        failedRelists: this.failedRelistsInARow,
      });
      return;
    }
    this.relistError = message;
    log.error('GenericPLEG: Unable to retrieve pods', { err: message });
  }

  private async relistOnce(startMs: number): Promise<void> {
    this.takeListing(await this.runtime.getPods(true));
    this.counters.lastRelistTimeMs = startMs;

    const eventsByPod = new Map<string, PodLifecycleEvent[]>();
    for (const uid of this.unsettled) {
      const { old, current } = this.records.get(uid) ?? {};
      // Listed once, never read into the cache (its reading failed), and gone since: nothing to tell.
      if (!old && !current) {
        this.records.delete(uid);
        this.unsettled.delete(uid);
        continue;
      }
      const events = computePodEvents(uid, old, current);
      if (events.length > 0) eventsByPod.set(uid, events);
      // Its containers' states are the ones it settled at: the next relist need not compare it.
      else this.commitRecord(uid);
    }

    const needsReinspection = new Set<string>();
    // Changed pods are read a few at a time, and each pod's events go out as soon as its status is
    // in the cache: when many pods start together, the first need not wait for the last to be read.
    await forEachConcurrently([...eventsByPod], RELIST_STATUS_CONCURRENCY, async ([uid, events]) => {
      const current = this.records.get(uid)?.current;
      const err = await this.updateCache(uid, current, startMs);
      if (err) {
        // The record keeps its old listing, so the same events come again on the next relist.
        log.error('PLEG: Ignoring events for pod', { podUID: uid, err: errorMessage(err) });
        needsReinspection.add(uid);
        return;
      }
      this.commitRecord(uid);
      for (const event of events) {
        // Upstream does not pass these on: an unknown state tells the sync loop nothing it can act on.
        if (event.type === 'ContainerChanged') continue;
        if (!this.events.trySend(event)) {
          this.counters.discardedEvents++;
          log.error('Event channel is full, discard this relist() cycle event', {
            podUID: uid,
            type: event.type,
          });
        }
      }
    });

    const reinspect = [...this.podsToReinspect].filter((uid) => !eventsByPod.has(uid));
    await forEachConcurrently(reinspect, RELIST_STATUS_CONCURRENCY, async (uid) => {
      const err = await this.updateCache(uid, this.records.get(uid)?.current, startMs);
      if (err) {
        log.v(5, 'PLEG: pod failed reinspection', { podUID: uid, err: errorMessage(err) });
        needsReinspection.add(uid);
      }
    });

    // Only now is every changed pod in the cache, so only now may quiet pods be declared current.
    this.cache.updateTime(startMs);
    this.podsToReinspect = needsReinspection;
  }

  /**
   * Takes a relist's pods into the records. getPods hands back the very array of the last listing
   * while nothing in the runtime changed, and the very pod while nothing of it changed, so a quiet
   * relist looks at no record, and a busy one compares only the pods that changed.
   */
  private takeListing(pods: readonly RunningPod[]): void {
    if (pods === this.listing) return;
    this.listing = pods;
    for (const record of this.records.values()) record.current = undefined;
    for (const pod of pods) {
      const record = this.records.get(pod.uid);
      if (record) record.current = pod;
      else this.records.set(pod.uid, { current: pod });
    }
    for (const [uid, record] of this.records) if (record.old !== record.current) this.unsettled.add(uid);
  }

  /** The pod's events are out: its current listing becomes its old one (a pod no longer listed goes). */
  private commitRecord(uid: string): void {
    this.unsettled.delete(uid);
    const record = this.records.get(uid);
    if (!record) return;
    if (record.current) record.old = record.current;
    else this.records.delete(uid);
  }

  /**
   * Reads the pod's status from the runtime, its sandboxes and containers as this relist listed
   * them (at listedAtMs), so the reading is as new as that listing: a worker that created a
   * container after it must not take a reading without that container for a newer one.
   */
  private async updateCache(
    uid: string,
    pod: RunningPod | undefined,
    listedAtMs: number,
  ): Promise<Error | undefined> {
    if (!pod) {
      // Nothing of the pod is left in the runtime: an absent entry reads as an empty status.
      this.cache.delete(uid);
      return undefined;
    }
    try {
      const previous = this.cache.get(uid).status;
      const status = await this.runtime.getPodStatus(pod.uid, pod.name, pod.namespace, pod, previous);
      this.cache.set(uid, { ...status, ips: this.podIPs(uid, status) }, undefined, listedAtMs);
      return undefined;
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      this.cache.set(uid, this.cache.get(uid).status, error, listedAtMs);
      return error;
    }
  }

  /**
   * A pod whose sandboxes have all stopped reports no IPs; keep the last ones known so that the
   * status of an exited pod still shows the address it had (upstream: getPodIPs).
   */
  private podIPs(uid: string, status: KubePodStatus): string[] {
    if (status.ips.length > 0) return status.ips;
    const previous = this.cache.get(uid).status.ips;
    if (previous.length === 0) return [];
    if (status.sandboxStatuses.some((s) => s.state === 'SANDBOX_READY')) return status.ips;
    return previous;
  }
}
