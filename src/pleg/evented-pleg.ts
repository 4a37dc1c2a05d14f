/**
 * The evented PLEG (upstream: pleg.EventedPLEG, feature gate EventedPLEG). Upstream reads CRI's
 * GetContainerEvents; containerd 1.6 does not implement it, so this one reads containerd's own task
 * events (start, exit, OOM, delete) and answers them with relists of the GenericPLEG it wraps: at
 * once for a lone event, one per EVENT_RELIST_GAP_MS for a burst (and so for requestRelist). The
 * sync loop learns of an exit within one relist instead of within a relist period.
 *
 * The relist stays as the safety net, at relistPeriodMs (10 s) while the event stream is healthy and
 * at fallbackRelistPeriodMs (1 s, the generic PLEG's period) while it is broken; every new stream
 * also relists at once, since containerd does not replay what happened while it was down. When the
 * runtime has no Events service (UNIMPLEMENTED), it stays a plain generic PLEG.
 */
import type { Clock, TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { TaskEvent } from '../cri/containerd-events/subscribe-task-events.js';
import type { BoundedChannel } from './bounded-channel.js';
import {
  DEFAULT_RELIST_PERIOD_MS,
  type GenericPLEG,
  type PlegHealth,
  type PlegMetrics,
  type PodLifecycleEvent,
  type PodLifecycleEventGenerator,
} from './generic-pleg.js';

const log = logger('pleg');

/** The relist period while events arrive (upstream's evented PLEG uses 300 s; shorter here, as a safety net that costs little). */
export const EVENTED_RELIST_PERIOD_MS = 10_000;

/**
 * Relists after a task event, counted from the event. containerd publishes the event before its
 * CRI plugin has handled it (an exit is recorded only after the task is deleted), so the relist at
 * once may still see the old state; these catch the new one soon after.
 */
export const FOLLOW_UP_RELISTS_MS = [100, 400, 1500] as const;

/**
 * The least time between two relists asked for, by task events or by requestRelist (a pod worker
 * waiting for a reading newer than its last sync, the kubelet after a kill). While 100 pods start,
 * those asked for about 200 relists of every pod and container, one every 75 ms or so; the asks of a
 * burst now share one relist per gap. A lone ask still relists at once, and the last event of a
 * burst keeps its follow-ups.
 */
export const EVENT_RELIST_GAP_MS = 250;

/** What the evented PLEG needs of an event source: subscribeTaskEvents bound to a socket and namespace. */
export type TaskEventSubscriber = (
  onEvent: (event: TaskEvent) => void,
  signal: AbortSignal,
  hooks: { onSubscribe: () => void; onBreak: (error: string) => void },
) => Promise<void>;

export interface EventedPlegOptions {
  generic: GenericPLEG;
  subscribe: TaskEventSubscriber;
  clock: Clock;
  relistPeriodMs?: number;
  fallbackRelistPeriodMs?: number;
}

export interface EventedPlegMetrics extends PlegMetrics {
  /** Task events that asked for a relist. */
  taskEvents: number;
  /** Whether an event stream is open now. */
  subscribed: boolean;
}

export class EventedPLEG implements PodLifecycleEventGenerator {
  readonly events: BoundedChannel<PodLifecycleEvent>;
  private readonly generic: GenericPLEG;
  private readonly subscribe: TaskEventSubscriber;
  private readonly clock: Clock;
  private readonly relistPeriodMs: number;
  private readonly fallbackRelistPeriodMs: number;
  private subscription: { controller: AbortController; done: Promise<void> } | undefined;
  private subscribed = false;
  /** Whether the first subscription was logged. */
  private announced = false;
  private taskEvents = 0;
  /** The last stream error reported, so that a stream failing the same way is logged once. */
  private lastBreak: string | undefined;
  /** The pending follow-up relist of the last task event. */
  private followUp: TimerHandle | undefined;
  /** When an ask (a task event, requestRelist) last brought a relist; -Infinity before the first. */
  private lastAskedRelistMs = -Infinity;
  /** The relist that the asks of a burst share, pending until EVENT_RELIST_GAP_MS after the last. */
  private burstRelist: TimerHandle | undefined;

  constructor(opts: EventedPlegOptions) {
    this.generic = opts.generic;
    this.subscribe = opts.subscribe;
    this.clock = opts.clock;
    this.events = opts.generic.events;
    this.relistPeriodMs = opts.relistPeriodMs ?? EVENTED_RELIST_PERIOD_MS;
    this.fallbackRelistPeriodMs = opts.fallbackRelistPeriodMs ?? DEFAULT_RELIST_PERIOD_MS;
  }

  start(): void {
    if (this.subscription) return;
    // Until a stream is open, relist as the generic PLEG does.
    this.generic.setRelistPeriod(this.fallbackRelistPeriodMs);
    this.generic.start();
    const controller = new AbortController();
    const done = this.subscribe((event) => this.onTaskEvent(event), controller.signal, {
      onSubscribe: () => this.onSubscribe(),
      onBreak: (error) => this.onBreak(error, controller),
    }).catch((err: unknown) => {
      log.error('EventedPLEG: the task event subscription failed; relisting only', {
        err: errorMessage(err),
      });
      this.fallBack();
    });
    this.subscription = { controller, done };
  }

  async stop(): Promise<void> {
    const subscription = this.subscription;
    if (!subscription) return;
    this.subscription = undefined;
    subscription.controller.abort();
    this.cancelFollowUps();
    this.cancelBurstRelist();
    await subscription.done;
    this.subscribed = false;
    await this.generic.stop();
  }

  requestRelist(): void {
    this.askRelist(this.clock.now());
  }

  healthy(): PlegHealth {
    return this.generic.healthy();
  }

  metrics(): EventedPlegMetrics {
    return { ...this.generic.metrics(), taskEvents: this.taskEvents, subscribed: this.subscribed };
  }

  private onTaskEvent(event: TaskEvent): void {
    // An exec's process (an exec probe, kubectl exec) changes no container's state.
    if ((event.type === 'TaskExit' || event.type === 'TaskDelete') && event.execId !== '') return;
    this.taskEvents++;
    if (this.lastBreak !== undefined) {
      log.info('EventedPLEG: containerd task events flow again', { brokenBy: this.lastBreak });
      this.lastBreak = undefined;
    }
    log.v(5, 'EventedPLEG: task event, relisting', { type: event.type, containerID: event.containerId });
    const nowMs = this.clock.now();
    this.askRelist(nowMs);
    // Each event restarts the series, so the last one of a burst gets all its follow-ups.
    this.cancelFollowUps();
    this.scheduleFollowUp(0, nowMs);
  }

  /** At once, unless an ask relisted less than EVENT_RELIST_GAP_MS ago: then once the gap has passed. */
  private askRelist(nowMs: number): void {
    const waitMs = this.lastAskedRelistMs + EVENT_RELIST_GAP_MS - nowMs;
    if (waitMs <= 0) {
      this.relistForAsks();
      return;
    }
    this.burstRelist ??= this.clock.setTimeout(() => {
      this.burstRelist = undefined;
      this.relistForAsks();
    }, waitMs);
  }

  private relistForAsks(): void {
    this.lastAskedRelistMs = this.clock.now();
    this.generic.requestRelist();
  }

  private scheduleFollowUp(index: number, eventMs: number): void {
    const atMs = FOLLOW_UP_RELISTS_MS[index];
    if (atMs === undefined || !this.subscription) return;
    const timer = this.clock.setTimeout(
      () => {
        this.followUp = undefined;
        this.generic.requestRelist();
        this.scheduleFollowUp(index + 1, eventMs);
      },
      eventMs + atMs - this.clock.now(),
    );
    this.followUp = timer;
  }

  private cancelFollowUps(): void {
    if (this.followUp) this.clock.clearTimeout(this.followUp);
    this.followUp = undefined;
  }

  private cancelBurstRelist(): void {
    if (this.burstRelist) this.clock.clearTimeout(this.burstRelist);
    this.burstRelist = undefined;
  }

  private onSubscribe(): void {
    // Logged once: after a break, the first event tells that the stream is back (onTaskEvent).
    if (!this.announced)
      log.info('EventedPLEG: subscribing to containerd task events', { relistPeriod: this.relistPeriodMs });
    this.announced = true;
    this.subscribed = true;
    this.generic.setRelistPeriod(this.relistPeriodMs);
    // Whatever happened before this stream opened was not seen: relist to cover the gap.
    this.generic.requestRelist();
  }

  private onBreak(error: string, controller: AbortController): void {
    this.subscribed = false;
    if (/\bUNIMPLEMENTED\b/.test(error)) {
      log.warn('EventedPLEG: the runtime has no containerd Events service; using the generic PLEG', {
        err: error,
      });
      controller.abort();
      this.fallBack();
      return;
    }
    if (error !== this.lastBreak) {
      log.info('EventedPLEG: the task event stream broke; relisting every period until it is back', {
        err: error,
        relistPeriod: this.fallbackRelistPeriodMs,
      });
      this.lastBreak = error;
    }
    this.fallBack();
  }

  private fallBack(): void {
    this.subscribed = false;
    this.generic.setRelistPeriod(this.fallbackRelistPeriodMs);
    this.generic.requestRelist();
  }
}
