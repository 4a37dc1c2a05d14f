/**
 * The machine's NUMA nodes and the distances between them (upstream: topologymanager/numa_info.go,
 * fed by cadvisor's topology; read here from sysfs, whose root tests point at a fake tree).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, KubeletError } from '../../lib/errors.js';
import { isLessThan, isNarrowerThan } from './numa-affinity.js';
import type { NUMAAffinity } from './topology-hint.js';

export class NUMAInfo {
  /**
   * nodes: the NUMA node IDs, sorted. distances: node → its distance to each node, by node ID (the
   * kernel's `distance` file); empty when they were not asked for.
   */
  constructor(
    readonly nodes: readonly number[],
    readonly distances: ReadonlyMap<number, readonly number[]> = new Map(),
  ) {}

  /** Every node: what a hint that does not care where it lives amounts to. */
  defaultAffinity(): NUMAAffinity {
    return this.nodes;
  }

  narrowest(a: NUMAAffinity, b: NUMAAffinity): NUMAAffinity {
    return isNarrowerThan(a, b) ? a : b;
  }

  /** Of two affinities of one size, the one whose nodes are closest to each other on average. */
  closest(a: NUMAAffinity, b: NUMAAffinity): NUMAAffinity {
    if (a.length !== b.length) return this.narrowest(a, b);
    const da = this.averageDistance(a);
    const db = this.averageDistance(b);
    if (da === db) return isLessThan(a, b) ? a : b;
    return da < db ? a : b;
  }

  /** The mean distance over every ordered pair of the affinity's nodes, each node with itself included. */
  averageDistance(affinity: NUMAAffinity): number {
    if (affinity.length === 0) return 0;
    let sum = 0;
    for (const from of affinity) for (const to of affinity) sum += this.distances.get(from)?.[to] ?? 0;
    return sum / (affinity.length * affinity.length);
  }
}

/**
 * The NUMA nodes under `<sysfsRoot>/devices/system/node`; a kernel without NUMA has none there and
 * counts as one node 0 (as cadvisor reports it). withDistances reads each node's `distance` file.
 */
export async function discoverNUMAInfo(sysfsRoot: string, withDistances: boolean): Promise<NUMAInfo> {
  const nodeDir = path.join(sysfsRoot, 'devices/system/node');
  let entries: string[];
  try {
    entries = await readdir(nodeDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    entries = [];
  }
  const nodes = entries
    .map((name) => /^node(\d+)$/.exec(name)?.[1])
    .filter((id): id is string => id !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
  if (nodes.length === 0) return new NUMAInfo([0], new Map([[0, [10]]]));
  const distances = new Map<number, number[]>();
  if (withDistances) {
    for (const node of nodes) {
      const file = path.join(nodeDir, `node${node}`, 'distance');
      const text = await readFile(file, 'utf8').catch((err: unknown) => {
        throw new KubeletError('INVALID_CONFIG', `error getting NUMA distances: ${errorMessage(err)}`);
      });
      const values = text.trim().split(/\s+/).map(Number);
      if (values.some((v) => !Number.isInteger(v) || v < 0))
        throw new KubeletError(
          'INVALID_CONFIG',
          `error getting NUMA distances: ${file}: ${JSON.stringify(text)}`,
        );
      distances.set(node, values);
    }
  }
  return new NUMAInfo(nodes, distances);
}
