/**
 * A pod's containers on the runtime (upstream: kuberuntime_container.go): started (image pull,
 * create, start, postStart hook), killed (preStop hook, then StopContainer within the grace period,
 * sidecars after the containers they serve), removed with their logs, and read back as statuses.
 */
import { mkdir, rm, stat, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Container, Pod } from '../api/core-v1.js';
import { machineAllocatable, type NodeAllocatable } from '../api/node.js';
import { isNotFound } from '../cri/errors.js';
import type { ContainerConfig, ImageService, Mount, PodSandboxConfig, RuntimeService } from '../cri/types.js';
import { Backoff } from '../lib/backoff.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import {
  findContainerStatusByName,
  isRestartableInitContainer,
  type ContainerKillReason,
} from './compute-pod-actions.js';
import { generateContainerConfig, withContainerDefaults } from './container-config.js';
import { DEFAULT_QUOTA_PERIOD_US } from './container-resources.js';
import { calcRestartCountByLogDir, convertToKubeContainerStatus } from './container-status.js';
import type { PullSecret } from './docker-keyring.js';
import { makeHostsMount, shouldMountHostsFile } from './etc-hosts.js';
import { containerFieldPath, EventReason, type EventRecorder } from './event-recorder.js';
import { formatPod } from './format.js';
import { ImagePuller } from './image-puller.js';
import {
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  KUBERNETES_POD_UID_LABEL,
} from './labels.js';
import { LifecycleHandlerRunner, type HandlerRunner } from './lifecycle-handler-runner.js';
import type { KubeGenericRuntimeManagerOptions, RuntimeDefaults } from './runtime-manager-options.js';
import { buildContainerLogsDirectory, generatePodHostNameAndDomain } from './sandbox-config.js';
import type {
  KubeContainerStatus,
  KubePodStatus,
  RunningContainer,
  RunningPod,
  SyncResult,
} from './types.js';

const log = logger('kuberuntime');

/** Below this the kubelet never asks a container to stop: it spares a SIGKILL that 2 s of grace would avoid. */
export const MINIMUM_GRACE_PERIOD_SECONDS = 2;
/** The API server's default terminationGracePeriodSeconds. */
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;
// ext4's file name limit, for the legacy log symlinks.
const MAX_FILE_NAME_LENGTH = 255;

/** retryAfterMs: set for an image pull back-off, the time left on it. */
export type StartFailure = { reason: string; message: string; retryAfterMs?: number };

/** One container to start in a pod whose sandbox exists. */
export interface ContainerStart {
  /** An ephemeral container's targetContainerName ('' for none); undefined for other containers. */
  readonly targetContainerName: string | undefined;
  readonly podSandboxId: string;
  readonly sandboxConfig: PodSandboxConfig;
  /** The container as the pod spec has it (the defaults are applied here). */
  readonly container: Container;
  readonly pod: Pod;
  readonly podStatus: KubePodStatus;
  readonly podIP: string;
  readonly podIPs: string[];
  readonly signal: AbortSignal | undefined;
  readonly pullSecrets?: () => Promise<PullSecret[]>;
}

export class ContainerLifecycle {
  private readonly runtimeService: RuntimeService;
  private readonly imageService: ImageService;
  private readonly clock: Clock;
  private readonly type: string;
  private readonly podLogsDir: string;
  private readonly rootDir: string;
  private readonly recorder: EventRecorder;
  private readonly imagePuller: ImagePuller;
  private readonly handlerRunner: HandlerRunner;
  private readonly legacyContainerLogsDir: string;
  /**
   * The machine's memory and CPUs, read once: os.totalmem() and os.cpus() read /proc synchronously,
   * on the event loop, and every container start needed them (the memory for its OOM score; both
   * for the downward API when there is no Node whose allocatable stands in, as in standalone mode).
   */
  private readonly memoryCapacityBytes: number;
  private readonly machineAllocatable: NodeAllocatable;
  private legacyDirReady: Promise<void> | undefined;

