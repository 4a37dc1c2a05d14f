/**
 * The pod's quality-of-service class (upstream: v1qos.GetPodQOS / ComputePodQOS), from the cpu and
 * memory requests and limits of its containers and init containers. The cgroup tier, the OOM score
 * and status.qosClass all read it from here, so they cannot disagree.
 */
import type { Container, Pod, Quantity } from './core-v1.js';
import { parseQuantity } from './quantity.js';

export type PodQOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const NO_CONTAINERS: readonly Container[] = [];

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

/**
 * Sums in plain variables rather than maps and sets: the QoS tier update reads the class of every
 * active pod whenever a pod cgroup is made, so a 100-pod start computes it thousands of times, and
 * the maps were 4 % of all the kubelet allocated in that start.
 */
export function computePodQOS(pod: Pod): PodQOSClass {
  let cpuRequest: bigint | undefined;
  let memoryRequest: bigint | undefined;
  let cpuLimit: bigint | undefined;
  let memoryLimit: bigint | undefined;
  let isGuaranteed = true;
  const containers = pod.spec.containers;
  const initContainers = pod.spec.initContainers ?? NO_CONTAINERS;
  const count = containers.length + initContainers.length;
  for (let i = 0; i < count; i++) {
    const c = i < containers.length ? containers[i]! : initContainers[i - containers.length]!;
    const limits = c.resources?.limits;
    const requests = c.resources?.requests;
    const cpuL = positiveNano(limits?.cpu);
    const memoryL = positiveNano(limits?.memory);
    // The API server defaults a missing request to its limit; a source that skipped defaulting
    // (a manifest file read as is) must still land in the same class.
    const cpuR = positiveNano(requests?.cpu ?? limits?.cpu);
    const memoryR = positiveNano(requests?.memory ?? limits?.memory);
    if (cpuR !== undefined) cpuRequest = (cpuRequest ?? 0n) + cpuR;
    if (memoryR !== undefined) memoryRequest = (memoryRequest ?? 0n) + memoryR;
    if (cpuL !== undefined) cpuLimit = (cpuLimit ?? 0n) + cpuL;
    if (memoryL !== undefined) memoryLimit = (memoryLimit ?? 0n) + memoryL;
    if (cpuL === undefined || memoryL === undefined) isGuaranteed = false;
  }
  if (
    cpuRequest === undefined &&
    memoryRequest === undefined &&
    cpuLimit === undefined &&
    memoryLimit === undefined
  )
    return 'BestEffort';
  // Every container limits both, so both limits are set: each must equal its request's total (a
  // resource limited but not requested is not Guaranteed either).
  return isGuaranteed && cpuRequest === cpuLimit && memoryRequest === memoryLimit
    ? 'Guaranteed'
    : 'Burstable';
}
