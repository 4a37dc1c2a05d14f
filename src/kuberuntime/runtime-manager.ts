/**
 * The kubelet's container runtime manager over CRI (upstream: kubeGenericRuntimeManager,
 * kuberuntime_manager.go): SyncPod, KillPod and GetPodStatus over its halves, the pod's sandboxes
 * (sandbox-manager.ts, kuberuntime_sandbox.go) and its containers (container-lifecycle.ts,
 * kuberuntime_container.go), with the garbage collector (container-gc.ts, kuberuntime_gc.go). What
 * to do in a sync is decided in compute-pod-actions.ts (computePodActions).
 */
import { mkdir } from 'node:fs/promises';
import type { Container, Pod } from '../api/core-v1.js';
import type { DNSConfig, PodSandboxConfig, RuntimeService, VersionResponse } from '../cri/types.js';
import type { Backoff } from '../lib/backoff.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import {
  computePodActions,
  doBackOff,
  isRestartableInitContainer,
  type PodActions,
} from './compute-pod-actions.js';
import { ContainerGC } from './container-gc.js';
import { ContainerLifecycle } from './container-lifecycle.js';
import { convertPodStatusToRunningPod, determinePodSandboxIPs } from './container-status.js';
import type { PullSecret } from './docker-keyring.js';
import { containerFieldPath, EventReason, type EventRecorder } from './event-recorder.js';
import { formatPod } from './format.js';
import { readHostDNSConfig } from './pod-dns.js';
import { runtimeDefaults, type KubeGenericRuntimeManagerOptions } from './runtime-manager-options.js';
import { RunningPodAssembler } from './running-pods.js';
import { generatePodSandboxConfig } from './sandbox-config.js';
import { PodSandboxManager } from './sandbox-manager.js';
import { PodStartMetrics, type StartedContainerType } from './start-metrics.js';
import type { KubePodStatus, PodSyncResult, RunningPod, Runtime, SyncResult } from './types.js';

export {
  DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
  legacyLogSymlink,
  MINIMUM_GRACE_PERIOD_SECONDS,
} from './container-lifecycle.js';
export type {
  KubeGenericRuntimeManagerOptions,
  PullSecretSource,
  RuntimeClassLookup,
} from './runtime-manager-options.js';

const log = logger('kuberuntime');

/** The pod-start slot a sync took for a new sandbox; released when the sync ends or a pull begins. */
type StartSlot = { release?: () => void };

/** What each container start of one sync shares: the sandbox it runs in and the results so far. */
interface SyncStart {
  readonly pod: Pod;
  readonly podStatus: KubePodStatus;
  readonly backoff: Backoff;
  readonly results: SyncResult[];
  readonly podSandboxId: string;
  readonly sandboxConfig: PodSandboxConfig;
  readonly podIP: string;
  readonly podIPs: string[];
  readonly signal: AbortSignal | undefined;
  readonly pullSecrets: () => Promise<PullSecret[]>;
}

export class KubeGenericRuntimeManager implements Runtime {
  readonly type: string;
  private readonly runtimeService: RuntimeService;
  private readonly clock: Clock;
  private readonly podLogsDir: string;
  private readonly resolvConf: string;
  private readonly recorder: EventRecorder;
  private readonly sandboxes: PodSandboxManager;
  private readonly containers: ContainerLifecycle;
  private readonly gc: ContainerGC;
  /** getPods(true) and getPods(false), each reusing the pods of its own last listing. */
  private readonly allPods = new RunningPodAssembler();
  private readonly runningPods = new RunningPodAssembler();
  private readonly startMetrics: PodStartMetrics | undefined;

  /** Dials nothing: asks the runtime its name first, as upstream's constructor does. */
  static async create(
    opts: KubeGenericRuntimeManagerOptions,
    signal?: AbortSignal,
  ): Promise<KubeGenericRuntimeManager> {
    const version = await opts.runtimeService.version({ signal });
    log.info('Container runtime initialized', {
      containerRuntime: version.runtimeName,
      version: version.runtimeVersion,
      apiVersion: version.runtimeApiVersion,
    });
    const manager = new KubeGenericRuntimeManager({ ...opts, runtimeName: version.runtimeName });
    await mkdir(manager.podLogsDir, { recursive: true, mode: 0o755 });
    return manager;
  }

