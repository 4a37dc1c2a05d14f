/**
 * The API calls node registration, node status and the node Lease make: the REST client's verbs,
 * so the kubelet passes its client as it is and tests pass a fake (testing/fake-node-client.ts).
 */
import type { ResourceRef, RestClient } from '../k8s/rest-client.js';

export type NodeApiClient = Pick<RestClient, 'get' | 'create' | 'update' | 'patch'>;

/** Where node Leases live (upstream: v1.NamespaceNodeLease). */
export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

export function nodeRefPath(nodeName?: string, subresource?: string): ResourceRef {
  return {
    resource: 'nodes',
    ...(nodeName !== undefined ? { name: nodeName } : {}),
    ...(subresource ? { subresource } : {}),
  };
}

export function leaseRefPath(name?: string, namespace = NODE_LEASE_NAMESPACE): ResourceRef {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    resource: 'leases',
    namespace,
    ...(name !== undefined ? { name } : {}),
  };
}
