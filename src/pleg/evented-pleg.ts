/**
 * The evented PLEG (upstream: pleg.EventedPLEG, feature gate EventedPLEG). Upstream reads CRI's
 * GetContainerEvents; containerd 1.6 does not implement it, so this one reads containerd's own task
 * events (start, exit, OOM, delete) and answers each by inspecting the one pod the event names
 * (GenericPLEG.requestInspection: that pod's listing, events and cache entry), not by relisting: the
 * sync loop learns of an exit within one look at its pod, and the runtime does not list every pod
 * for each event. An ID the PLEG has not seen yet (a container made since the last look) is asked of
 * the runtime; one the runtime does not know yet either, or a change that never shows, ends in a
 * relist as before.
 *
 * The relist stays as the safety net, at relistPeriodMs (10 s) while the event stream is healthy and
 * at fallbackRelistPeriodMs (1 s, the generic PLEG's period) while it is broken; every new stream
 * also relists at once, since containerd does not replay what happened while it was down. When the
 * runtime has no Events service (UNIMPLEMENTED), it stays a plain generic PLEG.
 */
import type { Clock } from '../lib/clock.js';
import type { RunningPod } from '../kuberuntime/types.js';
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
 * Looks at a task event's pod again, counted from the event, while the change does not show yet.
 * containerd publishes the event before its CRI plugin has handled it (an exit is recorded only after
 * the task is deleted; a sandbox is in the CRI's books only once RunPodSandbox ends), so the look at
 * once may still see the old state; these catch the new one soon after.
 */
export const FOLLOW_UP_MS = [100, 400, 1500] as const;

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
  /** Task events that asked for a look at their pod. */
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
    await subscription.done;
    this.subscribed = false;
    await this.generic.stop();
  }

  requestRelist(): void {
    this.generic.requestRelist();
  }

  requestInspection(uid: string): Promise<RunningPod | undefined> {
    return this.generic.requestInspection(uid);
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
    const signal = this.subscription?.controller.signal;
    if (!signal) return;
    this.taskEvents++;
    if (this.lastBreak !== undefined) {
      log.info('EventedPLEG: containerd task events flow again', { brokenBy: this.lastBreak });
      this.lastBreak = undefined;
    }
    log.v(5, 'EventedPLEG: task event', { type: event.type, containerID: event.containerId });
    void this.follow(event, signal);
  }

  /** Inspects the event's pod at once and at FOLLOW_UP_MS until the change shows; else relists. */
  private async follow(event: TaskEvent, signal: AbortSignal): Promise<void> {
    const eventMs = this.clock.now();
    for (const atMs of [0, ...FOLLOW_UP_MS]) {
      const waitMs = eventMs + atMs - this.clock.now();
      if (waitMs > 0) await this.clock.sleep(waitMs, signal).catch(() => undefined);
      if (signal.aborted) return;
      let uid: string | undefined;
      try {
        uid = await this.generic.podUidOf(event.containerId);
      } catch (err) {
        log.v(4, 'EventedPLEG: finding the pod of a task event failed', {
          containerID: event.containerId,
          err: errorMessage(err),
        });
      }
      if (uid === undefined) continue;
      const pod = await this.generic.requestInspection(uid);
      if (signal.aborted || shows(pod, event)) return;
    }
    this.generic.requestRelist();
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

/** Whether a pod's listing shows what a task event reported. */
function shows(pod: RunningPod | undefined, event: TaskEvent): boolean {
  const container = pod?.containers.find((c) => c.id === event.containerId);
  const sandbox = pod?.sandboxes.find((s) => s.id === event.containerId);
  switch (event.type) {
    case 'TaskStart':
      // A container may have exited since: its start showed all the same.
      if (container) return container.state === 'running' || container.state === 'exited';
      return sandbox?.state === 'ready';
    case 'TaskExit':
    case 'TaskDelete':
      if (container) return container.state === 'exited';
      if (sandbox) return sandbox.state === 'notready';
      // Gone already.
      return true;
    case 'TaskOOM':
      // The exit that follows is an event of its own.
      return true;
  }
}
