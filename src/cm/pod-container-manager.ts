/**
 * One cgroup per pod, `pod<uid>` under its QoS tier, holding the pod-level limits so that the pod's
 * containers together cannot use more than the pod asks for (upstream: pod_container_manager_linux.go).
 */
import type { Pod } from '../api/core-v1.js';
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { getPodQOS } from '../api/qos.js';
import { CgroupError } from './cgroup-error.js';
import { errnoCode } from './cgroup-fs.js';
import type { CgroupManager, DestroyResult } from './cgroup-manager.js';
import { driverPathToCgroupName, newCgroupName, type CgroupName } from './cgroup-name.js';
import type { QOSContainersInfo } from './qos-container-manager.js';
import { resourceConfigForPod } from './resource-config.js';

const log = logger('pod_container_manager');

export const POD_CGROUP_NAME_PREFIX = 'pod';
/** Upstream tries this many rounds of kills before it gives up on a cgroup's processes. */
const KILL_ATTEMPTS = 5;
/** How long a pod cgroup found whole is checked in one hierarchy only (see PodContainerManager.seen). */
export const POD_CGROUP_SEEN_MS = 2000;

export interface PodContainerManagerOptions {
  cgroupManager: CgroupManager;
  qos: QOSContainersInfo;
  /** --pod-max-pids: a pids.max for each pod when > 0. */
  podPidsLimit: number;
  /** --cpu-cfs-quota. */
  enforceCPULimits: boolean;
  cpuCFSQuotaPeriodUs: number;
  /** Sends SIGKILL; tests pass their own so nothing real is killed. */
  killProcess?: (pid: number) => void;
  clock?: Clock;
}

export class PodContainerManager {
  private readonly cgroupManager: CgroupManager;
  private readonly qos: QOSContainersInfo;
  private readonly opts: PodContainerManagerOptions;
  private readonly killProcess: (pid: number) => void;
  /**
   * Pod cgroups (literal names) this manager made or found whole, with when, until it destroys
   * them. The pod workers ask whether a pod's cgroup exists at every sync, three or four times while
   * a pod starts; on v1 a full answer is a stat in every hierarchy. For POD_CGROUP_SEEN_MS after a
   * full answer, a stat in one hierarchy answers: a cgroup removed whole is gone from that one too,
   * and one taken out of some hierarchies only is found by the next full check, a few seconds
   * later than upstream's check at every sync would find it.
   */
  private readonly seen = new Map<string, number>();
  /**
   * Entries past their time are dropped when the map reaches this size: a pod whose cgroup went
   * away behind the kubelet's back would otherwise stay in it.
   */
  private pruneSeenAt = 64;
  private readonly clock: Clock;

  constructor(opts: PodContainerManagerOptions) {
    this.cgroupManager = opts.cgroupManager;
    this.qos = opts.qos;
    this.opts = opts;
    this.killProcess = opts.killProcess ?? ((pid) => process.kill(pid, 'SIGKILL'));
    this.clock = opts.clock ?? realClock;
  }

  /** The pod's cgroup name, and its literal form for the driver (what the runtime gets as cgroup_parent). */
  getPodContainerName(pod: Pod): { name: CgroupName; literal: string } {
    const uid = pod.metadata.uid;
    if (!uid)
      throw new CgroupError(`pod ${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''} has no UID`);
    const qos = getPodQOS(pod);
    const parent =
      qos === 'Guaranteed'
        ? this.qos.guaranteed
        : qos === 'Burstable'
          ? this.qos.burstable
          : this.qos.bestEffort;
    const name = newCgroupName(parent, POD_CGROUP_NAME_PREFIX + uid);
    return { name, literal: this.cgroupManager.name(name) };
  }

  async exists(pod: Pod): Promise<boolean> {
    const { name, literal } = this.getPodContainerName(pod);
    const seenAt = this.seen.get(literal);
    if (seenAt !== undefined && this.clock.now() - seenAt < POD_CGROUP_SEEN_MS) {
      if (await this.cgroupManager.stillExists(name)) return true;
    }
    this.seen.delete(literal);
    const found = await this.cgroupManager.exists(name);
    if (found) this.markSeen(literal);
    return found;
  }

  private markSeen(literal: string): void {
    const now = this.clock.now();
    if (this.seen.size >= this.pruneSeenAt) {
      for (const [l, at] of this.seen) if (now - at >= POD_CGROUP_SEEN_MS) this.seen.delete(l);
      this.pruneSeenAt = Math.max(64, 2 * this.seen.size);
    }
    this.seen.set(literal, now);
  }

