/**
 * The `kubelet.config.k8s.io/v1beta1` KubeletConfiguration in two shapes:
 *
 * - `KubeletConfiguration` is the file as written: upstream's camelCase field names, durations as
 *   Go duration strings (`"1m"`), every field optional. Flags are applied onto this shape.
 * - `ResolvedKubeletConfig` is what the rest of the kubelet reads: defaults applied, every field
 *   present, each duration parsed into a number whose name carries its unit (`syncFrequency` →
 *   `syncFrequencyMs`), quantities kept as written and also parsed where the kubelet does arithmetic
 *   with them (`containerLogMaxSizeBytes`). Every other field keeps upstream's name and meaning.
 *
 * docs/flags.md is the reference of each field, its flag and its default.
 */

import type { MemoryReservation } from '../cm/memorymanager/reserved-memory.js';
import { KubeletError } from '../lib/errors.js';
import { DurationError, parseGoDurationMs } from '../lib/go-duration.js';
import { approximateValue, parseQuantity } from '../api/quantity.js';
import { validateResolved } from './kubelet-config-validation.js';

import { KUBELET_CONFIG_KIND } from './kubelet-config-schema.js';

export {
  checkConfigurationShape,
  KUBELET_CONFIG_API_VERSION,
  KUBELET_CONFIG_KIND,
  knownConfigFields,
} from './kubelet-config-schema.js';
export {
  EVICTION_SIGNALS,
  isDNS1123Subdomain,
  isLabelValue,
  isPercentage,
  isQualifiedName,
} from './kubelet-config-validation.js';

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

/** A taint as registerWithTaints carries it (core/v1 Taint). */
export interface NodeTaint {
  key: string;
  value?: string;
  effect: TaintEffect;
  timeAdded?: string;
}

export interface KubeletAuthentication {
  x509?: { clientCAFile?: string };
  webhook?: { enabled?: boolean; cacheTTL?: string };
  anonymous?: { enabled?: boolean };
}

export interface KubeletAuthorization {
  mode?: string;
  webhook?: { cacheAuthorizedTTL?: string; cacheUnauthorizedTTL?: string };
}

export interface LoggingConfiguration {
  format?: string;
  flushFrequency?: string | number;
  verbosity?: number;
  vmodule?: unknown[];
  options?: Record<string, unknown>;
}

