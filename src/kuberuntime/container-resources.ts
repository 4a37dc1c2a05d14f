/**
 * A container's Linux resources from its requests and limits (upstream:
 * generateLinuxContainerResources / calculateLinuxResources, cm.MilliCPUToShares and
 * milliCPUToQuota, qos.GetPodQOS and qos.GetContainerOOMScoreAdjust).
 */
import type { Container, Pod, ResourceRequirements } from '../api/core-v1.js';
import type { LinuxContainerResources } from '../cri/types.js';
import { isZeroQuantity, parseQuantity, quantityMilliValue, quantityValue } from './quantity.js';

const MIN_SHARES = 2;
const MAX_SHARES = 262_144;
const SHARES_PER_CPU = 1024;
const MILLI_CPU_TO_CPU = 1000;
/** The CFS period the kubelet uses unless configured otherwise (--cpu-cfs-quota-period, 100 ms). */
export const DEFAULT_QUOTA_PERIOD_US = 100_000;
// A quota below 1 ms starves the container outright.
const MIN_QUOTA_PERIOD_US = 1000;

const GUARANTEED_OOM_SCORE_ADJ = -997;
const BESTEFFORT_OOM_SCORE_ADJ = 1000;
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;
// The config sources' annotations (src/config owns them; this layer may not import it).
const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

export type QOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU === 0) return MIN_SHARES;
  const shares = Math.floor((milliCPU * SHARES_PER_CPU) / MILLI_CPU_TO_CPU);
  return Math.min(Math.max(shares, MIN_SHARES), MAX_SHARES);
}

/** 0 (no quota) without a limit; else the limit's share of the period, at least 1 ms. */
export function milliCPUToQuota(milliCPU: number, periodUs: number): number {
  if (milliCPU === 0) return 0;
  const quota = Math.floor((milliCPU * periodUs) / MILLI_CPU_TO_CPU);
  return Math.max(quota, MIN_QUOTA_PERIOD_US);
}

export interface ContainerResourcesOptions {
  /** The node's memory, for Burstable containers' OOM score. */
  memoryCapacityBytes: number;
  /** --cpu-cfs-quota (default true): enforce CPU limits with a CFS quota. */
  cpuCFSQuota: boolean;
  cpuCFSQuotaPeriodUs: number;
}

export function generateLinuxContainerResources(
  pod: Pod,
  container: Container,
  opts: ContainerResourcesOptions,
): LinuxContainerResources {
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  // A limit without a request means a request equal to the limit, as the API server defaults it.
  const cpuRequestMilli =
    isZeroQuantity(requests.cpu) && !isZeroQuantity(limits.cpu)
      ? quantityMilliValue(limits.cpu)
      : quantityMilliValue(requests.cpu);
  const resources: LinuxContainerResources = {
    cpuPeriod: 0,
    cpuQuota: 0,
    cpuShares: milliCPUToShares(cpuRequestMilli),
    memoryLimitInBytes: quantityValue(limits.memory),
    oomScoreAdj: containerOOMScoreAdjust(pod, container, opts.memoryCapacityBytes),
    cpusetCpus: '',
    cpusetMems: '',
    unified: {},
    memorySwapLimitInBytes: 0,
  };
  if (opts.cpuCFSQuota) {
    resources.cpuPeriod = opts.cpuCFSQuotaPeriodUs;
    resources.cpuQuota = milliCPUToQuota(quantityMilliValue(limits.cpu), opts.cpuCFSQuotaPeriodUs);
  }
  return resources;
}

/** The pod's QoS class: status.qosClass when the API server set it, else computed as upstream does. */
export function getPodQOS(pod: Pod): QOSClass {
  if (pod.status?.qosClass) return pod.status.qosClass;
  return computePodQOS(pod);
}

export function computePodQOS(pod: Pod): QOSClass {
  const requests = new Map<string, bigint>();
  const limits = new Map<string, bigint>();
  let isGuaranteed = true;
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  for (const c of all) {
    const res: ResourceRequirements = c.resources ?? {};
    // The API server defaults a missing request to its limit; pods from files may not be defaulted.
    const containerRequests = { ...(res.limits ?? {}), ...(res.requests ?? {}) };
    for (const [name, q] of Object.entries(containerRequests)) {
      if (!isSupportedQOSResource(name) || isZeroQuantity(q)) continue;
      requests.set(name, (requests.get(name) ?? 0n) + scaled(q));
    }
    const found = new Set<string>();
    for (const [name, q] of Object.entries(res.limits ?? {})) {
      if (!isSupportedQOSResource(name) || isZeroQuantity(q)) continue;
      found.add(name);
      limits.set(name, (limits.get(name) ?? 0n) + scaled(q));
    }
    if (!found.has('cpu') || !found.has('memory')) isGuaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (isGuaranteed) {
    for (const [name, req] of requests) {
      if (limits.get(name) !== req) {
        isGuaranteed = false;
        break;
      }
    }
  }
  if (isGuaranteed && requests.size === limits.size) return 'Guaranteed';
  return 'Burstable';
}

function isSupportedQOSResource(name: string): boolean {
  return name === 'cpu' || name === 'memory';
}

// In nano-units, so that sums of quantities compare exactly.
function scaled(q: string | number): bigint {
  const { num, den } = parseQuantity(q);
  return (num * 1_000_000_000n) / den;
}

/** Static, mirror and system-critical pods are the node's own: the OOM killer spares them like Guaranteed ones. */
export function isCriticalPod(pod: Pod): boolean {
  const source = pod.metadata.annotations?.[CONFIG_SOURCE_ANNOTATION];
  if (source !== undefined && source !== 'api') return true;
  if (pod.metadata.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined) return true;
  return (pod.spec.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY;
}

export function containerOOMScoreAdjust(pod: Pod, container: Container, memoryCapacityBytes: number): number {
  if (isCriticalPod(pod)) return GUARANTEED_OOM_SCORE_ADJ;
  const qos = getPodQOS(pod);
  if (qos === 'Guaranteed') return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === 'BestEffort') return BESTEFFORT_OOM_SCORE_ADJ;
  // Burstable: the more memory a container asks for, the less likely it is killed first.
  const memoryRequest = quantityValue(container.resources?.requests?.memory);
  const adjust =
    memoryCapacityBytes > 0 ? 1000 - Math.trunc((1000 * memoryRequest) / memoryCapacityBytes) : 1000;
  // Never as low as Guaranteed ones, never as high as BestEffort ones.
  if (adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
  if (adjust === BESTEFFORT_OOM_SCORE_ADJ) return adjust - 1;
  return adjust;
}
