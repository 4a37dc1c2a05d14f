/**
 * A ContainerManager that keeps its pod cgroups in memory, for the kubelet's unit tests: it names
 * pod cgroups as the real one does with the cgroupfs driver, records each call, and can be told to
 * fail ensurePodCgroup or to find a cgroup busy.
 */
import type { Pod } from '../../api/core-v1.js';
import { getPodQOS } from '../../api/qos.js';
import type {
  ContainerManager,
  ContainerManagerState,
  ContainerManagerStatus,
} from '../container-manager.js';

export type FakeContainerManagerCall =
  | { method: 'start' | 'stop' | 'updateQOSCgroups' }
  | { method: 'ensurePodCgroup' | 'removePodCgroup'; uid: string }
  | { method: 'cleanupOrphanedPodCgroups'; removed: string[] };

export class FakeContainerManager implements ContainerManager {
  readonly calls: FakeContainerManagerCall[] = [];
  /** UIDs of the pod cgroups that exist. */
  readonly podCgroups = new Set<string>();
  /** UIDs whose cgroups removePodCgroup finds busy (they stay). */
  readonly busy = new Set<string>();
  /** When set, ensurePodCgroup rejects with it. */
  ensureError: Error | undefined;
  private state: ContainerManagerState = 'NEW';
  private activePods: () => readonly Pod[] = () => [];

  constructor(private readonly cgroupRoot = '') {}

  async start(activePods: () => readonly Pod[]): Promise<void> {
    this.activePods = activePods;
    this.state = 'RUNNING';
    this.calls.push({ method: 'start' });
  }

  stop(): void {
    this.state = 'STOPPED';
    this.calls.push({ method: 'stop' });
  }

  podCgroupParent(pod: Pod): string {
    const qos = getPodQOS(pod);
    const tier = qos === 'Guaranteed' ? '' : `/${qos.toLowerCase()}`;
    return `${this.cgroupRoot}/kubepods${tier}/pod${pod.metadata.uid ?? ''}`;
  }

  async exists(pod: Pod): Promise<boolean> {
    return this.podCgroups.has(pod.metadata.uid ?? '');
  }

  async ensurePodCgroup(pod: Pod): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    this.calls.push({ method: 'ensurePodCgroup', uid });
    if (this.ensureError) throw this.ensureError;
    this.podCgroups.add(uid);
  }

  async removePodCgroup(uid: string): Promise<boolean> {
    this.calls.push({ method: 'removePodCgroup', uid });
    if (this.busy.has(uid)) return false;
    this.podCgroups.delete(uid);
    return true;
  }

  async updateQOSCgroups(): Promise<void> {
    this.calls.push({ method: 'updateQOSCgroups' });
  }

  async cleanupOrphanedPodCgroups(keep: (uid: string) => boolean): Promise<string[]> {
    const removed: string[] = [];
    for (const uid of this.podCgroups) {
      if (keep(uid) || this.busy.has(uid)) continue;
      this.podCgroups.delete(uid);
      removed.push(uid);
    }
    this.calls.push({ method: 'cleanupOrphanedPodCgroups', removed });
    return removed;
  }

  status(): ContainerManagerStatus {
    return {
      state: this.state,
      cgroupsPerQOS: true,
      cgroupDriver: 'cgroupfs',
      created: [],
      controllers: [],
    };
  }

  /** The pods start() was given, as the real one reads them for the Burstable tier. */
  currentActivePods(): readonly Pod[] {
    return this.activePods();
  }
}
