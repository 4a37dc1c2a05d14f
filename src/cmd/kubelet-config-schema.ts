/**
 * The KubeletConfiguration file's schema: the kind of each field, for type-checking a file as
 * written and naming the fields this kubelet does not know.
 */
import { parseGoDurationMs } from '../lib/go-duration.js';
import type { KubeletConfiguration, TaintEffect } from './kubelet-configuration.js';

export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const KUBELET_CONFIG_KIND = 'KubeletConfiguration';

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
  | 'reservedMemory'
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
  topologyManagerPolicyOptions: 'stringMap',
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
  reservedMemory: 'reservedMemory',
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

export const TAINT_EFFECTS: readonly TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

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
    case 'reservedMemory':
      if (!Array.isArray(value)) return `expected a list of {numaNode, limits}, got ${describe(value)}`;
      for (const [i, r] of value.entries()) {
        if (!isPlainObject(r)) return `[${i}]: expected an object with numaNode and limits`;
        if (typeof r.numaNode !== 'number' || !Number.isInteger(r.numaNode))
          return `[${i}].numaNode: expected an integer, got ${describe(r.numaNode)}`;
        const limits = r.limits ?? {};
        if (
          !isPlainObject(limits) ||
          !Object.values(limits).every((q) => typeof q === 'string' || typeof q === 'number')
        )
          return `[${i}].limits: expected a map of quantities, got ${describe(limits)}`;
      }
      return undefined;
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
