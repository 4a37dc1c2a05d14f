/**
 * What a container may swap (upstream v1.30 configureContainerSwapResources and its
 * swapConfigurationHelper): on cgroup v2, `memory.swap.max` through the CRI's unified resources (0,
 * or LimitedSwap's share for Burstable containers); on cgroup v1, where LimitedSwap cannot work,
 * memory+swap limited to the memory limit (`memory.memsw.limit_in_bytes`). Nothing at all when the
 * node has no swap controller.
 */
import type { Container, Pod } from '../api/core-v1.js';
import { getPodQOS } from '../api/qos.js';
import { isZeroQuantity, quantityValue } from '../api/quantity.js';
import type { LinuxContainerResources } from '../cri/types.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('kuberuntime');

/** cm.Cgroup2MaxSwapFilename. */
const CGROUP2_MAX_SWAP_FILENAME = 'memory.swap.max';

/** What the node says about swap, read once at start (cm/swap.ts detectSwapSettings fills it in). */
export interface SwapSettings {
  /** memorySwap.swapBehavior: '' (NoSwap), 'NoSwap' or 'LimitedSwap'. */
  behavior: string;
  /** The NodeSwap feature gate (on by default in v1.30). */
  nodeSwapEnabled: boolean;
  /** memory.memsw.limit_in_bytes (v1) or memory.swap.max (v2) exists. */
  controllerAvailable: boolean;
  cgroupV2: boolean;
  /** MachineInfo's MemoryCapacity and SwapCapacity. */
  memoryCapacityBytes: number;
  swapCapacityBytes: number;
}

/**
 * LimitedSwap's share: (request / node memory) × node swap, truncated as Go converts a float64.
 * Throws with upstream's words when the node's memory is unknown or smaller than the request.
 */
export function calcSwapForBurstablePods(
  containerMemoryRequest: number,
  nodeTotalMemory: number,
  totalPodsSwapAvailable: number,
): number {
  if (nodeTotalMemory <= 0) throw new Error('total node memory is 0');
  if (containerMemoryRequest > nodeTotalMemory)
    throw new Error(
      `container request ${containerMemoryRequest} is larger than total node memory ${nodeTotalMemory}`,
    );
  return Math.trunc((containerMemoryRequest / nodeTotalMemory) * totalPodsSwapAvailable);
}

function configureSwap(lcr: LinuxContainerResources, swapBytes: number): void {
  lcr.unified = { ...lcr.unified, [CGROUP2_MAX_SWAP_FILENAME]: String(swapBytes) };
}

function configureNoSwap(lcr: LinuxContainerResources, s: SwapSettings): void {
  if (!s.cgroupV2) {
    // memory+swap equal to the memory limit: no swap beyond it (a 0 limit leaves both unset).
    if (s.controllerAvailable) lcr.memorySwapLimitInBytes = lcr.memoryLimitInBytes;
    return;
  }
  configureSwap(lcr, 0);
}

function configureLimitedSwap(
  lcr: LinuxContainerResources,
  pod: Pod,
  container: Container,
  s: SwapSettings,
): void {
  const requests = container.resources?.requests ?? {};
  const limits = container.resources?.limits ?? {};
  const noMemory = isZeroQuantity(requests.memory) && isZeroQuantity(limits.memory);
  const requestIsLimit = quantityValue(requests.memory) === quantityValue(limits.memory);
  if (getPodQOS(pod) !== 'Burstable' || noMemory || !s.cgroupV2 || requestIsLimit) {
    configureNoSwap(lcr, s);
    return;
  }
  let swapBytes: number;
  try {
    swapBytes = calcSwapForBurstablePods(
      quantityValue(requests.memory),
      s.memoryCapacityBytes,
      s.swapCapacityBytes,
    );
  } catch (err) {
    log.error('cannot calculate swap allocation amount; disallowing swap', { err: errorMessage(err) });
    configureNoSwap(lcr, s);
    return;
  }
  configureSwap(lcr, swapBytes);
}

/** Sets the container's swap limits in lcr, as upstream's configureContainerSwapResources does. */
export function configureContainerSwapResources(
  lcr: LinuxContainerResources,
  pod: Pod,
  container: Container,
  s: SwapSettings,
): void {
  if (!s.controllerAvailable) {
    log.info('No swap cgroup controller present', {
      swapBehavior: s.behavior,
      pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
      containerName: container.name,
    });
    return;
  }
  if ((s.behavior === 'LimitedSwap' && !s.cgroupV2) || !s.nodeSwapEnabled) {
    configureNoSwap(lcr, s);
    return;
  }
  if (s.behavior === 'LimitedSwap') configureLimitedSwap(lcr, pod, container, s);
  else configureNoSwap(lcr, s);
}
