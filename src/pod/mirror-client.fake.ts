/**
 * A MirrorClient over an in-memory set of mirror pods, for unit tests (upstream: podtest's
 * fakeMirrorClient). It answers as ApiMirrorClient does against an API server: a second create of a
 * name fails as AlreadyExists, a delete with another UID or of nothing returns false; `failing`
 * stands for an API server that does not answer.
 */
import { randomUUID } from 'node:crypto';
import { podFullName, type Pod } from '../api/core-v1.js';
import { mirrorPodFor, parsePodFullName, type MirrorClient } from './mirror-client.js';

export class FakeMirrorClient implements MirrorClient {
  /** The mirror pods "in the API", by full name. */
  readonly pods = new Map<string, Pod>();
  readonly createCounts = new Map<string, number>();
  readonly deleteCounts = new Map<string, number>();
  /** Every delete asked for: full name and UID precondition. */
  readonly deletes: { fullName: string; uid: string | undefined }[] = [];
  /** While true every call fails as it would with the API server away. */
  failing = false;

  constructor(
    private readonly nodeName = 'node-a',
    private readonly nodeUid = 'node-uid',
  ) {}

  createMirrorPod(staticPod: Pod): Promise<void> {
    const fullName = podFullName(staticPod);
    this.createCounts.set(fullName, (this.createCounts.get(fullName) ?? 0) + 1);
    if (this.failing) return Promise.reject(new Error('connect ECONNREFUSED'));
    if (this.pods.has(fullName)) {
      return Promise.reject(
        new Error(`create mirror pod ${fullName}: pods "${staticPod.metadata.name ?? ''}" already exists`),
      );
    }
    const mirror = mirrorPodFor(staticPod, this.nodeName, this.nodeUid);
    mirror.metadata.uid = randomUUID();
    this.pods.set(fullName, mirror);
    return Promise.resolve();
  }

  deleteMirrorPod(fullName: string, uid: string | undefined): Promise<boolean> {
    try {
      parsePodFullName(fullName);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    this.deletes.push({ fullName, uid });
    this.deleteCounts.set(fullName, (this.deleteCounts.get(fullName) ?? 0) + 1);
    if (this.failing) return Promise.resolve(false);
    const existing = this.pods.get(fullName);
    if (!existing || (uid !== undefined && existing.metadata.uid !== uid)) return Promise.resolve(false);
    this.pods.delete(fullName);
    return Promise.resolve(true);
  }

  hasPod(fullName: string): boolean {
    return this.pods.has(fullName);
  }
}
