/**
 * The kubelet's cgroup layout, as upstream's container manager makes it with cgroupsPerQOS (the
 * default): the node allocatable cgroup `kubepods` under cgroupRoot, the QoS tiers
 * `kubepods/burstable` and `kubepods/besteffort`, and one `pod<uid>` cgroup per pod under its tier,
 * which the runtime is told to put the pod's sandbox and containers in.
 *
 * Lifecycle: createContainerManager() detects the cgroup version and reads the machine; start()
 * makes kubepods and the QoS tiers and updates the Burstable tier every minute; stop() ends that.
 * Per pod: ensurePodCgroup before the sandbox is made, removePodCgroup once the pod has terminated,
 * and cleanupOrphanedPodCgroups at housekeeping for what is left behind.
 */
import type { Pod } from '../api/core-v1.js';
import { nodeRef } from '../api/node.js';
import type { ObjectEventRecorder } from '../events/event-recorder.js';
import { realClock, type Clock, type TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { CgroupError } from './cgroup-error.js';
import { realCgroupFs, type CgroupFs } from './cgroup-fs.js';
import { CgroupManager, type ControllerStatus } from './cgroup-manager.js';
import {
  driverPathToCgroupName,
  newCgroupName,
  parseCgroupfsToCgroupName,
  type CgroupDriver,
  type CgroupName,
} from './cgroup-name.js';
import { DEFAULT_CGROUP_MOUNT_ROOT, detectCgroupSubsystems } from './cgroup-subsystems.js';
import {
  DEFAULT_HUGE_PAGES_DIR,
  nodeAllocatableResourceConfig,
  readNodeCapacity,
  reservedResourceConfig,
  type NodeCapacity,
} from './node-allocatable.js';
import { PodContainerManager } from './pod-container-manager.js';
import { checkSwap } from './swap.js';
import { QOSContainerManager, type QOSUpdate } from './qos-container-manager.js';
import { loopPeriodMs } from '../lib/loop-period.js';

const log = logger('container_manager');

/** Upstream: defaultNodeAllocatableCgroupName. */
export const NODE_ALLOCATABLE_CGROUP_NAME = 'kubepods';
/** Upstream: periodicQOSCgroupUpdateInterval. */
export const QOS_UPDATE_PERIOD_MS = 60_000;
const NODE_ALLOCATABLE_ENFORCEMENT_KEY = 'pods';

/** The KubeletConfiguration fields this reads, under the resolved config's names: pass the config itself. */
export interface ContainerManagerConfig {
  cgroupDriver: CgroupDriver;
  /** '' means '/', as upstream defaults it when cgroupsPerQOS is on. */
  cgroupRoot: string;
  cgroupsPerQOS: boolean;
  cpuCFSQuota: boolean;
  cpuCFSQuotaPeriodMs: number;
  /** -1 or 0: no per-pod limit. */
  podPidsLimit: number;
  enforceNodeAllocatable: readonly string[];
  systemReserved: Readonly<Record<string, string>>;
  kubeReserved: Readonly<Record<string, string>>;
  /** The cgroups enforceNodeAllocatable's `system-reserved` and `kube-reserved` limit. */
  systemReservedCgroup: string;
  kubeReservedCgroup: string;
  /** Refuse to start while swap is on (upstream's default). */
  failSwapOn: boolean;
}

export interface ContainerManagerOptions {
  config: ContainerManagerConfig;
  clock?: Clock;
  /** Where the cgroup file systems are mounted; tests give a temp folder. */
  cgroupMountRoot?: string;
  fs?: CgroupFs;
  /** The machine's capacity; default read from the OS (cpus, MemTotal, pid_max, huge pages). */
  capacity?: NodeCapacity;
  hugePagesDir?: string;
  /** /proc/swaps by default; tests give a file of their own. */
  swapsFile?: string;
  /** Sends SIGKILL to a process left in a terminated pod's cgroup; tests pass a recorder. */
  killProcess?: (pid: number) => void;
  qosUpdatePeriodMs?: number;
  /** Where the node's NodeAllocatableEnforced event goes (cluster mode), about the node nodeName. */
  recorder?: Pick<ObjectEventRecorder, 'eventFor'>;
  nodeName?: string;
}

export type ContainerManagerState = 'NEW' | 'RUNNING' | 'STOPPED';

/** What the container manager made and how its controllers fare, for logs and debugging endpoints. */
export interface ContainerManagerStatus {
  state: ContainerManagerState;
  cgroupsPerQOS: boolean;
  cgroupVersion?: 'v1' | 'v2';
  cgroupDriver: CgroupDriver;
  /** The driver's literal names. */
  nodeAllocatableCgroup?: string;
  qosCgroups?: { guaranteed: string; burstable: string; besteffort: string };
  /** The directories start() made (those already there are not listed). */
  created: string[];
  controllers: ControllerStatus[];
  lastQOSUpdate?: QOSUpdate & { atMs: number };
}

export interface ContainerManager {
  /** Makes kubepods and the QoS tiers and starts their periodic update; activePods feeds the Burstable tier's shares. */
  start(activePods: () => readonly Pod[]): Promise<void>;
  stop(): void;
  /** The cgroup_parent for the pod's sandbox (runtime manager option cgroupParent); '' without cgroupsPerQOS. */
  podCgroupParent(pod: Pod): string;
  exists(pod: Pod): Promise<boolean>;
  /** Before the sandbox is made: the pod's cgroup with its limits (and the QoS tiers brought up to date). */
  ensurePodCgroup(pod: Pod): Promise<void>;
  /** Once the pod has terminated: resolves true when its cgroup is gone, false when busy (retried at housekeeping). */
  removePodCgroup(uid: string): Promise<boolean>;
  /**
   * Brings the QoS tiers up to date with the active pods. Values already written are left alone
   * unless force is set (the periodic update forces).
   */
  updateQOSCgroups(opts?: { force?: boolean }): Promise<void>;
  /**
   * Removes the pod cgroups of pods for which keep(uid) is false (upstream keeps the possibly
   * running ones). Resolves with the UIDs whose cgroups are gone.
   */
  cleanupOrphanedPodCgroups(keep: (uid: string) => boolean): Promise<string[]>;
  status(): ContainerManagerStatus;
}

export async function createContainerManager(opts: ContainerManagerOptions): Promise<ContainerManager> {
  // Upstream checks swap whatever the cgroup layout, before it reads the machine.
  await checkSwap(opts.config.failSwapOn, opts.swapsFile);
  if (!opts.config.cgroupsPerQOS) return new NoopContainerManager(opts.config.cgroupDriver);
  const fs = opts.fs ?? realCgroupFs();
  const subsystems = await detectCgroupSubsystems(fs, opts.cgroupMountRoot ?? DEFAULT_CGROUP_MOUNT_ROOT);
  const capacity = opts.capacity ?? (await readNodeCapacity(fs, opts.hugePagesDir ?? DEFAULT_HUGE_PAGES_DIR));
  return new ContainerManagerImpl(opts, fs, subsystems, capacity);
}

class ContainerManagerImpl implements ContainerManager {
  private readonly clock: Clock;
  private readonly cgroupManager: CgroupManager;
  private readonly nodeAllocatableRoot: CgroupName;
  private readonly qos: QOSContainerManager;
  private readonly pods: PodContainerManager;
  private readonly capacity: NodeCapacity;
  private readonly config: ContainerManagerConfig;
  private readonly qosUpdatePeriodMs: number;
  private state: ContainerManagerState = 'NEW';
  private timer: TimerHandle | undefined;
  private created: string[] = [];
  private lastQOSUpdateMs = 0;
  private readonly opts: ContainerManagerOptions;

  constructor(
    opts: ContainerManagerOptions,
    fs: CgroupFs,
    subsystems: Awaited<ReturnType<typeof detectCgroupSubsystems>>,
    capacity: NodeCapacity,
  ) {
    this.config = opts.config;
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
    this.capacity = capacity;
    this.qosUpdatePeriodMs = loopPeriodMs(
      'QoS cgroup update',
      opts.qosUpdatePeriodMs ?? QOS_UPDATE_PERIOD_MS,
    );
    const hugePageSizesBytes = [...capacity.hugePagesBytes.keys()];
    this.cgroupManager = new CgroupManager({
      subsystems,
      driver: opts.config.cgroupDriver,
      fs,
      clock: this.clock,
      hugePageSizesBytes,
    });
    this.nodeAllocatableRoot = newCgroupName(
      parseCgroupfsToCgroupName(opts.config.cgroupRoot || '/'),
      NODE_ALLOCATABLE_CGROUP_NAME,
    );
    this.qos = new QOSContainerManager({
      cgroupManager: this.cgroupManager,
      root: this.nodeAllocatableRoot,
      hugePageSizesBytes,
    });
    this.pods = new PodContainerManager({
      cgroupManager: this.cgroupManager,
      qos: this.qos.info,
      podPidsLimit: opts.config.podPidsLimit,
      enforceCPULimits: opts.config.cpuCFSQuota,
      cpuCFSQuotaPeriodUs: opts.config.cpuCFSQuotaPeriodMs * 1000,
      killProcess: opts.killProcess,
      clock: this.clock,
    });
  }

  /**
   * enforceNodeAllocatable's `system-reserved` and `kube-reserved`: the reservation becomes the limit
   * of the cgroup the admin named for those daemons (systemReservedCgroup, kubeReservedCgroup). As
   * upstream, the cgroup must exist already, and a failure stops the start with a Warning event.
   */
  private async enforceReservedCgroups(): Promise<void> {
    const levels = [
      {
        key: 'system-reserved',
        what: 'System Reserved',
        word: 'system reserved',
        cgroup: this.config.systemReservedCgroup,
        reserved: this.config.systemReserved,
      },
      {
        key: 'kube-reserved',
        what: 'Kube Reserved',
        word: 'kube reserved',
        cgroup: this.config.kubeReservedCgroup,
        reserved: this.config.kubeReserved,
      },
    ];
    for (const level of levels) {
      if (!this.config.enforceNodeAllocatable.includes(level.key)) continue;
      const name = driverPathToCgroupName(level.cgroup, this.config.cgroupDriver);
      log.v(2, `Enforcing ${level.word} on cgroup`, { cgroupName: level.cgroup, limits: level.reserved });
      try {
        if (!(await this.cgroupManager.exists(name))) {
          throw new CgroupError(`cgroup ${JSON.stringify(this.cgroupManager.name(name))} does not exist`);
        }
        await this.cgroupManager.update(name, reservedResourceConfig(level.reserved));
      } catch (err) {
        const message = `Failed to enforce ${level.what} Cgroup Limits on ${JSON.stringify(level.cgroup)}: ${errorMessage(err)}`;
        this.nodeEvent('Warning', 'FailedNodeAllocatableEnforcement', message);
        throw new CgroupError(message, { cause: err });
      }
      this.nodeEvent(
        'Normal',
        'NodeAllocatableEnforced',
        `Updated limits on ${level.word} cgroup ${level.cgroup}`,
      );
    }
  }

  private nodeEvent(type: 'Normal' | 'Warning', reason: string, message: string): void {
    if (this.opts.nodeName === undefined) return;
    this.opts.recorder?.eventFor(nodeRef(this.opts.nodeName), type, reason, message);
  }

  async start(activePods: () => readonly Pod[]): Promise<void> {
    if (this.state !== 'NEW') throw new Error(`container manager cannot start from state ${this.state}`);
    const cgroupRoot = parseCgroupfsToCgroupName(this.config.cgroupRoot || '/');
    if (!(await this.cgroupManager.exists(cgroupRoot))) {
      throw new CgroupError(
        `invalid configuration: cgroup-root ${this.cgroupManager.name(cgroupRoot)} doesn't exist`,
      );
    }
    const enforcePods = this.config.enforceNodeAllocatable.includes(NODE_ALLOCATABLE_ENFORCEMENT_KEY);
    const nodeAllocatable = nodeAllocatableResourceConfig(this.capacity, {
      enforcePods,
      systemReserved: this.config.systemReserved,
      kubeReserved: this.config.kubeReserved,
    });
    // Upstream creates kubepods, then updates it in any case: a kubepods left by an earlier run may
    // carry other limits, and the kernel's default cpu.shares would starve the pods.
    this.created = await this.cgroupManager.create(this.nodeAllocatableRoot, nodeAllocatable);
    if (!this.cgroupManager.usable()) {
      throw new CgroupError('no cgroup controller the kubelet manages is usable', {
        cause: this.cgroupManager.controllers(),
      });
    }
    this.created.push(...(await this.qos.start(activePods)));
    this.lastQOSUpdateMs = this.clock.now();
    this.state = 'RUNNING';
    // Upstream's enforceNodeAllocatableCgroups tells the node once kubepods has its limits.
    if (this.opts.nodeName !== undefined) {
      this.opts.recorder?.eventFor(
        nodeRef(this.opts.nodeName),
        'Normal',
        'NodeAllocatableEnforced',
        'Updated Node Allocatable limit across pods',
      );
    }
    await this.enforceReservedCgroups();
    this.scheduleQOSUpdate();
    log.info('Created the node allocatable and QoS cgroups', {
      cgroupVersion: this.cgroupManager.version,
      cgroupDriver: this.cgroupManager.driver,
      nodeAllocatable: this.cgroupManager.name(this.nodeAllocatableRoot),
      created: this.created.length,
      skipped: this.cgroupManager
        .controllers()
        .filter((c) => c.state !== 'ok')
        .map((c) => `${c.name}:${c.state}`),
    });
  }

  stop(): void {
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.state = 'STOPPED';
  }

  podCgroupParent(pod: Pod): string {
    return this.pods.getPodContainerName(pod).literal;
  }

  exists(pod: Pod): Promise<boolean> {
    return this.pods.exists(pod);
  }

  async ensurePodCgroup(pod: Pod): Promise<void> {
    if (await this.pods.exists(pod)) return;
    // Upstream updates the tiers first, so the Burstable tier already counts the new pod's share.
    await this.updateQOSCgroups().catch((err: unknown) =>
      log.v(2, 'Failed to update QoS cgroups while syncing pod', {
        podUID: pod.metadata.uid,
        err: errorMessage(err),
      }),
    );
    await this.pods.ensureExists(pod);
  }

  async removePodCgroup(uid: string): Promise<boolean> {
    const name = await this.pods.findPodCgroup(uid);
    if (name === undefined) return true;
    const result = await this.pods.destroy(name);
    if (result.removed) log.v(4, 'Pod termination removed cgroups', { podUID: uid });
    else log.v(2, 'Pod cgroup is still busy; will retry at housekeeping', { podUID: uid, busy: result.busy });
    await this.updateQOSCgroups().catch(() => undefined);
    return result.removed;
  }

  async updateQOSCgroups(opts: { force?: boolean } = {}): Promise<void> {
    await this.qos.updateCgroups(opts);
    this.lastQOSUpdateMs = this.clock.now();
  }

  async cleanupOrphanedPodCgroups(keep: (uid: string) => boolean): Promise<string[]> {
    const removed: string[] = [];
    for (const [uid, name] of await this.pods.getAllPodsFromCgroups()) {
      if (keep(uid)) continue;
      log.v(3, 'Orphaned pod found, removing pod cgroups', { podUID: uid });
      try {
        // Failures are left for the next housekeeping, as upstream leaves them.
        if ((await this.pods.destroy(name)).removed) removed.push(uid);
      } catch (err) {
        log.v(2, 'Failed to remove orphaned pod cgroup', { podUID: uid, err: errorMessage(err) });
      }
    }
    if (removed.length > 0) await this.updateQOSCgroups().catch(() => undefined);
    return removed;
  }

  status(): ContainerManagerStatus {
    const last = this.qos.lastUpdate();
    const name = (n: CgroupName) => this.cgroupManager.name(n);
    return {
      state: this.state,
      cgroupsPerQOS: true,
      cgroupVersion: this.cgroupManager.version,
      cgroupDriver: this.cgroupManager.driver,
      nodeAllocatableCgroup: name(this.nodeAllocatableRoot),
      qosCgroups: {
        guaranteed: name(this.qos.info.guaranteed),
        burstable: name(this.qos.info.burstable),
        besteffort: name(this.qos.info.bestEffort),
      },
      created: [...this.created],
      controllers: this.cgroupManager.controllers(),
      ...(last ? { lastQOSUpdate: { ...last, atMs: this.lastQOSUpdateMs } } : {}),
    };
  }

  private scheduleQOSUpdate(): void {
    if (this.state !== 'RUNNING') return;
    this.timer = this.clock.setTimeout(() => {
      // Writes every value again, whatever the last update wrote.
      this.updateQOSCgroups({ force: true })
        .catch((err: unknown) => log.warn('Failed to reserve QoS requests', { err: errorMessage(err) }))
        .finally(() => this.scheduleQOSUpdate());
    }, this.qosUpdatePeriodMs);
  }
}

/** cgroupsPerQOS=false: nothing is made, and pods go where the runtime puts them (upstream's no-op managers). */
class NoopContainerManager implements ContainerManager {
  private state: ContainerManagerState = 'NEW';

  constructor(private readonly driver: CgroupDriver) {}

  async start(): Promise<void> {
    this.state = 'RUNNING';
  }
  stop(): void {
    this.state = 'STOPPED';
  }
  podCgroupParent(): string {
    return '';
  }
  async exists(): Promise<boolean> {
    return true;
  }
  async ensurePodCgroup(): Promise<void> {}
  async removePodCgroup(): Promise<boolean> {
    return true;
  }
  async updateQOSCgroups(): Promise<void> {}
  async cleanupOrphanedPodCgroups(): Promise<string[]> {
    return [];
  }
  status(): ContainerManagerStatus {
    return {
      state: this.state,
      cgroupsPerQOS: false,
      cgroupDriver: this.driver,
      created: [],
      controllers: [],
    };
  }
}
