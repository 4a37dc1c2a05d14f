import type { Pod } from '../api/core-v1.js';
import type { ServerState } from './kubelet-server.js';

/** The pod a request names (upstream GetPodByName), or undefined. */
export function findPod(state: ServerState, namespace: string, name: string): Pod | undefined {
  if (state.host.getPodByName) return state.host.getPodByName(namespace, name);
  return state.host.getPods().find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
}

/**
 * The pod a /{verb}/{namespace}/{pod}/{uid}/… request names, when its UID (if given) is that pod's:
 * the runtime is searched by UID, so a UID of another pod must never get that far.
 */
export function findPodWithUid(
  state: ServerState,
  namespace: string,
  name: string,
  uid: string,
): { pod: Pod } | { status: 404; message: string } {
  const pod = findPod(state, namespace, name);
  if (!pod) return { status: 404, message: 'pod does not exist' };
  if (uid !== '' && pod.metadata.uid !== uid) return { status: 404, message: 'pod not found' };
  return { pod };
}
