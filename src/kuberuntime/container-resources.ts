/**
 * A container's Linux resources from its requests and limits (upstream:
 * generateLinuxContainerResources / calculateLinuxResources, cm.MilliCPUToShares and
 * milliCPUToQuota, qos.GetContainerOOMScoreAdjust).
 */
import type { Container, Pod } from '../api/core-v1.js';
import { isCriticalPod } from '../api/pod-source.js';
import { getPodQOS } from '../api/qos.js';
import { isZeroQuantity, quantityMilliValue, quantityValue } from '../api/quantity.js';
import type { LinuxContainerResources } from '../cri/types.js';
import { configureContainerSwapResources, type SwapSettings } from './container-swap.js';

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
  /** memorySwap.swapBehavior and what the node has; without it swap is left to the runtime. */
  swap?: SwapSettings;
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
  if (opts.swap) configureContainerSwapResources(resources, pod, container, opts.swap);
  return resources;
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