/** The file's shape (upstream k8s.io/kubelet/config/v1beta1.KubeletConfiguration), as it is written. */
export interface KubeletConfiguration {
  apiVersion?: string;
  kind?: string;
  enableServer?: boolean;
  staticPodPath?: string;
  podLogsDir?: string;
  syncFrequency?: string;
  fileCheckFrequency?: string;
  httpCheckFrequency?: string;
  staticPodURL?: string;
  staticPodURLHeader?: Record<string, string[]>;
  address?: string;
  port?: number;
  readOnlyPort?: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  tlsCipherSuites?: string[];
  tlsMinVersion?: string;
  rotateCertificates?: boolean;
  serverTLSBootstrap?: boolean;
  authentication?: KubeletAuthentication;
  authorization?: KubeletAuthorization;
  registryPullQPS?: number;
  registryBurst?: number;
  eventRecordQPS?: number;
  eventBurst?: number;
  enableDebuggingHandlers?: boolean;
  enableContentionProfiling?: boolean;
  healthzPort?: number;
  healthzBindAddress?: string;
  oomScoreAdj?: number;
  clusterDomain?: string;
  clusterDNS?: string[];
  streamingConnectionIdleTimeout?: string;
  nodeStatusUpdateFrequency?: string;
  nodeStatusReportFrequency?: string;
  nodeLeaseDurationSeconds?: number;
  imageMinimumGCAge?: string;
  imageMaximumGCAge?: string;
  imageGCHighThresholdPercent?: number;
  imageGCLowThresholdPercent?: number;
  volumeStatsAggPeriod?: string;
  kubeletCgroups?: string;
  systemCgroups?: string;
  cgroupRoot?: string;
  cgroupsPerQOS?: boolean;
  cgroupDriver?: string;
  cpuManagerPolicy?: string;
  cpuManagerPolicyOptions?: Record<string, string>;
  cpuManagerReconcilePeriod?: string;
  memoryManagerPolicy?: string;
  topologyManagerPolicy?: string;
  topologyManagerScope?: string;
  topologyManagerPolicyOptions?: Record<string, string>;
  runtimeRequestTimeout?: string;
  hairpinMode?: string;
  maxPods?: number;
  podCIDR?: string;
  podPidsLimit?: number;
  resolvConf?: string;
  runOnce?: boolean;
  cpuCFSQuota?: boolean;
  cpuCFSQuotaPeriod?: string;
  nodeStatusMaxImages?: number;
  maxOpenFiles?: number;
  contentType?: string;
  kubeAPIQPS?: number;
  kubeAPIBurst?: number;
  serializeImagePulls?: boolean;
  maxParallelImagePulls?: number;
  evictionHard?: Record<string, string>;
  evictionSoft?: Record<string, string>;
  evictionSoftGracePeriod?: Record<string, string>;
  evictionPressureTransitionPeriod?: string;
  evictionMaxPodGracePeriod?: number;
  evictionMinimumReclaim?: Record<string, string>;
  podsPerCore?: number;
  enableControllerAttachDetach?: boolean;
  protectKernelDefaults?: boolean;
  makeIPTablesUtilChains?: boolean;
  featureGates?: Record<string, boolean>;
  failSwapOn?: boolean;
  memorySwap?: { swapBehavior?: string };
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
  containerLogMaxWorkers?: number;
  containerLogMonitorInterval?: string;
  configMapAndSecretChangeDetectionStrategy?: string;
  systemReserved?: Record<string, string>;
  kubeReserved?: Record<string, string>;
  reservedSystemCPUs?: string;
  /** Per NUMA node, memory and huge pages kept for the system (the Static memory manager's). */
  reservedMemory?: { numaNode?: number; limits?: Record<string, string | number> }[];
  systemReservedCgroup?: string;
  kubeReservedCgroup?: string;
  enforceNodeAllocatable?: string[];
  allowedUnsafeSysctls?: string[];
  volumePluginDir?: string;
  providerID?: string;
  kernelMemcgNotification?: boolean;
  logging?: LoggingConfiguration;
  enableSystemLogHandler?: boolean;
  enableSystemLogQuery?: boolean;
  shutdownGracePeriod?: string;
  shutdownGracePeriodCriticalPods?: string;
  shutdownGracePeriodByPodPriority?: { priority?: number; shutdownGracePeriodSeconds?: number }[];
  enableProfilingHandler?: boolean;
  enableDebugFlagsHandler?: boolean;
  seccompDefault?: boolean;
  memoryThrottlingFactor?: number;
  registerWithTaints?: NodeTaint[];
  registerNode?: boolean;
  localStorageCapacityIsolation?: boolean;
  containerRuntimeEndpoint?: string;
  imageServiceEndpoint?: string;
  failCgroupV1?: boolean;
}

