/**
 * Upstream's util/node PatchNodeStatus: a strategic merge patch of nodes/{name}/status from the
 * server's copy to the computed one. The spec never takes part (the status subresource ignores it
 * anyway); metadata does, as in UpdateStatus, which is how registration fixes labels and annotations.
 */
import { mustSucceed } from '../k8s/api-status.js';
import type { CallOptions } from '../k8s/rest-client.js';
import { nodeRefPath, type NodeApiClient } from './node-client.js';
import { semanticEqual } from './node-status-changed.js';
import { createTwoWayMergePatch, type JsonObject, type PatchSchema } from '../k8s/strategic-merge-patch.js';
import type { Node } from '../api/node.js';

/**
 * The patch tags of core/v1 Node that a status patch can meet. (metadata.finalizers and
 * spec.podCIDRs are merged scalar lists upstream; the kubelet never changes the one and leaves the
 * spec out, so neither needs them here.)
 */
export const NODE_PATCH_SCHEMA: PatchSchema = {
  metadata: { fields: { ownerReferences: { mergeKey: 'uid' } } },
  status: { fields: { conditions: { mergeKey: 'type' }, addresses: { mergeKey: 'type' } } },
};

function toJson(node: Node): JsonObject {
  return JSON.parse(JSON.stringify(node)) as JsonObject;
}

/**
 * The patch body. status.addresses is tagged merge-by-type in the Go types, which cannot express two
 * InternalIPs or a removed address, so a changed address list is sent whole with `$patch: replace`.
 */
export function preparePatchForNodeStatus(oldNode: Node, newNode: Node): JsonObject {
  const oldAddresses = oldNode.status?.addresses ?? [];
  const newAddresses = newNode.status?.addresses ?? [];
  const manuallyPatchAddresses = oldAddresses.length > 0 && !semanticEqual(oldAddresses, newAddresses);
  const diffNode = toJson(newNode);
  if (oldNode.spec === undefined) delete diffNode.spec;
  else diffNode.spec = JSON.parse(JSON.stringify(oldNode.spec)) as JsonObject;
  if (manuallyPatchAddresses) {
    const status = (diffNode.status ?? {}) as JsonObject;
    status.addresses = JSON.parse(JSON.stringify(oldAddresses)) as JsonObject[];
    diffNode.status = status;
  }
  const patch = createTwoWayMergePatch(toJson(oldNode), diffNode, NODE_PATCH_SCHEMA);
  if (manuallyPatchAddresses) {
    const status = (patch.status ?? {}) as JsonObject;
    status.addresses = [...(JSON.parse(JSON.stringify(newAddresses)) as JsonObject[]), { $patch: 'replace' }];
    patch.status = status;
  }
  return patch;
}

/** Patches the node's status; the server's node after the patch, or a thrown KubeApiError. */
export async function patchNodeStatus(
  client: NodeApiClient,
  nodeName: string,
  oldNode: Node,
  newNode: Node,
  options: CallOptions,
): Promise<Node> {
  const patch = preparePatchForNodeStatus(oldNode, newNode);
  const result = await client.patch<Node>(nodeRefPath(nodeName, 'status'), 'strategic', patch, options);
  return mustSucceed(
    result,
    `failed to patch status ${JSON.stringify(JSON.stringify(patch))} for node "${nodeName}"`,
  );
}
