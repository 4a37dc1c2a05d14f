/**
 * The pods this node should run, as the sources last described them (upstream: pod.Manager).
 * It is the one place the kubelet looks a pod up by UID or by full name; mirror pods join it with cluster mode.
 */
import { podFullName, type Pod } from '../api/core-v1.js';

export class PodManager {
  private readonly byUid = new Map<string, Pod>();
  private readonly byFullName = new Map<string, Pod>();

  /** Adds or replaces pod (a pod is never changed in place: sources hand in new objects). */
  addPod(pod: Pod): void {
    const uid = pod.metadata.uid ?? '';
    const previous = this.byUid.get(uid);
    if (previous && podFullName(previous) !== podFullName(pod)) this.byFullName.delete(podFullName(previous));
    this.byUid.set(uid, pod);
    this.byFullName.set(podFullName(pod), pod);
  }

  updatePod(pod: Pod): void {
    this.addPod(pod);
  }

  removePod(pod: Pod): void {
    const uid = pod.metadata.uid ?? '';
    const known = this.byUid.get(uid);
    this.byUid.delete(uid);
    // Another UID may hold the full name now (an edited static pod): leave that one in place.
    if (known && this.byFullName.get(podFullName(known))?.metadata.uid === uid) {
      this.byFullName.delete(podFullName(known));
    }
  }

  getPodByUid(uid: string): Pod | undefined {
    return this.byUid.get(uid);
  }

  getPodByFullName(fullName: string): Pod | undefined {
    return this.byFullName.get(fullName);
  }

  getPods(): Pod[] {
    return [...this.byUid.values()];
  }

  get size(): number {
    return this.byUid.size;
  }
}
