/**
 * The node page's live feed: one loop for every open page, at most one push per period (1 s), and
 * only what changed since the last push (pods whose view changed or went away, new events, the node
 * when it changed). A page that connects gets the whole snapshot first. The loop runs only while a
 * page is open, and the stats summary (the costly part) is read at most every usagePeriodMs.
 */
import { realClock, type Clock, type TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { CoreEvent } from '../events/event-types.js';
import {
  nodeView,
  podView,
  pullsSnapshot,
  RECENT_EVENTS_ON_PAGE,
  sortPods,
  usageFromSummary,
  type NodePageSnapshot,
  type NodePageSource,
  type NodeView,
  type PodView,
  type PullsSnapshot,
} from './node-page-model.js';

const log = logger('nodepage');

export const PUSH_PERIOD_MS = 1000;
export const USAGE_PERIOD_MS = 10_000;
/** Said to an idle page now and then, so nothing between closes the stream for silence. */
const KEEPALIVE_PERIOD_MS = 15_000;

/** What changed since the last push; absent fields did not change. */
export interface NodePageDelta {
  node?: NodeView;
  /** Pods new or changed, whole. */
  pods?: PodView[];
  /** UIDs of pods gone. */
  removed?: string[];
  /** Events new or folded (same metadata.name as before), newest first. */
  events?: CoreEvent[];
  pulls?: PullsSnapshot;
  /** The page's order of pods (uids), when it changed. */
  order?: string[];
}

/** A page's connection: it is handed the SSE event name and its JSON data. */
export type FeedSink = (event: 'snapshot' | 'delta' | 'keepalive', data: string) => void;

export interface NodePageFeedOptions {
  clock?: Clock;
  pushPeriodMs?: number;
  usagePeriodMs?: number;
}

export class NodePageFeed {
  private readonly clock: Clock;
  private readonly pushPeriodMs: number;
  private readonly usagePeriodMs: number;
  private readonly sinks = new Set<FeedSink>();
  private timer: TimerHandle | undefined;
  private unsubscribeEvents: (() => void) | undefined;
  private pendingEvents: CoreEvent[] = [];
  // The state last pushed, which deltas are measured against.
  private node: NodeView | undefined;
  private nodeJson = '';
  private readonly podJson = new Map<string, string>();
  private readonly pods = new Map<string, PodView>();
  private order: string[] = [];
  private pulls: PullsSnapshot = { available: false, inFlight: [], recent: [] };
  private pullsJson = '';
  private usage: NodeView['usage'];
  private usageReadAtMs = -Infinity;
  private usageReading = false;
  private lastSentMs = 0;
  private stopped = false;

  constructor(
    private readonly src: NodePageSource,
    opts: NodePageFeedOptions = {},
  ) {
    this.clock = opts.clock ?? realClock;
    this.pushPeriodMs = Math.max(opts.pushPeriodMs ?? PUSH_PERIOD_MS, 100);
    this.usagePeriodMs = Math.max(opts.usagePeriodMs ?? USAGE_PERIOD_MS, 1000);
  }

  /** The whole page now (also the answer of /node/api/snapshot). */
  snapshot(): NodePageSnapshot {
    // With pages open, what changed goes to them first, so the state stays the base of their deltas.
    if (this.sinks.size > 0) this.push();
    else this.refresh();
    return {
      node: this.node!,
      pods: this.order.map((uid) => this.pods.get(uid)!),
      events: this.src.events.list().slice(0, RECENT_EVENTS_ON_PAGE),
      pulls: this.pulls,
    };
  }

  get subscribers(): number {
    return this.sinks.size;
  }

  /** Sends sink the snapshot now and every change from now on; returns the call that ends it. */
  subscribe(sink: FeedSink): () => void {
    if (this.stopped) return () => undefined;
    if (this.sinks.size === 0) this.startLoop();
    const snapshot = JSON.stringify(this.snapshot());
    this.sinks.add(sink);
    sink('snapshot', snapshot);
    return () => {
      this.sinks.delete(sink);
      if (this.sinks.size === 0) this.stopLoop();
    };
  }

  /** Ends every page's feed; the pages reconnect to a restarted kubelet by themselves. */
  stop(): void {
    this.stopped = true;
    this.sinks.clear();
    this.stopLoop();
  }

  private startLoop(): void {
    this.unsubscribeEvents = this.src.events.subscribe((e) => this.pendingEvents.push(e));
    this.lastSentMs = this.clock.now();
    this.schedule();
  }

  private stopLoop(): void {
    this.unsubscribeEvents?.();
    this.unsubscribeEvents = undefined;
    this.pendingEvents = [];
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      if (this.sinks.size === 0) return;
      try {
        this.push();
      } catch (err) {
        // A bad view must not end the page's feed; the next period tries again.
        log.error('Unable to update the node page', { err: errorMessage(err) });
      }
      this.schedule();
    }, this.pushPeriodMs);
  }

  /** Measures what changed, and sends it to every page when anything did. */
  private push(): void {
    const delta = this.refresh();
    const now = this.clock.now();
    if (Object.keys(delta).length > 0) {
      this.broadcast('delta', JSON.stringify(delta));
      this.lastSentMs = now;
    } else if (now - this.lastSentMs >= KEEPALIVE_PERIOD_MS) {
      this.broadcast('keepalive', '{}');
      this.lastSentMs = now;
    }
  }

  private broadcast(event: 'delta' | 'keepalive', data: string): void {
    for (const sink of [...this.sinks]) {
      try {
        sink(event, data);
      } catch {
        this.sinks.delete(sink);
      }
    }
  }

  /** Brings the pushed state up to now and returns the difference. */
  private refresh(): NodePageDelta {
    const now = this.src.now();
    this.maybeReadUsage();
    const delta: NodePageDelta = {};
    const node = nodeView(this.src, this.usage);
    const nodeJson = JSON.stringify(node);
    if (nodeJson !== this.nodeJson) {
      this.node = node;
      this.nodeJson = nodeJson;
      delta.node = node;
    }
    const seen = new Set<string>();
    const changed: PodView[] = [];
    const order: string[] = [];
    for (const pod of sortPods(this.src.pods())) {
      const view = podView(this.src, pod, now);
      if (seen.has(view.uid)) continue;
      seen.add(view.uid);
      order.push(view.uid);
      const json = JSON.stringify(view);
      if (this.podJson.get(view.uid) === json) continue;
      this.podJson.set(view.uid, json);
      this.pods.set(view.uid, view);
      changed.push(view);
    }
    const removed = [...this.pods.keys()].filter((uid) => !seen.has(uid));
    for (const uid of removed) {
      this.pods.delete(uid);
      this.podJson.delete(uid);
    }
    if (changed.length > 0) delta.pods = changed;
    if (removed.length > 0) delta.removed = removed;
    if (order.join(' ') !== this.order.join(' ')) {
      this.order = order;
      delta.order = order;
    }
    if (this.pendingEvents.length > 0) {
      delta.events = this.pendingEvents.reverse().slice(0, RECENT_EVENTS_ON_PAGE);
      this.pendingEvents = [];
    }
    const pulls = pullsSnapshot(this.src.pulls);
    const pullsJson = JSON.stringify(pulls);
    if (pullsJson !== this.pullsJson) {
      this.pulls = pulls;
      this.pullsJson = pullsJson;
      delta.pulls = pulls;
    }
    return delta;
  }

  /** Starts a read of the stats summary when the last is old enough; its answer shows at the next push. */
  private maybeReadUsage(): void {
    const summary = this.src.summary?.bind(this.src);
    if (!summary || this.usageReading) return;
    const now = this.clock.now();
    if (now - this.usageReadAtMs < this.usagePeriodMs) return;
    this.usageReading = true;
    this.usageReadAtMs = now;
    summary().then(
      (s) => {
        this.usage = usageFromSummary(s, this.clock.now());
        this.usageReading = false;
      },
      (err: unknown) => {
        log.v(2, 'Unable to read the node stats for the node page', { err: errorMessage(err) });
        this.usageReading = false;
      },
    );
  }
}
