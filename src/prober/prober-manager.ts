/**
 * The probe manager (upstream: pkg/kubelet/prober.Manager): one worker per container probe of each
 * pod the kubelet runs, and the verdicts they reach.
 *
 * How the kubelet uses it:
 * - addPod(pod) when a pod is admitted, removePod(pod) once its containers are stopped,
 *   stopLivenessAndStartup(pod) when it starts terminating, cleanupPods(desired) in housekeeping,
 *   stop() at shutdown;
 * - onUpdate(fn): each changed verdict, so the sync loop can sync the pod at once (a liveness
 *   failure restarts the container; readiness and startup changes go to the status manager);
 * - runtimeProbeResults for the runtime manager (computePodActions kills what failed liveness or
 *   startup), statusProbeResults for generateAPIPodStatus (ready and started).
 */
import type { Container, Pod } from '../api/core-v1.js';
import type { ProbeResults as RuntimeProbeResults } from '../kuberuntime/compute-pod-actions.js';
import type { EventRecorder } from '../kuberuntime/event-recorder.js';
import { realClock, type Clock } from '../lib/clock.js';
import { logger } from '../lib/log.js';
import type { ProbeResults as StatusProbeResults } from '../status/generate-api-pod-status.js';
import type { CommandRunner } from './exec-probe.js';
import { ProberMetrics, type ProbeMetricsSnapshot } from './metrics.js';
import { podRef } from '../kuberuntime/format.js';
import { probeSpecFor, Prober, type ProbeRunner, type ProbeType } from './prober.js';
import {
  ResultsManager,
  runtimeProbeResults,
  statusProbeResults,
  type ResultUpdate,
} from './results-manager.js';
import { ProbeWorker, type GetContainerStatus, type WorkerContext } from './worker.js';

const log = logger('prober');

const PROBE_TYPES: readonly ProbeType[] = ['startup', 'readiness', 'liveness'];

export interface ProberManagerOptions {
  /** CRI ExecSync, for exec probes. */
  runtimeService: CommandRunner;
  /** The newest container of that name in the pod (see podCacheContainerStatus for the usual source). */
  getContainerStatus: GetContainerStatus;
  /** The Kubernetes version this kubelet implements (`v1.30.0`): the probes' User-Agent is `kube-probe/1.30`. */
  kubernetesVersion: string;
  clock?: Clock;
  /** Unhealthy and ProbeWarning events; logged at --v=1 when absent. */
  recorder?: EventRecorder;
  /** In [0, 1), for the first probe's jitter; default Math.random. */
  random?: () => number;
  /** Runs the probes; default a Prober over runtimeService. Tests script one. */
  prober?: ProbeRunner;
}

/** A changed verdict, with the kind of probe that reached it. */
export interface ProbeUpdate extends ResultUpdate {
  probeType: ProbeType;
}

