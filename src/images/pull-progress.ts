/**
 * Image pull progress, which no upstream kubelet shows: while the kubelet's pulls run, the
 * runtime's content store is read every second (containerd's ListStatuses: one ingest per blob
 * being downloaded), its ingests are attributed to the pulls in flight, progress is logged at
 * --v=2 every few seconds, and the last finished pulls are kept with their size and duration.
 *
 * The content store names ingests by blob (`layer-sha256:…`), not by image, so attribution is by
 * time: an ingest belongs to the pull in flight that started last before the ingest did. With
 * serializeImagePulls (the default) one pull runs at a time and this is exact; with parallel
 * pulls, ingests of pulls started within the same second may be counted under the wrong one.
 * A blob another client downloads into the namespace meanwhile (`ctr pull`) counts too.
 */
import type { IngestStatus } from '../cri/containerd-content/list-ingest-statuses.js';
import type { PullObserver, PullOutcome } from '../kuberuntime/image-puller.js';
import type { Clock, TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('images');

/** What the node page reads: the pulls running now and the last ones finished. */
export interface PullsView {
  inFlight(): { image: string; bytesDone: number; bytesTotal: number; startedAt: number }[];
  recent(): { image: string; bytes: number; durationMs: number; at: number }[];
}

export const PULL_PROGRESS_POLL_MS = 1000;
export const PULL_PROGRESS_LOG_MS = 5000;
export const RECENT_PULLS_KEPT = 50;
const LIST_TIMEOUT_MS = 2000;

export interface PullProgressTrackerOptions {
  /** The runtime's ingests in progress (ContentStatusClient.listStatuses). */
  listStatuses: (options: { timeoutMs: number; signal?: AbortSignal }) => Promise<IngestStatus[]>;
  clock: Clock;
  pollIntervalMs?: number;
  logIntervalMs?: number;
  recentKept?: number;
}

interface IngestSeen {
  pullId: number;
  offset: number;
  total: number;
}

interface PullInFlight {
  image: string;
  startedAt: number;
  /** Bytes of this pull's ingests that completed (left the content store). */
  committedBytes: number;
  lastLoggedAt: number;
}

type RecentPull = ReturnType<PullsView['recent']>[number];

/** gRPC's UNIMPLEMENTED: the runtime has no content API (not containerd). */
const GRPC_UNIMPLEMENTED = 12;

export class PullProgressTracker implements PullObserver, PullsView {
  private readonly pulls = new Map<number, PullInFlight>();
  private readonly ingests = new Map<string, IngestSeen>();
  private readonly finished: RecentPull[] = [];
  private nextId = 1;
  private timer: TimerHandle | undefined;
  private polling = false;
  /** Set when the runtime has no content API: nothing more is asked of it. */
  private unsupported = false;
  private stopped = false;
  private readonly stopController = new AbortController();
  private readonly pollIntervalMs: number;
  private readonly logIntervalMs: number;
  private readonly recentKept: number;

  constructor(private readonly opts: PullProgressTrackerOptions) {
    // A floor on the period: the content store is never polled in a tight loop.
    this.pollIntervalMs = Math.max(100, opts.pollIntervalMs ?? PULL_PROGRESS_POLL_MS);
    this.logIntervalMs = opts.logIntervalMs ?? PULL_PROGRESS_LOG_MS;
    this.recentKept = Math.max(1, opts.recentKept ?? RECENT_PULLS_KEPT);
  }

  pullStarted(image: string): { finished(outcome: PullOutcome): void } {
    const id = this.nextId++;
    const now = this.opts.clock.now();
    this.pulls.set(id, { image, startedAt: now, committedBytes: 0, lastLoggedAt: now });
    this.schedule(0);
    let done = false;
    return {
      finished: (outcome) => {
        if (done) return;
        done = true;
        this.pullFinished(id, outcome);
      },
    };
  }

  inFlight(): ReturnType<PullsView['inFlight']> {
    return [...this.pulls].map(([id, p]) => {
      const { done, total } = this.bytesOf(id, p);
      return { image: p.image, bytesDone: done, bytesTotal: total, startedAt: p.startedAt };
    });
  }

  /** Newest first. */
  recent(): ReturnType<PullsView['recent']> {
    return [...this.finished].reverse();
  }

  stop(): void {
    this.stopped = true;
    this.stopController.abort(new Error('pull progress tracker stopped'));
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private bytesOf(id: number, p: PullInFlight): { done: number; total: number } {
    let done = p.committedBytes;
    let total = p.committedBytes;
    for (const s of this.ingests.values()) {
      if (s.pullId !== id) continue;
      done += s.offset;
      total += Math.max(s.total, s.offset);
    }
    return { done, total };
  }

  private pullFinished(id: number, outcome: PullOutcome): void {
    const p = this.pulls.get(id);
    if (!p) return;
    const { done } = this.bytesOf(id, p);
    this.pulls.delete(id);
    for (const [ref, s] of this.ingests) if (s.pullId === id) this.ingests.delete(ref);
    if (this.pulls.size === 0) this.unschedule();
    if (!outcome.ok) return;
    const now = this.opts.clock.now();
    // The image's size as the runtime reports it; the bytes seen downloading when it reports none.
    this.finished.push({
      image: p.image,
      bytes: outcome.sizeBytes > 0 ? outcome.sizeBytes : done,
      durationMs: now - p.startedAt,
      at: now,
    });
    if (this.finished.length > this.recentKept)
      this.finished.splice(0, this.finished.length - this.recentKept);
  }

  private unschedule(): void {
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Polls only while pulls run, never two polls at once. */
  private schedule(delayMs: number): void {
    if (this.stopped || this.unsupported || this.polling || this.timer || this.pulls.size === 0) return;
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = undefined;
      this.polling = true;
      void this.poll().finally(() => {
        this.polling = false;
        this.schedule(this.pollIntervalMs);
      });
    }, delayMs);
  }

  /** One read of the content store. */
  private async poll(): Promise<void> {
    let statuses: IngestStatus[];
    try {
      statuses = await this.opts.listStatuses({
        timeoutMs: LIST_TIMEOUT_MS,
        signal: this.stopController.signal,
      });
    } catch (err) {
      if ((err as { code?: unknown }).code === GRPC_UNIMPLEMENTED) {
        this.unsupported = true;
        log.v(2, 'The container runtime has no content API: image pull progress is not shown', {
          err: errorMessage(err),
        });
      } else log.v(4, 'Cannot read the image pulls in progress', { err: errorMessage(err) });
      return;
    }
    this.observe(statuses);
  }

  /** Folds one snapshot of the content store into the pulls in flight; logs their progress when due. */
  observe(statuses: readonly IngestStatus[]): void {
    const live = new Set<string>();
    for (const s of statuses) {
      live.add(s.ref);
      const seen = this.ingests.get(s.ref);
      if (seen) {
        seen.offset = s.offset;
        seen.total = s.total;
        continue;
      }
      // A partial download left by an earlier, failed pull, not written to since ours began.
      if (s.updatedAtMs > 0 && s.updatedAtMs < this.oldestStartMs()) continue;
      const owner = this.ownerOf(s.startedAtMs);
      if (owner !== undefined) this.ingests.set(s.ref, { pullId: owner, offset: s.offset, total: s.total });
    }
    // An ingest that left the store was committed (or abandoned): its blob counts as done.
    for (const [ref, s] of this.ingests) {
      if (live.has(ref)) continue;
      const p = this.pulls.get(s.pullId);
      if (p) p.committedBytes += Math.max(s.total, s.offset);
      this.ingests.delete(ref);
    }
    // Every few seconds at --v=2; every poll at --v=4.
    const now = this.opts.clock.now();
    for (const [id, p] of this.pulls) {
      const due = now - p.lastLoggedAt >= this.logIntervalMs;
      if (due) p.lastLoggedAt = now;
      const { done, total } = this.bytesOf(id, p);
      log.v(due ? 2 : 4, 'Image pull progress', {
        image: p.image,
        bytesDone: done,
        bytesTotal: total,
        elapsed: `${((now - p.startedAt) / 1000).toFixed(1)}s`,
      });
    }
  }

  private oldestStartMs(): number {
    let oldest = Infinity;
    for (const p of this.pulls.values()) oldest = Math.min(oldest, p.startedAt);
    return oldest;
  }

  /** The pull in flight that started last before startedAtMs; the newest one when none did (clock skew). */
  private ownerOf(startedAtMs: number): number | undefined {
    let best: number | undefined;
    let bestAt = -Infinity;
    let newest: number | undefined;
    let newestAt = -Infinity;
    for (const [id, p] of this.pulls) {
      if (p.startedAt >= newestAt) {
        newest = id;
        newestAt = p.startedAt;
      }
      if (p.startedAt <= startedAtMs && p.startedAt >= bestAt) {
        best = id;
        bestAt = p.startedAt;
      }
    }
    return best ?? newest;
  }
}
