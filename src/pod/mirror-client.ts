/**
 * Mirror pods: the API server's read-only copies of the static pods (manifest folder, manifest URL)
 * that this kubelet runs, so that the cluster sees them (upstream: pkg/kubelet/pod/mirror_client.go).
 *
 * A mirror pod is the static pod as the kubelet runs it (name, namespace, labels, annotations, spec
 * with spec.nodeName), with `kubernetes.io/config.mirror` set to the static pod's
 * `kubernetes.io/config.hash`, and owned by the Node (controller: true), which the NodeRestriction
 * admission plugin requires of a mirror pod. Deleting one is always immediate (grace 0), with the
 * UID as precondition when the caller names the copy it means.
 */
import type { Pod } from '../api/core-v1.js';
import { CONFIG_HASH_ANNOTATION, CONFIG_MIRROR_ANNOTATION } from '../api/pod-source.js';
import { isKubeApiError } from '../k8s/api-status.js';
import type { RestClient } from '../k8s/rest-client.js';
import { errorMessage } from '../lib/errors.js';
import { logger, type Logger } from '../lib/log.js';
import type { Node } from '../api/node.js';

/**
 * The deadline of each mirror pod call: they are made from a pod's sync and from housekeeping, which
 * must not wait on an API server that does not answer for the client's default 30 s.
 */
export const MIRROR_REQUEST_TIMEOUT_MS = 10_000;

/** The static pod's hash, which its mirror pod carries as config.mirror (every static pod has one). */
export function getPodHash(pod: Pod): string {
  return pod.metadata.annotations?.[CONFIG_HASH_ANNOTATION] ?? '';
}

/** The mirror pod stands for this very version of the static pod: same name and namespace, same hash. */
export function isMirrorPodOf(mirrorPod: Pod, pod: Pod): boolean {
  if (mirrorPod.metadata.name !== pod.metadata.name) return false;
  if (mirrorPod.metadata.namespace !== pod.metadata.namespace) return false;
  const hash = mirrorPod.metadata.annotations?.[CONFIG_MIRROR_ANNOTATION];
  return hash !== undefined && hash === getPodHash(pod);
}

/** upstream ParsePodFullName: `<name>_<namespace>`. */
export function parsePodFullName(fullName: string): { name: string; namespace: string } {
  const parts = fullName.split('_');
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '') {
    throw new Error(`failed to parse the pod full name "${fullName}"`);
  }
  return { name: parts[0]!, namespace: parts[1]! };
}

/**
 * The object to create for staticPod: what the static pod is, less what the API server assigns
 * (UID, resourceVersion, creation time, status), plus the mirror annotation and the node as owner.
 */
export function mirrorPodFor(staticPod: Pod, nodeName: string, nodeUid: string): Pod {
  const {
    uid: _uid,
    resourceVersion: _rv,
    creationTimestamp: _created,
    generation: _generation,
    deletionTimestamp: _deleted,
    deletionGracePeriodSeconds: _grace,
    ...metadata
  } = structuredClone(staticPod.metadata);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...metadata,
      annotations: { ...metadata.annotations, [CONFIG_MIRROR_ANNOTATION]: getPodHash(staticPod) },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUid, controller: true }],
    },
    spec: structuredClone(staticPod.spec),
  };
}

/** Creates and deletes mirror pods (upstream: MirrorClient). */
export interface MirrorClient {
  /** Creates the mirror pod of a static pod; throws what went wrong (AlreadyExists included). */
  createMirrorPod(staticPod: Pod, signal?: AbortSignal): Promise<void>;
  /**
   * Deletes the mirror pod of that full name at once, only if its UID is uid when one is given.
   * True when this call deleted it; false when it was not there, was another copy, or the call failed
   * (logged): as upstream, only a malformed name throws.
   */
  deleteMirrorPod(podFullName: string, uid: string | undefined, signal?: AbortSignal): Promise<boolean>;
}

export interface ApiMirrorClientOptions {
  client: Pick<RestClient, 'create' | 'delete'>;
  nodeName: string;
  /** The Node as the node informer has it: its UID is the owner reference. */
  getNode: () => Node | undefined;
  requestTimeoutMs?: number;
  log?: Logger;
}

/** The MirrorClient of cluster mode (upstream: basicMirrorClient). */
export class ApiMirrorClient implements MirrorClient {
  private readonly log: Logger;
  private readonly timeoutMs: number;

  constructor(private readonly opts: ApiMirrorClientOptions) {
    this.log = opts.log ?? logger('kubelet');
    this.timeoutMs = opts.requestTimeoutMs ?? MIRROR_REQUEST_TIMEOUT_MS;
  }

  async createMirrorPod(staticPod: Pod, signal?: AbortSignal): Promise<void> {
    const nodeUid = this.opts.getNode()?.metadata.uid;
    if (!nodeUid) throw new Error(`failed to get node UID: UID unset for node ${this.opts.nodeName}`);
    const mirror = mirrorPodFor(staticPod, this.opts.nodeName, nodeUid);
    const namespace = mirror.metadata.namespace ?? 'default';
    const created = await this.opts.client.create<Pod>({ resource: 'pods', namespace }, mirror, {
      timeoutMs: this.timeoutMs,
      ...(signal ? { signal } : {}),
    });
    if (!created.ok) {
      throw new Error(
        `create mirror pod ${namespace}/${mirror.metadata.name ?? ''}: ${created.status.message ?? created.reason}`,
      );
    }
  }

  async deleteMirrorPod(fullName: string, uid: string | undefined, signal?: AbortSignal): Promise<boolean> {
    const { name, namespace } = parsePodFullName(fullName);
    this.log.v(2, 'Deleting a mirror pod', { pod: `${namespace}/${name}`, podUID: uid ?? '' });
    try {
      const deleted = await this.opts.client.delete(
        { resource: 'pods', namespace, name },
        {
          gracePeriodSeconds: 0,
          ...(uid ? { preconditions: { uid } } : {}),
          timeoutMs: this.timeoutMs,
          ...(signal ? { signal } : {}),
        },
      );
      // NotFound: already gone; Conflict: the UID precondition failed, another copy holds the name.
      return deleted.ok;
    } catch (err) {
      const reason = isKubeApiError(err) ? ` (${err.reason})` : '';
      this.log.error('Failed deleting a mirror pod', {
        pod: `${namespace}/${name}`,
        err: `${errorMessage(err)}${reason}`,
      });
      return false;
    }
  }
}