/** The configuration the kubelet runs with: defaults applied, flags applied, validated. */
export interface ResolvedKubeletConfig {
  enableServer: boolean;
  /** '' when there is no static pod folder or file. */
  staticPodPath: string;
  podLogsDir: string;
  syncFrequencyMs: number;
  fileCheckFrequencyMs: number;
  httpCheckFrequencyMs: number;
  /** '' when there is no manifest URL. */
  staticPodURL: string;
  staticPodURLHeader: Record<string, string[]>;
  address: string;
  port: number;
  /** 0: the read-only port is disabled. */
  readOnlyPort: number;
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  tlsCipherSuites: string[];
  tlsMinVersion: string;
  rotateCertificates: boolean;
  serverTLSBootstrap: boolean;
  authentication: {
    x509: { clientCAFile: string };
    webhook: { enabled: boolean; cacheTTLMs: number };
    anonymous: { enabled: boolean };
  };
  authorization: {
    mode: 'AlwaysAllow' | 'Webhook';
    webhook: { cacheAuthorizedTTLMs: number; cacheUnauthorizedTTLMs: number };
  };
  registryPullQPS: number;
  registryBurst: number;
  eventRecordQPS: number;
  eventBurst: number;
  enableDebuggingHandlers: boolean;
  enableContentionProfiling: boolean;
  /** 0: the healthz server is disabled. */
  healthzPort: number;
  healthzBindAddress: string;
  oomScoreAdj: number;
  clusterDomain: string;
  clusterDNS: string[];
  streamingConnectionIdleTimeoutMs: number;
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  nodeLeaseDurationSeconds: number;
  imageMinimumGCAgeMs: number;
  /** 0: images are not collected for age alone. */
  imageMaximumGCAgeMs: number;
  imageGCHighThresholdPercent: number;
  imageGCLowThresholdPercent: number;
  volumeStatsAggPeriodMs: number;
  kubeletCgroups: string;
  systemCgroups: string;
  cgroupRoot: string;
  cgroupsPerQOS: boolean;
  cgroupDriver: 'cgroupfs' | 'systemd';
  cpuManagerPolicy: string;
  cpuManagerPolicyOptions: Record<string, string>;
  cpuManagerReconcilePeriodMs: number;
  memoryManagerPolicy: string;
  topologyManagerPolicy: string;
  topologyManagerScope: string;
  topologyManagerPolicyOptions: Record<string, string>;
  runtimeRequestTimeoutMs: number;
  hairpinMode: 'promiscuous-bridge' | 'hairpin-veth' | 'none';
  maxPods: number;
  podCIDR: string;
  /** -1: no per-pod limit beyond the node's. */
  podPidsLimit: number;
  /** '' disables inheriting the host's resolver configuration. */
  resolvConf: string;
  runOnce: boolean;
  cpuCFSQuota: boolean;
  cpuCFSQuotaPeriodMs: number;
  nodeStatusMaxImages: number;
  maxOpenFiles: number;
  contentType: string;
  kubeAPIQPS: number;
  kubeAPIBurst: number;
  serializeImagePulls: boolean;
  /** undefined: no limit beyond serializeImagePulls. */
  maxParallelImagePulls: number | undefined;
  evictionHard: Record<string, string>;
  evictionSoft: Record<string, string>;
  evictionSoftGracePeriodMs: Record<string, number>;
  evictionPressureTransitionPeriodMs: number;
  evictionMaxPodGracePeriod: number;
  evictionMinimumReclaim: Record<string, string>;
  podsPerCore: number;
  enableControllerAttachDetach: boolean;
  protectKernelDefaults: boolean;
  makeIPTablesUtilChains: boolean;
  featureGates: Record<string, boolean>;
  failSwapOn: boolean;
  memorySwap: { swapBehavior: string };
  containerLogMaxSize: string;
  containerLogMaxSizeBytes: number;
  containerLogMaxFiles: number;
  containerLogMaxWorkers: number;
  containerLogMonitorIntervalMs: number;
  configMapAndSecretChangeDetectionStrategy: string;
  systemReserved: Record<string, string>;
  kubeReserved: Record<string, string>;
  reservedSystemCPUs: string;
  reservedMemory: MemoryReservation[];
  systemReservedCgroup: string;
  kubeReservedCgroup: string;
  enforceNodeAllocatable: string[];
  allowedUnsafeSysctls: string[];
  volumePluginDir: string;
  providerID: string;
  kernelMemcgNotification: boolean;
  logging: {
    format: string;
    flushFrequencyMs: number;
    verbosity: number;
    vmodule: { filePattern: string; verbosity: number }[];
  };
  enableSystemLogHandler: boolean;
  enableSystemLogQuery: boolean;
  shutdownGracePeriodMs: number;
  shutdownGracePeriodCriticalPodsMs: number;
  shutdownGracePeriodByPodPriority: { priority: number; shutdownGracePeriodSeconds: number }[];
  enableProfilingHandler: boolean;
  enableDebugFlagsHandler: boolean;
  seccompDefault: boolean;
  memoryThrottlingFactor: number;
  registerWithTaints: NodeTaint[];
  registerNode: boolean;
  localStorageCapacityIsolation: boolean;
  containerRuntimeEndpoint: string;
  /** Equals containerRuntimeEndpoint when the file and flags leave it empty (upstream). */
  imageServiceEndpoint: string;
  failCgroupV1: boolean;
}

// ---------------------------------------------------------------------------------------------
// Defaults.

/** Upstream's DefaultEvictionHard for Linux. */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
};

/**
 * Fills what the file leaves unset with upstream's v1beta1 defaults (SetDefaults_KubeletConfiguration);
 * returns a new object. Defaults that depend on other fields (nodeStatusReportFrequency,
 * serializeImagePulls) are decided from what the file said, as upstream does.
 */
