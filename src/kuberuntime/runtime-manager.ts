/**
 * The kubelet's container runtime manager over CRI (upstream: kubeGenericRuntimeManager): turns a
 * pod spec into sandbox and container calls, and the runtime's state back into pod status.
 */
import { mkdir, rm, stat, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Container, Pod } from '../api/core-v1.js';
import { machineAllocatable, type NodeAllocatable } from '../api/node.js';
import { isNotFound } from '../cri/errors.js';
import type {
  DNSConfig,
  ImageService,
  Mount,
  PodSandboxConfig,
  RuntimeService,
  VersionResponse,
} from '../cri/types.js';
import { Backoff } from '../lib/backoff.js';
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { MetricsRegistry } from '../lib/metrics.js';
import {
  computePodActions,
  isRestartableInitContainer,
  doBackOff,
  findContainerStatusByName,
  type ContainerKillReason,
  type ProbeResults,
} from './compute-pod-actions.js';
import { generateContainerConfig, withContainerDefaults, type DeviceRunOptions } from './container-config.js';
import type { EnvSources } from './container-env.js';
import { ContainerGC, type GCPolicy } from './container-gc.js';
import { DEFAULT_QUOTA_PERIOD_US } from './container-resources.js';
import {
  calcRestartCountByLogDir,
  convertPodStatusToRunningPod,
  convertToKubeContainerStatus,
  determinePodSandboxIPs,
} from './container-status.js';
import { containerFieldPath, discardEvents, EventReason, type EventRecorder } from './event-recorder.js';
import { formatPod } from './format.js';
import type { PullSecret } from './docker-keyring.js';
import {
  ImagePuller,
  type ImagePullerOptions,
  type PodPullingTimeRecorder,
  type PullObserver,
} from './image-puller.js';
import {
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  KUBERNETES_POD_UID_LABEL,
} from './labels.js';
import { LifecycleHandlerRunner, type HandlerRunner } from './lifecycle-handler-runner.js';
import { readHostDNSConfig } from './pod-dns.js';
import type { PodStartSlots } from './pod-start-slots.js';
import { RunningPodAssembler } from './running-pods.js';
import { PodStartMetrics, type StartedContainerType } from './start-metrics.js';
import { makeHostsMount, shouldMountHostsFile } from './etc-hosts.js';
import {
  buildContainerLogsDirectory,
  generatePodHostNameAndDomain,
  generatePodSandboxConfig,
} from './sandbox-config.js';
import type {
  KubeContainerStatus,
  KubePodStatus,
  PodSyncResult,
  RunningContainer,
  RunningPod,
  Runtime,
  SyncResult,
} from './types.js';

const log = logger('kuberuntime');

/** Below this the kubelet never asks a container to stop: it spares a SIGKILL that 2 s of grace would avoid. */
export const MINIMUM_GRACE_PERIOD_SECONDS = 2;
/** The API server's default terminationGracePeriodSeconds. */
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;
// ext4's file name limit, for the legacy log symlinks.
const MAX_FILE_NAME_LENGTH = 255;

