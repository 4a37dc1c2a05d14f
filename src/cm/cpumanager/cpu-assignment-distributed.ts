/**
 * distribute-cpus-across-numa (upstream: cpu_assignment.go takeByTopologyNUMADistributed, KEP-2902):
 * a request that needs more than one NUMA node is spread evenly over the fewest NUMA nodes that can
 * hold it, in groups of cpuGroupSize CPUs (a whole core under full-pcpus-only). Among the NUMA node
 * combinations of the smallest workable size, the one that leaves the node most balanced wins (the
 * standard deviation of what each node has left, rounded to 3 places as upstream); a remainder that
 * does not divide evenly goes to the subset of the combination that keeps that balance best. When no
 * combination works, the request is packed as takeByTopologyNUMAPacked does.
 */
import { KubeletError } from '../../lib/errors.js';
import { CPUAccumulator, NOT_ENOUGH_CPUS, takeByTopologyNUMAPacked } from './cpu-assignment.js';
import type { CPUSet } from './cpu-set.js';
import type { CPUTopology } from './topology.js';

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

function standardDeviation(xs: readonly number[]): number {
  const mean = round3(xs.reduce((a, b) => a + b, 0) / xs.length);
  const sq = xs.reduce((a, x) => a + (x - mean) * (x - mean), 0);
  return round3(Math.sqrt(sq / xs.length));
}

/** Every k-element subset of ids, in order, until f returns true (upstream's iterateCombinations). */
function iterateCombinations(ids: readonly number[], k: number, f: (combo: number[]) => boolean): void {
  if (k < 1) return;
  const walk = (start: number, picked: number[]): boolean => {
    if (picked.length === k) return f(picked);
    for (let i = start; i <= ids.length - (k - picked.length); i++)
      if (walk(i + 1, [...picked, ids[i]!])) return true;
    return false;
  };
  walk(0, []);
}

/** The fewest and most NUMA nodes the request could be spread over (rangeNUMANodesNeededToSatisfy). */
function numaRange(acc: CPUAccumulator, topo: CPUTopology, groupSize: number): [number, number] {
  const numNUMANodes = topo.details.numaNodes().size;
  const numCPUGroups = Math.trunc((topo.details.cpus().size - 1) / groupSize) + 1;
  const groupsPerNUMANode = Math.trunc((numCPUGroups - 1) / numNUMANodes) + 1;
  const groupsNeeded = Math.trunc((acc.needed - 1) / groupSize) + 1;
  const minNUMAs = Math.trunc((groupsNeeded - 1) / groupsPerNUMANode) + 1;
  return [minNUMAs, Math.min(groupsNeeded, acc.details.numaNodes().size)];
}

/**
 * Takes groups of groupSize from the nodes of subset in turn until remainder is covered. False when
 * a full round takes nothing: upstream loops forever there; here the subset simply does not fit.
 */
function spreadRemainder(
  left: Map<number, number>,
  subset: readonly number[],
  remainder: number,
  groupSize: number,
): boolean {
  while (remainder > 0) {
    let took = false;
    for (const numa of subset) {
      if (remainder === 0) break;
      if ((left.get(numa) ?? 0) < groupSize) continue;
      left.set(numa, (left.get(numa) ?? 0) - groupSize);
      remainder -= groupSize;
      took = true;
    }
    if (!took) return false;
  }
  return true;
}

interface Choice {
  balance: number;
  combo: number[];
  remainder: number[];
}