/** The containers that are probed: the app containers and the sidecars (restartable init containers). */
function probedContainers(pod: Pod): Container[] {
  const sidecars = (pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always');
  return [...pod.spec.containers, ...sidecars];
}

function workerKey(podUid: string, containerName: string, probeType: ProbeType): string {
  return `${podUid}/${containerName}/${probeType}`;
}

export class ProberManager {
  readonly livenessResults = new ResultsManager();
  readonly readinessResults = new ResultsManager();
  readonly startupResults = new ResultsManager();
  /** For the runtime manager's probeResults option. */
  readonly runtimeProbeResults: RuntimeProbeResults;
  /** For generateAPIPodStatus's probeResults input. */
  readonly statusProbeResults: StatusProbeResults;
  private readonly workers = new Map<string, ProbeWorker>();
  private readonly metrics = new ProberMetrics();
  private readonly ctx: Omit<WorkerContext, 'results'>;
  private stopped = false;

  constructor(opts: ProberManagerOptions) {
    const clock = opts.clock ?? realClock;
    const prober =
      opts.prober ??
      new Prober({
        runtimeService: opts.runtimeService,
        kubernetesVersion: opts.kubernetesVersion,
        clock,
        recorder: opts.recorder,
      });
    this.runtimeProbeResults = runtimeProbeResults(this.livenessResults, this.startupResults);
    this.statusProbeResults = statusProbeResults(this.readinessResults, this.startupResults);
    this.ctx = {
      clock,
      random: opts.random ?? Math.random,
      prober,
      getContainerStatus: opts.getContainerStatus,
      isStarted: (podUid, containerName, containerId) => this.isStarted(podUid, containerName, containerId),
      metrics: this.metrics,
      managerStartMs: clock.now(),
      onStopped: (w) => {
        const key = workerKey(w.podUid, w.container.name, w.probeType);
        if (this.workers.get(key) === w) this.workers.delete(key);
      },
    };
  }

  private resultsFor(probeType: ProbeType): ResultsManager {
    switch (probeType) {
      case 'liveness':
        return this.livenessResults;
      case 'readiness':
        return this.readinessResults;
      case 'startup':
        return this.startupResults;
    }
  }

  /** Starts a worker for each probe of the pod's containers that has none yet. */
  addPod(pod: Pod): void {
    if (this.stopped) return;
    const uid = pod.metadata.uid ?? '';
    for (const container of probedContainers(pod)) {
      for (const probeType of PROBE_TYPES) {
        if (!probeSpecFor(container, probeType)) continue;
        const key = workerKey(uid, container.name, probeType);
        if (this.workers.has(key)) {
          log.v(4, 'Probe already exists for container', {
            probeType,
            pod: podRef(pod),
            containerName: container.name,
          });
          continue;
        }
        const worker = new ProbeWorker(
          { ...this.ctx, results: this.resultsFor(probeType) },
          probeType,
          pod,
          container,
        );
        this.workers.set(key, worker);
        worker.start();
      }
    }
  }

  /** Stops the probes that could kill a container, for a pod that is being terminated. */
  stopLivenessAndStartup(pod: Pod): void {
    this.stopWorkers(pod, ['liveness', 'startup']);
  }

  /** Stops every probe of the pod and forgets its verdicts. */
  removePod(pod: Pod): void {
    this.stopWorkers(pod, PROBE_TYPES);
  }

  /** Stops the probes of every pod not in desiredUids. */
  cleanupPods(desiredUids: Iterable<string>): void {
    const desired = new Set(desiredUids);
    for (const worker of [...this.workers.values()]) if (!desired.has(worker.podUid)) worker.stop();
  }

  /** Stops everything, for shutdown. */
  stop(): void {
    this.stopped = true;
    for (const worker of [...this.workers.values()]) worker.stop();
  }

  /** Calls fn with each changed verdict of any kind; returns the function that stops it. */
  onUpdate(fn: (update: ProbeUpdate) => void): () => void {
    const offs = PROBE_TYPES.map((probeType) =>
      this.resultsFor(probeType).onUpdate((u) => fn({ ...u, probeType })),
    );
    return () => offs.forEach((off) => off());
  }

  /**
   * Whether the container has started, as upstream's UpdatePodStatus decides it: its startup verdict
   * when it has one, else whether it has no startup probe left to pass.
   */
  isStarted(podUid: string, containerName: string, containerId: string): boolean {
    const result = this.startupResults.get(containerId);
    if (result !== undefined) return result === 'Success';
    return !this.workers.has(workerKey(podUid, containerName, 'startup'));
  }

  /** prober_probe_total as plain numbers, for the metrics endpoint. */
  metricsSnapshot(): ProbeMetricsSnapshot {
    return this.metrics.snapshot();
  }

  workerCount(): number {
    return this.workers.size;
  }

  getWorker(podUid: string, containerName: string, probeType: ProbeType): ProbeWorker | undefined {
    return this.workers.get(workerKey(podUid, containerName, probeType));
  }

  /** By UID rather than by the spec's names, so a pod object older or newer than the one added still stops them all. */
  private stopWorkers(pod: Pod, types: readonly ProbeType[]): void {
    const uid = pod.metadata.uid ?? '';
    for (const worker of [...this.workers.values()]) {
      if (worker.podUid === uid && types.includes(worker.probeType)) worker.stop();
    }
  }
}