export function applyV1beta1Defaults(file: KubeletConfiguration): KubeletConfiguration {
  const c: KubeletConfiguration = structuredClone(file);
  c.enableServer ??= true;
  c.syncFrequency = nonZeroDuration(c.syncFrequency) ?? '1m';
  c.fileCheckFrequency = nonZeroDuration(c.fileCheckFrequency) ?? '20s';
  c.httpCheckFrequency = nonZeroDuration(c.httpCheckFrequency) ?? '20s';
  c.address ||= '0.0.0.0';
  c.port ||= 10250;
  c.authentication = {
    x509: { ...c.authentication?.x509 },
    webhook: {
      enabled: c.authentication?.webhook?.enabled ?? true,
      cacheTTL: nonZeroDuration(c.authentication?.webhook?.cacheTTL) ?? '2m',
    },
    anonymous: { enabled: c.authentication?.anonymous?.enabled ?? false },
  };
  c.authorization = {
    mode: c.authorization?.mode || 'Webhook',
    webhook: {
      cacheAuthorizedTTL: nonZeroDuration(c.authorization?.webhook?.cacheAuthorizedTTL) ?? '5m',
      cacheUnauthorizedTTL: nonZeroDuration(c.authorization?.webhook?.cacheUnauthorizedTTL) ?? '30s',
    },
  };
  c.registryPullQPS ??= 5;
  c.registryBurst ||= 10;
  c.eventRecordQPS ??= 50;
  c.eventBurst ||= 100;
  c.enableDebuggingHandlers ??= true;
  c.healthzPort ??= 10248;
  c.healthzBindAddress ||= '127.0.0.1';
  c.oomScoreAdj ??= -999;
  c.streamingConnectionIdleTimeout = nonZeroDuration(c.streamingConnectionIdleTimeout) ?? '4h';
  // An explicit update frequency also becomes the report frequency, for compatibility (upstream).
  const updateFrequency = nonZeroDuration(c.nodeStatusUpdateFrequency);
  c.nodeStatusReportFrequency = nonZeroDuration(c.nodeStatusReportFrequency) ?? updateFrequency ?? '5m';
  c.nodeStatusUpdateFrequency = updateFrequency ?? '10s';
  c.nodeLeaseDurationSeconds ||= 40;
  c.imageMinimumGCAge = nonZeroDuration(c.imageMinimumGCAge) ?? '2m';
  c.imageMaximumGCAge ??= '0s';
  c.imageGCHighThresholdPercent ??= 85;
  c.imageGCLowThresholdPercent ??= 80;
  c.volumeStatsAggPeriod = nonZeroDuration(c.volumeStatsAggPeriod) ?? '1m';
  c.cgroupsPerQOS ??= true;
  c.cgroupDriver ||= 'cgroupfs';
  c.cpuManagerPolicy ||= 'none';
  c.cpuManagerReconcilePeriod = nonZeroDuration(c.cpuManagerReconcilePeriod) ?? '10s';
  c.memoryManagerPolicy ||= 'None';
  c.topologyManagerPolicy ||= 'none';
  c.topologyManagerScope ||= 'container';
  c.runtimeRequestTimeout = nonZeroDuration(c.runtimeRequestTimeout) ?? '2m';
  c.hairpinMode ||= 'promiscuous-bridge';
  c.maxPods ||= 110;
  if (c.podPidsLimit === undefined || c.podPidsLimit < 0) c.podPidsLimit = -1;
  c.resolvConf ??= '/etc/resolv.conf';
  c.cpuCFSQuota ??= true;
  c.cpuCFSQuotaPeriod ??= '100ms';
  c.nodeStatusMaxImages ??= 50;
  c.maxOpenFiles ||= 1_000_000;
  c.contentType ||= 'application/vnd.kubernetes.protobuf';
  c.kubeAPIQPS ??= 50;
  c.kubeAPIBurst ||= 100;
  // Setting maxParallelImagePulls above 1 implies parallel pulls, so users need not set both.
  c.serializeImagePulls ??= c.maxParallelImagePulls === undefined || c.maxParallelImagePulls < 2;
  c.evictionHard ??= { ...DEFAULT_EVICTION_HARD };
  c.evictionPressureTransitionPeriod = nonZeroDuration(c.evictionPressureTransitionPeriod) ?? '5m';
  c.enableControllerAttachDetach ??= true;
  c.makeIPTablesUtilChains ??= true;
  c.failSwapOn ??= true;
  c.containerLogMaxSize ||= '10Mi';
  c.containerLogMaxFiles ??= 5;
  c.containerLogMaxWorkers ??= 1;
  c.containerLogMonitorInterval ??= '10s';
  c.configMapAndSecretChangeDetectionStrategy ||= 'Watch';
  c.enforceNodeAllocatable ??= ['pods'];
  c.volumePluginDir ||= '/usr/libexec/kubernetes/kubelet-plugins/volume/exec/';
  c.logging = {
    ...c.logging,
    format: c.logging?.format || 'text',
    flushFrequency: c.logging?.flushFrequency ?? '5s',
  };
  c.logging.verbosity ??= 0;
  c.enableSystemLogHandler ??= true;
  c.enableProfilingHandler ??= true;
  c.enableDebugFlagsHandler ??= true;
  c.seccompDefault ??= false;
  c.failCgroupV1 ??= false;
  c.memoryThrottlingFactor ??= 0.9;
  c.registerNode ??= true;
  c.localStorageCapacityIsolation ??= true;
  c.containerRuntimeEndpoint ||= 'unix:///run/containerd/containerd.sock';
  c.podLogsDir ||= '/var/log/pods';
  return c;
}

