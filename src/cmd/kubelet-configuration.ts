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
import { isIP } from 'node:net';

import { KubeletError } from '../lib/errors.js';
import { DurationError, parseGoDurationMs } from '../lib/go-duration.js';
import { approximateValue, parseQuantity } from '../api/quantity.js';

export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const KUBELET_CONFIG_KIND = 'KubeletConfiguration';

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
// Schema: the kind of each field, for type-checking a file and naming unknown fields.

type FieldKind =
  | 'string'
  | 'bool'
  | 'int'
  | 'number'
  | 'duration'
  | 'stringList'
  | 'stringMap'
  | 'boolMap'
  | 'headerMap'
  | 'taints'
  | 'list'
  | 'stringOrNumber'
  | 'object';
type Schema = { readonly [field: string]: FieldKind | Schema };

const AUTHENTICATION_SCHEMA = {
  x509: { clientCAFile: 'string' },
  webhook: { enabled: 'bool', cacheTTL: 'duration' },
  anonymous: { enabled: 'bool' },
} as const satisfies Schema;

const AUTHORIZATION_SCHEMA = {
  mode: 'string',
  webhook: { cacheAuthorizedTTL: 'duration', cacheUnauthorizedTTL: 'duration' },
} as const satisfies Schema;

const LOGGING_SCHEMA = {
  format: 'string',
  flushFrequency: 'stringOrNumber',
  verbosity: 'int',
  vmodule: 'list',
  options: 'object',
} as const satisfies Schema;

// `satisfies` over every key keeps this table and the interface in step: a field added to one and
// not the other fails to compile.
const CONFIG_SCHEMA = {
  apiVersion: 'string',
  kind: 'string',
  enableServer: 'bool',
  staticPodPath: 'string',
  podLogsDir: 'string',
  syncFrequency: 'duration',
  fileCheckFrequency: 'duration',
  httpCheckFrequency: 'duration',
  staticPodURL: 'string',
  staticPodURLHeader: 'headerMap',
  address: 'string',
  port: 'int',
  readOnlyPort: 'int',
  tlsCertFile: 'string',
  tlsPrivateKeyFile: 'string',
  tlsCipherSuites: 'stringList',
  tlsMinVersion: 'string',
  rotateCertificates: 'bool',
  serverTLSBootstrap: 'bool',
  authentication: AUTHENTICATION_SCHEMA,
  authorization: AUTHORIZATION_SCHEMA,
  registryPullQPS: 'int',
  registryBurst: 'int',
  eventRecordQPS: 'int',
  eventBurst: 'int',
  enableDebuggingHandlers: 'bool',
  enableContentionProfiling: 'bool',
  healthzPort: 'int',
  healthzBindAddress: 'string',
  oomScoreAdj: 'int',
  clusterDomain: 'string',
  clusterDNS: 'stringList',
  streamingConnectionIdleTimeout: 'duration',
  nodeStatusUpdateFrequency: 'duration',
  nodeStatusReportFrequency: 'duration',
  nodeLeaseDurationSeconds: 'int',
  imageMinimumGCAge: 'duration',
  imageMaximumGCAge: 'duration',
  imageGCHighThresholdPercent: 'int',
  imageGCLowThresholdPercent: 'int',
  volumeStatsAggPeriod: 'duration',
  kubeletCgroups: 'string',
  systemCgroups: 'string',
  cgroupRoot: 'string',
  cgroupsPerQOS: 'bool',
  cgroupDriver: 'string',
  cpuManagerPolicy: 'string',
  cpuManagerPolicyOptions: 'stringMap',
  cpuManagerReconcilePeriod: 'duration',
  memoryManagerPolicy: 'string',
  topologyManagerPolicy: 'string',
  topologyManagerScope: 'string',
  runtimeRequestTimeout: 'duration',
  hairpinMode: 'string',
  maxPods: 'int',
  podCIDR: 'string',
  podPidsLimit: 'int',
  resolvConf: 'string',
  runOnce: 'bool',
  cpuCFSQuota: 'bool',
  cpuCFSQuotaPeriod: 'duration',
  nodeStatusMaxImages: 'int',
  maxOpenFiles: 'int',
  contentType: 'string',
  kubeAPIQPS: 'int',
  kubeAPIBurst: 'int',
  serializeImagePulls: 'bool',
  maxParallelImagePulls: 'int',
  evictionHard: 'stringMap',
  evictionSoft: 'stringMap',
  evictionSoftGracePeriod: 'stringMap',
  evictionPressureTransitionPeriod: 'duration',
  evictionMaxPodGracePeriod: 'int',
  evictionMinimumReclaim: 'stringMap',
  podsPerCore: 'int',
  enableControllerAttachDetach: 'bool',
  protectKernelDefaults: 'bool',
  makeIPTablesUtilChains: 'bool',
  featureGates: 'boolMap',
  failSwapOn: 'bool',
  memorySwap: { swapBehavior: 'string' },
  containerLogMaxSize: 'string',
  containerLogMaxFiles: 'int',
  containerLogMaxWorkers: 'int',
  containerLogMonitorInterval: 'duration',
  configMapAndSecretChangeDetectionStrategy: 'string',
  systemReserved: 'stringMap',
  kubeReserved: 'stringMap',
  reservedSystemCPUs: 'string',
  systemReservedCgroup: 'string',
  kubeReservedCgroup: 'string',
  enforceNodeAllocatable: 'stringList',
  allowedUnsafeSysctls: 'stringList',
  volumePluginDir: 'string',
  providerID: 'string',
  kernelMemcgNotification: 'bool',
  logging: LOGGING_SCHEMA,
  enableSystemLogHandler: 'bool',
  enableSystemLogQuery: 'bool',
  shutdownGracePeriod: 'duration',
  shutdownGracePeriodCriticalPods: 'duration',
  shutdownGracePeriodByPodPriority: 'list',
  enableProfilingHandler: 'bool',
  enableDebugFlagsHandler: 'bool',
  seccompDefault: 'bool',
  memoryThrottlingFactor: 'number',
  registerWithTaints: 'taints',
  registerNode: 'bool',
  localStorageCapacityIsolation: 'bool',
  containerRuntimeEndpoint: 'string',
  imageServiceEndpoint: 'string',
  failCgroupV1: 'bool',
} as const satisfies { readonly [K in keyof Required<KubeletConfiguration>]: FieldKind | Schema };

