/**
 * The pod's quality-of-service class (upstream: v1qos.GetPodQOS / ComputePodQOS), from the cpu and
 * memory requests and limits of its containers and init containers. The cgroup tier, the OOM score
 * and status.qosClass all read it from here, so they cannot disagree.
 */
import type { Container, Pod, Quantity } from './core-v1.js';
import { parseQuantity } from './quantity.js';

export type PodQOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const QOS_RESOURCES = ['cpu', 'memory'] as const;

/** The class the pod's status already records, else the one its resources give. */
export function getPodQOS(pod: Pod): PodQOSClass {
  return pod.status?.qosClass ?? computePodQOS(pod);
}

/**
 * The quantity when above zero. One the API would refuse (`lots`) counts as absent: the class is read
 * by admission, cgroups and status for every pod, and one such pod must not make them fail for all.
 */
function positiveNano(q: Quantity | undefined): bigint | undefined {
  if (q === undefined) return undefined;
  let v: bigint;
  try {
    v = parseQuantity(q).nano;
  } catch {
    return undefined;
  }
  return v > 0n ? v : undefined;
}

export function computePodQOS(pod: Pod): PodQOSClass {
  const requests = new Map<string, bigint>();
  const limits = new Map<string, bigint>();
  let isGuaranteed = true;
  const containers: Container[] = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  for (const c of containers) {
    const limitsFound = new Set<string>();
    for (const name of QOS_RESOURCES) {
      const limit = positiveNano(c.resources?.limits?.[name]);
      // The API server defaults a missing request to its limit; a source that skipped defaulting
      // (a manifest file read as is) must still land in the same class.
      const request = positiveNano(c.resources?.requests?.[name] ?? c.resources?.limits?.[name]);
      if (request !== undefined) requests.set(name, (requests.get(name) ?? 0n) + request);
      if (limit !== undefined) {
        limitsFound.add(name);
        limits.set(name, (limits.get(name) ?? 0n) + limit);
      }
    }
    if (!limitsFound.has('cpu') || !limitsFound.has('memory')) isGuaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (isGuaranteed) {
    for (const [name, request] of requests) {
      if (limits.get(name) !== request) {
        isGuaranteed = false;
        break;
      }
    }
  }
  return isGuaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}