/** How well combo can take the request: its best balance and remainder subset, or undefined. */
function scoreCombo(
  acc: CPUAccumulator,
  numas: readonly number[],
  combo: number[],
  numCPUs: number,
  groupSize: number,
): Choice | undefined {
  const d = acc.details;
  if (d.cpusInNUMANodes(...combo).size < numCPUs) return undefined;
  const groups = combo.reduce((n, numa) => n + Math.trunc(d.cpusInNUMANodes(numa).size / groupSize), 0);
  if (groups * groupSize < numCPUs) return undefined;
  const distribution = Math.trunc(numCPUs / combo.length / groupSize) * groupSize;
  if (combo.some((numa) => d.cpusInNUMANodes(numa).size < distribution)) return undefined;
  const left = new Map(numas.map((numa) => [numa, d.cpusInNUMANodes(numa).size]));
  for (const numa of combo) left.set(numa, left.get(numa)! - distribution);
  const remainder = numCPUs - distribution * combo.length;
  const remainderCombo = combo.filter((numa) => left.get(numa)! >= groupSize);
  let best: Choice | undefined;
  if (remainder === 0) best = { balance: standardDeviation([...left.values()]), combo, remainder: [] };
  for (let k = remainderCombo.length; remainder > 0 && k >= 1; k--) {
    iterateCombinations(remainderCombo, k, (subset) => {
      const after = new Map(left);
      if (subset.reduce((n, numa) => n + after.get(numa)!, 0) < remainder) return false;
      if (!spreadRemainder(after, subset, remainder, groupSize)) return false;
      const balance = standardDeviation([...after.values()]);
      if (!best || balance < best.balance) best = { balance, combo, remainder: subset };
      return false;
    });
  }
  return best;
}

/** Takes the chosen spread from acc: an even share from each node of combo, then the remainder. */
function takeChoice(
  acc: CPUAccumulator,
  topo: CPUTopology,
  choice: Choice,
  numCPUs: number,
  groupSize: number,
): void {
  const distribution = Math.trunc(numCPUs / choice.combo.length / groupSize) * groupSize;
  const takeFrom = (numa: number, n: number): void => {
    try {
      acc.take(takeByTopologyNUMAPacked(topo, acc.details.cpusInNUMANodes(numa), n));
    } catch {
      // As upstream, a node that cannot give its share gives nothing; the accounting below says so.
    }
  };
  for (const numa of choice.combo) takeFrom(numa, distribution);
  let remainder = numCPUs - distribution * choice.combo.length;
  while (remainder > 0) {
    const before = remainder;
    for (const numa of choice.remainder) {
      if (remainder === 0) break;
      if (acc.details.cpusInNUMANodes(numa).size < groupSize) continue;
      takeFrom(numa, groupSize);
      remainder -= groupSize;
    }
    if (remainder === before) break;
  }
}

export function takeByTopologyNUMADistributed(
  topo: CPUTopology,
  available: CPUSet,
  numCPUs: number,
  cpuGroupSize: number,
): CPUSet {
  // A request that cannot come in whole groups is packed instead.
  if (numCPUs % cpuGroupSize !== 0) return takeByTopologyNUMAPacked(topo, available, numCPUs);
  const acc = new CPUAccumulator(topo, available, numCPUs);
  if (acc.isSatisfied()) return acc.result;
  if (acc.isFailed()) throw new KubeletError('CPU_ALLOCATION_FAILED', NOT_ENOUGH_CPUS);
  const numas = acc.sortedNUMANodes();
  const [minNUMAs, maxNUMAs] = numaRange(acc, topo, cpuGroupSize);
  for (let k = minNUMAs; k <= maxNUMAs; k++) {
    let best: Choice | undefined;
    iterateCombinations(numas, k, (combo) => {
      // A perfectly balanced spread cannot be beaten.
      if (best?.balance === 0) return true;
      const choice = scoreCombo(acc, numas, combo, numCPUs, cpuGroupSize);
      if (choice && (!best || choice.balance < best.balance)) best = choice;
      return false;
    });
    if (!best) continue;
    takeChoice(acc, topo, best, numCPUs, cpuGroupSize);
    if (acc.needed > 0)
      throw new KubeletError(
        'CPU_ALLOCATION_FAILED',
        `accounting error, not enough CPUs allocated, remaining: ${acc.needed}`,
      );
    if (acc.needed < 0)
      throw new KubeletError(
        'CPU_ALLOCATION_FAILED',
        `accounting error, too many CPUs allocated, remaining: ${acc.needed}`,
      );
    return acc.result;
  }
  return takeByTopologyNUMAPacked(topo, available, numCPUs);
}
