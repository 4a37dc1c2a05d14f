/**
 * What the kubelet knows of its container runtime's health (upstream: pkg/kubelet/runtime.go
 * runtimeState, fed by Kubelet.updateRuntimeUp every 5 s). The Ready condition reads its errors;
 * the sync loop may read them too, to hold pod work while the runtime is down.
 */
import type { RuntimeCondition, RuntimeStatus } from '../cri/types.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('kubelet');

/** Upstream's maxWaitForContainerRuntime: no successful status check for this long means the runtime is down. */
export const BASE_RUNTIME_SYNC_THRESHOLD_MS = 30_000;
/** How often upstream's updateRuntimeUp asks the runtime for its status. */
export const RUNTIME_UP_PERIOD_MS = 5_000;

/** A part of the kubelet whose failure makes the node not ready: PLEG, for one. */
export interface HealthCheck {
  name: string;
  check: () => { healthy: boolean; message?: string };
}

/** `NetworkReady=false reason:NetworkPluginNotReady message:...`, as Go prints a RuntimeCondition. */
export function formatRuntimeCondition(c: RuntimeCondition | undefined): string {
  if (!c) return '<nil>';
  return `${c.type}=${c.status} reason:${c.reason} message:${c.message}`;
}

export class RuntimeState {
  private lastBaseRuntimeSyncMs = 0;
  private networkError: string | undefined;
  private runtimeError: string | undefined;
  private readonly healthChecks: HealthCheck[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly baseRuntimeSyncThresholdMs = BASE_RUNTIME_SYNC_THRESHOLD_MS,
  ) {}

  addHealthCheck(check: HealthCheck): void {
    this.healthChecks.push(check);
  }

  setRuntimeSync(ms: number): void {
    this.lastBaseRuntimeSyncMs = ms;
  }

  setNetworkState(error: string | undefined): void {
    this.networkError = error;
  }

  setRuntimeState(error: string | undefined): void {
    this.runtimeError = error;
  }

  /** Upstream's runtimeErrors, flattened: each reason the runtime cannot run pods now. */
  runtimeErrors(): string[] {
    const errs: string[] = [];
    if (this.lastBaseRuntimeSyncMs === 0) {
      errs.push('container runtime status check may not have completed yet');
    } else if (this.lastBaseRuntimeSyncMs + this.baseRuntimeSyncThresholdMs <= this.clock.now()) {
      errs.push('container runtime is down');
    }
    for (const hc of this.healthChecks) {
      const h = hc.check();
      if (!h.healthy) errs.push(`${hc.name} is not healthy: ${h.message ?? ''}`);
    }
    if (this.runtimeError !== undefined) errs.push(this.runtimeError);
    return errs;
  }

  networkErrors(): string[] {
    return this.networkError !== undefined ? [this.networkError] : [];
  }

  /**
   * Upstream's updateRuntimeUp: asks the runtime for its conditions and records them. A failed call
   * changes nothing, so the runtime counts as down once the last success is old enough.
   */
  async updateRuntimeUp(
    status: (signal?: AbortSignal) => Promise<RuntimeStatus>,
    signal?: AbortSignal,
  ): Promise<void> {
    let s: RuntimeStatus;
    try {
      s = await status(signal);
    } catch (err) {
      log.error('Container runtime sanity check failed', { err: errorMessage(err) });
      return;
    }
    const networkReady = s.conditions.find((c) => c.type === 'NetworkReady');
    if (!networkReady?.status) {
      log.v(4, 'Container runtime network not ready', { networkReady: formatRuntimeCondition(networkReady) });
      this.setNetworkState(`container runtime network not ready: ${formatRuntimeCondition(networkReady)}`);
    } else {
      this.setNetworkState(undefined);
    }
    const runtimeReady = s.conditions.find((c) => c.type === 'RuntimeReady');
    if (!runtimeReady?.status) {
      log.error('Container runtime not ready', { runtimeReady: formatRuntimeCondition(runtimeReady) });
      this.setRuntimeState(`container runtime not ready: ${formatRuntimeCondition(runtimeReady)}`);
      return;
    }
    this.setRuntimeState(undefined);
    this.setRuntimeSync(this.clock.now());
  }
}
