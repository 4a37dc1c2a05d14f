/**
 * The memory manager from the configuration: memoryManagerPolicy and reservedMemory, checked under
 * Static against what node allocatable keeps back of memory and huge pages (upstream:
 * GetNodeAllocatableReservation: systemReserved + kubeReserved + the hard eviction threshold, over
 * the machine's capacity as cAdvisor reads it).
 */
import type { ResourceQuantity } from '../api/quantity.js';
import { addQuantity, parseQuantity, quantityOf } from '../api/quantity.js';
import { createMemoryManager, type MemoryManager } from '../cm/memorymanager/memory-manager.js';
import type { TopologyAffinityStore } from '../cm/topologymanager/topology-hint.js';
import { readMachineInfo } from '../nodestatus/machine-info.js';
import { capacityFromMachineInfo, hardEvictionReservation } from '../nodestatus/setters.js';
import type { BuildContext } from './build-context.js';

/** Per resource of the machine, summed as Go's Quantity.Add sums (the first non-zero term's format). */
async function nodeAllocatableReservation({
  config,
}: BuildContext): Promise<Record<string, ResourceQuantity>> {
  const capacity = capacityFromMachineInfo(await readMachineInfo());
  const eviction = hardEvictionReservation(config.evictionHard, capacity);
  const out: Record<string, ResourceQuantity> = {};
  for (const name of Object.keys(capacity)) {
    let sum = quantityOf(0, 'DecimalSI');
    for (const text of [config.systemReserved[name], config.kubeReserved[name]])
      if (text !== undefined) sum = addQuantity(sum, parseQuantity(text));
    const e = eviction[name];
    if (e) sum = addQuantity(sum, e);
    if (sum.nano !== 0n) out[name] = sum;
  }
  return out;
}

/** affinity: the topology manager, whose chosen NUMA affinity allocation follows. */
export function buildMemoryManager(
  ctx: BuildContext,
  affinity?: TopologyAffinityStore,
): Promise<MemoryManager> {
  return createMemoryManager({
    ...(affinity ? { affinity } : {}),
    policyName: ctx.config.memoryManagerPolicy,
    reservedMemory: ctx.config.reservedMemory,
    nodeAllocatableReservation: () => nodeAllocatableReservation(ctx),
    rootDir: ctx.flags.rootDirectory,
  });
}
