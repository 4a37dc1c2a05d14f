/**
 * The watch side of the test API server, shaped like the real server's watch cache (the cacher):
 * a bounded history of events, watches that start from a resourceVersion or from the current state,
 * selector filtering that turns a MODIFIED into ADDED or DELETED when an object enters or leaves the
 * selection, periodic BOOKMARKs, and a `410 Expired` ERROR event for a resourceVersion older than the
 * history kept.
 */
import type { Clock, TimerHandle } from '../../src/lib/clock.js';
import { ApiError, resourceExpired, type Status } from './api-error.js';
import type { FieldSelector, LabelSelector } from './selectors.js';
import { apiVersionOf, type KubeObject, type ResourceDef } from './resources.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent {
  type: WatchEventType;
  object: KubeObject | Status;
}

/** One change in the store, as the store records it. */
export interface StoreEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  def: ResourceDef;
  /** The new state; for DELETED the last state, carrying the deletion's resourceVersion. */
  object: KubeObject;
  /** The state before, for MODIFIED and DELETED. */
  prevObject?: KubeObject;
  resourceVersion: number;
}

export interface WatchRequest {
  def: ResourceDef;
  namespace?: string;
  labelSelector: LabelSelector;
  fieldSelector: FieldSelector;
  /** undefined or 0: start from the current state; otherwise replay what followed this version. */
  resourceVersion?: number;
  /** Send the current state as ADDED events first (the default when resourceVersion is 0 or unset). */
  sendInitialEvents: boolean;
  /** sendInitialEvents=true was asked for explicitly: end the initial events with a marked BOOKMARK. */
  markInitialEventsEnd: boolean;
  allowWatchBookmarks: boolean;
  timeoutMs: number;
}

export interface WatchSink {
  send(event: WatchEvent): void;
  end(): void;
}

export interface WatchHubOptions {
  clock: Clock;
  bookmarkIntervalMs: number;
  /** Events kept for watches that resume from a resourceVersion; older ones answer 410. */
  historyLimit: number;
}

interface Watcher {
  req: WatchRequest;
  sink: WatchSink;
  timers: TimerHandle[];
  closed: boolean;
}

export interface WatchHandle {
  stop(): void;
}

/** The state of the store a new watch needs: all objects of a resource now, and the current version. */
export interface StoreView {
  currentResourceVersion(): number;
  objectsOf(def: ResourceDef, namespace: string | undefined): KubeObject[];
}

export class WatchHub {
  private readonly history: StoreEvent[] = [];
  /** History holds every event after this version; a watch from an older one gets 410. */
  private compactedRevision = 0;
  private readonly watchers = new Set<Watcher>();

  constructor(
    private readonly view: StoreView,
    private readonly opts: WatchHubOptions,
  ) {}

  /** Watches from a resourceVersion older than this one are answered with 410. */
  get compactedTo(): number {
    return this.compactedRevision;
  }

  get activeWatches(): number {
    return this.watchers.size;
  }

  /** Drops the history up to revision (default: all of it), as an etcd compaction would. */
  compact(revision = this.view.currentResourceVersion()): void {
    this.compactedRevision = Math.max(this.compactedRevision, revision);
    while (this.history.length > 0 && this.history[0]!.resourceVersion <= this.compactedRevision) {
      this.history.shift();
    }
  }

  publish(event: StoreEvent): void {
    this.history.push(event);
    if (this.history.length > this.opts.historyLimit) {
      const dropped = this.history.shift()!;
      this.compactedRevision = dropped.resourceVersion;
    }
    for (const w of this.watchers) this.deliver(w, event);
  }

  /** Ends every open watch, as a restart of the server would. */
  closeAll(): void {
    for (const w of [...this.watchers]) this.close(w);
  }

