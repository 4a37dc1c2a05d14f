/**
 * The status manager's API half (upstream: status_manager.go syncBatch/syncPod): each new status the
 * LocalStatusManager versions is sent to the API server as a strategic merge patch of pods/status.
 *
 * For each pod, newest version first, one at a time per pod:
 * - GET the pod. Gone: nothing to do. Another UID under the name: the pod was recreated, this status is
 *   dropped; unless the API pod is a mirror pod, which is where a static pod's status goes.
 * - Merge with the API's status (conditions the kubelet does not own are kept; a terminal phase waits
 *   until no container can run) and never move the pod out of a terminal phase it has in the API.
 * - PATCH the difference, in upstream's exact form (statusutil.PatchPodStatus: a two-way strategic
 *   merge patch carrying metadata.uid as a precondition); nothing is sent when nothing differs.
 * - A pod being deleted (deletionTimestamp) whose termination has finished is then deleted for good,
 *   with grace 0 and its UID as precondition (upstream: canBeDeleted). Mirror pods never are.
 * Unlike upstream, the GET is skipped when the watch's copy of the pod still has the status the API
 * server answered the last GET or PATCH with and the new status makes no patch against it: the
 * versions the kubelet forces as a pod's deletion starts and ends, with nothing changed, cost at most
 * the DELETE (watchCopyAsAnswered).
 * Failures are retried per pod with back-off; every 10 s a reconcile re-sends any status that differs
 * from the API's copy (as the ApiSource sees it). Failing and recovering are logged once each.
 */
import type { DeepReadonly } from '../lib/deep-readonly.js';
import { plainDataEqual } from '../lib/plain-data.js';
import type { ContainerStatus, ContainerState, Pod, PodCondition, PodStatus } from '../api/core-v1.js';
import { isTerminalPhase } from '../api/core-v1.js';
import type { RestClient } from '../k8s/rest-client.js';
import {
  createTwoWayMergePatch,
  goJson,
  hasKeys,
  type Json,
  type JsonObject,
  type PatchSchema,
} from '../k8s/strategic-merge-patch.js';
import { realClock, type Clock, type TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger, type Logger } from '../lib/log.js';
import {
  CONTAINERS_READY,
  POD_COMPLETED,
  POD_FAILED,
  POD_READY,
  isConditionOwnedByKubelet,
} from './pod-conditions.js';
import { rfc3339Seconds } from '../api/rfc3339-seconds.js';
import type { PodStatusSink, VersionedPodStatus } from './status-manager.js';
import { isMirrorPod } from '../api/pod-source.js';
import { loopPeriodMs } from '../lib/loop-period.js';

/** Upstream's syncPeriod: how often every status is compared with the API's copy. */
export const STATUS_RECONCILE_PERIOD_MS = 10_000;
const RETRY_INITIAL_MS = 500;
const RETRY_MAX_MS = 30_000;
/** A status for a pod the API does not have (a static pod without its mirror yet) is kept this long. */
const MISSING_POD_TTL_MS = 5 * 60_000;
/** Re-reads after a conflicting PATCH before waiting for the next retry. */
const MAX_CONFLICT_REREADS = 3;

/** The calls the sink makes: RestClient satisfies it. */
export type PodStatusClient = Pick<RestClient, 'get' | 'patch' | 'delete'>;

export interface ApiStatusSinkOptions {
  client: PodStatusClient;
  clock?: Clock;
  log?: Logger;
  /** The API's copy of the pods bound to this node (ApiSource.getPod); the reconcile compares with it. */
  getApiPod?: (namespace: string, name: string) => Pod | undefined;
  /**
   * Whether the pod may still have running containers (upstream: podDeletionSafety); a terminal phase
   * is not reported until it cannot. Default: until the status says the pod has finished.
   */
  podCouldHaveRunningContainers?: (uid: string) => boolean;
  reconcilePeriodMs?: number;
  /** Told of the pod the API server answered after each status patch that changed something. */
  onStatusPatched?: (pod: Pod) => void;
  /** Pods synced at once (each sync is a GET and at most a PATCH and a DELETE). */
  concurrency?: number;
}

