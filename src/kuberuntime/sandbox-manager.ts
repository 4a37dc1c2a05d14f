/**
 * A pod's sandboxes (upstream: kuberuntime_sandbox.go): made with the pod's RuntimeClass handler,
 * stopped when the pod is killed, and read back for its status.
 */
import { mkdir } from 'node:fs/promises';
import type { Pod } from '../api/core-v1.js';
import { isNotFound } from '../cri/errors.js';
import type { PodSandboxConfig, PodSandboxStatus, RuntimeService } from '../cri/types.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { determinePodSandboxIPs } from './container-status.js';
import { formatPod } from './format.js';
import { KUBERNETES_POD_UID_LABEL } from './labels.js';
import type { RuntimeClassLookup } from './runtime-manager-options.js';
import type { KubePodStatus, RunningPod, SyncResult } from './types.js';
import { BoundedMap } from '../lib/bounded-map.js';

const log = logger('kuberuntime');

export type SandboxCreation = { ok: true; id: string } | { ok: false; message: string; error: string };

/** A sandbox as a listing shows it: enough to order them and to tell whether its status changed. */
export interface ListedSandbox {
  readonly id: string;
  readonly createdAt: number;
  readonly ready: boolean;
}

export interface PodSandboxManagerOptions {
  readonly runtimeService: RuntimeService;
  /** The RuntimeClass handler for RunPodSandbox ('' is the runtime's default). */
  readonly runtimeHandler: string;
  /** Resolves pods' runtimeClassName to a handler (cluster mode); without it every sandbox gets runtimeHandler. */
  readonly runtimeClassManager: RuntimeClassLookup | undefined;
}

// Statuses read after RunPodSandbox and not yet taken by a relist: as many as pods may start at once
// and then some; past it the oldest go (they are read again, as without this).
const MAX_NEW_SANDBOX_STATUSES = 512;

export class PodSandboxManager {
  /**
   * Each new sandbox's status as read right after RunPodSandbox, until the PLEG's first reading of
   * the pod takes it: the PLEG would otherwise read the same sandbox, in the same state, again a
   * moment later (one PodSandboxStatus per pod start of the three upstream makes).
   */
  private readonly newSandboxStatuses = new BoundedMap<string, PodSandboxStatus>(MAX_NEW_SANDBOX_STATUSES);

  constructor(private readonly opts: PodSandboxManagerOptions) {}

  /** The status of a sandbox just made (for its IPs), kept for the pod's next status reading. */
  async newSandboxStatus(podSandboxId: string, signal: AbortSignal | undefined): Promise<PodSandboxStatus> {
    const { status } = await this.opts.runtimeService.podSandboxStatus(podSandboxId, false, { signal });
    this.newSandboxStatuses.set(podSandboxId, status);
    return status;
  }

  async createPodSandbox(
    pod: Pod,
    makeConfig: () => PodSandboxConfig,
    signal: AbortSignal | undefined,
  ): Promise<SandboxCreation> {
    let config: PodSandboxConfig;
    try {
      config = makeConfig();
    } catch (err) {
      log.error('Failed to generate sandbox config for pod', { pod: formatPod(pod), err: errorMessage(err) });
      return {
        ok: false,
        message: `Failed to generate sandbox config for pod "${formatPod(pod)}": ${errorMessage(err)}`,
        error: errorMessage(err),
      };
    }
    try {
      await mkdir(config.logDirectory, { recursive: true, mode: 0o755 });
    } catch (err) {
      log.error('Failed to create log directory for pod', { pod: formatPod(pod), err: errorMessage(err) });
      return {
        ok: false,
        message: `Failed to create log directory for pod "${formatPod(pod)}": ${errorMessage(err)}`,
        error: errorMessage(err),
      };
    }
    let runtimeHandler = this.opts.runtimeHandler;
    if (this.opts.runtimeClassManager) {
      try {
        runtimeHandler = this.opts.runtimeClassManager.lookupRuntimeHandler(pod.spec.runtimeClassName);
      } catch (err) {
        return {
          ok: false,
          message: `Failed to create sandbox for pod "${formatPod(pod)}": ${errorMessage(err)}`,
          error: errorMessage(err),
        };
      }
      if (runtimeHandler !== '')
        log.v(2, 'Running pod with runtime handler', { pod: formatPod(pod), runtimeHandler });
    }
    try {
      const id = await this.opts.runtimeService.runPodSandbox(config, runtimeHandler, { signal });
      log.v(4, 'Created PodSandbox for pod', { podSandboxID: id, pod: formatPod(pod) });
      return { ok: true, id };
    } catch (err) {
      log.error('Failed to create sandbox for pod', { pod: formatPod(pod), err: errorMessage(err) });
      return {
        ok: false,
        message: `Failed to create sandbox for pod "${formatPod(pod)}": ${errorMessage(err)}`,
        error: errorMessage(err),
      };
    }
  }

