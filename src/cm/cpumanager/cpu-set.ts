/**
 * An immutable set of logical CPU ids (upstream: k8s.io/utils/cpuset), written and parsed in the
 * Linux list format the kernel and the CRI use for cpuset.cpus: "0-3,8,10-11".
 */
import { KubeletError } from '../../lib/errors.js';

export class CPUSet {
  private readonly ids: readonly number[];

  private constructor(sortedUnique: readonly number[]) {
    this.ids = sortedUnique;
  }

  static of(...cpus: number[]): CPUSet {
    return CPUSet.from(cpus);
  }

  static from(cpus: Iterable<number>): CPUSet {
    return new CPUSet([...new Set(cpus)].sort((a, b) => a - b));
  }

  static readonly EMPTY = new CPUSet([]);

  /** Parses "0-3,8"; the empty string is the empty set, as upstream's cpuset.Parse. */
  static parse(text: string): CPUSet {
    if (text === '') return CPUSet.EMPTY;
    const out: number[] = [];
    for (const part of text.split(',')) {
      const bounds = part.split('-');
      const nums = bounds.map((b) => (/^\d+$/.test(b) ? Number(b) : NaN));
      const [lo, hi] = nums;
      if (bounds.length > 2 || lo === undefined || Number.isNaN(lo) || (hi !== undefined && Number.isNaN(hi)))
        throw new KubeletError(
          'INVALID_CPUSET',
          `invalid cpuset ${JSON.stringify(text)}: bad part ${JSON.stringify(part)}`,
        );
      const end = hi ?? lo;
      if (end < lo)
        throw new KubeletError(
          'INVALID_CPUSET',
          `invalid cpuset ${JSON.stringify(text)}: range ${part} is inverted`,
        );
      for (let c = lo; c <= end; c++) out.push(c);
    }
    return CPUSet.from(out);
  }

  get size(): number {
    return this.ids.length;
  }

  isEmpty(): boolean {
    return this.ids.length === 0;
  }

  has(cpu: number): boolean {
    return this.ids.includes(cpu);
  }

  /** Ascending ids. */
  list(): number[] {
    return [...this.ids];
  }

  equals(other: CPUSet): boolean {
    return this.ids.length === other.ids.length && this.ids.every((c, i) => other.ids[i] === c);
  }

  isSubsetOf(other: CPUSet): boolean {
    return this.ids.every((c) => other.has(c));
  }

  union(...others: CPUSet[]): CPUSet {
    return CPUSet.from([...this.ids, ...others.flatMap((o) => o.ids)]);
  }

  intersection(other: CPUSet): CPUSet {
    return new CPUSet(this.ids.filter((c) => other.has(c)));
  }

  difference(other: CPUSet): CPUSet {
    return new CPUSet(this.ids.filter((c) => !other.has(c)));
  }

  filter(keep: (cpu: number) => boolean): CPUSet {
    return new CPUSet(this.ids.filter(keep));
  }

  /** The list format with runs collapsed: "0-2,7". */
  toString(): string {
    const parts: string[] = [];
    let i = 0;
    while (i < this.ids.length) {
      const start = this.ids[i] as number;
      let end = start;
      while (this.ids[i + 1] === end + 1) {
        end++;
        i++;
      }
      parts.push(start === end ? `${start}` : `${start}-${end}`);
      i++;
    }
    return parts.join(',');
  }
}