export interface KubeGenericRuntimeManagerOptions {
  runtimeService: RuntimeService;
  imageService: ImageService;
  clock?: Clock;
  /** The runtime's name for container IDs (`containerd://…`); create() takes it from Version. */
  runtimeName?: string;
  /** --pod-logs-dir (podLogsDir in the config file); default /var/log/pods. */
  podLogsDir?: string;
  /** --root-dir; default /var/lib/kubelet. */
  rootDir?: string;
  /** The RuntimeClass handler for RunPodSandbox ('' is the runtime's default). */
  runtimeHandler?: string;
  /**
   * Resolves pods' runtimeClassName to a handler (cluster mode). Without it, as upstream without an
   * API client, runtimeClassName is not looked up and every sandbox gets runtimeHandler.
   */
  runtimeClassManager?: RuntimeClassLookup;
  /** --resolv-conf; '' for none. Default /etc/resolv.conf. */
  resolvConf?: string;
  clusterDNS?: string[];
  clusterDomain?: string;
  nodeName: string;
  /** The node's IPs, for status.hostIP(s) and DNS without resolv.conf. */
  nodeIPs?: string[];
  /**
   * The pods' cgroup parent. Upstream's cgroup manager computes `/kubepods/<qos>/pod<uid>`; until this
   * kubelet has one that creates those cgroups, the default '' lets the runtime choose.
   */
  cgroupParent?: string | ((pod: Pod) => string);
  /**
   * --pod-infra-container-image. Not pulled here: like upstream since 1.27, the sandbox image is the
   * runtime's own setting (containerd's sandbox_image); this only tells image GC what to spare.
   */
  podInfraContainerImage?: string;
  /** --cpu-cfs-quota (default true) and --cpu-cfs-quota-period (default 100 ms). */
  cpuCFSQuota?: boolean;
  cpuCFSQuotaPeriodUs?: number;
  /** --seccomp-default (default false). */
  seccompDefault?: boolean;
  /** The node's memory for OOM scores; default the machine's. */
  memoryCapacityBytes?: number;
  /** What downward-API resource limits default to; default the machine's CPUs and memory. */
  nodeAllocatable?: NodeAllocatable | (() => NodeAllocatable | undefined);
  /** Where the legacy `<pod>_<ns>_<container>-<id>.log` symlinks go; default /var/log/containers, '' for none. */
  legacyContainerLogsDir?: string;
  recorder?: EventRecorder;
  /** configMap, secret and service lookups for env; without them such references fail as upstream's do without a client. */
  envSources?: EnvSources;
  /** The pod's image pull secrets (cluster mode); without it pulls go without credentials. */
  pullSecrets?: PullSecretSource;
  /** The node's credential provider plugins, asked after the pod's pull secrets. */
  credentialProviders?: ImagePullerOptions['credentialProviders'];
  /** Bounds how many new sandboxes are being started at once (pod-start-slots.ts); none: no bound, as upstream. */
  podStartSlots?: PodStartSlots;
  /** Where upstream's pod-start metrics go (start-metrics.ts); absent, they are not kept. */
  metrics?: MetricsRegistry;
  /** serializeImagePulls (default true), maxParallelImagePulls, registryPullQPS (default 0 here: no limit) and registryBurst. */
  serializeImagePulls?: boolean;
  /** Told of each image pull while it runs (the node's pull progress tracker). */
  pullObserver?: PullObserver;
  /** Told of each pod's image pulls, for the pod startup latency SLI. */
  pullingTimeRecorder?: PodPullingTimeRecorder;
  maxParallelImagePulls?: number;
  registryPullQPS?: number;
  registryBurst?: number;
  /** Liveness and startup verdicts from the prober. */
  probeResults?: ProbeResults;
  /** What the container's devices bring, from the device manager; throws when a plugin fails it. */
  deviceRunContainerOptions?: (pod: Pod, container: Container) => Promise<DeviceRunOptions | undefined>;
  /** The container's volume mounts, from the volume manager (podIPs: for subPathExpr's env). */
  volumeMounts?: (pod: Pod, container: Container, podIPs: string[]) => Mount[] | Promise<Mount[]>;
  /** True once the pod is being deleted: a sandbox that then fails to start is not an error. */
  isPodTerminationRequested?: (uid: string) => boolean;
  /** Image pull back-off; default 10 s doubling to 300 s. */
  imageBackoff?: Backoff;
  gcPolicy?: GCPolicy;
  handlerRunner?: HandlerRunner;
  /** The Kubernetes version this kubelet implements, for HTTP hooks' User-Agent. */
  kubernetesVersion?: string;
  /** The node's hosts file, copied into host-network pods; default /etc/hosts. */
  nodeHostsFile?: string;
}