interface Entry {
  status: VersionedPodStatus;
  /** The version the API server has, after our last successful sync. */
  syncedVersion: number;
  attempts: number;
  retryTimer: TimerHandle | undefined;
  /** When the API last answered NotFound for this pod, if it did since the last success. */
  missingSinceMs: number | undefined;
  /** The pod as the API server answered this sink's last GET or PATCH of it. */
  lastAnswer: Pod | undefined;
}

export class ApiStatusSink implements PodStatusSink {
  private readonly client: PodStatusClient;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly entries = new Map<string, Entry>();
  private readonly queue = new Set<string>();
  private readonly inFlight = new Set<string>();
  private readonly stopController = new AbortController();
  private readonly idleWaiters: (() => void)[] = [];
  private reconcileTimer: TimerHandle | undefined;
  private failing = false;
  private stopped = false;

  constructor(private readonly opts: ApiStatusSinkOptions) {
    this.client = opts.client;
    this.clock = opts.clock ?? realClock;
    this.log = opts.log ?? logger('status_manager');
  }

  /** Starts the periodic reconcile. Status changes are sent as they come, started or not. */
  start(): void {
    if (this.reconcileTimer || this.stopped) return;
    const period = loopPeriodMs(
      'status reconcile',
      this.opts.reconcilePeriodMs ?? STATUS_RECONCILE_PERIOD_MS,
    );
    const tick = () => {
      this.reconcile();
      if (!this.stopped) this.reconcileTimer = this.clock.setTimeout(tick, period);
    };
    this.reconcileTimer = this.clock.setTimeout(tick, period);
  }

  /** Stops: in-flight calls are aborted and awaited; later changes are ignored. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reconcileTimer) this.clock.clearTimeout(this.reconcileTimer);
    for (const e of this.entries.values()) if (e.retryTimer) this.clock.clearTimeout(e.retryTimer);
    this.queue.clear();
    this.stopController.abort(new Error('status sink stopped'));
    await this.idle();
  }

  podStatusChanged(update: VersionedPodStatus): void {
    if (this.stopped) return;
    const e = this.entries.get(update.uid);
    if (e) {
      if (update.version < e.status.version) return;
      e.status = update;
    } else {
      this.entries.set(update.uid, {
        status: update,
        syncedVersion: 0,
        attempts: 0,
        retryTimer: undefined,
        missingSinceMs: undefined,
        lastAnswer: undefined,
      });
    }
    this.enqueue(update.uid);
  }

  /** Forgets the statuses of pods the kubelet no longer has (call beside StatusManager.removeOrphanedStatuses). */
  removeOrphanedStatuses(desiredUids: Iterable<string>): void {
    const desired = new Set(desiredUids);
    for (const uid of [...this.entries.keys()]) if (!desired.has(uid)) this.forget(uid);
  }