/** Fields of the file that upstream has but this kubelet ignores are still accepted; these are the ones it knows. */
export function knownConfigFields(): string[] {
  const out: string[] = [];
  const walk = (schema: Schema, prefix: string) => {
    for (const [k, v] of Object.entries(schema)) {
      if (typeof v === 'string') out.push(prefix + k);
      else walk(v, `${prefix}${k}.`);
    }
  };
  walk(CONFIG_SCHEMA, '');
  return out;
}

const TAINT_EFFECTS: readonly TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks a decoded file against the schema. Type errors are fatal (returned as errors); unknown
 * fields are returned as warnings, since upstream falls back to lenient decoding for them.
 */
export function checkConfigurationShape(doc: unknown): { errors: string[]; unknownFields: string[] } {
  const errors: string[] = [];
  const unknownFields: string[] = [];
  if (!isPlainObject(doc)) {
    return { errors: [`${KUBELET_CONFIG_KIND}: expected an object, got ${describe(doc)}`], unknownFields };
  }
  const walk = (obj: Record<string, unknown>, schema: Schema, prefix: string) => {
    for (const [key, value] of Object.entries(obj)) {
      const path = prefix + key;
      const kind = (schema as Record<string, FieldKind | Schema | undefined>)[key];
      if (kind === undefined) {
        unknownFields.push(path);
        continue;
      }
      // YAML `field: ~` and JSON null mean "not set", as in Go's decoder.
      if (value === null) continue;
      if (typeof kind !== 'string') {
        if (!isPlainObject(value))
          errors.push(`${KUBELET_CONFIG_KIND}.${path}: expected an object, got ${describe(value)}`);
        else walk(value, kind, `${path}.`);
        continue;
      }
      const problem = checkKind(kind, value);
      if (problem) errors.push(`${KUBELET_CONFIG_KIND}.${path}: ${problem}`);
    }
  };
  walk(doc, CONFIG_SCHEMA, '');
  return { errors, unknownFields };
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  return JSON.stringify(v);
}

