/** The resolved KubeletConfiguration's validation, and the value rules it shares with the flags. */
import { isIP } from 'node:net';

import { parseQuantity } from '../api/quantity.js';
import { CPUSet } from '../cm/cpumanager/cpu-set.js';
import { errorMessage } from '../lib/errors.js';
import { TOPOLOGY_POLICIES } from '../cm/topologymanager/policies.js';
import { TOPOLOGY_SCOPES } from '../cm/topologymanager/scope.js';
import { goQuote } from '../lib/go-quote.js';
import { validateReservedMemoryConfiguration } from '../cm/memorymanager/reserved-memory.js';
import { TAINT_EFFECTS } from './kubelet-config-schema.js';
import type { ResolvedKubeletConfig } from './kubelet-configuration.js';

/**
 * Upstream's ValidateKubeletConfiguration, the parts this kubelet uses: one message per bad field,
 * named by its label (the field and its flag), in the order the checks run.
 */
export function validateResolved(r: ResolvedKubeletConfig, label: (path: string) => string): string[] {
  const errors: string[] = [];
  const checks = fieldChecks(errors, label);
  validatePeriods(r, checks);
  validateServingAndLimits(r, checks);
  validateCgroupsAndEndpoints(r, checks);
  validateTaintsAndEviction(r, checks);
  return errors;
}

/** The checks the parts of validateResolved share: each failed one adds a message naming the field. */
interface FieldChecks {
  check(ok: boolean, path: string, message: string): void;
  positiveDuration(path: string, ms: number): void;
  port(path: string, value: number, allowZero: boolean): void;
  ip(path: string, value: string): void;
  oneOf(path: string, value: string, allowed: readonly string[]): void;
  nonNegative(path: string, value: number): void;
  percent(path: string, value: number): void;
}

function fieldChecks(errors: string[], label: (path: string) => string): FieldChecks {
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
  return { check, positiveDuration, port, ip, oneOf, nonNegative, percent };
}

/** Durations and graceful node shutdown (upstream's rules, with its feature gates). */
function validatePeriods(
  r: ResolvedKubeletConfig,
  { check, positiveDuration, nonNegative }: FieldChecks,
): void {
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
}

/** Listeners, DNS, pod and API limits, image GC and container logs. */
function validateServingAndLimits(
  r: ResolvedKubeletConfig,
  { check, port, ip, nonNegative, percent }: FieldChecks,
): void {
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
  // NodeSwap is on by default in v1.30; UnlimitedSwap is gone.
  if (r.featureGates.NodeSwap ?? true) {
    check(
      ['', 'NoSwap', 'LimitedSwap'].includes(r.memorySwap.swapBehavior),
      'memorySwap.swapBehavior',
      `${goQuote(r.memorySwap.swapBehavior)} must be one of: "", "LimitedSwap" or "NoSwap"`,
    );
  } else {
    check(
      r.memorySwap.swapBehavior === '',
      'memorySwap.swapBehavior',
      'cannot be set when NodeSwap feature flag is disabled',
    );
  }
  // Upstream's words, its slip included ("for enableSystemLogHandler" where enableSystemLogQuery is meant).
  check(
    !r.enableSystemLogQuery || (r.featureGates.NodeLogQuery ?? false),
    'enableSystemLogQuery',
    'NodeLogQuery feature gate is required for enableSystemLogHandler',
  );
  check(
    !r.enableSystemLogQuery || r.enableSystemLogHandler,
    'enableSystemLogQuery',
    'enableSystemLogHandler is required for enableSystemLogQuery',
  );
  check(
    r.memoryThrottlingFactor > 0 && r.memoryThrottlingFactor <= 1,
    'memoryThrottlingFactor',
    'must be greater than 0 and at most 1',
  );
}

/** Cgroups, TLS, node allocatable enforcement, pod sources and runtime endpoints. */
function validateCgroupsAndEndpoints(r: ResolvedKubeletConfig, { check, oneOf }: FieldChecks): void {
  oneOf('cgroupDriver', r.cgroupDriver, ['cgroupfs', 'systemd']);
  oneOf('topologyManagerPolicy', r.topologyManagerPolicy, TOPOLOGY_POLICIES);
  oneOf('topologyManagerScope', r.topologyManagerScope, TOPOLOGY_SCOPES);
  oneOf('hairpinMode', r.hairpinMode, ['promiscuous-bridge', 'hairpin-veth', 'none']);
  // upstream refuses to start on another ("unknown configmap and secret manager mode").
  oneOf('configMapAndSecretChangeDetectionStrategy', r.configMapAndSecretChangeDetectionStrategy, [
    'Get',
    'Cache',
    'Watch',
  ]);
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
  if (r.reservedSystemCPUs !== '') {
    check(
      r.systemReservedCgroup === '' && r.kubeReservedCgroup === '',
      'reservedSystemCPUs',
      "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)",
    );
    let parseError = '';
    try {
      CPUSet.parse(r.reservedSystemCPUs);
    } catch (err) {
      parseError = errorMessage(err);
    }
    check(
      parseError === '',
      'reservedSystemCPUs',
      `unable to parse reservedSystemCPUs (--reserved-cpus) ${r.reservedSystemCPUs}, error: ${parseError}`,
    );
  }
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
}

/** Taints to register with, eviction thresholds and reservations. */
function validateTaintsAndEviction(r: ResolvedKubeletConfig, { check, oneOf }: FieldChecks): void {
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
  for (const message of validateReservedMemoryConfiguration(r.reservedMemory))
    check(false, 'reservedMemory', message);
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
