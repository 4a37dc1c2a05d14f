/**
 * One probe of one container, run every periodSeconds (upstream: pkg/kubelet/prober/worker.go). The
 * worker follows the container through restarts: a new container ID starts over from the kind's
 * initial verdict (readiness Failure, liveness Success, startup Unknown). It waits initialDelaySeconds
 * after the container started, holds liveness and readiness back until a startup probe has passed,
 * applies successThreshold and failureThreshold, and after a liveness or startup failure stops
 * probing until the kubelet has replaced the container.
 *
 * Ticks follow Go's time.Ticker on the injected Clock: they fall on a fixed grid from the first
 * probe; a probe is never started while the previous one runs, and a tick missed during a slow probe
 * runs once right after it (later missed ticks are dropped).
 */
import type { Container, Pod, Probe } from '../api/core-v1.js';
import type { KubeContainerState } from '../kuberuntime/types.js';
import type { Clock, TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { ProberMetrics, ProbeCounterLabels } from './metrics.js';
import { podRef } from '../kuberuntime/format.js';
import { probeSeconds, probeSpecFor, probeTypeName, type ProbeRunner, type ProbeType } from './prober.js';
import { runtimeIdOf, type ProbeResult, type ResultsManager } from './results-manager.js';

const log = logger('prober');

/** The API server's defaults, for specs that did not pass through defaulting. */
export const DEFAULT_PERIOD_SECONDS = 10;
export const DEFAULT_SUCCESS_THRESHOLD = 1;
export const DEFAULT_FAILURE_THRESHOLD = 3;

/** What the worker needs to know of its container, from the pod cache or the status manager. */
export interface ProbeContainerStatus {
  /** `containerd://<id>`; '' while the container has none yet. */
  containerId: string;
  state: KubeContainerState;
  /** When the container started running, ms since the epoch; 0 when it has not. */
  startedAtMs: number;
  /** The pod's IP, where probes without a host go; '' or absent when it has none. */
  podIP?: string;
}

/** The newest container of that name in the pod, or undefined when there is none yet. */
export type GetContainerStatus = (podUid: string, containerName: string) => ProbeContainerStatus | undefined;

/** What a worker is given by its manager. */
export interface WorkerContext {
  clock: Clock;
  /** In [0, 1): the first probe's jitter. */
  random: () => number;
  prober: ProbeRunner;
  getContainerStatus: GetContainerStatus;
  /** Where this kind's verdicts go. */
  results: ResultsManager;
  /** Whether the container has started, as upstream's status shows it: its startup probe passed, or it has none. */
  isStarted(podUid: string, containerName: string, containerId: string): boolean;
  metrics: ProberMetrics;
  /** When the manager was made: only a kubelet that has just started spreads its first probes. */
  managerStartMs: number;
  /** Called once when the worker has stopped, so the manager forgets it. */
  onStopped(worker: ProbeWorker): void;
}

export type WorkerState = 'NEW' | 'RUNNING' | 'STOPPED';

export interface NormalizedProbe {
  initialDelaySeconds: number;
  periodSeconds: number;
  successThreshold: number;
  failureThreshold: number;
}

/** The probe's timing with defaults filled in; liveness and startup succeed on the first success (the API insists on 1). */
export function normalizeProbe(spec: Probe, probeType: ProbeType): NormalizedProbe {
  return {
    initialDelaySeconds: Math.max(Number(spec.initialDelaySeconds) || 0, 0),
    periodSeconds: probeSeconds(spec.periodSeconds, DEFAULT_PERIOD_SECONDS),
    successThreshold:
      probeType === 'readiness' ? probeSeconds(spec.successThreshold, DEFAULT_SUCCESS_THRESHOLD) : 1,
    failureThreshold: probeSeconds(spec.failureThreshold, DEFAULT_FAILURE_THRESHOLD),
  };
}

function initialValue(probeType: ProbeType): ProbeResult {
  switch (probeType) {
    case 'readiness':
      return 'Failure';
    case 'liveness':
      return 'Success';
    case 'startup':
      return 'Unknown';
  }
}

function metricResult(result: ProbeResult): ProbeCounterLabels['result'] {
  return result === 'Success' ? 'successful' : result === 'Failure' ? 'failed' : 'unknown';
}

export class ProbeWorker {
  readonly podUid: string;
  readonly spec: NormalizedProbe;
  private state: WorkerState = 'NEW';
  /** The container this worker last saw (`containerd://<id>`). */
  private containerId = '';
  private lastResult: ProbeResult | undefined;
  /** How many probes in a row gave lastResult. */
  private resultRun = 0;
  /** Set after a liveness or startup failure: nothing more to do until a new container appears. */
  private onHold = false;
  private timer: TimerHandle | undefined;
  private inFlight: AbortController | undefined;
  private nextTickMs = 0;
  private readonly metricLabels: Omit<ProbeCounterLabels, 'result'>;

  constructor(
    private readonly ctx: WorkerContext,
    readonly probeType: ProbeType,
    readonly pod: Pod,
    readonly container: Container,
  ) {
    const spec = probeSpecFor(container, probeType);
    if (!spec) throw new Error(`container ${container.name} has no ${probeType} probe`);
    this.spec = normalizeProbe(spec, probeType);
    this.podUid = pod.metadata.uid ?? '';
    this.metricLabels = {
      probe_type: probeTypeName(probeType),
      container: container.name,
      pod: pod.metadata.name ?? '',
      namespace: pod.metadata.namespace ?? '',
      pod_uid: this.podUid,
    };
  }

  private get periodMs(): number {
    return this.spec.periodSeconds * 1000;
  }

  /** Starts the loop; the first probe waits a random part of a period if the kubelet has just started. */
  start(): void {
    if (this.state !== 'NEW') return;
    this.state = 'RUNNING';
    // After a kubelet restart every pod's workers start at once: spread their first probes over a period.
    const sinceStartMs = this.ctx.clock.now() - this.ctx.managerStartMs;
    const jitterMs = this.periodMs > sinceStartMs ? Math.floor(this.ctx.random() * this.periodMs) : 0;
    this.timer = this.ctx.clock.setTimeout(() => {
      this.timer = undefined;
      this.nextTickMs = this.ctx.clock.now() + this.periodMs;
      void this.runOnce();
    }, jitterMs);
  }

  /** Stops the loop and an in-flight probe, drops this worker's verdict and metrics. Safe to call twice. */
  stop(): void {
    if (this.state === 'STOPPED') return;
    this.state = 'STOPPED';
    if (this.timer) this.ctx.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.inFlight?.abort(new Error('probe worker stopped'));
    this.inFlight = undefined;
    if (this.containerId !== '') this.ctx.results.remove(this.containerId);
    this.ctx.metrics.deleteWorker(this.metricLabels);
    this.ctx.onStopped(this);
  }

  get status(): {
    state: WorkerState;
    containerId: string;
    lastResult: ProbeResult | undefined;
    resultRun: number;
    onHold: boolean;
    probing: boolean;
  } {
    return {
      state: this.state,
      containerId: this.containerId,
      lastResult: this.lastResult,
      resultRun: this.resultRun,
      onHold: this.onHold,
      probing: this.inFlight !== undefined,
    };
  }

  private async runOnce(): Promise<void> {
    if (this.state !== 'RUNNING') return;
    const controller = new AbortController();
    this.inFlight = controller;
    let keepGoing = true;
    try {
      keepGoing = await this.doProbe(controller.signal);
    } catch (err) {
      // A bug in one probe must not end the worker (upstream recovers from panics here too).
      log.error('Probe worker step failed', { ...this.logKv(), err: errorMessage(err) });
    }
    if (this.inFlight === controller) this.inFlight = undefined;
    if (this.state !== 'RUNNING') return;
    if (!keepGoing) return this.stop();
    this.scheduleNext();
  }

  private scheduleNext(): void {
    const now = this.ctx.clock.now();
    if (this.nextTickMs <= now) {
      // A tick fell while the probe ran: like Go's ticker, keep one and drop the rest.
      const missed = Math.floor((now - this.nextTickMs) / this.periodMs) + 1;
      this.nextTickMs += missed * this.periodMs;
      void this.runOnce();
      return;
    }
    const due = this.nextTickMs;
    this.nextTickMs += this.periodMs;
    this.timer = this.ctx.clock.setTimeout(() => {
      this.timer = undefined;
      void this.runOnce();
    }, due - now);
  }

  /** One step of the loop (upstream doProbe); false when the worker should stop for good. */
  private async doProbe(signal: AbortSignal): Promise<boolean> {
    const status = this.ctx.getContainerStatus(this.podUid, this.container.name);
    if (!status || status.containerId === '') {
      // Not created yet, or already removed.
      log.v(3, 'Probe target container not found', this.logKv());
      return true;
    }

    if (status.containerId !== this.containerId) {
      if (this.containerId !== '') this.ctx.results.remove(this.containerId);
      this.containerId = status.containerId;
      // A new container (a restart) starts over: nothing of the old one's run carries over.
      this.lastResult = undefined;
      this.resultRun = 0;
      this.onHold = false;
      this.ctx.results.set(this.containerId, initialValue(this.probeType), this.podUid);
    }

    if (this.onHold) return true;

    if (status.state !== 'running') {
      log.v(3, 'Non-running container probed', this.logKv());
      // A container created but not started yet is not a failure: judging it would make the next
      // sync kill it the moment it starts.
      if (status.state === 'created') return true;
      this.ctx.results.set(this.containerId, 'Failure', this.podUid);
      // Stop for good when the container has exited and will not be restarted.
      return status.state !== 'exited' || this.isRestartable();
    }

    // A pod being deleted is past judging: let it go quietly.
    if (this.pod.metadata.deletionTimestamp && this.probeType !== 'readiness') {
      log.v(3, 'Pod deletion requested, setting probe result to success', this.logKv());
      this.ctx.results.set(this.containerId, 'Success', this.podUid);
      return false;
    }

    // Whole seconds, as upstream counts them.
    const runningSeconds = Math.floor((this.ctx.clock.now() - status.startedAtMs) / 1000);
    if (runningSeconds < this.spec.initialDelaySeconds) return true;

    const started = this.ctx.isStarted(this.podUid, this.container.name, this.containerId);
    // The startup probe's work is done once the container has started; the others wait for that.
    if (started ? this.probeType === 'startup' : this.probeType !== 'startup') return true;

    const containerId = this.containerId;
    const { result, error } = await this.ctx.prober.probe(
      this.probeType,
      this.pod,
      this.container,
      { containerId: runtimeIdOf(containerId), podIP: status.podIP ?? '' },
      signal,
    );
    // Stopped, or a newer container took over, while the probe ran: its verdict is about nothing now.
    if (this.state !== 'RUNNING' || containerId !== this.containerId) return this.state === 'RUNNING';
    if (error) return true; // The probe could not run: throw the result away, as upstream.

    this.ctx.metrics.inc({ ...this.metricLabels, result: metricResult(result) });
    if (this.lastResult === result) {
      this.resultRun++;
    } else {
      this.lastResult = result;
      this.resultRun = 1;
    }
    if (
      (result === 'Failure' && this.resultRun < this.spec.failureThreshold) ||
      (result === 'Success' && this.resultRun < this.spec.successThreshold)
    ) {
      return true; // Below its threshold: the verdict stands.
    }

    this.ctx.results.set(this.containerId, result, this.podUid);
    if (this.probeType !== 'readiness' && result === 'Failure') {
      // The kubelet will replace the container; probing it while it is stopped would only add noise.
      this.onHold = true;
      this.resultRun = 0;
    }
    return true;
  }

  /** Whether an exited container will run again (a sidecar always does). */
  private isRestartable(): boolean {
    if (this.container.restartPolicy === 'Always') return true;
    return (this.pod.spec.restartPolicy ?? 'Always') !== 'Never';
  }

  private logKv(): Record<string, unknown> {
    return {
      probeType: probeTypeName(this.probeType),
      pod: podRef(this.pod),
      podUID: this.podUid,
      containerName: this.container.name,
    };
  }
}
