import type { Pod } from '../api/core-v1.js';

/** Where pods come from; the values are upstream's `kubernetes.io/config.source` annotation values. */
export type PodSource = 'file' | 'http' | 'api';

/**
 * What PodConfig hands the sync loop (upstream: kubetypes.PodOperation).
 * SET is a source's whole state; the merged stream the loop sees uses the other operations only.
 */
export type PodOperation = 'ADD' | 'UPDATE' | 'REMOVE' | 'DELETE' | 'RECONCILE';

export interface PodUpdate {
  op: PodOperation;
  source: PodSource;
  pods: Pod[];
}
