/**
 * The reservedMemory setting (upstream: KubeletConfiguration.ReservedMemory, --reserved-memory) and
 * what the Static policy checks of it at start (upstream: memory_manager.go's
 * getSystemReservedMemory): every NUMA node it names exists, and for memory and each huge page size
 * its total over the nodes equals what node allocatable keeps back (kubeReserved + systemReserved +
 * the hard eviction threshold), so the two accountings of the node agree.
 */
import {
  addQuantity,
  formatQuantity,
  parseQuantity,
  quantityOf,
  type ResourceQuantity,
} from '../../api/quantity.js';
import { KubeletError } from '../../lib/errors.js';
import { isHugePageResourceName } from './numa-memory.js';
import type { SystemReservedMemory } from './policy-static.js';

/** One entry of reservedMemory, as the file writes it. */
export interface MemoryReservation {
  numaNode: number;
  /** memory or hugepages-<size> → quantity. */
  limits: Record<string, string>;
}

function invalid(message: string): KubeletError {
  return new KubeletError('INVALID_CONFIG', message);
}

function quantity(text: string, numaNode: number, resource: string): ResourceQuantity {
  try {
    return parseQuantity(text);
  } catch {
    throw invalid(
      `reservedMemory: NUMA node ${numaNode}, ${resource}: not a quantity: ${JSON.stringify(text)}`,
    );
  }
}

/** Each memory type's total over the NUMA nodes; refuses a node the machine does not have. */
function totalReservedByType(
  numaNodes: ReadonlySet<number>,
  reservations: readonly MemoryReservation[],
): Map<string, ResourceQuantity> {
  const totals = new Map<string, ResourceQuantity>();
  for (const r of reservations) {
    if (!numaNodes.has(r.numaNode))
      throw invalid(
        `the reserved memory configuration references a NUMA node ${r.numaNode} that does not exist on this machine`,
      );
    for (const [resource, text] of Object.entries(r.limits)) {
      const q = quantity(text, r.numaNode, resource);
      const have = totals.get(resource);
      // Upstream adds the running total to the newer quantity, which keeps its format.
      totals.set(resource, have ? addQuantity(q, have) : q);
    }
  }
  return totals;
}

const goQuote = (s: string): string => JSON.stringify(s);

/**
 * Checks reservedMemory against node allocatable's reservation (upstream: validateReservedMemory) and
 * returns it as bytes per node and resource (upstream: convertReserved).
 */
export function systemReservedMemory(
  numaNodeIDs: readonly number[],
  nodeAllocatableReservation: Readonly<Record<string, ResourceQuantity>>,
  reservations: readonly MemoryReservation[],
): SystemReservedMemory {
  const totals = totalReservedByType(new Set(numaNodeIDs), reservations);
  const types = new Set(totals.keys());
  for (const name of Object.keys(nodeAllocatableReservation))
    if (name === 'memory' || isHugePageResourceName(name)) types.add(name);
  for (const name of [...types].sort()) {
    const zero = quantityOf(0, 'DecimalSI');
    const allocatable = nodeAllocatableReservation[name];
    const want = allocatable ? addQuantity(zero, allocatable) : zero;
    const reserved = totals.get(name);
    const have = reserved ? addQuantity(zero, reserved) : zero;
    if (want.nano !== have.nano)
      throw invalid(
        `the total amount ${goQuote(formatQuantity(have))} of type ${goQuote(name)} is not equal to the value ${goQuote(formatQuantity(want))} determined by Node Allocatable feature`,
      );
  }
  const out: SystemReservedMemory = new Map(numaNodeIDs.map((id) => [id, new Map<string, number>()]));
  for (const r of reservations)
    for (const [resource, text] of Object.entries(r.limits)) {
      const nano = quantity(text, r.numaNode, resource).nano;
      if (
        nano % 1_000_000_000n !== 0n ||
        nano < 0n ||
        nano / 1_000_000_000n > BigInt(Number.MAX_SAFE_INTEGER)
      )
        throw invalid('could not covert a variable of type Quantity to int64');
      out.get(r.numaNode)!.set(resource, Number(nano / 1_000_000_000n));
    }
  return out;
}

/**
 * Upstream's validateReservedMemoryConfiguration, run with the rest of the file's validation: only
 * memory and huge pages, never zero, each node and type once. One message per problem, upstream's
 * without its "invalid configuration: " (the caller's message starts with it).
 */
export function validateReservedMemoryConfiguration(reservations: readonly MemoryReservation[]): string[] {
  const errors: string[] = [];
  const seen = new Map<number, Set<string>>();
  for (const r of reservations) {
    let types = seen.get(r.numaNode);
    if (!types) seen.set(r.numaNode, (types = new Set()));
    for (const [resource, text] of Object.entries(r.limits)) {
      if (resource !== 'memory' && !isHugePageResourceName(resource))
        errors.push(
          `the limit type ${goQuote(resource)} for NUMA node ${r.numaNode} is not supported, only [memory hugepages-<HugePageSize>] is accepted`,
        );
      let zero = false;
      try {
        zero = parseQuantity(text).nano === 0n;
      } catch {
        errors.push(
          `the reserved memory for NUMA node ${r.numaNode} and resource ${goQuote(resource)} is not a quantity: ${goQuote(text)}`,
        );
      }
      if (zero)
        errors.push(
          `reserved memory may not be zero for NUMA node ${r.numaNode} and resource ${goQuote(resource)}`,
        );
      if (types.has(resource))
        errors.push(
          `the reserved memory has a duplicate value for NUMA node ${r.numaNode} and resource ${goQuote(resource)}`,
        );
      types.add(resource);
    }
  }
  return errors;
}

/**
 * One --reserved-memory value: `0:memory=1Gi,hugepages-1M=2Gi`, several nodes split by `;`
 * (upstream: ReservedMemoryVar.Set, with its messages). Throws the message upstream's flag gives.
 */
export function parseReservedMemoryFlag(value: string): MemoryReservation[] {
  const out: MemoryReservation[] = [];
  if (value === '') return out;
  for (const reservation of value.split(';')) {
    const parts = reservation.split(':');
    if (parts.length !== 2)
      throw new Error(
        `the reserved memory has incorrect format, expected numaNodeID:type=quantity[,type=quantity...], got ${reservation}`,
      );
    const [idText, limitsText] = parts as [string, string];
    if (!/^[+-]?\d+$/.test(idText))
      throw new Error(`failed to convert the NUMA node ID, exptected integer, got ${idText}`);
    const limits: Record<string, string> = {};
    for (const limit of limitsText.split(',')) {
      const kv = limit.split('=');
      if (kv.length !== 2)
        throw new Error(`the reserved limit has incorrect value, expected type=quantatity, got ${limit}`);
      const [name, q] = kv as [string, string];
      if (name !== 'memory' && !isHugePageResourceName(name))
        throw new Error(`memory type conversion error, unknown type: ${goQuote(name)}`);
      try {
        parseQuantity(q);
      } catch {
        throw new Error(`failed to parse the quantatity, expected quantatity, got ${q}`);
      }
      limits[name] = q;
    }
    out.push({ numaNode: Number(idText), limits });
  }
  return out;
}
