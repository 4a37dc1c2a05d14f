import type { Pod } from '../api/core-v1.js';
import type { ServerState } from './kubelet-server.js';

/** The pod a request names (upstream GetPodByName), or undefined. */
export function findPod(state: ServerState, namespace: string, name: string): Pod | undefined {
  if (state.host.getPodByName) return state.host.getPodByName(namespace, name);
  return state.host.getPods().find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
}