  constructor(private readonly opts: KubeGenericRuntimeManagerOptions) {
    const defaults = runtimeDefaults(opts);
    this.runtimeService = opts.runtimeService;
    this.clock = defaults.clock;
    this.type = defaults.runtimeName;
    this.podLogsDir = defaults.podLogsDir;
    this.resolvConf = defaults.resolvConf;
    this.recorder = defaults.recorder;
    this.startMetrics = opts.metrics ? new PodStartMetrics(opts.metrics) : undefined;
    this.sandboxes = new PodSandboxManager({
      runtimeService: this.runtimeService,
      runtimeHandler: defaults.runtimeHandler,
      runtimeClassManager: opts.runtimeClassManager,
    });
    this.containers = new ContainerLifecycle(opts, defaults);
    this.gc = new ContainerGC({
      runtimeService: this.runtimeService,
      clock: this.clock,
      podLogsDir: this.podLogsDir,
      legacyContainerLogsDir: defaults.legacyContainerLogsDir,
      policy: opts.gcPolicy,
      removeContainer: (id) => this.removeContainer(id),
    });
  }

  version(): Promise<VersionResponse> {
    return this.runtimeService.version();
  }

  // ---- SyncPod ----

  async syncPod(
    pod: Pod,
    podStatus: KubePodStatus,
    backoff: Backoff,
    signal?: AbortSignal,
  ): Promise<PodSyncResult> {
    // The pod-start slot a new sandbox takes is given back when the sync ends, however it ends.
    const slot: StartSlot = {};
    try {
      return await this.syncPodUsingSlot(pod, podStatus, backoff, slot, signal);
    } finally {
      slot.release?.();
    }
  }

  /**
   * Upstream SyncPod's steps: compute the actions, kill what must go, make the sandbox when needed,
   * then start the ephemeral, init and app containers.
   */
  private async syncPodUsingSlot(
    pod: Pod,
    podStatus: KubePodStatus,
    backoff: Backoff,
    slot: StartSlot,
    signal?: AbortSignal,
  ): Promise<PodSyncResult> {
    const results: SyncResult[] = [];
    const done = (error?: string): PodSyncResult => {
      const out: PodSyncResult = {
        results,
        failed: error !== undefined || results.some((r) => r.reason !== undefined),
      };
      if (error !== undefined) out.error = error;
      return out;
    };
    const changes = this.computeAndLogPodActions(pod, podStatus);
    if (!(await this.killForSync(pod, podStatus, changes, results))) return done();

    await this.containers.pruneInitContainersBeforeStart(pod, podStatus);

    // Nothing to create or start: the usual case for a running pod, so skip reading resolv.conf and
    // building configs (upstream builds them anyway, on every sync).
    if (
      !changes.createSandbox &&
      changes.initContainersToStart.length === 0 &&
      changes.containersToStart.length === 0 &&
      changes.ephemeralContainersToStart.length === 0
    ) {
      return done();
    }

    const sandboxConfigFor = await this.sandboxConfigMaker(pod, signal);
    const sandbox = await this.ensureSandbox(
      pod,
      podStatus,
      changes,
      sandboxConfigFor,
      slot,
      results,
      signal,
    );
    if ('stop' in sandbox) return done(sandbox.error);
    let podIPs = sandbox.podIPs;
    // A host-network pod's IPs are the node's; the kubelet above normally says so, this covers it when not.
    if (pod.spec.hostNetwork && podIPs.length === 0) podIPs = this.opts.nodeIPs ?? [];
    const podIP = podIPs[0] ?? '';

    const configResult: SyncResult = { action: 'ConfigPodSandbox', target: sandbox.id };
    results.push(configResult);
    let sandboxConfig: PodSandboxConfig;
    try {
      sandboxConfig = sandboxConfigFor(changes.attempt);
    } catch (err) {
      configResult.reason = 'ConfigPodSandboxError';
      configResult.message = `GeneratePodSandboxConfig for pod "${formatPod(pod)}" failed: ${errorMessage(err)}`;
      return done();
    }

    // Read once per sync, and only when an image is to be pulled (upstream reads them on every sync).
    // The image puller asks for them just before a pull, which is when the pod gives back its start
    // slot: a pull can take minutes and has its own bound (serializeImagePulls, maxParallelImagePulls),
    // and pods whose images are here should not wait behind it.
    let pullSecrets: Promise<PullSecret[]> | undefined;
    const getPullSecrets = (): Promise<PullSecret[]> => {
      slot.release?.();
      return (pullSecrets ??= this.getPullSecretsForPod(pod, signal));
    };
    await this.startContainers(changes, {
      pod,
      podStatus,
      backoff,
      results,
      podSandboxId: sandbox.id,
      sandboxConfig,
      podIP,
      podIPs,
      signal,
      pullSecrets: getPullSecrets,
    });
    return done();
  }