  constructor(
    private readonly opts: KubeGenericRuntimeManagerOptions,
    defaults: RuntimeDefaults,
  ) {
    this.runtimeService = opts.runtimeService;
    this.imageService = opts.imageService;
    this.clock = defaults.clock;
    this.type = defaults.runtimeName;
    this.podLogsDir = defaults.podLogsDir;
    this.rootDir = defaults.rootDir;
    this.recorder = defaults.recorder;
    this.legacyContainerLogsDir = defaults.legacyContainerLogsDir;
    this.machineAllocatable = machineAllocatable();
    this.memoryCapacityBytes = opts.memoryCapacityBytes ?? Number(this.machineAllocatable.memory);
    this.imagePuller = new ImagePuller({
      imageService: this.imageService,
      backoff: opts.imageBackoff ?? new Backoff(this.clock, 10_000, 300_000),
      clock: this.clock,
      recorder: this.recorder,
      runtimeHandler: defaults.runtimeHandler,
      serializeImagePulls: opts.serializeImagePulls,
      pullObserver: opts.pullObserver,
      pullingTimeRecorder: opts.pullingTimeRecorder,
      maxParallelImagePulls: opts.maxParallelImagePulls,
      registryPullQPS: opts.registryPullQPS,
      registryBurst: opts.registryBurst,
      credentialProviders: opts.credentialProviders,
    });
    this.handlerRunner =
      opts.handlerRunner ??
      new LifecycleHandlerRunner({
        runtimeService: this.runtimeService,
        clock: this.clock,
        kubernetesVersion: opts.kubernetesVersion,
        recorder: this.recorder,
      });
  }

  // ---- starting ----

  /** Pull, create, start, postStart hook. Returns the failure, or undefined when the container started. */
  async startContainer(start: ContainerStart): Promise<StartFailure | undefined> {
    const { pod, podStatus, podSandboxId, sandboxConfig, podIP, signal } = start;
    const container = withContainerDefaults(start.container);
    const fieldPath = containerFieldPath(pod, container.name);
    const warn = (message: string): void =>
      this.recorder.event(pod, fieldPath, 'Warning', EventReason.FailedToCreateContainer, message);

    // An ephemeral container's target must exist before anything is pulled (upstream getTargetID).
    let targetContainerId: string | undefined;
    if (start.targetContainerName) {
      const target = findContainerStatusByName(podStatus, start.targetContainerName);
      if (!target) {
        const message = `unable to find target container ${start.targetContainerName}`;
        warn(`Error: ${message}`);
        return { reason: 'CreateContainerConfigError', message };
      }
      targetContainerId = target.id;
    }

    const pulled = await this.imagePuller.ensureImageExists(
      pod,
      container,
      sandboxConfig,
      signal,
      start.pullSecrets,
    );
    if (!pulled.ok) {
      warn(`Error: ${pulled.reason}`);
      return { reason: pulled.reason, message: pulled.message, retryAfterMs: pulled.retryAfterMs };
    }

    const previous = findContainerStatusByName(podStatus, container.name);
    const restartCount = previous
      ? previous.restartCount + 1
      : await calcRestartCountByLogDir(buildContainerLogsDirectory(this.podLogsDir, pod, container.name));

    let config: ContainerConfig;
    try {
      config = await this.containerConfig(start, container, restartCount, pulled, targetContainerId);
    } catch (err) {
      warn(`Error: ${errorMessage(err)}`);
      return { reason: 'CreateContainerConfigError', message: errorMessage(err) };
    }

    let containerId: string;
    try {
      containerId = await this.runtimeService.createContainer(podSandboxId, config, sandboxConfig, {
        signal,
      });
    } catch (err) {
      warn(`Error: ${errorMessage(err)}`);
      return { reason: 'CreateContainerError', message: errorMessage(err) };
    }
    this.recorder.event(
      pod,
      fieldPath,
      'Normal',
      EventReason.CreatedContainer,
      // v1.30 formats "Created container %s"; the "Created container: " form is a later release's.
      `Created container ${container.name}`,
    );

    try {
      await this.runtimeService.startContainer(containerId, { signal });
    } catch (err) {
      // The runtime's message may name the container ID, which would make every such event distinct.
      const message = errorMessage(err).split(containerId).join(container.name);
      this.recorder.event(pod, fieldPath, 'Warning', EventReason.FailedToStartContainer, `Error: ${message}`);
      return { reason: 'RunContainerError', message: errorMessage(err) };
    }
    this.recorder.event(
      pod,
      fieldPath,
      'Normal',
      EventReason.StartedContainer,
      `Started container ${container.name}`,
    );

    await this.makeLegacyLogSymlink(
      pod,
      container.name,
      containerId,
      path.join(sandboxConfig.logDirectory, config.logPath),
    );

    if (container.lifecycle?.postStart)
      return this.runPostStartHook(pod, container, containerId, podIP, signal);
    return undefined;
  }