/**
 * Without a --config file upstream keeps the defaults its flags always had, which are looser
 * than the file's: anonymous requests allowed, no webhooks, and the read-only port open. What the
 * --config-dir drop-ins (`set`) say stays theirs.
 */
export function applyLegacyFlagDefaults(c: KubeletConfiguration, set: KubeletConfiguration = {}): void {
  c.authentication = {
    ...c.authentication,
    anonymous: { enabled: set.authentication?.anonymous?.enabled ?? true },
    webhook: { ...c.authentication?.webhook, enabled: set.authentication?.webhook?.enabled ?? false },
  };
  c.authorization = { ...c.authorization, mode: set.authorization?.mode ?? 'AlwaysAllow' };
  c.readOnlyPort = set.readOnlyPort ?? 10255;
}

// metav1.Duration's zero value ("0s", "0") means "unset" for most fields, so defaulting replaces it.
function nonZeroDuration(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  try {
    return parseGoDurationMs(value) === 0 ? undefined : value;
  } catch {
    return value; // left for validation to report with the field's name
  }
}

// ---------------------------------------------------------------------------------------------
// Resolution and validation.

/** Maps a field path (`maxPods`, `authentication.anonymous.enabled`) to its flag, for messages. */
export type FlagForField = (fieldPath: string) => string | undefined;

function fieldLabel(path: string, flagForField?: FlagForField): string {
  // `clusterDNS[0]` and `evictionHard.memory.available` are set by the flag of their field.
  let flag: string | undefined;
  for (let candidate = path.replace(/\[\d+\].*$/, ''); candidate !== '' && !flag;) {
    flag = flagForField?.(candidate);
    const dot = candidate.lastIndexOf('.');
    candidate = dot === -1 ? '' : candidate.slice(0, dot);
  }
  return `${KUBELET_CONFIG_KIND}.${path}${flag ? ` (--${flag})` : ''}`;
}

/** Parses a Go duration at a field's path into ms; a bad one is reported and reads as fallbackMs. */
type DurationAt = (path: string, value: string | undefined, fallbackMs?: number) => number;

