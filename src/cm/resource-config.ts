/**
 * The resources a cgroup is given (upstream: cm.ResourceConfig) and the pod-level one the kubelet
 * computes from the pod's containers (helpers_linux.go ResourceConfigForPod, over the pod sums of
 * api/pod-resources).
 */
import type { Pod } from '../api/core-v1.js';
import { milliCPUToQuota, milliCPUToShares } from '../kuberuntime/container-resources.js';
import { getPodQOS } from '../api/qos.js';
import { parseQuantity } from '../api/quantity.js';
import {
  bigValue,
  isZero,
  milliValue,
  podLimits,
  podRequests,
  type ResourceSums,
} from '../api/pod-resources.js';

/** Upstream's MinShares: the kernel's minimum, and what BestEffort pods and their QoS cgroup get. */
export const MIN_SHARES = 2;
/** Upstream's MaxShares (the kernel's MAX_SHARES, 1 << 18). */
export const MAX_SHARES = 262_144;
/** cgroup v2's cpu.weight range. */
const MAX_CPU_WEIGHT = 10_000;
/** What the QoS cgroups' hugetlb limits are set to: in effect unbounded (upstream: 1 << 62). */
export const HUGETLB_UNBOUNDED_BYTES = 1n << 62n;

const HUGE_PAGES_PREFIX = 'hugepages-';

export interface ResourceConfig {
  cpuShares?: number;
  /** CFS quota in µs per period; -1 for none. */
  cpuQuotaUs?: number;
  cpuPeriodUs?: number;
  /** bigint: limits such as `1E` pass 2^53. */
  memoryBytes?: bigint;
  pidsLimit?: number;
  /** Page size in bytes → limit in bytes. Sizes the machine has but the map lacks are limited to 0. */
  hugePageLimits?: Map<number, bigint>;
}

/** The pod's cpu request in millicores, as the burstable QoS cgroup sums them. */
export function podCPURequestMilli(pod: Pod): number {
  return milliValue(podRequests(pod).get('cpu'));
}

// ---- huge pages ------------------------------------------------------------------------------

/** `hugepages-2Mi` requests → page size in bytes → bytes (upstream: HugePageLimits). */
export function hugePageLimits(list: ResourceSums): Map<number, bigint> {
  const out = new Map<number, bigint>();
  for (const [name, v] of list) {
    if (!name.startsWith(HUGE_PAGES_PREFIX)) continue;
    let pageSizeBytes: number;
    try {
      pageSizeBytes = Number(bigValue(parseQuantity(name.slice(HUGE_PAGES_PREFIX.length))));
    } catch {
      continue; // not a page size: the API server rejects such names, so there is nothing to limit
    }
    out.set(pageSizeBytes, (out.get(pageSizeBytes) ?? 0n) + bigValue(v));
  }
  return out;
}

const HUGE_PAGE_UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];

/** 2097152 → '2MB', the unit hugetlb's files are named in (upstream: HugePageUnitSizeFromByteSize). */
export function hugePageUnitSize(sizeBytes: number): string {
  let size = sizeBytes;
  let idx = 0;
  while (size % 1024 === 0 && size > 0 && idx < HUGE_PAGE_UNITS.length - 1) {
    size /= 1024;
    idx++;
  }
  return `${size}${HUGE_PAGE_UNITS[idx]}`;
}

// ---- the pod's cgroup ------------------------------------------------------------------------

export interface PodResourceOptions {
  /** --cpu-cfs-quota: false leaves CPU limits unenforced (quota -1). */
  enforceCPULimits: boolean;
  cpuPeriodUs: number;
}

/** upstream: ResourceConfigForPod (without pod-level resources and MemoryQoS, both alpha in 1.30). */
export function resourceConfigForPod(pod: Pod, opts: PodResourceOptions): ResourceConfig {
  const reqs = podRequests(pod);
  let cpuLimitsDeclared = true;
  let memoryLimitsDeclared = true;
  const limits = podLimits(pod, (l) => {
    if (isZero(l.get('cpu'))) cpuLimitsDeclared = false;
    if (isZero(l.get('memory'))) memoryLimitsDeclared = false;
  });
  const cpuShares = milliCPUToShares(milliValue(reqs.get('cpu')));
  const cpuQuotaUs = opts.enforceCPULimits
    ? milliCPUToQuota(milliValue(limits.get('cpu')), opts.cpuPeriodUs)
    : -1;
  const memoryBytes = bigValue(limits.get('memory'));

  const result: ResourceConfig = {};
  switch (getPodQOS(pod)) {
    case 'Guaranteed':
      result.cpuShares = cpuShares;
      result.cpuQuotaUs = cpuQuotaUs;
      result.cpuPeriodUs = opts.cpuPeriodUs;
      result.memoryBytes = memoryBytes;
      break;
    case 'Burstable':
      result.cpuShares = cpuShares;
      if (cpuLimitsDeclared) {
        result.cpuQuotaUs = cpuQuotaUs;
        result.cpuPeriodUs = opts.cpuPeriodUs;
      }
      if (memoryLimitsDeclared) result.memoryBytes = memoryBytes;
      break;
    case 'BestEffort':
      result.cpuShares = MIN_SHARES;
      break;
  }
  result.hugePageLimits = hugePageLimits(reqs);
  return result;
}

/** cgroup v2's cpu.weight for v1 shares, as the 1.30 kubelet (runc 1.1) converts: [2, 262144] → [1, 10000]. */
export function cpuSharesToWeight(shares: number): number {
  if (shares >= MAX_SHARES) return MAX_CPU_WEIGHT;
  return 1 + Math.floor(((Math.max(shares, MIN_SHARES) - 2) * 9999) / 262_142);
}