type StartFailure = { reason: string; message: string };

/** The node's allocatable resources, as its Node status shows them. */

/** The RuntimeClass handler a pod's sandbox runs with (upstream runtimeclass.Manager). */
export interface RuntimeClassLookup {
  /** '' for no class; throws when the class is not known. */
  lookupRuntimeHandler(runtimeClassName: string | undefined): string;
}

/** Where a pod's image pull secrets come from: the secret's type and decoded data, undefined when it does not exist. */
export interface PullSecretSource {
  getImagePullSecret(
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<{ type?: string; data: Record<string, string> } | undefined>;
}

export class KubeGenericRuntimeManager implements Runtime {
  readonly type: string;
  private readonly runtimeService: RuntimeService;
  private readonly imageService: ImageService;
  private readonly clock: Clock;
  private readonly podLogsDir: string;
  private readonly rootDir: string;
  private readonly runtimeHandler: string;
  private readonly resolvConf: string;
  private readonly recorder: EventRecorder;
  private readonly imagePuller: ImagePuller;
  private readonly handlerRunner: HandlerRunner;
  private readonly gc: ContainerGC;
  private readonly legacyContainerLogsDir: string;
  /**
   * The machine's memory and CPUs, read once: os.totalmem() and os.cpus() read /proc synchronously,
   * on the event loop, and every container start needed them (the memory for its OOM score; both
   * for the downward API when there is no Node whose allocatable stands in, as in standalone mode).
   */
  private readonly memoryCapacityBytes: number;
  private readonly machineAllocatable: NodeAllocatable;
  /** getPods(true) and getPods(false), each reusing the pods of its own last listing. */
  private readonly allPods = new RunningPodAssembler();
  private readonly runningPods = new RunningPodAssembler();
  private legacyDirReady: Promise<void> | undefined;
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
    this.runtimeService = opts.runtimeService;
    this.imageService = opts.imageService;
    this.clock = opts.clock ?? realClock;
    this.type = opts.runtimeName ?? 'containerd';
    this.podLogsDir = opts.podLogsDir ?? '/var/log/pods';
    this.rootDir = opts.rootDir ?? '/var/lib/kubelet';
    this.runtimeHandler = opts.runtimeHandler ?? '';
    this.resolvConf = opts.resolvConf ?? '/etc/resolv.conf';
    this.recorder = opts.recorder ?? discardEvents;
    this.legacyContainerLogsDir = opts.legacyContainerLogsDir ?? '/var/log/containers';
    this.machineAllocatable = machineAllocatable();
    this.startMetrics = opts.metrics ? new PodStartMetrics(opts.metrics) : undefined;
    this.memoryCapacityBytes = opts.memoryCapacityBytes ?? Number(this.machineAllocatable.memory);
    this.imagePuller = new ImagePuller({
      imageService: this.imageService,
      backoff: opts.imageBackoff ?? new Backoff(this.clock, 10_000, 300_000),
      clock: this.clock,
      recorder: this.recorder,
      runtimeHandler: this.runtimeHandler,
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
    this.gc = new ContainerGC({
      runtimeService: this.runtimeService,
      clock: this.clock,
      podLogsDir: this.podLogsDir,
      legacyContainerLogsDir: this.legacyContainerLogsDir,
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
    const slot: { release?: () => void } = {};
    try {
      return await this.syncPodUsingSlot(pod, podStatus, backoff, slot, signal);
    } finally {
      slot.release?.();
    }
  }

  private async syncPodUsingSlot(
    pod: Pod,
    podStatus: KubePodStatus,
    backoff: Backoff,
    slot: { release?: () => void },
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

    if (changes.killPod) {
      const killResults = await this.killPodWithSyncResult(
        pod,
        convertPodStatusToRunningPod(podStatus),
        undefined,
      );
      results.push(...killResults);
      if (killResults.some((r) => r.reason !== undefined)) return done();
      if (changes.createSandbox) await this.purgeInitContainers(pod, podStatus);
    } else {
      for (const k of changes.containersToKill.values()) {
        const r: SyncResult = { action: 'KillContainer', target: k.name };
        results.push(r);
        try {
          await this.killContainer(pod, k.id, k.name, k.message, k.reason, undefined);
        } catch (err) {
          r.reason = 'KillContainerError';
          r.message = errorMessage(err);
          log.error('killContainer for pod failed', {
            containerName: k.name,
            containerID: k.id,
            pod: formatPod(pod),
            err: r.message,
          });
          return done();
        }
      }
    }

    await this.pruneInitContainersBeforeStart(pod, podStatus);

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

    let podIPs = podStatus.ips;
    // resolv.conf is read once per sync, so that the sandbox and every container see one version.
    let hostDNS: DNSConfig | undefined;
    let hostDNSError: unknown;
    try {
      hostDNS = await readHostDNSConfig(this.resolvConf, signal);
    } catch (err) {
      hostDNSError = err;
    }
    const sandboxConfigFor = (attempt: number): PodSandboxConfig => {
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

    let podSandboxId = changes.sandboxId;
    if (changes.createSandbox && this.opts.podStartSlots) {
      // Stopped before or while it waits (the pod is terminating, or the kubelet stops): no sandbox.
      if (signal?.aborted) return done();
      try {
        slot.release = await this.opts.podStartSlots.acquire(pod, signal);
      } catch {
        return done();
      }
    }
    if (changes.createSandbox) {
      const r: SyncResult = { action: 'CreatePodSandbox', target: formatPod(pod) };
      results.push(r);
      this.startMetrics?.podStarting();
      const created = await this.createPodSandbox(pod, () => sandboxConfigFor(changes.attempt), signal);
      if (!created.ok) {
        // A pod deleted while its sandbox was being made is not a failure worth reporting.
        if (this.opts.isPodTerminationRequested?.(pod.metadata.uid ?? '')) {
          results.pop();
          return done();
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
        return done();
      }
      podSandboxId = created.id;
      try {
        const resp = await this.runtimeService.podSandboxStatus(podSandboxId, false, { signal });
        // A host-network pod has the node's IPs; the sandbox has none to report.
        if (!pod.spec.hostNetwork) podIPs = determinePodSandboxIPs(resp.status);
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
        return done(errorMessage(err));
      }
    }
    // A host-network pod's IPs are the node's; the kubelet above normally says so, this covers it when not.
    if (pod.spec.hostNetwork && podIPs.length === 0) podIPs = this.opts.nodeIPs ?? [];
    const podIP = podIPs[0] ?? '';

    const configResult: SyncResult = { action: 'ConfigPodSandbox', target: podSandboxId };
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

    const start = async (
      container: Container,
      type: StartedContainerType,
      targetContainerName?: string,
    ): Promise<boolean> => {
      const r: SyncResult = { action: 'StartContainer', target: container.name };
      results.push(r);
      const wait = doBackOff(pod, container, podStatus, backoff);
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
        return false;
      }
      this.startMetrics?.containerStarting(type);
      const failure = await this.startContainer(
        targetContainerName,
        podSandboxId,
        sandboxConfig,
        container,
        pod,
        podStatus,
        podIP,
        podIPs,
        signal,
        getPullSecrets,
      );
      if (failure) {
        r.reason = failure.reason;
        r.message = failure.message;
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
    };

    // Ephemeral containers first, so that a pod whose init container fails to start can be debugged.
    for (const idx of changes.ephemeralContainersToStart) {
      const ec = pod.spec.ephemeralContainers?.[idx];
      if (ec) await start(ec, 'ephemeral_container', ec.targetContainerName ?? '');
    }
    for (const idx of changes.initContainersToStart) {
      const init = pod.spec.initContainers?.[idx];
      if (!init) continue;
      if (!(await start(init, 'init_container'))) {
        // A sidecar that failed to start does not hold up the others; a regular init container does.
        if (isRestartableInitContainer(init)) continue;
        return done();
      }
      log.v(4, 'Started init container for pod', { containerName: init.name, pod: formatPod(pod) });
    }
    for (const idx of changes.containersToStart) {
      const container = pod.spec.containers[idx];
      if (container) await start(container, 'container');
    }
    return done();
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

  /** What a container's missing limits read as in the downward API: the node's allocatable (upstream getNodeAnyWay). */
  private nodeAllocatable(): NodeAllocatable {
    const a = this.opts.nodeAllocatable;
    const given = typeof a === 'function' ? a() : a;
    return given ?? this.machineAllocatable;
  }

  private cgroupParentFor(pod: Pod): string {
    const c = this.opts.cgroupParent;
    return typeof c === 'function' ? c(pod) : (c ?? '');
  }

  private async createPodSandbox(
    pod: Pod,
    makeConfig: () => PodSandboxConfig,
    signal: AbortSignal | undefined,
  ): Promise<{ ok: true; id: string } | { ok: false; message: string; error: string }> {
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
    let runtimeHandler = this.runtimeHandler;
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
      const id = await this.runtimeService.runPodSandbox(config, runtimeHandler, { signal });
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

  /** Pull, create, start, postStart hook. Returns the failure, or undefined when the container started. */
  private async startContainer(
    /** An ephemeral container's targetContainerName ('' for none); undefined for other containers. */
    targetContainerName: string | undefined,
    podSandboxId: string,
    sandboxConfig: PodSandboxConfig,
    rawContainer: Container,
    pod: Pod,
    podStatus: KubePodStatus,
    podIP: string,
    podIPs: string[],
    signal: AbortSignal | undefined,
    pullSecrets?: () => Promise<PullSecret[]>,
  ): Promise<StartFailure | undefined> {
    const container = withContainerDefaults(rawContainer);
    const fieldPath = containerFieldPath(pod, container.name);
    const warn = (message: string): void =>
      this.recorder.event(pod, fieldPath, 'Warning', EventReason.FailedToCreateContainer, message);

    // An ephemeral container's target must exist before anything is pulled (upstream getTargetID).
    let targetContainerId: string | undefined;
    if (targetContainerName) {
      const target = findContainerStatusByName(podStatus, targetContainerName);
      if (!target) {
        const message = `unable to find target container ${targetContainerName}`;
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
      pullSecrets,
    );
    if (!pulled.ok) {
      warn(`Error: ${pulled.reason}`);
      return { reason: pulled.reason, message: pulled.message };
    }

    const previous = findContainerStatusByName(podStatus, container.name);
    const restartCount = previous
      ? previous.restartCount + 1
      : await calcRestartCountByLogDir(buildContainerLogsDirectory(this.podLogsDir, pod, container.name));

    let config;
    try {
      const image =
        pulled.image ?? (await this.imageService.imageStatus({ image: pulled.imageRef }, false, { signal }));
      config = await generateContainerConfig(
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
          seccompDefault: this.opts.seccompDefault ?? false,
          envSources: this.opts.envSources ?? {},
          recorder: this.recorder,
          volumeMounts: await this.containerMounts(pod, container, podIPs),
          devices: await this.opts.deviceRunContainerOptions?.(pod, container),
          signal,
        },
      );
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

    if (container.lifecycle?.postStart) {
      const hook = await this.handlerRunner.run(
        containerId,
        pod,
        container,
        container.lifecycle.postStart,
        podIP,
        signal,
      );
      if (!hook.ok) {
        log.error('Failed to execute PostStartHook', {
          pod: formatPod(pod),
          containerName: container.name,
          containerID: containerId,
          err: hook.message,
        });
        // The message may carry secrets from the hook's output: the event does not.
        this.recorder.event(
          pod,
          fieldPath,
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
    }
    return undefined;
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
    const turns = terminationTurns(pod, runningPod.containers);
    const results = await Promise.all(
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
    const sandboxResult: SyncResult = { action: 'KillPodSandbox', target: runningPod.uid };
    results.push(sandboxResult);
    for (const s of runningPod.sandboxes) {
      try {
        await this.runtimeService.stopPodSandbox(s.id);
      } catch (err) {
        if (isNotFound(err)) continue;
        sandboxResult.reason = 'KillPodSandboxError';
        sandboxResult.message = errorMessage(err);
        log.error('Failed to stop sandbox', { podSandboxID: s.id, err: sandboxResult.message });
      }
    }
    return results;
  }

  /**
   * preStop hook, then StopContainer with what is left of the grace period (at least 2 s). Without
   * the pod (after a restart of the kubelet), what the container's labels and annotations recorded
   * stands in for it.
   */
  private async killContainer(
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
  private async pruneInitContainersBeforeStart(pod: Pod, podStatus: KubePodStatus): Promise<void> {
    for (const init of pod.spec.initContainers ?? []) {
      const dead = podStatus.containerStatuses
        .filter((s) => s.name === init.name && (s.state === 'exited' || s.state === 'unknown'))
        .sort((a, b) => b.createdAtMs - a.createdAtMs || b.restartCount - a.restartCount);
      for (const s of dead.slice(1)) await this.removeContainerLogged(pod, s);
    }
  }

  /** A new sandbox starts initialization over: every old init container goes. */
  private async purgeInitContainers(pod: Pod, podStatus: KubePodStatus): Promise<void> {
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

  async getPodStatus(
    uid: string,
    name: string,
    namespace: string,
    listed?: RunningPod,
    previous?: KubePodStatus,
  ): Promise<KubePodStatus> {
    // Upstream lists the pod's sandboxes and containers again here; a relist has just listed them
    // all, and two calls fewer per changed pod is a quarter of a pod start's CRI calls.
    const sandboxes = listed
      ? listed.sandboxes.map((s) => ({ id: s.id, createdAt: s.createdAtNs, ready: s.state === 'ready' }))
      : (
          await this.runtimeService.listPodSandbox({ labelSelector: { [KUBERNETES_POD_UID_LABEL]: uid } })
        ).map((s) => ({ id: s.id, createdAt: s.createdAt, ready: s.state === 'SANDBOX_READY' }));
    sandboxes.sort((a, b) => b.createdAt - a.createdAt);
    // The sandboxes and the containers are read side by side: one round trip instead of two.
    const [sandboxStatuses, containerStatuses] = await Promise.all([
      Promise.all(
        sandboxes.map(async (s) => {
          // A sandbox's status changes only with its state, which the listing shows: a sandbox
          // read before in the same state is not read again (its IPs are set when it is made).
          const known = previous?.sandboxStatuses.find((p) => p.id === s.id);
          if (known && (known.state === 'SANDBOX_READY') === s.ready) return known;
          try {
            return (await this.runtimeService.podSandboxStatus(s.id, false)).status;
          } catch (err) {
            // Removed between the list and this call: as if it had not been listed.
            if (isNotFound(err)) return undefined;
            throw err;
          }
        }),
      ),
      this.getPodContainerStatuses(uid, listed?.containers),
    ]);
    const found = sandboxStatuses.filter((s) => s !== undefined);
    // Only the newest sandbox's IPs are the pod's.
    const newest = sandboxStatuses[0];
    const ips = newest?.state === 'SANDBOX_READY' ? determinePodSandboxIPs(newest) : [];
    return {
      uid,
      name,
      namespace,
      ips,
      sandboxStatuses: found,
      containerStatuses,
      timestampMs: this.clock.now(),
    };
  }

  private async getPodContainerStatuses(
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

  async getPods(all: boolean): Promise<RunningPod[]> {
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