  /** The CRI config of a container whose image is here: its restart count, env, mounts and devices. */
  private async containerConfig(
    { pod, podIP, podIPs, signal }: ContainerStart,
    container: Container,
    restartCount: number,
    pulled: { imageRef: string; image?: Awaited<ReturnType<ImageService['imageStatus']>> },
    targetContainerId: string | undefined,
  ): Promise<ContainerConfig> {
    const image =
      pulled.image ?? (await this.imageService.imageStatus({ image: pulled.imageRef }, false, { signal }));
    return generateContainerConfig(
      { pod, container, restartCount, imageRef: pulled.imageRef, image, podIP, podIPs, targetContainerId },
      {
        podLogsDir: this.podLogsDir,
        rootDir: this.rootDir,
        nodeName: this.opts.nodeName,
        hostIPs: this.opts.nodeIPs ?? [],
        nodeAllocatable: this.nodeAllocatable(),
        memoryCapacityBytes: this.memoryCapacityBytes,
        cpuCFSQuota: this.opts.cpuCFSQuota ?? true,
        cpuCFSQuotaPeriodUs: this.opts.cpuCFSQuotaPeriodUs ?? DEFAULT_QUOTA_PERIOD_US,
        ...(this.opts.swap ? { swap: this.opts.swap } : {}),
        seccompDefault: this.opts.seccompDefault ?? false,
        envSources: this.opts.envSources ?? {},
        recorder: this.recorder,
        volumeMounts: await this.containerMounts(pod, container, podIPs),
        devices: await this.opts.deviceRunContainerOptions?.(pod, container),
        cpusetCpus: this.opts.cpusetCpus?.(pod, container),
        cpusetMems: this.opts.cpusetMems?.(pod, container),
        signal,
      },
    );
  }

  /** A failed postStart hook kills the container (upstream: FailedPostStartHook). */
  private async runPostStartHook(
    pod: Pod,
    container: Container,
    containerId: string,
    podIP: string,
    signal: AbortSignal | undefined,
  ): Promise<StartFailure | undefined> {
    const postStart = container.lifecycle?.postStart;
    if (!postStart) return undefined;
    const hook = await this.handlerRunner.run(containerId, pod, container, postStart, podIP, signal);
    if (hook.ok) return undefined;
    log.error('Failed to execute PostStartHook', {
      pod: formatPod(pod),
      containerName: container.name,
      containerID: containerId,
      err: hook.message,
    });
    // The message may carry secrets from the hook's output: the event does not.
    this.recorder.event(
      pod,
      containerFieldPath(pod, container.name),
      'Warning',
      EventReason.FailedPostStartHook,
      'PostStartHook failed',
    );
    try {
      await this.killContainer(
        pod,
        containerId,
        container.name,
        'FailedPostStartHook',
        'FailedPostStartHook',
        undefined,
      );
    } catch (err) {
      log.error('Failed to kill container', {
        pod: formatPod(pod),
        containerName: container.name,
        containerID: containerId,
        err: errorMessage(err),
      });
    }
    return { reason: 'PostStartHookError', message: hook.message };
  }