  private computeAndLogPodActions(pod: Pod, podStatus: KubePodStatus): PodActions {
    const changes = computePodActions(pod, podStatus, this.opts.probeResults);
    log.v(3, 'computePodActions got for pod', {
      pod: formatPod(pod),
      killPod: changes.killPod,
      createSandbox: changes.createSandbox,
      attempt: changes.attempt,
      initContainersToStart: changes.initContainersToStart,
      containersToStart: changes.containersToStart,
      ephemeralContainersToStart: changes.ephemeralContainersToStart,
      containersToKill: [...changes.containersToKill.values()].map((k) => k.name),
    });
    if (changes.createSandbox && changes.sandboxId !== '') {
      this.recorder.event(
        pod,
        '',
        'Normal',
        EventReason.SandboxChanged,
        'Pod sandbox changed, it will be killed and re-created.',
      );
    }
    return changes;
  }

  /** The pod, or the containers that must go; false when a kill failed and the sync ends here. */
  private async killForSync(
    pod: Pod,
    podStatus: KubePodStatus,
    changes: PodActions,
    results: SyncResult[],
  ): Promise<boolean> {
    if (changes.killPod) {
      const killResults = await this.killPodWithSyncResult(
        pod,
        convertPodStatusToRunningPod(podStatus),
        undefined,
      );
      results.push(...killResults);
      if (killResults.some((r) => r.reason !== undefined)) return false;
      if (changes.createSandbox) await this.containers.purgeInitContainers(pod, podStatus);
      return true;
    }
    for (const k of changes.containersToKill.values()) {
      const r: SyncResult = { action: 'KillContainer', target: k.name };
      results.push(r);
      try {
        await this.containers.killContainer(pod, k.id, k.name, k.message, k.reason, undefined);
      } catch (err) {
        r.reason = 'KillContainerError';
        r.message = errorMessage(err);
        log.error('killContainer for pod failed', {
          containerName: k.name,
          containerID: k.id,
          pod: formatPod(pod),
          err: r.message,
        });
        return false;
      }
    }
    return true;
  }

  /** Reads resolv.conf once per sync, so that the sandbox and every container see one version. */
  private async sandboxConfigMaker(
    pod: Pod,
    signal: AbortSignal | undefined,
  ): Promise<(attempt: number) => PodSandboxConfig> {
    let hostDNS: DNSConfig | undefined;
    let hostDNSError: unknown;
    try {
      hostDNS = await readHostDNSConfig(this.resolvConf, signal);
    } catch (err) {
      hostDNSError = err;
    }
    return (attempt) => {
      if (hostDNSError !== undefined) throw hostDNSError;
      return generatePodSandboxConfig(pod, attempt, {
        podLogsDir: this.podLogsDir,
        hostDNS,
        clusterDNS: this.opts.clusterDNS ?? [],
        clusterDomain: this.opts.clusterDomain ?? '',
        nodeIPs: this.opts.nodeIPs ?? [],
        cgroupParent: this.cgroupParentFor(pod),
        recorder: this.recorder,
      });
    };
  }