function checkKind(kind: FieldKind, value: unknown): string | undefined {
  switch (kind) {
    case 'string':
      return typeof value === 'string' ? undefined : `expected a string, got ${describe(value)}`;
    case 'bool':
      return typeof value === 'boolean' ? undefined : `expected true or false, got ${describe(value)}`;
    case 'int':
      return typeof value === 'number' && Number.isInteger(value)
        ? undefined
        : `expected an integer, got ${describe(value)}`;
    case 'number':
      return typeof value === 'number' ? undefined : `expected a number, got ${describe(value)}`;
    case 'stringOrNumber':
      return typeof value === 'number' || typeof value === 'string'
        ? undefined
        : `expected a duration, got ${describe(value)}`;
    case 'duration':
      if (typeof value !== 'string')
        return `expected a duration string such as "1m30s", got ${describe(value)}`;
      try {
        parseGoDurationMs(value);
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    case 'stringList':
      return Array.isArray(value) && value.every((x) => typeof x === 'string')
        ? undefined
        : `expected a list of strings, got ${describe(value)}`;
    case 'list':
      return Array.isArray(value) ? undefined : `expected a list, got ${describe(value)}`;
    case 'object':
      return isPlainObject(value) ? undefined : `expected an object, got ${describe(value)}`;
    case 'stringMap':
      return isPlainObject(value) && Object.values(value).every((x) => typeof x === 'string')
        ? undefined
        : `expected a map of strings, got ${describe(value)}`;
    case 'boolMap':
      return isPlainObject(value) && Object.values(value).every((x) => typeof x === 'boolean')
        ? undefined
        : `expected a map of booleans, got ${describe(value)}`;
    case 'headerMap':
      return isPlainObject(value) &&
        Object.values(value).every((x) => Array.isArray(x) && x.every((y) => typeof y === 'string'))
        ? undefined
        : `expected a map of lists of strings, got ${describe(value)}`;
    case 'taints':
      if (!Array.isArray(value)) return `expected a list of taints, got ${describe(value)}`;
      for (const [i, t] of value.entries()) {
        if (!isPlainObject(t) || typeof t.key !== 'string')
          return `[${i}]: expected a taint with a string key`;
        if (t.value !== undefined && typeof t.value !== 'string') return `[${i}].value: expected a string`;
        if (typeof t.effect !== 'string') return `[${i}].effect: expected a string`;
      }
      return undefined;
  }
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
    runtimeRequestTimeoutMs: duration('runtimeRequestTimeout', c.runtimeRequestTimeout),
    hairpinMode: (c.hairpinMode ?? 'promiscuous-bridge') as ResolvedKubeletConfig['hairpinMode'],
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
    shutdownGracePeriodByPodPriority: (c.shutdownGracePeriodByPodPriority ?? []).map((entry, i) => {
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
    }),
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

function validateResolved(r: ResolvedKubeletConfig, label: (path: string) => string): string[] {
  const errors: string[] = [];
  const check = (ok: boolean, path: string, message: string) => {
    if (!ok) errors.push(`${label(path)}: ${message}`);
  };
  const positiveDuration = (path: string, ms: number) => check(ms > 0, path, 'must be greater than 0');
  const port = (path: string, value: number, allowZero: boolean) =>
    check(
      Number.isInteger(value) && value >= (allowZero ? 0 : 1) && value <= 65535,
      path,
      `must be between ${allowZero ? 0 : 1} and 65535, got ${value}`,
    );
  const ip = (path: string, value: string) =>
    check(isIP(value) !== 0, path, `must be an IP address, got ${JSON.stringify(value)}`);
  const oneOf = (path: string, value: string, allowed: readonly string[]) =>
    check(
      allowed.includes(value),
      path,
      `must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}, got ${JSON.stringify(value)}`,
    );
  const nonNegative = (path: string, value: number) => check(value >= 0, path, `must be >= 0, got ${value}`);
  const percent = (path: string, value: number) =>
    check(value >= 0 && value <= 100, path, `must be between 0 and 100, got ${value}`);

  positiveDuration('syncFrequency', r.syncFrequencyMs);
  positiveDuration('fileCheckFrequency', r.fileCheckFrequencyMs);
  positiveDuration('httpCheckFrequency', r.httpCheckFrequencyMs);
  positiveDuration('runtimeRequestTimeout', r.runtimeRequestTimeoutMs);
  positiveDuration('nodeStatusUpdateFrequency', r.nodeStatusUpdateFrequencyMs);
  positiveDuration('nodeStatusReportFrequency', r.nodeStatusReportFrequencyMs);
  nonNegative('streamingConnectionIdleTimeout', r.streamingConnectionIdleTimeoutMs);
  nonNegative('imageMinimumGCAge', r.imageMinimumGCAgeMs);
  nonNegative('imageMaximumGCAge', r.imageMaximumGCAgeMs);
  check(
    r.imageMaximumGCAgeMs === 0 || r.imageMaximumGCAgeMs > r.imageMinimumGCAgeMs,
    'imageMaximumGCAge',
    'must be greater than imageMinimumGCAge',
  );
  nonNegative('shutdownGracePeriod', r.shutdownGracePeriodMs);
  nonNegative('shutdownGracePeriodCriticalPods', r.shutdownGracePeriodCriticalPodsMs);
  // Upstream's rules for graceful node shutdown, with its feature gates (both on by default).
  const gracefulNodeShutdown = r.featureGates.GracefulNodeShutdown ?? true;
  const byPodPriority = r.featureGates.GracefulNodeShutdownBasedOnPodPriority ?? true;
  const shutdownGracePeriodSet = r.shutdownGracePeriodMs > 0 || r.shutdownGracePeriodCriticalPodsMs > 0;
  if (gracefulNodeShutdown) {
    check(
      r.shutdownGracePeriodCriticalPodsMs <= r.shutdownGracePeriodMs,
      'shutdownGracePeriodCriticalPods',
      'must be <= shutdownGracePeriod',
    );
    check(
      r.shutdownGracePeriodMs === 0 || r.shutdownGracePeriodMs >= 1000,
      'shutdownGracePeriod',
      'must be either zero or otherwise >= 1 sec',
    );
    check(
      r.shutdownGracePeriodCriticalPodsMs === 0 || r.shutdownGracePeriodCriticalPodsMs >= 1000,
      'shutdownGracePeriodCriticalPods',
      'must be either zero or otherwise >= 1 sec',
    );
  }
  check(
    !shutdownGracePeriodSet || gracefulNodeShutdown,
    'shutdownGracePeriod',
    'specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown',
  );
  if (byPodPriority) {
    check(
      r.shutdownGracePeriodByPodPriority.length === 0 || !shutdownGracePeriodSet,
      'shutdownGracePeriodByPodPriority',
      'Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time',
    );
  } else {
    check(
      r.shutdownGracePeriodByPodPriority.length === 0,
      'shutdownGracePeriodByPodPriority',
      'Specifying shutdownGracePeriodByPodPriority requires feature gate GracefulNodeShutdownBasedOnPodPriority',
    );
  }
  r.shutdownGracePeriodByPodPriority.forEach((p, i) =>
    nonNegative(
      `shutdownGracePeriodByPodPriority[${i}].shutdownGracePeriodSeconds`,
      p.shutdownGracePeriodSeconds,
    ),
  );

  port('port', r.port, false);
  port('readOnlyPort', r.readOnlyPort, true);
  port('healthzPort', r.healthzPort, true);
  ip('address', r.address);
  ip('healthzBindAddress', r.healthzBindAddress);
  r.clusterDNS.forEach((dns, i) => ip(`clusterDNS[${i}]`, dns));
  check(
    r.clusterDomain === '' || isDNS1123Subdomain(r.clusterDomain.replace(/\.$/, '')),
    'clusterDomain',
    `must be a DNS subdomain, got ${JSON.stringify(r.clusterDomain)}`,
  );

  nonNegative('maxPods', r.maxPods);
  nonNegative('podsPerCore', r.podsPerCore);
  check(
    r.podPidsLimit === -1 || r.podPidsLimit > 0,
    'podPidsLimit',
    `must be -1 or greater than 0, got ${r.podPidsLimit}`,
  );
  check(
    r.nodeLeaseDurationSeconds > 0,
    'nodeLeaseDurationSeconds',
    `must be greater than 0, got ${r.nodeLeaseDurationSeconds}`,
  );
  percent('imageGCHighThresholdPercent', r.imageGCHighThresholdPercent);
  percent('imageGCLowThresholdPercent', r.imageGCLowThresholdPercent);
  check(
    r.imageGCLowThresholdPercent <= r.imageGCHighThresholdPercent,
    'imageGCLowThresholdPercent',
    `(${r.imageGCLowThresholdPercent}) must be <= imageGCHighThresholdPercent (${r.imageGCHighThresholdPercent})`,
  );
  nonNegative('kubeAPIQPS', r.kubeAPIQPS);
  nonNegative('kubeAPIBurst', r.kubeAPIBurst);
  nonNegative('eventRecordQPS', r.eventRecordQPS);
  nonNegative('eventBurst', r.eventBurst);
  nonNegative('registryPullQPS', r.registryPullQPS);
  nonNegative('registryBurst', r.registryBurst);
  check(
    r.oomScoreAdj >= -1000 && r.oomScoreAdj <= 1000,
    'oomScoreAdj',
    `must be between -1000 and 1000, got ${r.oomScoreAdj}`,
  );
  if (r.maxParallelImagePulls !== undefined) {
    check(
      r.maxParallelImagePulls >= 1,
      'maxParallelImagePulls',
      `must be >= 1, got ${r.maxParallelImagePulls}`,
    );
    check(
      !(r.serializeImagePulls && r.maxParallelImagePulls > 1),
      'maxParallelImagePulls',
      'must not be greater than 1 unless serializeImagePulls is false',
    );
  }
  check(r.containerLogMaxFiles >= 2, 'containerLogMaxFiles', `must be >= 2, got ${r.containerLogMaxFiles}`);
  check(
    r.containerLogMaxSizeBytes > 0 || r.containerLogMaxSize === '',
    'containerLogMaxSize',
    'must be greater than 0',
  );
  check(
    r.containerLogMaxWorkers >= 1,
    'containerLogMaxWorkers',
    `must be >= 1, got ${r.containerLogMaxWorkers}`,
  );
  check(r.containerLogMonitorIntervalMs >= 3000, 'containerLogMonitorInterval', 'must be at least 3s');
  check(
    r.memoryThrottlingFactor > 0 && r.memoryThrottlingFactor <= 1,
    'memoryThrottlingFactor',
    'must be greater than 0 and at most 1',
  );

  oneOf('cgroupDriver', r.cgroupDriver, ['cgroupfs', 'systemd']);
  oneOf('hairpinMode', r.hairpinMode, ['promiscuous-bridge', 'hairpin-veth', 'none']);
  oneOf('authorization.mode', r.authorization.mode, ['AlwaysAllow', 'Webhook']);
  check(r.cgroupRoot === '' || r.cgroupRoot.startsWith('/'), 'cgroupRoot', 'must be an absolute cgroup name');
  if (r.tlsMinVersion !== '')
    oneOf('tlsMinVersion', r.tlsMinVersion, ['VersionTLS10', 'VersionTLS11', 'VersionTLS12', 'VersionTLS13']);
  check(
    (r.tlsCertFile === '') === (r.tlsPrivateKeyFile === ''),
    'tlsPrivateKeyFile',
    'tlsCertFile and tlsPrivateKeyFile must be set together',
  );
  for (const level of r.enforceNodeAllocatable) {
    oneOf('enforceNodeAllocatable', level, [
      'pods',
      'system-reserved',
      'kube-reserved',
      'system-reserved-compressible',
      'kube-reserved-compressible',
      'none',
    ]);
  }
  // Upstream's own words: the reservations' cgroups must be named to be enforced.
  check(
    !r.enforceNodeAllocatable.includes('system-reserved') || r.systemReservedCgroup !== '',
    'systemReservedCgroup',
    'must be specified when "system-reserved" contained in enforceNodeAllocatable (--enforce-node-allocatable)',
  );
  check(
    !r.enforceNodeAllocatable.includes('kube-reserved') || r.kubeReservedCgroup !== '',
    'kubeReservedCgroup',
    'must be specified when "kube-reserved" contained in enforceNodeAllocatable (--enforce-node-allocatable)',
  );
  check(
    !(r.enforceNodeAllocatable.includes('none') && r.enforceNodeAllocatable.length > 1),
    'enforceNodeAllocatable',
    '"none" must not be combined with other levels',
  );

  if (r.staticPodURL !== '') {
    let ok = false;
    try {
      const u = new URL(r.staticPodURL);
      ok = u.protocol === 'http:' || u.protocol === 'https:';
    } catch {
      ok = false;
    }
    check(ok, 'staticPodURL', `must be an http or https URL, got ${JSON.stringify(r.staticPodURL)}`);
  }
  for (const [name] of Object.entries(r.staticPodURLHeader)) {
    check(
      /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name),
      `staticPodURLHeader.${name}`,
      'is not a valid HTTP header name',
    );
  }
  check(
    /^(unix|tcp|npipe):\/\//.test(r.containerRuntimeEndpoint),
    'containerRuntimeEndpoint',
    `must be a unix:// or tcp:// URL, got ${JSON.stringify(r.containerRuntimeEndpoint)}`,
  );
  check(
    /^(unix|tcp|npipe):\/\//.test(r.imageServiceEndpoint),
    'imageServiceEndpoint',
    `must be a unix:// or tcp:// URL, got ${JSON.stringify(r.imageServiceEndpoint)}`,
  );
  check(
    r.podLogsDir.startsWith('/'),
    'podLogsDir',
    `must be an absolute path, got ${JSON.stringify(r.podLogsDir)}`,
  );

  r.registerWithTaints.forEach((t, i) => {
    check(
      isQualifiedName(t.key),
      `registerWithTaints[${i}].key`,
      `must be a qualified name, got ${JSON.stringify(t.key)}`,
    );
    check(
      t.value === undefined || isLabelValue(t.value),
      `registerWithTaints[${i}].value`,
      `must be a valid label value, got ${JSON.stringify(t.value)}`,
    );
    oneOf(`registerWithTaints[${i}].effect`, t.effect, TAINT_EFFECTS);
  });

  const thresholds = (field: string, m: Record<string, string>) => {
    for (const [signal, value] of Object.entries(m)) {
      oneOf(`${field}.${signal}`, signal, EVICTION_SIGNALS);
      check(
        isQuantityOrPercentage(value),
        `${field}.${signal}`,
        `must be a quantity or a percentage, got ${JSON.stringify(value)}`,
      );
    }
  };
  thresholds('evictionHard', r.evictionHard);
  thresholds('evictionSoft', r.evictionSoft);
  thresholds('evictionMinimumReclaim', r.evictionMinimumReclaim);
  for (const signal of Object.keys(r.evictionSoft)) {
    check(
      signal in r.evictionSoftGracePeriodMs,
      `evictionSoftGracePeriod.${signal}`,
      'must be set for each evictionSoft signal',
    );
  }
  const reserved = (field: string, m: Record<string, string>) => {
    for (const [resource, value] of Object.entries(m)) {
      check(
        isQuantity(value) && parseQuantity(value).nano >= 0n,
        `${field}.${resource}`,
        `must be a non-negative quantity, got ${JSON.stringify(value)}`,
      );
    }
  };
  reserved('systemReserved', r.systemReserved);
  reserved('kubeReserved', r.kubeReserved);
  return errors;
}

export const EVICTION_SIGNALS: readonly string[] = [
  'memory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'containerfs.available',
  'containerfs.inodesFree',
  'allocatableMemory.available',
  'pid.available',
];

function isQuantity(v: string): boolean {
  try {
    parseQuantity(v);
    return true;
  } catch {
    return false;
  }
}

/** True for a percentage such as `10%` or `7.5%` (eviction thresholds accept either form). */
export function isPercentage(text: string): boolean {
  return /^\d+(?:\.\d+)?%$/.test(text);
}

function isQuantityOrPercentage(v: string): boolean {
  return isPercentage(v) || isQuantity(v);
}

// ---------------------------------------------------------------------------------------------
// Name rules shared with the flags (node labels, taints).

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function isDNS1123Subdomain(v: string): boolean {
  return v.length > 0 && v.length <= 253 && v.split('.').every((part) => DNS1123_LABEL.test(part));
}

/** A label key or taint key: an optional DNS-subdomain prefix and a name of at most 63 characters. */
export function isQualifiedName(v: string): boolean {
  const parts = v.split('/');
  if (parts.length > 2) return false;
  const name = parts.length === 2 ? parts[1]! : parts[0]!;
  if (parts.length === 2 && !isDNS1123Subdomain(parts[0]!)) return false;
  return name.length > 0 && name.length <= 63 && /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name);
}

export function isLabelValue(v: string): boolean {
  return v === '' || (v.length <= 63 && /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(v));
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