  /** What a container's missing limits read as in the downward API: the node's allocatable (upstream getNodeAnyWay). */
  private nodeAllocatable(): NodeAllocatable {
    const a = this.opts.nodeAllocatable;
    const given = typeof a === 'function' ? a() : a;
    return given ?? this.machineAllocatable;
  }

  /** The volume manager's mounts, then the kubelet-managed /etc/hosts. */
  private async containerMounts(pod: Pod, container: Container, podIPs: string[]): Promise<Mount[]> {
    const mounts = this.opts.volumeMounts ? [...(await this.opts.volumeMounts(pod, container, podIPs))] : [];
    if (shouldMountHostsFile(container, podIPs)) {
      const { hostname, hostDomain } = generatePodHostNameAndDomain(pod, this.opts.clusterDomain ?? '');
      mounts.push(
        await makeHostsMount(pod, {
          podDir: path.join(this.rootDir, 'pods', pod.metadata.uid ?? ''),
          podIPs,
          hostname,
          hostDomain,
          nodeHostsFile: this.opts.nodeHostsFile ?? '/etc/hosts',
        }),
      );
    }
    return mounts;
  }

  /** `/var/log/containers/<pod>_<ns>_<container>-<id>.log` → the container's log, for log collectors that still read there. */
  private async makeLegacyLogSymlink(
    pod: Pod,
    containerName: string,
    containerId: string,
    containerLog: string,
  ): Promise<void> {
    if (this.legacyContainerLogsDir === '') return;
    const link = legacyLogSymlink(
      this.legacyContainerLogsDir,
      pod.metadata.name ?? '',
      pod.metadata.namespace ?? '',
      containerName,
      containerId,
    );
    try {
      await stat(containerLog);
    } catch (err) {
      // Without the log file the link would dangle until GC removed it.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    }
    try {
      // Upstream makes this folder at startup; made on first use here, so a constructor needs no I/O.
      this.legacyDirReady ??= mkdir(this.legacyContainerLogsDir, { recursive: true, mode: 0o755 }).then(
        () => undefined,
      );
      await this.legacyDirReady;
      await symlink(containerLog, link);
    } catch (err) {
      this.legacyDirReady = undefined;
      log.error('Failed to create legacy symbolic link', {
        path: link,
        containerID: containerId,
        containerLogPath: containerLog,
        err: errorMessage(err),
      });
    }
  }

  // ---- killing ----

  /** Stops the pod's containers in parallel, sidecars in their turn (upstream killContainersWithSyncResult). */
  async killContainersWithSyncResult(
    pod: Pod | undefined,
    runningPod: RunningPod,
    gracePeriodOverrideSeconds: number | undefined,
  ): Promise<SyncResult[]> {
    const turns = terminationTurns(pod, runningPod.containers);
    return Promise.all(
      runningPod.containers.map(async (c: RunningContainer): Promise<SyncResult> => {
        const r: SyncResult = { action: 'KillContainer', target: c.name };
        try {
          await this.killContainer(
            pod,
            c.id,
            c.name,
            '',
            'Unknown',
            gracePeriodOverrideSeconds,
            turns.waitFor(c.id),
          );
        } catch (err) {
          r.reason = 'KillContainerError';
          r.message = errorMessage(err);
          log.error('Kill container failed', {
            pod: `${runningPod.namespace}/${runningPod.name}`,
            podUID: runningPod.uid,
            containerName: c.name,
            containerID: c.id,
            err: r.message,
          });
        } finally {
          turns.terminated(c.id);
        }
        return r;
      }),
    );
  }

  /**
   * preStop hook, then StopContainer with what is left of the grace period (at least 2 s). Without
   * the pod (after a restart of the kubelet), what the container's labels and annotations recorded
   * stands in for it.
   */
  async killContainer(
    pod: Pod | undefined,
    containerId: string,
    containerName: string,
    message: string,
    reason: ContainerKillReason,
    gracePeriodOverrideSeconds: number | undefined,
    /** Resolves when it is this container's turn to stop (sidecars stop after the containers they serve). */
    waitForTurn?: () => Promise<void>,
  ): Promise<void> {
    let spec: Container | undefined;
    let gracePeriod: number;
    let targetPod: Pod;
    if (pod) {
      targetPod = pod;
      spec = [
        ...pod.spec.containers,
        ...(pod.spec.initContainers ?? []),
        ...(pod.spec.ephemeralContainers ?? []),
      ].find((c) => c.name === containerName);
      if (!spec) {
        throw new Error(
          `failed to get containerSpec "${containerName}" (id="${this.type}://${containerId}") in pod "${formatPod(pod)}" when killing container for reason "${message}"`,
        );
      }
      gracePeriod = terminationGracePeriod(pod, spec, reason);
    } else {
      const restored = await this.restoreSpecsFromContainerLabels(containerId);
      targetPod = restored.pod;
      spec = restored.container;
      gracePeriod =
        restored.pod.metadata.deletionGracePeriodSeconds ??
        restored.pod.spec.terminationGracePeriodSeconds ??
        MINIMUM_GRACE_PERIOD_SECONDS;
    }
    const fieldPath = containerFieldPath(targetPod, containerName);
    this.recorder.event(
      targetPod,
      fieldPath,
      'Normal',
      EventReason.KillingContainer,
      message || `Stopping container ${spec.name}`,
    );
    if (gracePeriodOverrideSeconds !== undefined) gracePeriod = gracePeriodOverrideSeconds;

    const preStop = spec.lifecycle?.preStop;
    if (preStop && gracePeriod > 0)
      gracePeriod -= await this.executePreStopHook(targetPod, containerId, spec, gracePeriod);
    if (waitForTurn && gracePeriod > 0) gracePeriod -= await this.waitAtMost(waitForTurn(), gracePeriod);
    gracePeriod = Math.max(gracePeriod, MINIMUM_GRACE_PERIOD_SECONDS);

    log.v(2, 'Killing container with a grace period', {
      pod: formatPod(targetPod),
      containerName,
      containerID: containerId,
      gracePeriod,
    });
    try {
      await this.runtimeService.stopContainer(containerId, gracePeriod);
    } catch (err) {
      if (isNotFound(err)) return;
      if (await this.hasExited(containerId)) {
        // The stop happened and only its answer was lost (containerd 1.6 can answer "ttrpc: closed"
        // when the shim goes away with the task): the pod worker's retry would find it exited too.
        log.info('StopContainer failed but the container has exited', {
          pod: formatPod(targetPod),
          containerName,
          containerID: containerId,
          err: errorMessage(err),
        });
        return;
      }
      log.error('Container termination failed with gracePeriod', {
        pod: formatPod(targetPod),
        containerName,
        containerID: containerId,
        gracePeriod,
        err: errorMessage(err),
      });
      throw err;
    }
    log.v(3, 'Container exited normally', {
      pod: formatPod(targetPod),
      containerName,
      containerID: containerId,
    });
  }

  private async hasExited(containerId: string): Promise<boolean> {
    try {
      const { status } = await this.runtimeService.containerStatus(containerId, false);
      return status.state === 'CONTAINER_EXITED';
    } catch {
      // No answer either: the stop's own error is the one to report.
      return false;
    }
  }

  /** Waits for done, at most limitSeconds; returns the whole seconds waited. */
  private async waitAtMost(done: Promise<void>, limitSeconds: number): Promise<number> {
    const startMs = this.clock.now();
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = this.clock.setTimeout(resolve, limitSeconds * 1000);
    });
    await Promise.race([done, timeout]);
    if (timer) this.clock.clearTimeout(timer);
    return Math.floor((this.clock.now() - startMs) / 1000);
  }

  /** Runs the hook for at most gracePeriod seconds; returns the whole seconds it took. */
  private async executePreStopHook(
    pod: Pod,
    containerId: string,
    container: Container,
    gracePeriodSeconds: number,
  ): Promise<number> {
    const handler = container.lifecycle?.preStop;
    if (!handler) return 0;
    const startMs = this.clock.now();
    const abort = new AbortController();
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = this.clock.setTimeout(() => resolve('timeout'), gracePeriodSeconds * 1000);
    });
    const run = this.handlerRunner.run(containerId, pod, container, handler, '', abort.signal).then((r) => {
      if (!r.ok) {
        log.error('PreStop hook failed', {
          pod: formatPod(pod),
          containerName: container.name,
          containerID: containerId,
          err: r.message,
        });
        this.recorder.event(
          pod,
          containerFieldPath(pod, container.name),
          'Warning',
          EventReason.FailedPreStopHook,
          'PreStopHook failed',
        );
      }
      return 'done' as const;
    });
    const outcome = await Promise.race([run, timedOut]);
    if (timer) this.clock.clearTimeout(timer);
    if (outcome === 'timeout') {
      abort.abort(new Error('grace period exceeded'));
      log.v(2, 'PreStop hook not completed in grace period', {
        pod: formatPod(pod),
        containerName: container.name,
        containerID: containerId,
        gracePeriod: gracePeriodSeconds,
      });
    }
    return Math.floor((this.clock.now() - startMs) / 1000);
  }

  private async restoreSpecsFromContainerLabels(
    containerId: string,
  ): Promise<{ pod: Pod; container: Container }> {
    const { status } = await this.runtimeService.containerStatus(containerId, false);
    const l = getContainerInfoFromLabels(status.labels);
    const a = getContainerInfoFromAnnotations(status.annotations);
    // Not the full specs: only what killing needs.
    const pod: Pod = {
      metadata: {
        name: l.podName,
        namespace: l.podNamespace,
        uid: l.podUid,
        deletionGracePeriodSeconds: a.podDeletionGracePeriodSeconds,
      },
      spec: { containers: [], terminationGracePeriodSeconds: a.podTerminationGracePeriodSeconds },
    };
    const container: Container = {
      name: l.containerName,
      ports: a.containerPorts,
      terminationMessagePath: a.terminationMessagePath,
    };
    if (a.preStopHandler) container.lifecycle = { preStop: a.preStopHandler };
    pod.spec.containers.push(container);
    return { pod, container };
  }

  // ---- init container housekeeping ----

  /** Keeps only the newest dead attempt of each init container, so GC does not have to. */
  async pruneInitContainersBeforeStart(pod: Pod, podStatus: KubePodStatus): Promise<void> {
    for (const init of pod.spec.initContainers ?? []) {
      const dead = podStatus.containerStatuses
        .filter((s) => s.name === init.name && (s.state === 'exited' || s.state === 'unknown'))
        .sort((a, b) => b.createdAtMs - a.createdAtMs || b.restartCount - a.restartCount);
      for (const s of dead.slice(1)) await this.removeContainerLogged(pod, s);
    }
  }

  /** A new sandbox starts initialization over: every old init container goes. */
  async purgeInitContainers(pod: Pod, podStatus: KubePodStatus): Promise<void> {
    for (const init of pod.spec.initContainers ?? []) {
      for (const s of podStatus.containerStatuses.filter((c) => c.name === init.name))
        await this.removeContainerLogged(pod, s);
    }
  }

  private async removeContainerLogged(pod: Pod, s: KubeContainerStatus): Promise<void> {
    try {
      await this.removeContainer(s.id);
    } catch (err) {
      log.error('failed to remove pod init container', {
        containerName: s.name,
        containerID: s.id,
        pod: formatPod(pod),
        err: errorMessage(err),
      });
    }
  }

  /** Removes the container's log file (and its legacy symlink), then the container. */
  async removeContainer(containerId: string): Promise<void> {
    try {
      const { status } = await this.runtimeService.containerStatus(containerId, false);
      if (status.logPath !== '') await rm(status.logPath, { force: true });
      if (this.legacyContainerLogsDir !== '') {
        const l = getContainerInfoFromLabels(status.labels);
        await unlink(
          legacyLogSymlink(
            this.legacyContainerLogsDir,
            l.podName,
            l.podNamespace,
            l.containerName,
            containerId,
          ),
        ).catch(() => undefined);
      }
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return;
    }
    await this.runtimeService.removeContainer(containerId);
  }

  // ---- reading state ----

  /** The pod's containers' statuses, newest first; a container removed meanwhile is left out. */
  async getPodContainerStatuses(
    uid: string,
    listed: readonly RunningContainer[] | undefined,
  ): Promise<KubeContainerStatus[]> {
    const containers =
      listed ??
      (await this.runtimeService.listContainers({ labelSelector: { [KUBERNETES_POD_UID_LABEL]: uid } }));
    const statuses = await Promise.all(
      containers.map(async (c) => {
        try {
          const { status } = await this.runtimeService.containerStatus(c.id, false);
          return await convertToKubeContainerStatus(status, this.type, c.podSandboxId);
        } catch (err) {
          if (isNotFound(err)) return undefined;
          throw err;
        }
      }),
    );
    return statuses
      .filter((s): s is KubeContainerStatus => s !== undefined)
      .sort((a, b) => b.createdAtMs - a.createdAtMs || b.restartCount - a.restartCount);
  }
}