  /**
   * The sandbox the containers start in: the pod's own, or a new one (within a pod-start slot when
   * they are bounded). `stop` when the sync ends here, with the error of the sync as a whole if any.
   */
  private async ensureSandbox(
    pod: Pod,
    podStatus: KubePodStatus,
    changes: PodActions,
    sandboxConfigFor: (attempt: number) => PodSandboxConfig,
    slot: StartSlot,
    results: SyncResult[],
    signal: AbortSignal | undefined,
  ): Promise<{ id: string; podIPs: string[] } | { stop: true; error?: string }> {
    if (!changes.createSandbox) return { id: changes.sandboxId, podIPs: podStatus.ips };
    if (this.opts.podStartSlots) {
      // Stopped before or while it waits (the pod is terminating, or the kubelet stops): no sandbox.
      if (signal?.aborted) return { stop: true };
      try {
        slot.release = await this.opts.podStartSlots.acquire(pod, signal);
      } catch {
        return { stop: true };
      }
    }
    const r: SyncResult = { action: 'CreatePodSandbox', target: formatPod(pod) };
    results.push(r);
    this.startMetrics?.podStarting();
    const created = await this.sandboxes.createPodSandbox(
      pod,
      () => sandboxConfigFor(changes.attempt),
      signal,
    );
    if (!created.ok) {
      // A pod deleted while its sandbox was being made is not a failure worth reporting.
      if (this.opts.isPodTerminationRequested?.(pod.metadata.uid ?? '')) {
        results.pop();
        return { stop: true };
      }
      this.startMetrics?.podStartFailed();
      r.reason = 'CreatePodSandboxError';
      r.message = created.message;
      this.recorder.event(
        pod,
        '',
        'Warning',
        EventReason.FailedCreatePodSandBox,
        `Failed to create pod sandbox: ${created.error}`,
      );
      return { stop: true };
    }
    let podIPs = podStatus.ips;
    try {
      const status = await this.sandboxes.newSandboxStatus(created.id, signal);
      // A host-network pod has the node's IPs; the sandbox has none to report.
      if (!pod.spec.hostNetwork) podIPs = determinePodSandboxIPs(status);
    } catch (err) {
      this.recorder.event(
        pod,
        '',
        'Warning',
        EventReason.FailedStatusPodSandBox,
        `Unable to get pod sandbox status: ${errorMessage(err)}`,
      );
      log.error('Failed to get pod sandbox status; Skipping pod', {
        pod: formatPod(pod),
        err: errorMessage(err),
      });
      return { stop: true, error: errorMessage(err) };
    }
    return { id: created.id, podIPs };
  }

  /** Ephemeral containers first, so that a pod whose init container fails to start can be debugged. */
  private async startContainers(changes: PodActions, sync: SyncStart): Promise<void> {
    const { pod } = sync;
    for (const idx of changes.ephemeralContainersToStart) {
      const ec = pod.spec.ephemeralContainers?.[idx];
      if (ec) await this.startOne(sync, ec, 'ephemeral_container', ec.targetContainerName ?? '');
    }
    for (const idx of changes.initContainersToStart) {
      const init = pod.spec.initContainers?.[idx];
      if (!init) continue;
      if (!(await this.startOne(sync, init, 'init_container'))) {
        // A sidecar that failed to start does not hold up the others; a regular init container does.
        if (isRestartableInitContainer(init)) continue;
        return;
      }
      log.v(4, 'Started init container for pod', { containerName: init.name, pod: formatPod(pod) });
    }
    for (const idx of changes.containersToStart) {
      const container = pod.spec.containers[idx];
      if (container) await this.startOne(sync, container, 'container');
    }
  }

  /** One container, unless it is in back-off; true when it started. */
  private async startOne(
    sync: SyncStart,
    container: Container,
    type: StartedContainerType,
    targetContainerName?: string,
  ): Promise<boolean> {
    const { pod, podStatus } = sync;
    const r: SyncResult = { action: 'StartContainer', target: container.name };
    sync.results.push(r);
    const wait = doBackOff(pod, container, podStatus, sync.backoff);
    if (wait.inBackOff) {
      this.recorder.event(
        pod,
        containerFieldPath(pod, container.name),
        'Warning',
        EventReason.BackOffStartContainer,
        `Back-off restarting failed container ${container.name} in pod ${formatPod(pod)}`,
      );
      log.v(3, 'Back-off restarting failed container', { err: wait.message });
      r.reason = wait.reason;
      r.message = wait.message;
      r.retryAfterMs = wait.retryAfterMs;
      return false;
    }
    this.startMetrics?.containerStarting(type);
    const failure = await this.containers.startContainer({
      targetContainerName,
      podSandboxId: sync.podSandboxId,
      sandboxConfig: sync.sandboxConfig,
      container,
      pod,
      podStatus,
      podIP: sync.podIP,
      podIPs: sync.podIPs,
      signal: sync.signal,
      pullSecrets: sync.pullSecrets,
    });
    if (failure) {
      r.reason = failure.reason;
      r.message = failure.message;
      if (failure.retryAfterMs !== undefined) r.retryAfterMs = failure.retryAfterMs;
      this.startMetrics?.containerStartFailed(type, failure.reason);
      if (failure.reason !== 'ImagePullBackOff') {
        log.error('Container start failed in pod', {
          container: container.name,
          pod: formatPod(pod),
          reason: failure.reason,
          message: failure.message,
        });
      }
      return false;
    }
    return true;
  }

