/**
 * PodConfig merges the pod sources (file, http, api) into the one ordered stream of changes the sync
 * loop consumes (upstream pkg/kubelet/config/config.go, incremental mode).
 *
 * Each source sends SourceUpdates on its channel: SET (its whole state; file and http always send
 * SET) or ADD/UPDATE/DELETE/REMOVE (increments, as an API watch would). PodConfig keeps each
 * source's pods by UID, compares, and emits for that source, in this order:
 *   REMOVE (gone), ADD (new), UPDATE (spec, labels, annotations or deletion fields changed),
 *   DELETE (the change is a graceful deletion: deletionTimestamp set), RECONCILE (status only).
 * On a source's first SET that yields none of ADD/UPDATE/DELETE, an empty ADD is emitted so the
 * loop learns the source is ready. Annotations the kubelet owns (config.source, config.seen,
 * config.mirror) never count as changes; config.seen is stamped when a pod is first added.
 */
import { podFullName, type Pod } from '../api/core-v1.js';
import { realClock, type Clock } from '../lib/clock.js';
import { logger, type Logger } from '../lib/log.js';
import { copyPlainData, plainDataEqual } from '../lib/plain-data.js';
import {
  CONFIG_MIRROR_ANNOTATION,
  CONFIG_SEEN_ANNOTATION,
  CONFIG_SOURCE_ANNOTATION,
} from '../api/pod-source.js';
import type { PodOperation, PodSource, PodUpdate } from './types.js';

/**
 * What a source sends: its whole state (SET) or an increment. A source does not change a pod object
 * once sent; sending the very same object again says the pod is unchanged (the file source resends
 * the pods of unchanged files), so PodConfig neither copies nor compares it again.
 */
export interface SourceUpdate {
  op: 'SET' | Exclude<PodOperation, 'RECONCILE'>;
  pods: Pod[];
}

/** A source's way in: call it with each update, in order. */
export type SourceChannel = (update: SourceUpdate) => void;

export type PodUpdateListener = (update: PodUpdate) => void;

export interface PodConfigOptions {
  clock?: Clock;
  log?: Logger;
  /**
   * Told of every pod the API source delivers, changed or not, when it arrives (upstream's
   * startupSLIObserver, for the pod startup latency SLI): mirror pods too, file and URL pods not.
   */
  observePodOnWatch?: (pod: Pod, whenMs: number) => void;
}

const LOCAL_ANNOTATIONS = [CONFIG_SOURCE_ANNOTATION, CONFIG_MIRROR_ANNOTATION, CONFIG_SEEN_ANNOTATION];

export class PodConfig {
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly observePodOnWatch: ((pod: Pod, whenMs: number) => void) | undefined;
  private readonly pods = new Map<PodSource, Map<string, Pod>>();
  // Per source: each pod object it sent → the copy PodConfig stored for it.
  private readonly received = new Map<PodSource, WeakMap<Pod, Pod>>();
  private readonly registered = new Set<PodSource>();
  private readonly sourcesSeen = new Set<PodSource>();
  private readonly listeners = new Set<PodUpdateListener>();
  // Ends the iterators from updates() on stop().
  private readonly endListeners = new Set<() => void>();
  private stopped = false;

  constructor(options: PodConfigOptions = {}) {
    this.clock = options.clock ?? realClock;
    this.log = options.log ?? logger('config');
    this.observePodOnWatch = options.observePodOnWatch;
  }

  /**
   * Registers source (it becomes one that seenAllSources waits for) and returns its channel.
   * Calling it twice for one source returns an equivalent channel.
   */
  channel(source: PodSource): SourceChannel {
    this.registered.add(source);
    return (update) => this.merge(source, update);
  }

  /**
   * Upstream's SeenAllSources: true when every registered source has sent at least one SET and,
   * if `seenByConsumer` is given, the consumer has also received something from each of them
   * (the sync loop passes the sources it has seen updates from).
   */
  seenAllSources(seenByConsumer?: ReadonlySet<PodSource>): boolean {
    for (const source of this.registered) {
      if (!this.sourcesSeen.has(source)) return false;
      if (seenByConsumer && !seenByConsumer.has(source)) return false;
    }
    return true;
  }

  /** The sources that have sent at least one SET. */
  seenSources(): ReadonlySet<PodSource> {
    return this.sourcesSeen;
  }