/** The first part of the resolved fields, in the file's order: listeners, auth, API rates, node managers. */
function resolveListenersAndManagers(c: KubeletConfiguration, duration: DurationAt) {
  return {
    enableServer: c.enableServer ?? true,
    staticPodPath: c.staticPodPath ?? '',
    podLogsDir: c.podLogsDir ?? '/var/log/pods',
    syncFrequencyMs: duration('syncFrequency', c.syncFrequency),
    fileCheckFrequencyMs: duration('fileCheckFrequency', c.fileCheckFrequency),
    httpCheckFrequencyMs: duration('httpCheckFrequency', c.httpCheckFrequency),
    staticPodURL: c.staticPodURL ?? '',
    staticPodURLHeader: structuredClone(c.staticPodURLHeader ?? {}),
    address: c.address ?? '0.0.0.0',
    port: c.port ?? 10250,
    readOnlyPort: c.readOnlyPort ?? 0,
    tlsCertFile: c.tlsCertFile ?? '',
    tlsPrivateKeyFile: c.tlsPrivateKeyFile ?? '',
    tlsCipherSuites: [...(c.tlsCipherSuites ?? [])],
    tlsMinVersion: c.tlsMinVersion ?? '',
    rotateCertificates: c.rotateCertificates ?? false,
    serverTLSBootstrap: c.serverTLSBootstrap ?? false,
    authentication: {
      x509: { clientCAFile: c.authentication?.x509?.clientCAFile ?? '' },
      webhook: {
        enabled: c.authentication?.webhook?.enabled ?? true,
        cacheTTLMs: duration('authentication.webhook.cacheTTL', c.authentication?.webhook?.cacheTTL),
      },
      anonymous: { enabled: c.authentication?.anonymous?.enabled ?? false },
    },
    authorization: {
      mode: (c.authorization?.mode ?? 'Webhook') as 'AlwaysAllow' | 'Webhook',
      webhook: {
        cacheAuthorizedTTLMs: duration(
          'authorization.webhook.cacheAuthorizedTTL',
          c.authorization?.webhook?.cacheAuthorizedTTL,
        ),
        cacheUnauthorizedTTLMs: duration(
          'authorization.webhook.cacheUnauthorizedTTL',
          c.authorization?.webhook?.cacheUnauthorizedTTL,
        ),
      },
    },
    registryPullQPS: c.registryPullQPS ?? 5,
    registryBurst: c.registryBurst ?? 10,
    eventRecordQPS: c.eventRecordQPS ?? 50,
    eventBurst: c.eventBurst ?? 100,
    enableDebuggingHandlers: c.enableDebuggingHandlers ?? true,
    enableContentionProfiling: c.enableContentionProfiling ?? false,
    healthzPort: c.healthzPort ?? 10248,
    healthzBindAddress: c.healthzBindAddress ?? '127.0.0.1',
    oomScoreAdj: c.oomScoreAdj ?? -999,
    clusterDomain: c.clusterDomain ?? '',
    clusterDNS: [...(c.clusterDNS ?? [])],
    streamingConnectionIdleTimeoutMs: duration(
      'streamingConnectionIdleTimeout',
      c.streamingConnectionIdleTimeout,
    ),
    nodeStatusUpdateFrequencyMs: duration('nodeStatusUpdateFrequency', c.nodeStatusUpdateFrequency),
    nodeStatusReportFrequencyMs: duration('nodeStatusReportFrequency', c.nodeStatusReportFrequency),
    nodeLeaseDurationSeconds: c.nodeLeaseDurationSeconds ?? 40,
    imageMinimumGCAgeMs: duration('imageMinimumGCAge', c.imageMinimumGCAge),
    imageMaximumGCAgeMs: duration('imageMaximumGCAge', c.imageMaximumGCAge),
    imageGCHighThresholdPercent: c.imageGCHighThresholdPercent ?? 85,
    imageGCLowThresholdPercent: c.imageGCLowThresholdPercent ?? 80,
    volumeStatsAggPeriodMs: duration('volumeStatsAggPeriod', c.volumeStatsAggPeriod),
    kubeletCgroups: c.kubeletCgroups ?? '',
    systemCgroups: c.systemCgroups ?? '',
    cgroupRoot: c.cgroupRoot ?? '',
    cgroupsPerQOS: c.cgroupsPerQOS ?? true,
    cgroupDriver: (c.cgroupDriver ?? 'cgroupfs') as 'cgroupfs' | 'systemd',
    cpuManagerPolicy: c.cpuManagerPolicy ?? 'none',
    cpuManagerPolicyOptions: { ...c.cpuManagerPolicyOptions },
    cpuManagerReconcilePeriodMs: duration('cpuManagerReconcilePeriod', c.cpuManagerReconcilePeriod),
    memoryManagerPolicy: c.memoryManagerPolicy ?? 'None',
    topologyManagerPolicy: c.topologyManagerPolicy ?? 'none',
    topologyManagerScope: c.topologyManagerScope ?? 'container',
    topologyManagerPolicyOptions: { ...c.topologyManagerPolicyOptions },
    runtimeRequestTimeoutMs: duration('runtimeRequestTimeout', c.runtimeRequestTimeout),
    hairpinMode: (c.hairpinMode ?? 'promiscuous-bridge') as ResolvedKubeletConfig['hairpinMode'],
  };
}

