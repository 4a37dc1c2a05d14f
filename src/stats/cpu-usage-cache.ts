/**
 * usageNanoCores from two readings of a cumulative CPU counter, as upstream's CRI stats provider
 * computes it when the runtime leaves it out: (Δ usage ns) / (Δ time s). The first reading of
 * an id has no rate yet.
 */
export class CpuUsageCache {
  private readonly last = new Map<string, { timeMs: number; usageNs: number }>();

  /** Records the reading and returns the rate since the previous one, if any. */
  update(id: string, timeMs: number, usageNs: number): number | undefined {
    const prev = this.last.get(id);
    if (prev && timeMs <= prev.timeMs) return undefined; // same reading again: keep the older baseline
    this.last.set(id, { timeMs, usageNs });
    if (!prev || usageNs < prev.usageNs) return undefined;
    return Math.round(((usageNs - prev.usageNs) / (timeMs - prev.timeMs)) * 1000);
  }

  /** Forgets ids not in keep (containers and pods that are gone). */
  retain(keep: ReadonlySet<string>): void {
    for (const id of this.last.keys()) if (!keep.has(id)) this.last.delete(id);
  }
}