  /**
   * Adds a listener for the merged stream; updates arrive synchronously and in order.
   * Returns a function that removes it.
   */
  onUpdate(listener: PodUpdateListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The merged stream as an async iterator, buffered so no update is lost while the consumer is
   * busy. Ends on stop() or when signal aborts.
   */
  updates(signal?: AbortSignal): AsyncIterableIterator<PodUpdate> {
    const queue: PodUpdate[] = [];
    let wake: (() => void) | undefined;
    let done = this.stopped || signal?.aborted === true;
    const finish = () => {
      done = true;
      remove();
      this.endListeners.delete(finish);
      signal?.removeEventListener('abort', finish);
      wake?.();
    };
    const remove = this.onUpdate((u) => {
      queue.push(u);
      wake?.();
    });
    this.endListeners.add(finish);
    signal?.addEventListener('abort', finish, { once: true });
    if (done) finish();
    const iterator: AsyncIterableIterator<PodUpdate> = {
      next: async () => {
        while (queue.length === 0 && !done) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
        const value = queue.shift();
        return value ? { value, done: false } : { value: undefined, done: true };
      },
      return: async () => {
        finish();
        queue.length = 0;
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** Every pod of every source (copies). */
  mergedState(): Pod[] {
    const out: Pod[] = [];
    for (const sourcePods of this.pods.values())
      for (const p of sourcePods.values()) out.push(copyPlainData(p));
    return out;
  }

  /** Stops delivering: later source updates are dropped, iterators end. */
  stop(): void {
    this.stopped = true;
    this.listeners.clear();
    for (const end of [...this.endListeners]) end();
  }

  private merge(source: PodSource, update: SourceUpdate): void {
    if (this.stopped) return;
    const firstSet = update.op === 'SET' && !this.sourcesSeen.has(source);
    const adds: Pod[] = [];
    const updates: Pod[] = [];
    const deletes: Pod[] = [];
    const removes: Pod[] = [];
    const reconciles: Pod[] = [];
    const old = this.pods.get(source) ?? new Map<string, Pod>();
    let received = this.received.get(source);
    if (!received) {
      received = new WeakMap();
      this.received.set(source, received);
    }
    const stored = received;

    const observe = source === 'api' ? this.observePodOnWatch : undefined;
    const nowMs = observe ? this.clock.now() : 0;
    const absorb = (incoming: Pod[], into: Map<string, Pod>) => {
      for (const sent of this.filterDuplicateNames(incoming, source)) {
        observe?.(sent, nowMs);
        const uid = sent.metadata.uid ?? '';
        const existing = old.get(uid);
        if (existing && stored.get(sent) === existing) {
          // The object this source sent before, unchanged since: nothing to copy or compare.
          into.set(uid, existing);
          continue;
        }
        if (existing) {
          into.set(uid, existing);
          stored.set(sent, existing);
          const outcome = checkAndUpdatePod(existing, sent, source);
          if (outcome === 'update') updates.push(existing);
          else if (outcome === 'delete') deletes.push(existing);
          else if (outcome === 'reconcile') reconciles.push(existing);
          continue;
        }
        const ref = sourceCopy(sent, source);
        ref.metadata.annotations![CONFIG_SEEN_ANNOTATION] = rfc3339Nano(this.clock.now());
        into.set(uid, ref);
        stored.set(sent, ref);
        adds.push(ref);
      }
    };

    let next = old;
    const incoming = update.pods;
    switch (update.op) {
      case 'ADD':
      case 'UPDATE':
      case 'DELETE':
        absorb(incoming, old);
        break;
      case 'REMOVE':
        for (const p of incoming) {
          const uid = p.metadata.uid ?? '';
          const existing = old.get(uid);
          if (existing) {
            old.delete(uid);
            removes.push(existing);
          }
        }
        break;
      case 'SET': {
        this.sourcesSeen.add(source);
        next = new Map<string, Pod>();
        absorb(incoming, next);
        for (const [uid, existing] of old) if (!next.has(uid)) removes.push(existing);
        break;
      }
    }
    this.pods.set(source, next);

    const emit = (op: PodOperation, pods: Pod[]) =>
      this.deliver({ op, source, pods: pods.map((p) => copyPlainData(p)) });
    if (removes.length > 0) emit('REMOVE', removes);
    if (adds.length > 0) emit('ADD', adds);
    if (updates.length > 0) emit('UPDATE', updates);
    if (deletes.length > 0) emit('DELETE', deletes);
    if (firstSet && adds.length === 0 && updates.length === 0 && deletes.length === 0) emit('ADD', []);
    if (reconciles.length > 0) emit('RECONCILE', reconciles);
  }

  private deliver(update: PodUpdate): void {
    this.log.v(4, 'Pod update', { op: update.op, source: update.source, pods: update.pods.map(podFullName) });
    for (const listener of [...this.listeners]) {
      try {
        listener(update);
      } catch (err) {
        this.log.error('Pod update listener failed', { err, op: update.op, source: update.source });
      }
    }
  }

  // Two pods of one source with the same name and namespace: the first wins (upstream).
  private filterDuplicateNames(pods: Pod[], source: PodSource): Pod[] {
    const names = new Set<string>();
    const out: Pod[] = [];
    pods.forEach((pod, index) => {
      const name = podFullName(pod);
      if (names.has(name)) {
        this.log.info('Pod failed validation due to duplicate pod name, ignoring', {
          index,
          pod: name,
          source,
        });
        return;
      }
      names.add(name);
      out.push(pod);
    });
    return out;
  }
}

type CheckOutcome = 'update' | 'delete' | 'reconcile' | 'none';

/**
 * Sources hand over their objects; PodConfig keeps copies, so that later mutation on either side
 * cannot leak. The copy carries the config.source annotation.
 */
function sourceCopy(sent: Pod, source: PodSource): Pod {
  const ref = copyPlainData(sent);
  ref.metadata.annotations = { ...ref.metadata.annotations, [CONFIG_SOURCE_ANNOTATION]: source };
  return ref;
}

/**
 * Folds what the source sent into existing (which stays the stored object) and says what kind of
 * change it was. Compared before anything is copied: most updates from the API are a status the
 * kubelet itself wrote, and copying the whole pod (managedFields and all) for them was most of what
 * PodConfig allocated.
 */
function checkAndUpdatePod(existing: Pod, sent: Pod, source: PodSource): CheckOutcome {
  if (!podsDifferSemantically(existing, sent)) {
    if (!plainDataEqual(existing.status, sent.status)) {
      // The kubelet owns pod status; a source that changes only status asks for a reconcile.
      existing.status = copyPlainData(sent.status);
      return 'reconcile';
    }
    return 'none';
  }
  const ref = sourceCopy(sent, source);
  existing.spec = ref.spec;
  existing.metadata.labels = ref.metadata.labels;
  existing.metadata.deletionTimestamp = ref.metadata.deletionTimestamp;
  existing.metadata.deletionGracePeriodSeconds = ref.metadata.deletionGracePeriodSeconds;
  existing.status = ref.status;
  const annotations: Record<string, string> = { ...ref.metadata.annotations };
  for (const key of LOCAL_ANNOTATIONS) {
    const kept = existing.metadata.annotations?.[key];
    if (kept !== undefined) annotations[key] = kept;
  }
  existing.metadata.annotations = annotations;
  return ref.metadata.deletionTimestamp ? 'delete' : 'update';
}

// The cheap fields first: the spec, the largest, is compared only when all else is the same.
function podsDifferSemantically(existing: Pod, ref: Pod): boolean {
  return !(
    existing.metadata.deletionTimestamp === ref.metadata.deletionTimestamp &&
    existing.metadata.deletionGracePeriodSeconds === ref.metadata.deletionGracePeriodSeconds &&
    plainDataEqual(existing.metadata.labels, ref.metadata.labels) &&
    annotationsEqualIgnoringLocal(existing.metadata.annotations, ref.metadata.annotations) &&
    plainDataEqual(existing.spec, ref.spec)
  );
}

function annotationsEqualIgnoringLocal(
  a: Record<string, string> | undefined,
  b: Record<string, string> | undefined,
): boolean {
  const strip = (m: Record<string, string> | undefined) =>
    Object.entries(m ?? {}).filter(([k]) => !LOCAL_ANNOTATIONS.includes(k));
  const x = strip(a);
  const y = new Map(strip(b));
  return x.length === y.size && x.every(([k, v]) => y.get(k) === v);
}

/** Go's time.RFC3339Nano in UTC: fractional seconds without trailing zeros. */
export function rfc3339Nano(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2024-01-02T03:04:05.600Z
  return iso.replace(/\.(\d*?)0*Z$/, (_m, digits: string) => (digits ? `.${digits}Z` : 'Z'));
}
