/**
 * Whether a PersistentVolume may be used on this node: its required node affinity against the
 * node's labels and name (upstream: storagehelpers.CheckNodeAffinity over
 * corev1.MatchNodeSelectorTerms). Terms are ORed; within a term every requirement must hold; a term
 * with no requirement matches nothing.
 */
import type { NodeSelectorRequirement, NodeSelectorTerm } from '../api/core-v1.js';
import type { PersistentVolume } from './volume-types.js';

function matchRequirement(r: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1) return false;
      const have = Number.parseInt(value, 10);
      const want = Number.parseInt(values[0] ?? '', 10);
      if (!/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0] ?? '')) return false;
      return r.operator === 'Gt' ? have > want : have < want;
    }
    default:
      return false;
  }
}

function matchTerm(term: NodeSelectorTerm, labels: Record<string, string>, nodeName: string): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  for (const r of exprs) if (!matchRequirement(r, labels[r.key])) return false;
  // The only field a node selector may name is metadata.name.
  for (const r of fields) {
    if (r.key !== 'metadata.name' || !matchRequirement(r, nodeName)) return false;
  }
  return true;
}

export function matchNodeSelectorTerms(
  terms: NodeSelectorTerm[],
  labels: Record<string, string>,
  nodeName: string,
): boolean {
  return terms.some((t) => matchTerm(t, labels, nodeName));
}

/** Throws upstream's error when the PV's required node affinity does not match this node. */
export function checkNodeAffinity(
  pv: PersistentVolume,
  labels: Record<string, string>,
  nodeName: string,
): void {
  const required = pv.spec.nodeAffinity?.required;
  if (!required) return;
  if (!matchNodeSelectorTerms(required.nodeSelectorTerms ?? [], labels, nodeName)) {
    throw new Error('no matching NodeSelectorTerms');
  }
}
