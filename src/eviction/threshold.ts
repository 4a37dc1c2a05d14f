/**
 * Eviction signals and thresholds as upstream parses them (pkg/kubelet/eviction/api and
 * ParseThresholdConfig): `evictionHard` and `evictionSoft` statements such as
 * `memory.available: 100Mi` or `nodefs.available: 10%`, soft ones with their grace periods, and
 * `evictionMinimumReclaim` added to each.
 */
import {
  formatQuantity,
  parseQuantity as parseResourceQuantity,
  quantityOf,
  valueOf,
} from '../api/quantity.js';

export type Signal =
  | 'memory.available'
  | 'allocatableMemory.available'
  | 'nodefs.available'
  | 'nodefs.inodesFree'
  | 'imagefs.available'
  | 'imagefs.inodesFree'
  | 'containerfs.available'
  | 'containerfs.inodesFree'
  | 'pid.available';

/** The resource each signal measures (upstream signalToResource); inodes and pids are internal names. */
export const SIGNAL_TO_RESOURCE: Readonly<
  Record<Signal, 'memory' | 'ephemeral-storage' | 'inodes' | 'pids'>
> = {
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'containerfs.available': 'ephemeral-storage',
  'containerfs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

export type NodeConditionType = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

export const SIGNAL_TO_NODE_CONDITION: Readonly<Record<Signal, NodeConditionType>> = {
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'containerfs.available': 'DiskPressure',
  'containerfs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

export function isSignal(s: string): s is Signal {
  return s in SIGNAL_TO_RESOURCE;
}

/** An absolute amount (bytes, inodes, pids) or a fraction of capacity (Go float32, as upstream keeps it). */
export interface ThresholdValue {
  quantity?: { value: number; text: string };
  percentage?: number;
}

export interface Threshold {
  signal: Signal;
  /** Every signal's operator is LessThan. */
  operator: 'LessThan';
  value: ThresholdValue;
  /** 0 for a hard threshold. */
  gracePeriodMs: number;
  minReclaim?: ThresholdValue;
}

export function isHardEvictionThreshold(t: Threshold): boolean {
  return t.gracePeriodMs === 0;
}

/** A stable identity: upstream keys maps by the Threshold struct itself. */
export function thresholdKey(t: Threshold): string {
  const v = t.value.quantity ? `q${t.value.quantity.value}` : `p${t.value.percentage ?? 0}`;
  return `${t.signal}|${t.operator}|${v}|${t.gracePeriodMs}`;
}

function unsupported(signal: string): Error {
  return new Error(`unsupported eviction signal ${signal}`);
}

/** Go's float32(value)/100: the rounding upstream's percentages carry into their thresholds. */
function parsePercentage(text: string): number {
  const v = Number(text.slice(0, -1));
  if (text.slice(0, -1).trim() === '' || Number.isNaN(v))
    throw new Error(`strconv.ParseFloat: parsing ${JSON.stringify(text.slice(0, -1))}: invalid syntax`);
  return Math.fround(Math.fround(v) / 100);
}

function parseQuantity(text: string): { value: number; text: string; sign: number } {
  const q = parseResourceQuantity(text);
  return {
    value: Number(valueOf(q)),
    text: formatQuantity(q),
    sign: q.nano < 0n ? -1 : q.nano > 0n ? 1 : 0,
  };
}

/** One statement; undefined for 0% and 100%, which upstream ignores. */
function parseThresholdStatement(signal: string, val: string): Threshold | undefined {
  if (!isSignal(signal)) throw unsupported(signal);
  if (val.endsWith('%')) {
    if (val === '0%' || val === '100%') return undefined;
    const percentage = parsePercentage(val);
    if (percentage < 0) throw new Error(`eviction percentage threshold ${signal} must be >= 0%: ${val}`);
    if (percentage > 1) throw new Error(`eviction percentage threshold ${signal} must be <= 100%: ${val}`);
    return { signal, operator: 'LessThan', value: { percentage }, gracePeriodMs: 0 };
  }
  const q = parseQuantity(val);
  if (q.sign <= 0) throw new Error(`eviction threshold ${signal} must be positive: ${q.text}`);
  return {
    signal,
    operator: 'LessThan',
    value: { quantity: { value: q.value, text: q.text } },
    gracePeriodMs: 0,
  };
}

export interface ThresholdConfig {
  evictionHard: Readonly<Record<string, string>>;
  evictionSoft: Readonly<Record<string, string>>;
  evictionSoftGracePeriodMs: Readonly<Record<string, number>>;
  evictionMinimumReclaim: Readonly<Record<string, string>>;
  /** enforceNodeAllocatable: with `pods` the hard memory threshold also applies to allocatable memory. */
  enforceNodeAllocatable: readonly string[];
}

/** Upstream ParseThresholdConfig; errors name the statement, as upstream's do. */
export function parseThresholdConfig(c: ThresholdConfig): Threshold[] {
  const results: Threshold[] = [];
  for (const [signal, val] of Object.entries(c.evictionHard)) {
    const t = parseThresholdStatement(signal, val);
    if (t) results.push(t);
  }
  for (const [signal, val] of Object.entries(c.evictionSoft)) {
    const t = parseThresholdStatement(signal, val);
    if (!t) continue;
    const grace = c.evictionSoftGracePeriodMs[signal];
    if (grace === undefined)
      throw new Error(`grace period must be specified for the soft eviction threshold ${signal}`);
    if (grace < 0)
      throw new Error(`invalid eviction grace period specified: ${grace}, must be a positive value`);
    results.push({ ...t, gracePeriodMs: grace });
  }
  for (const signal of Object.keys(c.evictionSoftGracePeriodMs))
    if (!isSignal(signal)) throw unsupported(signal);
  const minReclaims = new Map<Signal, ThresholdValue>();
  for (const [signal, val] of Object.entries(c.evictionMinimumReclaim)) {
    if (!isSignal(signal)) throw unsupported(signal);
    if (val.endsWith('%')) {
      const percentage = parsePercentage(val);
      if (percentage <= 0)
        throw new Error(`eviction percentage minimum reclaim ${signal} must be positive: ${val}`);
      minReclaims.set(signal, { percentage });
      continue;
    }
    const q = parseQuantity(val);
    if (q.sign < 0) throw new Error(`negative eviction minimum reclaim specified for ${signal}`);
    minReclaims.set(signal, { quantity: { value: q.value, text: q.text } });
  }
  for (const t of results) {
    const m = minReclaims.get(t.signal);
    if (m) t.minReclaim = m;
  }
  if (c.enforceNodeAllocatable.includes('pods')) {
    for (const t of [...results]) {
      if (t.signal === 'memory.available' && isHardEvictionThreshold(t))
        results.push({ ...t, signal: 'allocatableMemory.available' });
    }
  }
  return results;
}

/** Upstream GetThresholdQuantity: the amount itself, or the percentage of capacity (truncated, as int64()). */
export function getThresholdQuantity(value: ThresholdValue, capacity: number): number {
  if (value.quantity) return value.quantity.value;
  return Math.trunc(capacity * (value.percentage ?? 0));
}

/** How upstream prints a threshold quantity in messages: the statement's own text, else bytes in BinarySI. */
export function formatThresholdQuantity(value: ThresholdValue, capacity: number): string {
  if (value.quantity) return value.quantity.text;
  return formatQuantity(quantityOf(getThresholdQuantity(value, capacity), 'BinarySI'));
}
