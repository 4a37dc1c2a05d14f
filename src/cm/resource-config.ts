/**
 * The resources a cgroup is given (upstream: cm.ResourceConfig) and the pod-level one the kubelet
 * computes from the pod's containers (helpers_linux.go ResourceConfigForPod, over
 * resource.PodRequests/PodLimits: the sum of the app containers and sidecars, or the largest init
 * container if that is more, plus the pod's overhead).
 */
import type { Container, Pod, Quantity } from '../api/core-v1.js';
import { milliCPUToQuota, milliCPUToShares } from '../kuberuntime/container-resources.js';
import { getPodQOS } from '../api/qos.js';
import {
  addQuantity,
  compareQuantity,
  milliValueOf,
  parseQuantity,
  valueOf,
  type ResourceQuantity,
} from '../api/quantity.js';

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

// ---- exact quantity arithmetic ---------------------------------------------------------------

/** Resource name → exact amount, as a ResourceList sums Quantities. */
export type ResourceSums = Map<string, ResourceQuantity>;

function milliValue(q: ResourceQuantity | undefined): number {
  return q === undefined ? 0 : Number(milliValueOf(q));
}

function bigValue(q: ResourceQuantity | undefined): bigint {
  return q === undefined ? 0n : valueOf(q);
}

function isZero(q: ResourceQuantity | undefined): boolean {
  return q === undefined || q.nano === 0n;
}

function toSums(list: Record<string, Quantity> | undefined): ResourceSums {
  const out: ResourceSums = new Map();
  for (const [name, q] of Object.entries(list ?? {})) out.set(name, parseQuantity(q));
  return out;
}

function addInto(into: ResourceSums, list: ResourceSums): void {
  for (const [name, v] of list) {
    const have = into.get(name);
    into.set(name, have ? addQuantity(have, v) : v);
  }
}

function maxInto(into: ResourceSums, list: ResourceSums): void {
  for (const [name, v] of list) {
    const have = into.get(name);
    if (!have || compareQuantity(v, have) > 0) into.set(name, v);
  }
}

// ---- PodRequests / PodLimits -----------------------------------------------------------------

function isSidecar(c: Container): boolean {
  return c.restartPolicy === 'Always';
}

// The API server defaults a missing request to the limit; a pod that skipped defaulting must sum the same.
function containerRequests(c: Container): ResourceSums {
  const out = toSums(c.resources?.limits);
  for (const [name, v] of toSums(c.resources?.requests)) out.set(name, v);
  return out;
}

function podOverhead(pod: Pod): ResourceSums {
  return toSums((pod.spec as { overhead?: Record<string, Quantity> }).overhead);
}

/**
 * What the pod needs: the app containers and sidecars summed, or, when more, the largest init
 * container counted with the sidecars started before it; then the overhead.
 */
export function podRequests(pod: Pod): ResourceSums {
  const reqs: ResourceSums = new Map();
  for (const c of pod.spec.containers) addInto(reqs, containerRequests(c));
  const sidecars: ResourceSums = new Map();
  const initMax: ResourceSums = new Map();
  for (const c of pod.spec.initContainers ?? []) {
    const own = containerRequests(c);
    let use: ResourceSums;
    if (isSidecar(c)) {
      addInto(reqs, own);
      addInto(sidecars, own);
      use = sidecars;
    } else {
      use = new Map(own);
      addInto(use, sidecars);
    }
    maxInto(initMax, use);
  }
  maxInto(reqs, initMax);
  addInto(reqs, podOverhead(pod));
  return reqs;
}

/**
 * The pod's limits, summed as podRequests sums requests. onContainer sees each container's limits
 * as upstream's ContainerFn does: an init container's together with the sidecars before it.
 */
export function podLimits(pod: Pod, onContainer?: (limits: ResourceSums) => void): ResourceSums {
  const limits: ResourceSums = new Map();
  for (const c of pod.spec.containers) {
    const own = toSums(c.resources?.limits);
    onContainer?.(own);
    addInto(limits, own);
  }
  const sidecars: ResourceSums = new Map();
  const initMax: ResourceSums = new Map();
  for (const c of pod.spec.initContainers ?? []) {
    const own = toSums(c.resources?.limits);
    let use: ResourceSums;
    if (isSidecar(c)) {
      addInto(limits, own);
      addInto(sidecars, own);
      use = sidecars;
    } else {
      use = new Map(own);
      addInto(use, sidecars);
    }
    onContainer?.(use);
    maxInto(initMax, use);
  }
  maxInto(limits, initMax);
  // Overhead raises only the limits the pod has: adding it to an absent one would invent a limit.
  for (const [name, v] of podOverhead(pod)) {
    const have = limits.get(name);
    if (have) limits.set(name, addQuantity(have, v));
  }
  return limits;
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