/** shutdownGracePeriodByPodPriority with each entry's integers checked (a bad one is reported, reads 0). */
function shutdownGracePeriodsByPriority(
  c: KubeletConfiguration,
  errors: string[],
  label: (path: string) => string,
): ResolvedKubeletConfig['shutdownGracePeriodByPodPriority'] {
  return (c.shutdownGracePeriodByPodPriority ?? []).map((entry, i) => {
    const e = (entry ?? {}) as { priority?: unknown; shutdownGracePeriodSeconds?: unknown };
    const int = (key: 'priority' | 'shutdownGracePeriodSeconds'): number => {
      const v = e[key] ?? 0;
      if (typeof v === 'number' && Number.isInteger(v)) return v;
      errors.push(
        `${label(`shutdownGracePeriodByPodPriority[${i}].${key}`)}: expected an integer, got ${JSON.stringify(v)}`,
      );
      return 0;
    };
    return { priority: int('priority'), shutdownGracePeriodSeconds: int('shutdownGracePeriodSeconds') };
  });
}

/**
 * Turns a defaulted configuration into the resolved one and validates it (upstream's
 * ValidateKubeletConfiguration, the parts this kubelet uses). Throws INVALID_CONFIG naming every
 * bad field.
 */
export function resolveKubeletConfiguration(
  c: KubeletConfiguration,
  flagForField?: FlagForField,
): ResolvedKubeletConfig {
  const errors: string[] = [];
  const label = (path: string) => fieldLabel(path, flagForField);
  const duration = (path: string, value: string | undefined, fallbackMs = 0): number => {
    if (value === undefined || value === '') return fallbackMs;
    try {
      return parseGoDurationMs(value);
    } catch (err) {
      errors.push(`${label(path)}: ${err instanceof DurationError ? err.message : String(err)}`);
      return fallbackMs;
    }
  };

  const containerLogMaxSize = c.containerLogMaxSize ?? '10Mi';
  let containerLogMaxSizeBytes = 0;
  try {
    containerLogMaxSizeBytes = approximateValue(parseQuantity(containerLogMaxSize));
  } catch (err) {
    errors.push(
      `${label('containerLogMaxSize')}: invalid quantity ${JSON.stringify(containerLogMaxSize)}: ${(err as Error).message}`,
    );
  }

  const evictionSoftGracePeriodMs: Record<string, number> = {};
  for (const [signal, value] of Object.entries(c.evictionSoftGracePeriod ?? {})) {
    evictionSoftGracePeriodMs[signal] = duration(`evictionSoftGracePeriod.${signal}`, value);
  }

  const flushFrequency = c.logging?.flushFrequency;
  const flushFrequencyMs =
    typeof flushFrequency === 'number'
      ? flushFrequency / 1e6
      : duration('logging.flushFrequency', flushFrequency, 5000);

  const r: ResolvedKubeletConfig = {
    ...resolveListenersAndManagers(c, duration),
    maxPods: c.maxPods ?? 110,
    podCIDR: c.podCIDR ?? '',
    podPidsLimit: c.podPidsLimit ?? -1,
    resolvConf: c.resolvConf ?? '/etc/resolv.conf',
    runOnce: c.runOnce ?? false,
    cpuCFSQuota: c.cpuCFSQuota ?? true,
    cpuCFSQuotaPeriodMs: duration('cpuCFSQuotaPeriod', c.cpuCFSQuotaPeriod, 100),
    nodeStatusMaxImages: c.nodeStatusMaxImages ?? 50,
    maxOpenFiles: c.maxOpenFiles ?? 1_000_000,
    contentType: c.contentType ?? 'application/vnd.kubernetes.protobuf',
    kubeAPIQPS: c.kubeAPIQPS ?? 50,
    kubeAPIBurst: c.kubeAPIBurst ?? 100,
    serializeImagePulls: c.serializeImagePulls ?? true,
    maxParallelImagePulls: c.maxParallelImagePulls,
    evictionHard: { ...(c.evictionHard ?? DEFAULT_EVICTION_HARD) },
    evictionSoft: { ...c.evictionSoft },
    evictionSoftGracePeriodMs,
    evictionPressureTransitionPeriodMs: duration(
      'evictionPressureTransitionPeriod',
      c.evictionPressureTransitionPeriod,
    ),
    evictionMaxPodGracePeriod: c.evictionMaxPodGracePeriod ?? 0,
    evictionMinimumReclaim: { ...c.evictionMinimumReclaim },
    podsPerCore: c.podsPerCore ?? 0,
    enableControllerAttachDetach: c.enableControllerAttachDetach ?? true,
    protectKernelDefaults: c.protectKernelDefaults ?? false,
    makeIPTablesUtilChains: c.makeIPTablesUtilChains ?? true,
    featureGates: { ...c.featureGates },
    failSwapOn: c.failSwapOn ?? true,
    memorySwap: { swapBehavior: c.memorySwap?.swapBehavior ?? '' },
    containerLogMaxSize,
    containerLogMaxSizeBytes,
    containerLogMaxFiles: c.containerLogMaxFiles ?? 5,
    containerLogMaxWorkers: c.containerLogMaxWorkers ?? 1,
    containerLogMonitorIntervalMs: duration(
      'containerLogMonitorInterval',
      c.containerLogMonitorInterval,
      10_000,
    ),
    configMapAndSecretChangeDetectionStrategy: c.configMapAndSecretChangeDetectionStrategy ?? 'Watch',
    systemReserved: { ...c.systemReserved },
    kubeReserved: { ...c.kubeReserved },
    reservedSystemCPUs: c.reservedSystemCPUs ?? '',
    reservedMemory: reservedMemoryEntries(c.reservedMemory),
    systemReservedCgroup: c.systemReservedCgroup ?? '',
    kubeReservedCgroup: c.kubeReservedCgroup ?? '',
    enforceNodeAllocatable: [...(c.enforceNodeAllocatable ?? ['pods'])],
    allowedUnsafeSysctls: [...(c.allowedUnsafeSysctls ?? [])],
    volumePluginDir: c.volumePluginDir ?? '',
    providerID: c.providerID ?? '',
    kernelMemcgNotification: c.kernelMemcgNotification ?? false,
    logging: {
      format: c.logging?.format ?? 'text',
      flushFrequencyMs,
      verbosity: c.logging?.verbosity ?? 0,
      vmodule: vmoduleEntries(c.logging?.vmodule),
    },
    enableSystemLogHandler: c.enableSystemLogHandler ?? true,
    enableSystemLogQuery: c.enableSystemLogQuery ?? false,
    shutdownGracePeriodMs: duration('shutdownGracePeriod', c.shutdownGracePeriod),
    shutdownGracePeriodCriticalPodsMs: duration(
      'shutdownGracePeriodCriticalPods',
      c.shutdownGracePeriodCriticalPods,
    ),
    shutdownGracePeriodByPodPriority: shutdownGracePeriodsByPriority(c, errors, label),
    enableProfilingHandler: c.enableProfilingHandler ?? true,
    enableDebugFlagsHandler: c.enableDebugFlagsHandler ?? true,
    seccompDefault: c.seccompDefault ?? false,
    memoryThrottlingFactor: c.memoryThrottlingFactor ?? 0.9,
    registerWithTaints: (c.registerWithTaints ?? []).map((t) => ({ ...t })),
    registerNode: c.registerNode ?? true,
    localStorageCapacityIsolation: c.localStorageCapacityIsolation ?? true,
    containerRuntimeEndpoint: c.containerRuntimeEndpoint ?? 'unix:///run/containerd/containerd.sock',
    imageServiceEndpoint:
      c.imageServiceEndpoint || c.containerRuntimeEndpoint || 'unix:///run/containerd/containerd.sock',
    failCgroupV1: c.failCgroupV1 ?? false,
  };

  errors.push(...validateResolved(r, label));
  if (errors.length > 0) {
    throw new KubeletError('INVALID_CONFIG', `invalid configuration: ${errors.join('; ')}`);
  }
  return r;
}

/** logging.vmodule as the file writes it (a list of {filePattern, verbosity}); checked by validateLogging. */
function vmoduleEntries(list: unknown[] | undefined): { filePattern: string; verbosity: number }[] {
  return (list ?? []).map((item) => {
    const o = (item ?? {}) as { filePattern?: unknown; verbosity?: unknown };
    return {
      filePattern: typeof o.filePattern === 'string' ? o.filePattern : '',
      verbosity: typeof o.verbosity === 'number' ? o.verbosity : 0,
    };
  });
}

/** reservedMemory with its quantities as text (a file may write one as a number); checked by validateTaintsAndEviction. */
function reservedMemoryEntries(list: KubeletConfiguration['reservedMemory']): MemoryReservation[] {
  return (list ?? []).map((m) => ({
    numaNode: m.numaNode ?? 0,
    limits: Object.fromEntries(Object.entries(m.limits ?? {}).map(([k, v]) => [k, String(v)])),
  }));
}
