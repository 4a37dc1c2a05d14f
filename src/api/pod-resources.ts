/**
 * A pod's resource sums (upstream: k8s.io/component-helpers/resource PodRequests and PodLimits): the
 * app containers and sidecars summed, or the largest init container if that is more, plus the pod's
 * overhead. Shared by the cgroup sizing in cm, admission, eviction and the volume plugins.
 */
import type { Container, Pod, Quantity } from './core-v1.js';
import {
  addQuantity,
  compareQuantity,
  milliValueOf,
  parseQuantity,
  valueOf,
  type ResourceQuantity,
} from './quantity.js';

/** Resource name → exact amount, as a ResourceList sums Quantities. */
export type ResourceSums = Map<string, ResourceQuantity>;

export function milliValue(q: ResourceQuantity | undefined): number {
  return q === undefined ? 0 : Number(milliValueOf(q));
}

export function bigValue(q: ResourceQuantity | undefined): bigint {
  return q === undefined ? 0n : valueOf(q);
}

export function isZero(q: ResourceQuantity | undefined): boolean {
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
  return toSums(pod.spec.overhead);
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
