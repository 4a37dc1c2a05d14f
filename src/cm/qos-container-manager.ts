/**
 * The QoS tiers under the node allocatable cgroup (upstream: qos_container_manager_linux.go):
 * Guaranteed pods sit in `kubepods` itself, Burstable ones in `kubepods/burstable`, BestEffort
 * ones in `kubepods/besteffort`. BestEffort's tier gets the minimum CPU shares; Burstable's gets
 * the sum of its pods' CPU requests, kept current as pods come and go.
 */
import type { Pod } from '../api/core-v1.js';
import { milliCPUToShares } from '../kuberuntime/container-resources.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { getPodQOS } from '../api/qos.js';
import { CgroupError } from './cgroup-error.js';
import type { CgroupManager } from './cgroup-manager.js';
import { newCgroupName, type CgroupName } from './cgroup-name.js';
import {
  HUGETLB_UNBOUNDED_BYTES,
  MIN_SHARES,
  podCPURequestMilli,
  type ResourceConfig,
} from './resource-config.js';

const log = logger('qos_container_manager');

/** The cgroup each QoS class's pods are made under. */
export interface QOSContainersInfo {
  guaranteed: CgroupName;
  burstable: CgroupName;
  bestEffort: CgroupName;
}

export function qosContainersInfo(nodeAllocatableRoot: CgroupName): QOSContainersInfo {
  return {
    guaranteed: nodeAllocatableRoot,
    burstable: newCgroupName(nodeAllocatableRoot, 'burstable'),
    bestEffort: newCgroupName(nodeAllocatableRoot, 'besteffort'),
  };
}

export interface QOSUpdate {
  burstableCpuShares: number;
  bestEffortCpuShares: number;
}

export interface QOSContainerManagerOptions {
  cgroupManager: CgroupManager;
  /** The node allocatable cgroup (`kubepods`), which must exist before start(). */
  root: CgroupName;
  /** The machine's huge page sizes: the tiers leave every one unbounded. */
  hugePageSizesBytes?: readonly number[];
}

export class QOSContainerManager {
  readonly info: QOSContainersInfo;
  private readonly cgroupManager: CgroupManager;
  private readonly root: CgroupName;
  private readonly hugePageSizesBytes: readonly number[];
  private activePods: () => readonly Pod[] = () => [];
  /** Updates run one at a time: two interleaved ones could leave the older sum in the file. */
  private updating: Promise<unknown> = Promise.resolve();
  /** The update waiting for the running one to finish; later requests share it (see updateCgroups). */
  private queued: Promise<QOSUpdate> | undefined;
  /** Whether the next update writes even what has not changed: asked for, or after a failed one. */
  private queuedForce = false;
  private last: QOSUpdate | undefined;

  constructor(opts: QOSContainerManagerOptions) {
    this.cgroupManager = opts.cgroupManager;
    this.root = opts.root;
    this.hugePageSizesBytes = opts.hugePageSizesBytes ?? [];
    this.info = qosContainersInfo(opts.root);
  }

  /** Makes (or brings up to date) the Burstable and BestEffort tiers; returns the directories it made. */
  async start(activePods: () => readonly Pod[]): Promise<string[]> {
    if (!(await this.cgroupManager.exists(this.root))) {
      throw new CgroupError(`root container ${this.cgroupManager.name(this.root)} doesn't exist`);
    }
    this.activePods = activePods;
    const created: string[] = [];
    for (const name of [this.info.burstable, this.info.bestEffort]) {
      const config: ResourceConfig = { hugePageLimits: this.unboundedHugePages() };
      if (name === this.info.bestEffort) config.cpuShares = MIN_SHARES;
      try {
        created.push(...(await this.cgroupManager.create(name, config)));
      } catch (err) {
        throw new CgroupError(`failed to create top level QOS cgroup ${this.cgroupManager.name(name)}`, {
          cause: err,
        });
      }
    }
    await this.updateCgroups({ force: true });
    return created;
  }

  /**
   * Sets the tiers from the pods active now (upstream: UpdateCgroups). Values the last update wrote
   * are not written again unless force is set: a new BestEffort pod changes nothing, and upstream
   * writes both tiers (six file system calls) for every pod cgroup it makes. The periodic update
   * forces, so a tier changed behind the kubelet's back is set right within a period, as upstream's.
   */
  updateCgroups(opts: { force?: boolean } = {}): Promise<QOSUpdate> {
    // An update that has not started yet will read the active pods when it does, so it serves every
    // request made before then: a burst of 100 new pods costs one or two passes, not 100 passes of
    // 100 pods each.
    if (opts.force) this.queuedForce = true;
    if (this.queued) return this.queued;
    const run = this.updating.then(() => {
      this.queued = undefined;
      const force = this.queuedForce;
      this.queuedForce = false;
      return this.doUpdate(force);
    });
    this.queued = run;
    this.updating = run.catch(() => undefined);
    return run;
  }

  lastUpdate(): QOSUpdate | undefined {
    return this.last;
  }

  private async doUpdate(force: boolean): Promise<QOSUpdate> {
    let burstableMilli = 0;
    for (const pod of this.activePods()) {
      if (getPodQOS(pod) === 'Burstable') burstableMilli += podCPURequestMilli(pod);
    }
    const update: QOSUpdate = {
      burstableCpuShares: milliCPUToShares(burstableMilli),
      bestEffortCpuShares: MIN_SHARES,
    };
    const last = this.last;
    if (
      !force &&
      last?.burstableCpuShares === update.burstableCpuShares &&
      last.bestEffortCpuShares === update.bestEffortCpuShares
    )
      return last;
    const hugePageLimits = this.unboundedHugePages();
    try {
      await this.cgroupManager.update(this.info.burstable, {
        cpuShares: update.burstableCpuShares,
        hugePageLimits,
      });
      await this.cgroupManager.update(this.info.bestEffort, {
        cpuShares: update.bestEffortCpuShares,
        hugePageLimits,
      });
    } catch (err) {
      // One tier may have taken its new value and the other not: the next update writes both.
      this.queuedForce = true;
      log.warn('Failed to update QoS cgroups', { err: errorMessage(err) });
      throw err;
    }
    if (last?.burstableCpuShares !== update.burstableCpuShares)
      log.v(4, 'Updated QoS cgroup configuration', { ...update });
    this.last = update;
    return update;
  }

  private unboundedHugePages(): Map<number, bigint> {
    return new Map(this.hugePageSizesBytes.map((s) => [s, HUGETLB_UNBOUNDED_BYTES]));
  }
}