  /** Stops each of the pod's sandboxes; one already gone is not a failure. Removal is left to GC. */
  async stopPodSandboxes(runningPod: RunningPod): Promise<SyncResult> {
    const sandboxResult: SyncResult = { action: 'KillPodSandbox', target: runningPod.uid };
    for (const s of runningPod.sandboxes) {
      this.newSandboxStatuses.delete(s.id);
      try {
        await this.opts.runtimeService.stopPodSandbox(s.id);
      } catch (err) {
        if (isNotFound(err)) continue;
        sandboxResult.reason = 'KillPodSandboxError';
        sandboxResult.message = errorMessage(err);
        log.error('Failed to stop sandbox', { podSandboxID: s.id, err: sandboxResult.message });
      }
    }
    return sandboxResult;
  }

  /** The pod's sandboxes, newest first: those the relist listed when given, else listed now. */
  async listPodSandboxes(uid: string, listed: RunningPod | undefined): Promise<ListedSandbox[]> {
    const sandboxes = listed
      ? listed.sandboxes.map((s) => ({ id: s.id, createdAt: s.createdAtNs, ready: s.state === 'ready' }))
      : (
          await this.opts.runtimeService.listPodSandbox({
            labelSelector: { [KUBERNETES_POD_UID_LABEL]: uid },
          })
        ).map((s) => ({ id: s.id, createdAt: s.createdAt, ready: s.state === 'SANDBOX_READY' }));
    sandboxes.sort((a, b) => b.createdAt - a.createdAt);
    return sandboxes;
  }

  /** The sandboxes' statuses, and the pod's IPs: the newest sandbox's while it is ready. */
  async getSandboxStatuses(
    sandboxes: readonly ListedSandbox[],
    previous: KubePodStatus | undefined,
  ): Promise<{ statuses: PodSandboxStatus[]; ips: string[] }> {
    const sandboxStatuses = await Promise.all(
      sandboxes.map(async (s) => {
        // A sandbox's status changes only with its state, which the listing shows: a sandbox
        // read before in the same state is not read again (its IPs are set when it is made).
        const fresh = this.newSandboxStatuses.get(s.id);
        if (fresh) this.newSandboxStatuses.delete(s.id);
        const known = previous?.sandboxStatuses.find((p) => p.id === s.id) ?? fresh;
        if (known && (known.state === 'SANDBOX_READY') === s.ready) return known;
        try {
          return (await this.opts.runtimeService.podSandboxStatus(s.id, false)).status;
        } catch (err) {
          // Removed between the list and this call: as if it had not been listed.
          if (isNotFound(err)) return undefined;
          throw err;
        }
      }),
    );
    const statuses = sandboxStatuses.filter((s) => s !== undefined);
    // Only the newest sandbox's IPs are the pod's.
    const newest = sandboxStatuses[0];
    const ips = newest?.state === 'SANDBOX_READY' ? determinePodSandboxIPs(newest) : [];
    return { statuses, ips };
  }
}
