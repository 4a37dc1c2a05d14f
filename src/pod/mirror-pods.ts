/**
 * The mirror pods bound to this node, and keeping them in step with the static pods (upstream: the
 * mirror half of pod.Manager, the mirror pod section of kubelet.go syncPod, and HandlePodCleanups'
 * orphaned mirror pods).
 *
 * Mirror pods arrive with the API source's pods. They are never run: the sync loop registers them
 * here (apply) and syncs the static pod of the same full name, whose sync calls reconcile:
 * - no mirror pod: create one (once the node is known, and not while it is being deleted);
 * - a mirror pod being deleted (deletionTimestamp), or one of another version of the static pod (its
 *   config.mirror is not the static pod's config.hash): delete it at once, UID as precondition, and
 *   create the current one.
 * Housekeeping calls deleteOrphaned: a mirror pod whose static pod is gone is deleted once that static
 * pod has finished terminating.
 */
import { podFullName, type Pod } from '../api/core-v1.js';
import type { PodOperation } from '../config/types.js';
import { errorMessage } from '../lib/errors.js';
import { logger, type Logger } from '../lib/log.js';
import type { Node } from '../api/node.js';
import { isStaticPod } from '../api/pod-source.js';
import { isMirrorPodOf, type MirrorClient } from './mirror-client.js';

export interface MirrorPodsOptions {
  client: MirrorClient;
  /** The Node as the API has it (the node informer); no mirror pod is made until there is one. */
  getNode: () => Node | undefined;
  log?: Logger;
}

export class MirrorPods {
  private readonly log: Logger;
  private readonly byFullName = new Map<string, Pod>();
  private readonly byUid = new Map<string, Pod>();

  constructor(private readonly opts: MirrorPodsOptions) {
    this.log = opts.log ?? logger('kubelet');
  }

  // ---- the registry (upstream: pod.Manager's mirror pods) ------------------------------------------

  /** Adds or replaces a mirror pod. */
  addPod(mirror: Pod): void {
    const uid = mirror.metadata.uid ?? '';
    const previous = this.byUid.get(uid);
    if (previous && podFullName(previous) !== podFullName(mirror)) this.dropName(previous);
    this.byUid.set(uid, mirror);
    this.byFullName.set(podFullName(mirror), mirror);
  }

  removePod(mirror: Pod): void {
    const uid = mirror.metadata.uid ?? '';
    const known = this.byUid.get(uid);
    this.byUid.delete(uid);
    if (known) this.dropName(known);
  }

  /**
   * Takes in one config update's mirror pods and returns the full names whose static pods must sync
   * now (every operation but RECONCILE, which is the API echoing the status the kubelet wrote).
   */
  apply(op: PodOperation, mirrors: readonly Pod[]): string[] {
    for (const mirror of mirrors) {
      if (op === 'REMOVE') this.removePod(mirror);
      else this.addPod(mirror);
    }
    return op === 'RECONCILE' ? [] : mirrors.map(podFullName);
  }

  getByFullName(fullName: string): Pod | undefined {
    return this.byFullName.get(fullName);
  }

  getByUid(uid: string): Pod | undefined {
    return this.byUid.get(uid);
  }

  /** The mirror pod of a static pod, if the API has one. */
  mirrorOf(staticPod: Pod): Pod | undefined {
    return this.byFullName.get(podFullName(staticPod));
  }

  list(): Pod[] {
    return [...this.byUid.values()];
  }

  get size(): number {
    return this.byUid.size;
  }

  // Another UID may hold the name now (a mirror pod replaced): leave that one in place.
  private dropName(pod: Pod): void {
    const name = podFullName(pod);
    if (this.byFullName.get(name)?.metadata.uid === pod.metadata.uid) this.byFullName.delete(name);
  }

  // ---- keeping them in step ----------------------------------------------------------------------------

  /**
   * Brings the static pod's mirror pod in step with it (upstream: syncPod's "Create Mirror Pod for
   * Static Pod if it doesn't already exist"). Failures are logged, never thrown: the pod's next sync
   * tries again, and the pod itself runs regardless.
   */
  async reconcile(staticPod: Pod, signal?: AbortSignal): Promise<void> {
    if (!isStaticPod(staticPod)) return;
    const fullName = podFullName(staticPod);
    const ref = `${staticPod.metadata.namespace ?? ''}/${staticPod.metadata.name ?? ''}`;
    const mirror = this.byFullName.get(fullName);
    let deleted = false;
    if (mirror && (mirror.metadata.deletionTimestamp !== undefined || !isMirrorPodOf(mirror, staticPod))) {
      // Semantically not this static pod (or on its way out): remove it, and make the right one below.
      this.log.info('Trying to delete pod', { pod: ref, podUID: mirror.metadata.uid });
      try {
        deleted = await this.opts.client.deleteMirrorPod(fullName, mirror.metadata.uid, signal);
      } catch (err) {
        this.log.error('Failed deleting mirror pod', { pod: ref, err: errorMessage(err) });
      }
      // The registry keeps it until the API source says it is gone, as upstream's pod manager does.
      if (deleted) this.log.info('Deleted mirror pod because it is outdated', { pod: ref });
    }
    if (mirror && !deleted) return;
    const node = this.opts.getNode();
    if (!node) {
      this.log.v(4, 'No need to create a mirror pod, since failed to get node info from the cluster', {
        pod: ref,
      });
      return;
    }
    if (node.metadata.deletionTimestamp !== undefined) {
      this.log.v(4, 'No need to create a mirror pod, since node has been removed from the cluster', {
        pod: ref,
      });
      return;
    }
    this.log.v(4, 'Creating a mirror pod for static pod', { pod: ref });
    try {
      await this.opts.client.createMirrorPod(staticPod, signal);
    } catch (err) {
      this.log.error('Failed creating a mirror pod for', { pod: ref, err: errorMessage(err) });
    }
  }

  /**
   * Deletes the mirror pods whose static pod is gone (upstream: HandlePodCleanups). One whose static
   * pod is still terminating stays: its status goes there until the containers have stopped.
   */
  async deleteOrphaned(
    podByFullName: (fullName: string) => Pod | undefined,
    isStaticPodTerminating: (fullName: string) => boolean,
    signal?: AbortSignal,
  ): Promise<void> {
    for (const fullName of [...this.byFullName.keys()]) {
      const pod = podByFullName(fullName);
      if ((pod && isStaticPod(pod)) || isStaticPodTerminating(fullName)) continue;
      try {
        if (await this.opts.client.deleteMirrorPod(fullName, undefined, signal))
          this.log.v(3, 'Deleted mirror pod', { podName: fullName });
      } catch (err) {
        this.log.error('Encountered error when deleting mirror pod', {
          podName: fullName,
          err: errorMessage(err),
        });
      }
    }
  }
}