  /**
   * The pod's image pull secrets that can be read; the others are named in one warning, and the pull
   * goes on without them (upstream getPullSecretsForPod).
   */
  private async getPullSecretsForPod(pod: Pod, signal: AbortSignal | undefined): Promise<PullSecret[]> {
    const source = this.opts.pullSecrets;
    const names = (pod.spec.imagePullSecrets ?? []).flatMap((r) => (r.name ? [r.name] : []));
    if (!source || names.length === 0) return [];
    const secrets: PullSecret[] = [];
    const failed: string[] = [];
    for (const name of names) {
      try {
        const secret = await source.getImagePullSecret(pod.metadata.namespace ?? '', name, signal);
        if (secret) secrets.push({ name, ...secret });
        else failed.push(name);
      } catch (err) {
        log.info('Unable to retrieve pull secret, the image pull may not succeed.', {
          pod: formatPod(pod),
          secret: name,
          err: errorMessage(err),
        });
        failed.push(name);
      }
    }
    if (failed.length > 0) {
      this.recorder.event(
        pod,
        '',
        'Warning',
        'FailedToRetrieveImagePullSecret',
        `Unable to retrieve some image pull secrets (${failed.join(', ')}); attempting to pull the image may not succeed.`,
      );
    }
    return secrets;
  }

  private cgroupParentFor(pod: Pod): string {
    const c = this.opts.cgroupParent;
    return typeof c === 'function' ? c(pod) : (c ?? '');
  }

  // ---- killing ----

  async killPod(
    pod: Pod | undefined,
    runningPod: RunningPod,
    gracePeriodOverrideSeconds?: number,
  ): Promise<void> {
    const results = await this.killPodWithSyncResult(pod, runningPod, gracePeriodOverrideSeconds);
    const failed = results.filter((r) => r.reason !== undefined);
    if (failed.length > 0) {
      throw new KubeletError(
        'KILL_FAILED',
        failed
          .map((r) => `failed to "${r.action}" for "${r.target}" with ${r.reason}: "${r.message ?? ''}"`)
          .join(', '),
      );
    }
  }

  /** Stops the containers in parallel, then the sandboxes; removal is left to GC. */
  private async killPodWithSyncResult(
    pod: Pod | undefined,
    runningPod: RunningPod,
    gracePeriodOverrideSeconds: number | undefined,
  ): Promise<SyncResult[]> {
    const results = await this.containers.killContainersWithSyncResult(
      pod,
      runningPod,
      gracePeriodOverrideSeconds,
    );
    results.push(await this.sandboxes.stopPodSandboxes(runningPod));
    return results;
  }

  /** Removes the container's log file (and its legacy symlink), then the container. */
  removeContainer(containerId: string): Promise<void> {
    return this.containers.removeContainer(containerId);
  }

  // ---- reading state ----

  async getPodStatus(
    uid: string,
    name: string,
    namespace: string,
    listed?: RunningPod,
    previous?: KubePodStatus,
  ): Promise<KubePodStatus> {
    // Upstream lists the pod's sandboxes and containers again here; a relist has just listed them
    // all, and two calls fewer per changed pod is a quarter of a pod start's CRI calls.
    const sandboxes = await this.sandboxes.listPodSandboxes(uid, listed);
    // The sandboxes and the containers are read side by side: one round trip instead of two.
    const [sandboxStatuses, containerStatuses] = await Promise.all([
      this.sandboxes.getSandboxStatuses(sandboxes, previous),
      this.containers.getPodContainerStatuses(uid, listed?.containers),
    ]);
    return {
      uid,
      name,
      namespace,
      ips: sandboxStatuses.ips,
      sandboxStatuses: sandboxStatuses.statuses,
      containerStatuses,
      timestampMs: this.clock.now(),
    };
  }

  async getPods(all: boolean): Promise<readonly RunningPod[]> {
    const sandboxes = await this.runtimeService.listPodSandbox(all ? undefined : { state: 'SANDBOX_READY' });
    const containers = await this.runtimeService.listContainers(
      all ? undefined : { state: 'CONTAINER_RUNNING' },
    );
    return (all ? this.allPods : this.runningPods).assemble(sandboxes, containers);
  }

  garbageCollect(isPodWanted: (uid: string) => boolean): Promise<void> {
    return this.gc.garbageCollect(isPodWanted);
  }
}
