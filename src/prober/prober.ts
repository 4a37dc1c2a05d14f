/**
 * Runs one probe of a container and turns what it found into a verdict (upstream: pkg/kubelet/prober,
 * prober.probe and runProbe): the handler (exec, httpGet, tcpSocket or grpc) is run, retried up to
 * three times only when it could not be run at all, and failures and warnings are reported as the
 * container's `Unhealthy` and `ProbeWarning` events with upstream's wording
 * (`Liveness probe failed: HTTP probe failed with statuscode: 500`).
 */
import type { Container, Pod, Probe } from '../api/core-v1.js';
import { newRequestForHTTPGetAction, resolveContainerPort } from '../api/http-get-action.js';
import { containerFieldPath, type EventRecorder } from '../kuberuntime/event-recorder.js';
import type { EventType } from '../api/core-v1.js';
import { formatPod, podRef } from '../kuberuntime/format.js';
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { doExecProbe, expandProbeCommand, type CommandRunner } from './exec-probe.js';
import { doGrpcProbe } from './grpc-probe.js';
import { doHttpProbe } from './http-probe.js';
import type { ProbeOutcome } from './probe-outcome.js';
import type { ProbeResult } from './results-manager.js';
import { doTcpProbe } from './tcp-probe.js';

const log = logger('prober');

export type ProbeType = 'liveness' | 'readiness' | 'startup';

/** How upstream's probeType prints, in messages and metric labels. */
export function probeTypeName(probeType: ProbeType): 'Liveness' | 'Readiness' | 'Startup' {
  switch (probeType) {
    case 'liveness':
      return 'Liveness';
    case 'readiness':
      return 'Readiness';
    case 'startup':
      return 'Startup';
  }
}

export function probeSpecFor(container: Container, probeType: ProbeType): Probe | undefined {
  switch (probeType) {
    case 'liveness':
      return container.livenessProbe;
    case 'readiness':
      return container.readinessProbe;
    case 'startup':
      return container.startupProbe;
  }
}

/** Upstream's event reasons for probes (pkg/kubelet/events). */
export const ProbeEventReason = {
  ContainerUnhealthy: 'Unhealthy',
  ContainerProbeWarning: 'ProbeWarning',
} as const;

/** A handler that could not be run is tried again at once, this many times in all. */
export const MAX_PROBE_RETRIES = 3;
/** The API server's default timeoutSeconds, for specs that were not defaulted. */
export const DEFAULT_TIMEOUT_SECONDS = 1;

/** The largest value of an int32 field. */
const MAX_PROBE_SECONDS = 2 ** 31 - 1;

/**
 * A probe's whole-seconds field (periodSeconds, timeoutSeconds, the thresholds) as the kubelet may use
 * it: 0 or absent is the API's default, and anything else is at least upstream's minimum of 1, so
 * that a spec that slipped past validation (-1, 0.001, NaN) can neither spin a worker nor time out at once.
 */
export function probeSeconds(value: number | undefined, defaultValue: number): number {
  if (value === undefined || value === 0 || typeof value !== 'number' || Number.isNaN(value))
    return defaultValue;
  if (!Number.isFinite(value)) return value > 0 ? MAX_PROBE_SECONDS : 1;
  return Math.min(Math.max(1, Math.floor(value)), MAX_PROBE_SECONDS);
}

/** `v1.30.0` → `kube-probe/1.30` (upstream's User-Agent for HTTP and gRPC probes). */
export function probeUserAgent(kubernetesVersion: string): string {
  const [major = '0', minor = '0'] = kubernetesVersion.replace(/^v/, '').split('.');
  return `kube-probe/${major}.${minor}`;
}

/** Where a probe goes: the runtime's own container ID (for exec) and the pod's IP (for the rest). */
export interface ProbeTarget {
  containerId: string;
  podIP: string;
}

export interface ProbeVerdictResult {
  result: ProbeResult;
  /** Set when the probe could not be run: the worker then throws the result away, as upstream. */
  error?: Error;
}

/** What a worker needs of the prober; tests give workers a scripted one. */
export interface ProbeRunner {
  probe(
    probeType: ProbeType,
    pod: Pod,
    container: Container,
    target: ProbeTarget,
    signal?: AbortSignal,
  ): Promise<ProbeVerdictResult>;
}

export interface ProberOptions {
  /** CRI ExecSync, for exec probes. */
  runtimeService: CommandRunner;
  /** The Kubernetes version this kubelet implements (`v1.30.0`), for the probes' User-Agent. */
  kubernetesVersion: string;
  clock?: Clock;
  /** Where Unhealthy and ProbeWarning events go; without one they are logged at --v=3. */
  recorder?: EventRecorder;
}

/** Logs events as upstream's event broadcaster does (StartStructuredLogging(3)) when it has nowhere else to send them. */
const loggingRecorder: EventRecorder = {
  event(pod, fieldPath, type, reason, message) {
    log.v(3, 'Event occurred', {
      object: podRef(pod),
      fieldPath,
      kind: 'Pod',
      apiVersion: 'v1',
      type,
      reason,
      message,
    });
  },
};

export class Prober implements ProbeRunner {
  private readonly clock: Clock;
  private readonly recorder: EventRecorder;
  private readonly userAgent: string;

  constructor(private readonly opts: ProberOptions) {
    this.clock = opts.clock ?? realClock;
    this.recorder = opts.recorder ?? loggingRecorder;
    this.userAgent = probeUserAgent(opts.kubernetesVersion);
  }

