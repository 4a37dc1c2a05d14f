/**
 * What the probe workers last concluded, per container (upstream: pkg/kubelet/prober/results). One
 * ResultsManager per probe kind; each keeps the verdict by container ID and tells its listeners when
 * a verdict changes (upstream's Updates() channel), so the sync loop can act at once.
 *
 * Two adapters read these for the layers that need them: the kuberuntime's computePodActions (liveness
 * and startup verdicts by runtime container ID) and generateAPIPodStatus (readiness and startup as
 * booleans by `containerd://<id>`).
 */
import type {
  ProbeResults as RuntimeProbeResults,
  ProbeVerdict,
} from '../kuberuntime/compute-pod-actions.js';
import { logger } from '../lib/log.js';
import type { ProbeResults as StatusProbeResults } from '../status/generate-api-pod-status.js';

const log = logger('prober');

/** Upstream results.Result: Success, Failure or Unknown. */
export type ProbeResult = ProbeVerdict;

/** A verdict that changed (upstream results.Update). */
export interface ResultUpdate {
  /** `containerd://<id>`, as pod status shows it. */
  containerID: string;
  result: ProbeResult;
  podUid: string;
}

/** The runtime's own ID from `<type>://<id>`; an ID without a type is taken as is. */
export function runtimeIdOf(containerID: string): string {
  const i = containerID.indexOf('://');
  return i < 0 ? containerID : containerID.slice(i + 3);
}

export class ResultsManager {
  private readonly cache = new Map<string, ProbeResult>();
  /** runtime ID → `<type>://<id>`, for readers that hold only the runtime's ID. */
  private readonly byRuntimeId = new Map<string, string>();
  /** `<type>://<id>` → result is Success; kept in step with cache so status generation reads it without copying. */
  private readonly succeeded = new Map<string, boolean>();
  private readonly listeners = new Set<(update: ResultUpdate) => void>();

  /** undefined while the container has no result (never probed, or its worker has gone). */
  get(containerID: string): ProbeResult | undefined {
    return this.cache.get(containerID);
  }

  /** The same, by the runtime's own container ID (what computePodActions holds). */
  getByRuntimeId(id: string): ProbeResult | undefined {
    const containerID = this.byRuntimeId.get(id);
    return containerID === undefined ? undefined : this.cache.get(containerID);
  }

  /** Records a result; listeners hear of it only when it differs from the one recorded before. */
  set(containerID: string, result: ProbeResult, podUid: string): void {
    if (this.cache.get(containerID) === result) return;
    this.cache.set(containerID, result);
    this.byRuntimeId.set(runtimeIdOf(containerID), containerID);
    this.succeeded.set(containerID, result === 'Success');
    const update: ResultUpdate = { containerID, result, podUid };
    for (const listener of this.listeners) {
      try {
        listener(update);
      } catch (err) {
        // One listener's failure must not stop the others hearing of the change, nor the worker.
        log.error('Probe result listener failed', { containerID, err });
      }
    }
  }

  remove(containerID: string): void {
    this.cache.delete(containerID);
    this.succeeded.delete(containerID);
    const id = runtimeIdOf(containerID);
    if (this.byRuntimeId.get(id) === containerID) this.byRuntimeId.delete(id);
  }

  /** Calls fn with each change; returns the function that stops it. */
  onUpdate(fn: (update: ResultUpdate) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** A live view: `<type>://<id>` → whether the last result was Success. */
  get successView(): ReadonlyMap<string, boolean> {
    return this.succeeded;
  }

  get size(): number {
    return this.cache.size;
  }
}

/** The liveness and startup verdicts as computePodActions reads them (by runtime container ID). */
export function runtimeProbeResults(liveness: ResultsManager, startup: ResultsManager): RuntimeProbeResults {
  return {
    liveness: (id) => liveness.getByRuntimeId(id),
    startup: (id) => startup.getByRuntimeId(id),
  };
}

/** Readiness and startup as generateAPIPodStatus reads them: live maps of `<type>://<id>` → passed. */
export function statusProbeResults(readiness: ResultsManager, startup: ResultsManager): StatusProbeResults {
  return { readiness: readiness.successView, startup: startup.successView };
}
