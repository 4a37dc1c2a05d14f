/**
 * Whether a computed node status differs from the server's copy in anything but heartbeats
 * (upstream: nodeStatusHasChanged and nodeConditionsHaveChanged). Only a change, or the report
 * interval running out, sends a status patch: the Lease is the heartbeat.
 */
import { parseQuantity } from '../api/quantity.js';
import type { NodeCondition, NodeStatus } from '../api/node.js';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Go's zero values: what a field absent from the JSON decodes to. */
function isZero(v: unknown): boolean {
  return (
    v === undefined ||
    v === null ||
    v === '' ||
    v === 0 ||
    v === false ||
    (Array.isArray(v) && v.length === 0) ||
    (isObject(v) && Object.values(v).every(isZero))
  );
}

/**
 * apimachinery's equality.Semantic.DeepEqual over API JSON: a field at its zero value equals an
 * absent one (both decode to the same Go struct), and resource lists compare by quantity.
 */
export function semanticEqual(a: unknown, b: unknown, key?: string): boolean {
  if (isZero(a) && isZero(b)) return true;
  if ((key === 'capacity' || key === 'allocatable') && isObject(a) && isObject(b))
    return resourceListsEqual(a, b);
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => semanticEqual(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) if (!semanticEqual(a[k], b[k], k)) return false;
    return true;
  }
  return a === b;
}

function resourceListsEqual(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    const x = a[k];
    const y = b[k];
    if (x === undefined || y === undefined) return false;
    try {
      if (parseQuantity(String(x)).nano !== parseQuantity(String(y)).nano) return false;
    } catch {
      if (x !== y) return false;
    }
  }
  return true;
}

export function nodeConditionsHaveChanged(
  original: readonly NodeCondition[] | undefined,
  current: readonly NodeCondition[] | undefined,
): boolean {
  const a = [...(original ?? [])];
  const b = [...(current ?? [])];
  if (a.length !== b.length) return true;
  const byType = (x: NodeCondition, y: NodeCondition) => (x.type < y.type ? -1 : x.type > y.type ? 1 : 0);
  a.sort(byType);
  b.sort(byType);
  return a.some((c, i) => {
    const { lastHeartbeatTime: _h1, ...left } = c;
    const { lastHeartbeatTime: _h2, ...right } = b[i]!;
    return !semanticEqual(left, right);
  });
}

export function nodeStatusHasChanged(
  original: NodeStatus | undefined,
  current: NodeStatus | undefined,
): boolean {
  if (original === undefined && current === undefined) return false;
  if (original === undefined || current === undefined) return true;
  if (nodeConditionsHaveChanged(original.conditions, current.conditions)) return true;
  const { conditions: _c1, ...left } = original;
  const { conditions: _c2, ...right } = current;
  return !semanticEqual(left, right);
}