  async probe(
    probeType: ProbeType,
    pod: Pod,
    container: Container,
    target: ProbeTarget,
    signal?: AbortSignal,
  ): Promise<ProbeVerdictResult> {
    const spec = probeSpecFor(container, probeType);
    const kv = {
      probeType: probeTypeName(probeType),
      pod: podRef(pod),
      podUID: pod.metadata.uid,
      containerName: container.name,
    };
    if (!spec) {
      log.info('Probe is nil', kv);
      return { result: 'Success' };
    }
    const outcome = await this.runProbeWithRetries(spec, pod, container, target, signal);
    const kind = probeTypeName(probeType);
    if (outcome.error) {
      if (signal?.aborted) return { result: 'Failure', error: outcome.error };
      log.v(1, 'Probe errored', { ...kv, probeResult: outcome.result, err: outcome.error });
      this.event(
        pod,
        container,
        'Warning',
        ProbeEventReason.ContainerUnhealthy,
        `${kind} probe errored and resulted in ${outcome.result} state: ${errorMessage(outcome.error)}`,
      );
      return { result: 'Failure', error: outcome.error };
    }
    switch (outcome.result) {
      case 'success':
        log.v(3, 'Probe succeeded', kv);
        return { result: 'Success' };
      case 'warning':
        this.event(
          pod,
          container,
          'Warning',
          ProbeEventReason.ContainerProbeWarning,
          `${kind} probe warning: ${outcome.output}`,
        );
        log.v(3, 'Probe succeeded with a warning', { ...kv, output: outcome.output });
        return { result: 'Success' };
      case 'failure':
        log.v(1, 'Probe failed', { ...kv, probeResult: outcome.result, output: outcome.output });
        this.event(
          pod,
          container,
          'Warning',
          ProbeEventReason.ContainerUnhealthy,
          `${kind} probe failed: ${outcome.output}`,
        );
        return { result: 'Failure' };
      case 'unknown':
        log.v(1, 'Probe unknown without error', { ...kv, probeResult: outcome.result });
        return { result: 'Failure' };
    }
  }

  /** Runs the handler, again only when it could not be run (upstream runProbeWithRetries). */
  private async runProbeWithRetries(
    spec: Probe,
    pod: Pod,
    container: Container,
    target: ProbeTarget,
    signal: AbortSignal | undefined,
  ): Promise<ProbeOutcome> {
    let outcome: ProbeOutcome = { result: 'unknown', output: '' };
    for (let i = 0; i < MAX_PROBE_RETRIES; i++) {
      outcome = await this.runProbe(spec, pod, container, target, signal);
      if (!outcome.error || signal?.aborted) return outcome;
    }
    return outcome;
  }

  /** One run of the probe's handler (upstream runProbe). */
  async runProbe(
    spec: Probe,
    pod: Pod,
    container: Container,
    target: ProbeTarget,
    signal?: AbortSignal,
  ): Promise<ProbeOutcome> {
    const timeoutSeconds = probeSeconds(spec.timeoutSeconds, DEFAULT_TIMEOUT_SECONDS);
    const timeoutMs = timeoutSeconds * 1000;
    try {
      if (spec.exec) {
        // Like upstream, the command sees the container's static env values only, not the pod's environment.
        const command = expandProbeCommand(spec.exec.command ?? [], container);
        log.v(4, 'Exec-Probe runProbe', { containerName: container.name, execCommand: command });
        return await doExecProbe(
          this.opts.runtimeService,
          target.containerId,
          command,
          timeoutSeconds,
          signal,
        );
      }
      if (spec.httpGet) {
        const req = newRequestForHTTPGetAction(spec.httpGet, container, target.podIP, this.userAgent);
        log.v(4, 'HTTP-Probe', {
          scheme: req.scheme,
          host: req.host,
          port: req.port,
          path: req.path,
          timeout: `${timeoutSeconds}s`,
        });
        return await doHttpProbe(req, { clock: this.clock, timeoutMs, signal });
      }
      if (spec.tcpSocket) {
        const port = resolveContainerPort(spec.tcpSocket.port, container);
        const host = spec.tcpSocket.host || target.podIP;
        log.v(4, 'TCP-Probe', { host, port, timeout: `${timeoutSeconds}s` });
        return await doTcpProbe(host, port, { clock: this.clock, timeoutMs, signal });
      }
      if (spec.grpc) {
        const service = spec.grpc.service ?? '';
        log.v(4, 'GRPC-Probe', {
          host: target.podIP,
          service,
          port: spec.grpc.port,
          timeout: `${timeoutSeconds}s`,
        });
        return await doGrpcProbe(target.podIP, service, spec.grpc.port, {
          clock: this.clock,
          timeoutMs,
          userAgent: this.userAgent,
          signal,
        });
      }
      return {
        result: 'unknown',
        output: '',
        error: new Error(`missing probe handler for ${formatPod(pod)}:${container.name}`),
      };
    } catch (err) {
      // A spec the request cannot be made from (a port name the container does not have, …).
      return { result: 'unknown', output: '', error: err instanceof Error ? err : new Error(String(err)) };
    }
  }

  private event(pod: Pod, container: Container, type: EventType, reason: string, message: string): void {
    try {
      this.recorder.event(pod, containerFieldPath(pod, container.name), type, reason, message);
    } catch (err) {
      log.error('Failed to record a probe event', { pod: podRef(pod), reason, err });
    }
  }
}