/**
 * The order in which a pod's containers stop (upstream terminationOrdering): app containers at once;
 * each sidecar once the app containers and the sidecars declared after it have stopped, so that the
 * services a container relies on outlive it.
 */
function terminationTurns(
  pod: Pod | undefined,
  running: readonly RunningContainer[],
): { waitFor(id: string): (() => Promise<void>) | undefined; terminated(id: string): void } {
  const sidecars = (pod?.spec.initContainers ?? []).filter(isRestartableInitContainer).map((c) => c.name);
  const stopped = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  for (const c of running) {
    let resolve: () => void = () => undefined;
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    stopped.set(c.id, { promise, resolve });
  }
  return {
    waitFor(id) {
      const self = running.find((c) => c.id === id);
      const idx = self ? sidecars.indexOf(self.name) : -1;
      if (idx < 0) return undefined;
      const after = new Set(sidecars.slice(idx + 1));
      const deps = running.filter((c) => !sidecars.includes(c.name) || after.has(c.name));
      return () => Promise.all(deps.map((c) => stopped.get(c.id)?.promise)).then(() => undefined);
    },
    terminated(id) {
      stopped.get(id)?.resolve();
    },
  };
}

/** The grace period a container gets: the pod's deletion grace period, else its termination grace period. */
function terminationGracePeriod(pod: Pod, container: Container, reason: ContainerKillReason): number {
  if (pod.metadata.deletionGracePeriodSeconds !== undefined) return pod.metadata.deletionGracePeriodSeconds;
  // A probe may carry its own, shorter grace period for the kills it causes.
  if (reason === 'StartupProbe' && container.startupProbe?.terminationGracePeriodSeconds !== undefined) {
    return container.startupProbe.terminationGracePeriodSeconds;
  }
  if (reason === 'LivenessProbe' && container.livenessProbe?.terminationGracePeriodSeconds !== undefined) {
    return container.livenessProbe.terminationGracePeriodSeconds;
  }
  return pod.spec.terminationGracePeriodSeconds ?? DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
}

export function legacyLogSymlink(
  dir: string,
  podName: string,
  podNamespace: string,
  containerName: string,
  containerId: string,
): string {
  const suffix = '.log';
  let name = `${podName}_${podNamespace}_${containerName}-${containerId}`;
  if (name.length > MAX_FILE_NAME_LENGTH - suffix.length)
    name = name.slice(0, MAX_FILE_NAME_LENGTH - suffix.length);
  return path.join(dir, name + suffix);
}
