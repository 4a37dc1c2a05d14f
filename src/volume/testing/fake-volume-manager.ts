/**
 * A VolumeManager for the kubelet's own tests: every volume is "mounted" at once under a root of
 * the test's choosing, and the calls are recorded. fail() makes a pod's wait fail as the real one
 * does when a volume cannot be set up.
 */
import path from 'node:path';
import type { Container, Pod } from '../../api/core-v1.js';
import type { Mount } from '../../cri/types.js';
import { VolumeMountError, type VolumeManager } from '../volume-manager.js';

export class FakeVolumeManager implements VolumeManager {
  readonly waited: string[] = [];
  readonly cleanedUp: string[] = [];
  readonly orphanChecks: string[][] = [];
  private readonly failures = new Map<string, string>();
  private readonly mounted = new Set<string>();

  constructor(private readonly rootDir = '/var/lib/kubelet') {}

  /** The pod's waits fail with message until pass(uid). */
  fail(podUid: string, message: string): void {
    this.failures.set(podUid, message);
  }

  pass(podUid: string): void {
    this.failures.delete(podUid);
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  waitForAttachAndMount(pod: Pod): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    this.waited.push(uid);
    const failure = this.failures.get(uid);
    if (failure !== undefined) return Promise.reject(new VolumeMountError(failure, false));
    this.mounted.add(uid);
    return Promise.resolve();
  }

  getMounts(pod: Pod, container: Container): Promise<Mount[]> {
    const uid = pod.metadata.uid ?? '';
    return Promise.resolve(
      (container.volumeMounts ?? []).map((m) => ({
        containerPath: m.mountPath,
        hostPath: path.join(this.rootDir, 'pods', uid, 'volumes', 'fake', m.name),
        readonly: m.readOnly === true,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_PRIVATE' as const,
      })),
    );
  }

  unmountAndCleanup(podUid: string): Promise<void> {
    this.cleanedUp.push(podUid);
    this.mounted.delete(podUid);
    return Promise.resolve();
  }

  cleanupOrphanedPodDirs(keep: ReadonlySet<string> | ((podUid: string) => boolean)): Promise<void> {
    const kept = [...this.mounted].filter((uid) => (typeof keep === 'function' ? keep(uid) : keep.has(uid)));
    this.orphanChecks.push(kept);
    for (const uid of this.mounted) if (!kept.includes(uid)) this.mounted.delete(uid);
    return Promise.resolve();
  }

  podHasMountedVolumes(podUid: string): boolean {
    return this.mounted.has(podUid);
  }
}