  /**
   * Makes the pod's cgroup with its limits, unless it exists: like upstream, an existing pod cgroup
   * keeps the limits it was made with. Resolves true when it made it.
   */
  async ensureExists(pod: Pod): Promise<boolean> {
    if (await this.exists(pod)) return false;
    const { name, literal } = this.getPodContainerName(pod);
    const config = resourceConfigForPod(pod, {
      enforceCPULimits: this.opts.enforceCPULimits,
      cpuPeriodUs: this.opts.cpuCFSQuotaPeriodUs,
    });
    if (this.opts.podPidsLimit > 0) config.pidsLimit = this.opts.podPidsLimit;
    try {
      await this.cgroupManager.create(name, config);
      this.markSeen(literal);
    } catch (err) {
      throw new CgroupError(`failed to create container for ${literal}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
    return true;
  }

  /**
   * Kills what is left in the pod's cgroup, then removes it (upstream: Destroy). A cgroup that
   * still holds a task afterwards stays, reported busy, for the next try.
   */
  async destroy(name: CgroupName): Promise<DestroyResult> {
    // Asked again from the disk from now on, whether or not the removal succeeds; dropped again at
    // the end, in case a sync found the cgroup while it was being removed.
    const literal = this.cgroupManager.name(name);
    this.seen.delete(literal);
    try {
      await this.tryKillingCgroupProcesses(name);
      return await this.cgroupManager.destroy(name);
    } finally {
      this.seen.delete(literal);
    }
  }

  /** The pod cgroups found under the QoS tiers, by pod UID (upstream: GetAllPodsFromCgroups). */
  async getAllPodsFromCgroups(): Promise<Map<string, CgroupName>> {
    const found = new Map<string, CgroupName>();
    for (const parent of [this.qos.bestEffort, this.qos.burstable, this.qos.guaranteed]) {
      const parentLiteral = this.cgroupManager.name(parent);
      for (const child of await this.cgroupManager.children(parent)) {
        // systemd's names spell the whole path in each element; its last component is the pod's.
        const internal = driverPathToCgroupName(`${parentLiteral}/${child}`, this.cgroupManager.driver);
        const uid = podUIDFromComponent(internal[internal.length - 1] ?? '');
        if (uid === undefined) continue;
        found.set(uid, newCgroupName(parent, POD_CGROUP_NAME_PREFIX + uid));
      }
    }
    return found;
  }

  /** The pod cgroup with this UID, whatever its QoS tier; undefined when there is none. */
  async findPodCgroup(uid: string): Promise<CgroupName | undefined> {
    for (const parent of [this.qos.guaranteed, this.qos.burstable, this.qos.bestEffort]) {
      const name = newCgroupName(parent, POD_CGROUP_NAME_PREFIX + uid);
      if (await this.cgroupManager.existsAnywhere(name)) return name;
    }
    return undefined;
  }

  private async tryKillingCgroupProcesses(name: CgroupName): Promise<void> {
    const pids = (await this.cgroupManager.pids(name)).filter((pid) => pid !== process.pid);
    if (pids.length === 0) return;
    const killed = new Set<number>();
    let failures: string[] = [];
    for (let attempt = 0; attempt < KILL_ATTEMPTS; attempt++) {
      failures = [];
      for (const pid of pids) {
        if (killed.has(pid)) continue;
        log.v(3, 'Attempting to kill process from cgroup', {
          pid,
          cgroupName: this.cgroupManager.name(name),
        });
        try {
          this.killProcess(pid);
          killed.add(pid);
        } catch (err) {
          // Already gone is as good as killed.
          if (errnoCode(err) === 'ESRCH') killed.add(pid);
          else failures.push(`${pid}: ${errorMessage(err)}`);
        }
      }
      if (failures.length === 0) return;
    }
    log.info('Failed to kill all the processes attached to cgroup', {
      cgroupName: this.cgroupManager.name(name),
      failures,
    });
  }
}

/** 'pod<uid>' → uid; undefined for anything else (the QoS tiers, a runtime's own cgroups). */
export function podUIDFromComponent(component: string): string | undefined {
  if (!component.startsWith(POD_CGROUP_NAME_PREFIX)) return undefined;
  const uid = component.slice(POD_CGROUP_NAME_PREFIX.length);
  return uid === '' || uid.includes(POD_CGROUP_NAME_PREFIX) ? undefined : uid;
}