  watch(req: WatchRequest, sink: WatchSink): WatchHandle {
    const w: Watcher = { req, sink, timers: [], closed: false };
    const current = this.view.currentResourceVersion();
    const from = req.resourceVersion ?? 0;

    if (from > 0 && from < this.compactedRevision) {
      // The cacher's message: the version asked for, and the newest one it can no longer replay from.
      sink.send(errorEvent(resourceExpired(`too old resource version: ${from} (${this.compactedRevision})`)));
      sink.end();
      return { stop: () => {} };
    }
    if (from > current) {
      sink.send(errorEvent(tooLargeResourceVersion(from, current)));
      sink.end();
      return { stop: () => {} };
    }

    if (req.sendInitialEvents) {
      for (const o of this.view.objectsOf(req.def, req.namespace)) {
        if (this.passes(req, o)) sink.send({ type: 'ADDED', object: o });
      }
      if (req.markInitialEventsEnd) sink.send(bookmark(req.def, current, true));
    }
    // The initial events already are the state as of now: replaying history too would repeat it.
    if (!req.sendInitialEvents && from > 0) {
      for (const e of this.history) if (e.resourceVersion > from) this.deliver(w, e);
    }

    this.watchers.add(w);
    w.timers.push(this.opts.clock.setTimeout(() => this.close(w), req.timeoutMs));
    if (req.allowWatchBookmarks) this.scheduleBookmark(w);
    return { stop: () => this.close(w, false) };
  }

  private scheduleBookmark(w: Watcher): void {
    w.timers.push(
      this.opts.clock.setTimeout(() => {
        if (w.closed) return;
        w.sink.send(bookmark(w.req.def, this.view.currentResourceVersion(), false));
        this.scheduleBookmark(w);
      }, this.opts.bookmarkIntervalMs),
    );
  }

  private close(w: Watcher, endSink = true): void {
    if (w.closed) return;
    w.closed = true;
    for (const t of w.timers) this.opts.clock.clearTimeout(t);
    this.watchers.delete(w);
    if (endSink) w.sink.end();
  }

  private passes(req: WatchRequest, o: KubeObject): boolean {
    if (req.def.namespaced && req.namespace && o.metadata.namespace !== req.namespace) return false;
    return req.labelSelector.matches(o.metadata.labels) && req.fieldSelector.matches(req.def.fields(o));
  }

  /** cacheWatcher.convertToWatchEvent: an object moving in or out of the selection is ADDED or DELETED. */
  private deliver(w: Watcher, e: StoreEvent): void {
    if (w.closed || e.def !== w.req.def) return;
    const cur = e.type !== 'DELETED' && this.passes(w.req, e.object);
    const prev = e.prevObject !== undefined && this.passes(w.req, e.prevObject);
    if (cur && !prev) w.sink.send({ type: 'ADDED', object: e.object });
    else if (cur && prev) w.sink.send({ type: 'MODIFIED', object: e.object });
    else if (!cur && prev) {
      const last = structuredClone(e.prevObject!);
      last.metadata.resourceVersion = String(e.resourceVersion);
      w.sink.send({ type: 'DELETED', object: last });
    }
  }
}

function errorEvent(err: ApiError): WatchEvent {
  return { type: 'ERROR', object: err.status };
}

/** storage.NewTooLargeResourceVersionError: a 504 the client is told to retry after a second. */
function tooLargeResourceVersion(asked: number, current: number): ApiError {
  return new ApiError({
    message: `Timeout: Too large resource version: ${asked}, current: ${current}`,
    reason: 'Timeout',
    details: {
      causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
      retryAfterSeconds: 1,
    },
    code: 504,
  });
}

/** A BOOKMARK carries an object of the watched kind with nothing in it but its resourceVersion. */
function bookmark(def: ResourceDef, resourceVersion: number, initialEventsEnd: boolean): WatchEvent {
  return {
    type: 'BOOKMARK',
    object: {
      kind: def.kind,
      apiVersion: apiVersionOf(def),
      metadata: {
        resourceVersion: String(resourceVersion),
        ...(initialEventsEnd ? { annotations: { 'k8s.io/initial-events-end': 'true' } } : {}),
      },
    },
  };
}