  /** Resolves when nothing is queued or in flight (tests, shutdown). */
  idle(): Promise<void> {
    if (this.queue.size === 0 && this.inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** The version the API server holds for uid, for tests and the status latency measure. */
  syncedVersion(uid: string): number | undefined {
    return this.entries.get(uid)?.syncedVersion;
  }

  // ---- scheduling ------------------------------------------------------------------------------------

  private enqueue(uid: string): void {
    if (this.stopped) return;
    this.queue.add(uid);
    this.pump();
  }

  private pump(): void {
    const limit = this.opts.concurrency ?? 4;
    for (const uid of this.queue) {
      if (this.inFlight.size >= limit) break;
      if (this.inFlight.has(uid)) continue;
      this.queue.delete(uid);
      this.inFlight.add(uid);
      void this.syncOne(uid).finally(() => {
        this.inFlight.delete(uid);
        this.pump();
        if (this.queue.size === 0 && this.inFlight.size === 0)
          for (const w of this.idleWaiters.splice(0)) w();
      });
    }
  }

  private async syncOne(uid: string): Promise<void> {
    const e = this.entries.get(uid);
    if (!e) return;
    const version = e.status.version;
    this.log.v(5, 'Sync pod status', {
      podUID: uid,
      pod: `${e.status.podNamespace}/${e.status.podName}`,
      version,
      syncedVersion: e.syncedVersion,
    });
    try {
      await this.syncPod(uid, e);
      if (this.entries.get(uid) === e) e.attempts = 0;
      if (this.failing) {
        this.failing = false;
        this.log.info('Pod status updates to the API server are going through again');
      }
      // A newer status came while this one was on its way.
      if (this.entries.get(uid) === e && e.status.version > version && e.syncedVersion < e.status.version) {
        this.enqueue(uid);
      }
    } catch (err) {
      if (this.stopped) return;
      const kv = { pod: `${e.status.podNamespace}/${e.status.podName}`, podUID: uid, err: errorMessage(err) };
      if (!this.failing) {
        this.failing = true;
        this.log.warn('Failed to update status for pod; retrying with back-off', kv);
      } else {
        this.log.v(4, 'Failed to update status for pod', kv);
      }
      this.retryLater(uid, e);
    }
  }

  private retryLater(uid: string, e: Entry): void {
    const base = Math.min(RETRY_INITIAL_MS * 2 ** Math.min(e.attempts, 30), RETRY_MAX_MS);
    e.attempts++;
    if (e.retryTimer) this.clock.clearTimeout(e.retryTimer);
    e.retryTimer = this.clock.setTimeout(
      () => {
        e.retryTimer = undefined;
        if (this.entries.get(uid) === e) this.enqueue(uid);
      },
      Math.round(base * (0.5 + Math.random() * 0.5)),
    );
  }

  private forget(uid: string): void {
    const e = this.entries.get(uid);
    if (e?.retryTimer) this.clock.clearTimeout(e.retryTimer);
    this.entries.delete(uid);
    this.queue.delete(uid);
  }

  /** upstream syncBatch(all=true): what the API lacks or has differently is sent again. */
  private reconcile(): void {
    const now = this.clock.now();
    for (const [uid, e] of this.entries) {
      if (this.inFlight.has(uid) || this.queue.has(uid) || e.retryTimer) continue;
      const { podNamespace, podName } = e.status;
      if (e.missingSinceMs !== undefined) {
        if (now - e.missingSinceMs > MISSING_POD_TTL_MS && e.status.podIsFinished) {
          this.forget(uid);
          continue;
        }
        // A static pod's mirror may have been made since; without a local copy, ask again.
        if (!this.opts.getApiPod || this.opts.getApiPod(podNamespace, podName)) this.enqueue(uid);
        continue;
      }
      if (e.syncedVersion < e.status.version) {
        this.enqueue(uid);
        continue;
      }
      const apiPod = this.opts.getApiPod?.(podNamespace, podName);
      if (!apiPod) continue;
      if (!sameTarget(apiPod, uid)) continue;
      const merged = this.mergedFor(apiPod, e.status);
      const deletable = this.canBeDeleted(apiPod, e.status);
      if (deletable || !podStatusPatchIsEmpty(apiPod.status ?? {}, merged)) {
        this.log.v(3, 'Pod status is inconsistent with the API server, a reconciliation is triggered', {
          pod: `${podNamespace}/${podName}`,
        });
        this.enqueue(uid);
      }
    }
  }

  // ---- one pod (upstream: syncPod) -------------------------------------------------------------------

  private async syncPod(uid: string, e: Entry): Promise<void> {
    const signal = this.stopController.signal;
    const versioned = e.status;
    const { podNamespace: namespace, podName: name } = versioned;
    const ref = { resource: 'pods', namespace, name };
    const known = this.watchCopyAsAnswered(uid, e);
    if (known && podStatusPatchIsEmpty(known.status ?? {}, this.mergedFor(known, versioned))) {
      this.log.v(3, 'Status for pod is up-to-date', {
        pod: `${namespace}/${name}`,
        statusVersion: versioned.version,
      });
      e.syncedVersion = Math.max(e.syncedVersion, versioned.version);
      await this.deleteIfDone(uid, known, versioned, signal);
      return;
    }
    for (let reread = 0; ; reread++) {
      const got = await this.client.get<Pod>(ref, { signal });
      if (!got.ok) {
        if (got.reason === 'NotFound') {
          this.log.v(3, 'Pod does not exist on the server', { podUID: uid, pod: `${namespace}/${name}` });
          e.missingSinceMs ??= this.clock.now();
          e.lastAnswer = undefined;
          return;
        }
        throw new Error(`get pod: ${got.status.message ?? got.reason}`);
      }
      e.missingSinceMs = undefined;
      let pod = got.object;
      e.lastAnswer = pod;
      if (!sameTarget(pod, uid)) {
        this.log.v(2, 'Pod was deleted and then recreated, skipping status update', {
          pod: `${namespace}/${name}`,
          oldPodUID: uid,
          podUID: pod.metadata.uid,
        });
        this.forget(uid);
        return;
      }
      const podUID = pod.metadata.uid ?? '';
      const merged = this.mergedFor(pod, versioned);
      const { patch, unchanged } = preparePodStatusPatch(podUID, pod.status ?? {}, merged);
      if (unchanged) {
        this.log.v(3, 'Status for pod is up-to-date', {
          pod: `${namespace}/${name}`,
          statusVersion: versioned.version,
        });
      } else {
        this.log.v(3, 'Patch status for pod', { pod: `${namespace}/${name}`, podUID: uid, patch });
        const patched = await this.client.patch<Pod>({ ...ref, subresource: 'status' }, 'strategic', patch, {
          signal,
        });
        if (!patched.ok) {
          if (patched.reason === 'NotFound') {
            e.missingSinceMs ??= this.clock.now();
            e.lastAnswer = undefined;
            return;
          }
          // The pod changed under us (or was replaced): read it again and redo the patch.
          if (patched.reason === 'Conflict' && reread < MAX_CONFLICT_REREADS) continue;
          throw new Error(`patch pod status: ${patched.status.message ?? patched.reason}`);
        }
        pod = patched.object;
        e.lastAnswer = pod;
        this.opts.onStatusPatched?.(pod);
      }
      e.syncedVersion = Math.max(e.syncedVersion, versioned.version);
      await this.deleteIfDone(uid, pod, versioned, signal);
      return;
    }
  }

  /**
   * The watch's copy of the pod, when its status is the one the API server answered this sink's last
   * GET or PATCH with: then a status that makes no patch against it needs no GET either. Upstream
   * GETs the pod for every new status version; most of those that follow a patch are the kubelet
   * forcing a version when the pod's deletion starts or ends (SetPodStatus with a deletionTimestamp,
   * TerminatePod) with nothing changed. A copy whose status differs is either behind the last answer
   * (the watch has not brought it yet) or someone else's write: both go the GET way, as upstream.
   * A write by someone else that the watch has not brought yet is the reconcile's, as it is for one
   * made just after upstream's GET.
   */
  private watchCopyAsAnswered(uid: string, e: Entry): Pod | undefined {
    const answer = e.lastAnswer;
    if (!answer || !this.opts.getApiPod) return undefined;
    const copy = this.opts.getApiPod(e.status.podNamespace, e.status.podName);
    if (!copy || copy.metadata.uid !== answer.metadata.uid || !sameTarget(copy, uid)) return undefined;
    return plainDataEqual(copy.status, answer.status) ? copy : undefined;
  }

  /** upstream: a pod whose termination has finished is deleted for good once the API shows it terminal. */
  private async deleteIfDone(
    uid: string,
    pod: Pod,
    versioned: VersionedPodStatus,
    signal: AbortSignal,
  ): Promise<void> {
    if (!this.canBeDeleted(pod, versioned)) return;
    const { podNamespace: namespace, podName: name } = versioned;
    const deleted = await this.client.delete(
      { resource: 'pods', namespace, name },
      { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata.uid ?? '' }, signal },
    );
    if (!deleted.ok && deleted.reason !== 'NotFound' && deleted.reason !== 'Conflict') {
      throw new Error(`delete pod: ${deleted.status.message ?? deleted.reason}`);
    }
    // Conflict: the UID precondition failed, so the pod we would delete is no longer there.
    this.log.v(3, 'Pod fully terminated and removed from etcd', { pod: `${namespace}/${name}` });
    this.forget(uid);
  }

  private mergedFor(pod: Pod, versioned: VersionedPodStatus): DeepReadonly<PodStatus> {
    const couldRun = this.opts.podCouldHaveRunningContainers?.(versioned.uid) ?? !versioned.podIsFinished;
    let local: DeepReadonly<PodStatus> = versioned.status;
    const apiPhase = pod.status?.phase;
    if (isTerminalPhase(apiPhase) && local.phase !== apiPhase) {
      // Another writer (or an earlier kubelet) made the pod terminal: it stays so.
      this.log.v(2, 'Pod is terminal in the API server: keeping its phase', {
        pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
        phase: apiPhase,
        localPhase: local.phase,
      });
      const kept: TopLevelMutable = { ...local, phase: apiPhase };
      setOrDelete(kept, 'reason', pod.status?.reason);
      setOrDelete(kept, 'message', pod.status?.message);
      local = kept;
    }
    return mergePodStatus(pod.status ?? {}, local, couldRun, this.clock.now());
  }

  private canBeDeleted(pod: Pod, versioned: VersionedPodStatus): boolean {
    if (!pod.metadata.deletionTimestamp || isMirrorPod(pod)) return false;
    if (!isTerminalPhase(pod.status?.phase)) {
      this.log.v(3, 'Delaying pod deletion as the phase is non-terminal', {
        phase: pod.status?.phase,
        localPhase: versioned.status.phase,
        pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
      });
      return false;
    }
    return versioned.podIsFinished;
  }
}

/** A status whose own fields may be set; what they hold is shared with the statuses it came from. */
type TopLevelMutable = { -readonly [K in keyof DeepReadonly<PodStatus>]: DeepReadonly<PodStatus>[K] };

function setOrDelete(status: TopLevelMutable, key: 'reason' | 'message', value: string | undefined): void {
  if (value) status[key] = value;
  else delete status[key];
}

/** The API pod is the one uid's status is for: the same pod, or the mirror of a static pod of that name. */
function sameTarget(apiPod: Pod, uid: string): boolean {
  return apiPod.metadata.uid === uid || isMirrorPod(apiPod);
}

/**
 * upstream mergePodStatus: conditions the kubelet does not own come from the API's status; a phase
 * turning terminal is held back while containers could still run; and a terminal phase never shows
 * Ready or ContainersReady True. The result shares what it does not change with its inputs (it is
 * only compared and sent, once per status sync and per pod each reconcile): nothing is deep-copied.
 */
export function mergePodStatus(
  oldStatus: DeepReadonly<PodStatus>,
  newStatus: DeepReadonly<PodStatus>,
  couldHaveRunningContainers: boolean,
  nowMs: number,
): DeepReadonly<PodStatus> {
  const merged: TopLevelMutable = { ...newStatus };
  const conditions: DeepReadonly<PodCondition>[] = (oldStatus.conditions ?? []).filter(
    (c) => !isConditionOwnedByKubelet(c.type),
  );
  const transitioningToTerminal = !isTerminalPhase(oldStatus.phase) && isTerminalPhase(newStatus.phase);
  for (const c of newStatus.conditions ?? []) {
    if (isConditionOwnedByKubelet(c.type)) conditions.push(c);
    else if (c.type === 'DisruptionTarget' && transitioningToTerminal && !couldHaveRunningContainers) {
      const old = oldStatus.conditions?.find((o) => o.type === c.type);
      const next = !old || old.status !== c.status ? { ...c, lastTransitionTime: rfc3339Seconds(nowMs) } : c;
      const i = conditions.findIndex((o) => o.type === c.type);
      if (i >= 0) conditions[i] = next;
      else conditions.push(next);
    }
  }
  merged.conditions = conditions;
  // Fields others own stay as the API has them (upstream copies resourceClaimStatuses; the rest the
  // kubelet never writes).
  for (const key of Object.keys(oldStatus) as (keyof PodStatus)[]) {
    if (!KUBELET_STATUS_FIELDS.has(key)) (merged as Record<string, unknown>)[key] = oldStatus[key];
  }
  if (transitioningToTerminal && couldHaveRunningContainers) {
    if (oldStatus.phase) merged.phase = oldStatus.phase;
    else delete merged.phase;
    setOrDelete(merged, 'reason', oldStatus.reason);
    setOrDelete(merged, 'message', oldStatus.message);
  }
  if (isTerminalPhase(merged.phase)) {
    const readyTrue = (type: string) => conditions.some((c) => c.type === type && c.status === 'True');
    if (readyTrue(POD_READY) || readyTrue(CONTAINERS_READY)) {
      const reason = merged.phase === 'Failed' ? POD_FAILED : POD_COMPLETED;
      for (const type of [CONTAINERS_READY, POD_READY]) {
        updatePodCondition(conditions, { type, status: 'False', reason }, nowMs);
      }
    }
  }
  return merged;
}

/** The PodStatus fields the kubelet writes; any other field in the API's copy is left as it is. */
const KUBELET_STATUS_FIELDS = new Set<string>([
  'phase',
  'conditions',
  'message',
  'reason',
  'hostIP',
  'hostIPs',
  'podIP',
  'podIPs',
  'startTime',
  'initContainerStatuses',
  'containerStatuses',
  'ephemeralContainerStatuses',
  'qosClass',
]);

/** podutil.UpdatePodCondition: replaces the condition, keeping its transition time if its status holds. */
function updatePodCondition(
  conditions: DeepReadonly<PodCondition>[],
  condition: PodCondition,
  nowMs: number,
): void {
  const i = conditions.findIndex((c) => c.type === condition.type);
  const next: PodCondition = { ...condition, lastProbeTime: null, lastTransitionTime: rfc3339Seconds(nowMs) };
  if (i < 0) {
    conditions.push(next);
    return;
  }
  const old = conditions[i]!;
  if (old.status === next.status && old.lastTransitionTime) next.lastTransitionTime = old.lastTransitionTime;
  conditions[i] = next;
}

// ---- statusutil.PatchPodStatus ------------------------------------------------------------------------

/** The patch tags of v1.PodStatus (conditions by type, the IP lists by ip, claim statuses by name). */
const POD_STATUS_PATCH_SCHEMA: PatchSchema = {
  conditions: { mergeKey: 'type' },
  hostIPs: { mergeKey: 'ip' },
  podIPs: { mergeKey: 'ip' },
  resourceClaimStatuses: { mergeKey: 'name' },
};

/**
 * The body upstream's statusutil.PatchPodStatus sends to turn oldStatus into newStatus, as the exact
 * JSON it would write, and whether it would skip the PATCH (nothing but the UID precondition).
 */
export function preparePodStatusPatch(
  uid: string,
  oldStatus: DeepReadonly<PodStatus>,
  newStatus: DeepReadonly<PodStatus>,
): { patch: string; unchanged: boolean } {
  const diff = podStatusDiff(oldStatus, newStatus);
  const unchanged = !hasKeys(diff);
  const body: JsonObject = { metadata: { uid } };
  if (!unchanged) body.status = diff;
  return { patch: goJson(body), unchanged };
}

/**
 * preparePodStatusPatch's unchanged alone, without the patch's JSON: the checks that only ask
 * whether a patch is due (each new status against the watch's copy, every pod at each reconcile)
 * wrote and threw away the whole body, its keys sorted, every time.
 */
export function podStatusPatchIsEmpty(
  oldStatus: DeepReadonly<PodStatus>,
  newStatus: DeepReadonly<PodStatus>,
): boolean {
  return !hasKeys(podStatusDiff(oldStatus, newStatus));
}

function podStatusDiff(oldStatus: DeepReadonly<PodStatus>, newStatus: DeepReadonly<PodStatus>): JsonObject {
  return createTwoWayMergePatch(goPodStatus(oldStatus), goPodStatus(newStatus), POD_STATUS_PATCH_SCHEMA);
}

type Loose = Record<string, unknown>;

/** metav1.Time: null when unset. */
function goTime(v: unknown): Json {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** The fields of o not named in known, as they are (fields newer than this code pass through). */
function others(o: Loose, known: readonly string[]): JsonObject {
  const out: JsonObject = {};
  // for…in, not Object.entries: no array per field of every status and container status patched.
  for (const k in o) {
    const v = o[k];
    if (!known.includes(k) && v !== undefined) out[k] = v as Json;
  }
  return out;
}

function omitEmpty(out: JsonObject, key: string, v: unknown): void {
  if (v === undefined || v === null || v === '' || v === 0 || v === false) return;
  if (Array.isArray(v) && v.length === 0) return;
  out[key] = v as Json;
}

/** v1.PodStatus as Go's encoding/json writes it: omitempty fields dropped, zero times null, structs always there. */
export function goPodStatus(status: DeepReadonly<PodStatus>): JsonObject {
  const s = status as Loose;
  const out = others(s, [
    'phase',
    'conditions',
    'message',
    'reason',
    'nominatedNodeName',
    'hostIP',
    'hostIPs',
    'podIP',
    'podIPs',
    'startTime',
    'initContainerStatuses',
    'containerStatuses',
    'qosClass',
    'ephemeralContainerStatuses',
    'resize',
  ]);
  for (const k of [
    'phase',
    'message',
    'reason',
    'nominatedNodeName',
    'hostIP',
    'podIP',
    'qosClass',
    'resize',
  ])
    omitEmpty(out, k, s[k]);
  omitEmpty(out, 'conditions', status.conditions?.map(goCondition));
  omitEmpty(
    out,
    'hostIPs',
    status.hostIPs?.map((ip) => ({ ...(ip as unknown as JsonObject), ip: ip.ip ?? '' })),
  );
  omitEmpty(
    out,
    'podIPs',
    status.podIPs?.map((ip) => ({ ...(ip as unknown as JsonObject), ip: ip.ip ?? '' })),
  );
  if (typeof status.startTime === 'string' && status.startTime !== '') out.startTime = status.startTime;
  omitEmpty(out, 'initContainerStatuses', status.initContainerStatuses?.map(goContainerStatus));
  omitEmpty(out, 'containerStatuses', status.containerStatuses?.map(goContainerStatus));
  omitEmpty(
    out,
    'ephemeralContainerStatuses',
    (s.ephemeralContainerStatuses as ContainerStatus[] | undefined)?.map(goContainerStatus),
  );
  return out;
}

function goCondition(c: DeepReadonly<PodCondition>): JsonObject {
  const out: JsonObject = {
    ...others(c as unknown as Loose, [
      'type',
      'status',
      'lastProbeTime',
      'lastTransitionTime',
      'reason',
      'message',
    ]),
    type: c.type ?? '',
    status: c.status ?? '',
    lastProbeTime: goTime(c.lastProbeTime),
    lastTransitionTime: goTime(c.lastTransitionTime),
  };
  omitEmpty(out, 'reason', c.reason);
  omitEmpty(out, 'message', c.message);
  return out;
}

function goContainerStatus(c: DeepReadonly<ContainerStatus>): JsonObject {
  const known = [
    'name',
    'state',
    'lastState',
    'ready',
    'restartCount',
    'image',
    'imageID',
    'containerID',
    'started',
  ];
  const out: JsonObject = {
    ...others(c as unknown as Loose, known),
    name: c.name ?? '',
    state: goState(c.state),
    lastState: goState(c.lastState),
    ready: c.ready === true,
    restartCount: c.restartCount ?? 0,
    image: c.image ?? '',
    imageID: c.imageID ?? '',
  };
  omitEmpty(out, 'containerID', c.containerID);
  if (typeof c.started === 'boolean') out.started = c.started;
  return out;
}

function goState(state: DeepReadonly<ContainerState> | undefined): JsonObject {
  const out: JsonObject = {};
  if (!state) return out;
  if (state.waiting) {
    const w: JsonObject = {};
    omitEmpty(w, 'reason', state.waiting.reason);
    omitEmpty(w, 'message', state.waiting.message);
    out.waiting = w;
  }
  if (state.running) out.running = { startedAt: goTime(state.running.startedAt) };
  if (state.terminated) {
    const t = state.terminated;
    const o: JsonObject = { exitCode: t.exitCode ?? 0 };
    omitEmpty(o, 'signal', t.signal);
    omitEmpty(o, 'reason', t.reason);
    omitEmpty(o, 'message', t.message);
    o.startedAt = goTime(t.startedAt);
    o.finishedAt = goTime(t.finishedAt);
    omitEmpty(o, 'containerID', t.containerID);
    out.terminated = o;
  }
  return out;
}
