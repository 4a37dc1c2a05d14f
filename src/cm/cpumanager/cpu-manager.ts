/**
 * The CPU manager (upstream: cpumanager/cpu_manager.go) under the static policy: allocates exclusive
 * CPUs at admission, tells container creation which cpuset to use, keeps running containers' cpusets
 * in step with the state every cpuManagerReconcilePeriod through CRI UpdateContainerResources, frees
 * the CPUs of pods no longer active, and keeps the state in `<root-dir>/cpu_manager_state`.
 * The `none` policy has no manager at all (createCPUManager returns undefined).
 */
import type { Container, Pod } from '../../api/core-v1.js';
import { quantityMilliValue } from '../../api/quantity.js';
import type { Clock, TimerHandle } from '../../lib/clock.js';
import { errorMessage, KubeletError } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import { loopPeriodMs } from '../../lib/loop-period.js';
import type { LinuxContainerResources, RuntimeService } from '../../cri/types.js';
import path from 'node:path';
import { goQuote } from '../../lib/go-quote.js';
import type { HintProvider, TopologyAffinityStore, TopologyHints } from '../topologymanager/topology-hint.js';
import {
  CPU_MANAGER_CHECKPOINT,
  readCPUManagerCheckpoint,
  writeCPUManagerCheckpoint,
  type CPUManagerCheckpoint,
} from './checkpoint.js';
import { CPUSet } from './cpu-set.js';
import { CPUManagerState } from './cpu-state.js';
import { POLICY_NONE, POLICY_STATIC, StaticPolicy } from './policy-static.js';
import { discoverTopology } from './topology.js';

const log = logger('cpumanager');

const POD_UID_LABEL = 'io.kubernetes.pod.uid';
const CONTAINER_NAME_LABEL = 'io.kubernetes.container.name';
const UPDATE_TIMEOUT_MS = 10_000;

export interface CPUManagerConfig {
  policyName: string;
  policyOptions: Readonly<Record<string, string>>;
  reconcilePeriodMs: number;
  /** reservedSystemCPUs ("0-1"); empty when not set. */
  reservedSystemCPUs: string;
  /** systemReserved.cpu and kubeReserved.cpu, summed (reservedSystemCPUs replaces them when set). */
  reservedCPU: readonly (string | undefined)[];
  rootDir: string;
  /** The feature gates the policy options are behind (CPUManagerPolicyOptions and its Alpha/Beta levels). */
  featureGates?: Readonly<Record<string, boolean>>;
  /** topologyManagerPolicy: align-by-socket cannot go with single-numa-node. */
  topologyManagerPolicy?: string;
  sysfsRoot?: string;
  clock: Clock;
  runtime: Pick<RuntimeService, 'listContainers' | 'updateContainerResources'>;
  /** The topology manager: where allocation reads the NUMA affinity chosen for each container. */
  affinity?: Pick<TopologyAffinityStore, 'getAffinity'>;
}

/** Go's %v of a map[string]string: map[k1:v1 k2:v2], keys sorted. */
function goMap(m: Readonly<Record<string, string>>): string {
  const keys = Object.keys(m).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return `map[${keys.map((k) => `${k}:${m[k]}`).join(' ')}]`;
}

/**
 * Reads `<rootDir>/cpu_manager_state`, or writes an empty one for policyName when there is none
 * (upstream's NewCheckpointState). A file written for another policy, or one that cannot be trusted,
 * stops the start with upstream's words.
 */
async function restoreCheckpoint(
  rootDir: string,
  policyName: string,
): Promise<CPUManagerCheckpoint | undefined> {
  const refuse = (why: string): never => {
    throw new KubeletError(
      'CPU_ALLOCATION_FAILED',
      `could not restore state from checkpoint: ${why}, please drain this node and delete the CPU manager checkpoint file ${goQuote(path.join(rootDir, CPU_MANAGER_CHECKPOINT))} before restarting Kubelet`,
    );
  };
  let cp: CPUManagerCheckpoint | undefined;
  try {
    cp = await readCPUManagerCheckpoint(rootDir);
  } catch (err) {
    return refuse(errorMessage(err));
  }
  if (!cp) {
    if (policyName === POLICY_NONE)
      await writeCPUManagerCheckpoint(rootDir, { policyName, defaultCpuSet: '', entries: {} });
    return undefined;
  }
  if (cp.policyName !== policyName)
    refuse(
      `configured policy ${goQuote(policyName)} differs from state checkpoint policy ${goQuote(cp.policyName)}`,
    );
  return cp;
}

/** The pods admitted and not yet terminated; CPUs of any other pod are freed. */
export type ActivePods = () => readonly Pod[];

/** Undefined for the `none` policy (a no-op, as upstream's); throws for a configuration upstream refuses. */
export async function createCPUManager(config: CPUManagerConfig): Promise<CPUManager | undefined> {
  const options = Object.entries(config.policyOptions);
  // Upstream refuses options while their gate is off, whatever the policy.
  if (options.length > 0 && !(config.featureGates?.CPUManagerPolicyOptions ?? true))
    throw new KubeletError(
      'INVALID_CONFIG',
      `CPU Manager policy options ${goMap(config.policyOptions)} require feature gates "CPUManager", "CPUManagerPolicyOptions" enabled`,
    );
  if (config.policyName === POLICY_NONE || config.policyName === '') {
    if (options.length > 0)
      throw new KubeletError(
        'INVALID_CONFIG',
        `new none policy error: None policy: received unsupported options=${goMap(config.policyOptions)}`,
      );
    // No manager, but upstream keeps the state file under none too: a node cannot change policy undrained.
    await restoreCheckpoint(config.rootDir, POLICY_NONE);
    return undefined;
  }
  if (config.policyName !== POLICY_STATIC)
    throw new KubeletError('INVALID_CONFIG', `[cpumanager] unknown policy: "${config.policyName}"`);
  const topology = await discoverTopology(config.sysfsRoot);
  const reserved = CPUSet.parse(config.reservedSystemCPUs);
  if (!reserved.isSubsetOf(topology.details.cpus()))
    throw new KubeletError(
      'INVALID_CONFIG',
      `reservedSystemCPUs: the specified cpuset "${reserved.toString()}" is not a subset of online cpus "${topology.details.cpus().toString()}"`,
    );
  const reservedMilli = config.reservedCPU.reduce((sum, q) => sum + (q ? quantityMilliValue(q) : 0), 0);
  const milli = reserved.isEmpty() ? reservedMilli : reserved.size * 1000;
  if (milli <= 0)
    throw new KubeletError(
      'INVALID_CONFIG',
      '[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero',
    );
  // Fractional CPUs cannot be exclusive anyway, so the reservation is rounded up.
  const policy = new StaticPolicy(
    topology,
    Math.ceil(milli / 1000),
    reserved,
    config.policyOptions,
    {
      featureGates: config.featureGates ?? {},
      topologyManagerPolicy: config.topologyManagerPolicy ?? 'none',
    },
    config.affinity,
  );
  const manager = new CPUManager(config, policy);
  await manager.restoreState();
  return manager;
}

export class CPUManager implements HintProvider {
  private readonly state = new CPUManagerState();
  /** containerID → the cpuset last sent through UpdateContainerResources. */
  private readonly lastUpdated = new Map<string, string>();
  private writes: Promise<void> = Promise.resolve();
  private timer: TimerHandle | undefined;
  private stopped = false;
  /** Set at start: until then nothing is stale (no pod has been admitted yet). */
  private activePods: ActivePods | undefined;

  constructor(
    private readonly config: CPUManagerConfig,
    readonly policy: StaticPolicy,
  ) {}

  /** Reads the checkpoint (refusing one written for another policy) and checks it against this node. */
  async restoreState(): Promise<void> {
    const cp = await restoreCheckpoint(this.config.rootDir, this.policy.name);
    if (cp) {
      this.state.setDefaultCPUSet(CPUSet.parse(cp.defaultCpuSet));
      for (const [uid, containers] of Object.entries(cp.entries))
        for (const [name, cpus] of Object.entries(containers))
          this.state.setCPUSet(uid, name, CPUSet.parse(cpus));
    }
    this.policy.start(this.state);
    await this.storeState();
  }

  /** Starts the reconcile loop; before it, admission must not run (stale state cannot be told). */
  start(activePods: ActivePods): void {
    this.activePods = activePods;
    const period = loopPeriodMs('cpumanager-reconcile', this.config.reconcilePeriodMs);
    const tick = (): void => {
      this.timer = undefined;
      void this.reconcile()
        .catch((err: unknown) => log.error('CPU manager reconcile failed', { err: errorMessage(err) }))
        .finally(() => {
          if (!this.stopped) this.timer = this.config.clock.setTimeout(tick, period);
        });
    };
    this.timer = this.config.clock.setTimeout(tick, period);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) this.config.clock.clearTimeout(this.timer);
    await this.writes;
  }

  /** Where the container's exclusive CPUs could come from (upstream: GetTopologyHints). */
  getTopologyHints(pod: Pod, container: Container): TopologyHints {
    this.removeStaleState();
    return this.policy.getTopologyHints(this.state, pod, container);
  }

  /** Where the pod's exclusive CPUs could come from (upstream: GetPodTopologyHints). */
  getPodTopologyHints(pod: Pod): TopologyHints {
    this.removeStaleState();
    return this.policy.getPodTopologyHints(this.state, pod);
  }

  /**
   * Exclusive CPUs for the container when it qualifies, on the NUMA nodes the topology manager chose
   * (upstream: Allocate, which its admit handler calls for each container, init containers first).
   * Throws the policy's error; the state is written in the background.
   */
  allocate(pod: Pod, container: Container): void {
    this.removeStaleState();
    try {
      this.policy.allocate(this.state, pod, container);
    } finally {
      this.queueStore();
    }
  }

  /** The cpuset a new container of pod is created with: its exclusive CPUs, else the shared pool. */
  cpusetFor(podUID: string, containerName: string): string {
    return this.state.getCPUSetOrDefault(podUID, containerName).toString();
  }

  /** The container's exclusive CPUs (empty for one on the shared pool). */
  exclusiveCPUs(podUID: string, containerName: string): CPUSet {
    return this.state.getCPUSet(podUID, containerName) ?? CPUSet.EMPTY;
  }

  /** For the pod resources API: the container's exclusive CPUs (upstream: GetExclusiveCPUs). */
  getCPUs(podUID: string, containerName: string): number[] {
    return this.exclusiveCPUs(podUID, containerName).list();
  }

  /** For the pod resources API: all CPUs but the reserved ones. */
  getAllocatableCPUs(): number[] {
    return this.policy.getAllocatableCPUs().list();
  }

  /** Frees the CPUs of pods that are no longer active, and of containers their pod no longer has. */
  removeStaleState(): void {
    if (!this.activePods) return;
    const active = new Map(this.activePods().map((p) => [p.metadata.uid ?? '', p]));
    let changed = false;
    for (const [uid, containers] of this.state.getCPUAssignments()) {
      const pod = active.get(uid);
      const names = new Set(
        [...(pod?.spec.initContainers ?? []), ...(pod?.spec.containers ?? [])].map((c) => c.name),
      );
      for (const name of containers.keys()) {
        if (names.has(name)) continue;
        log.info('RemoveStaleState: removing container', { podUID: uid, containerName: name });
        this.policy.removeContainer(this.state, uid, name);
        changed = true;
      }
    }
    if (changed) this.queueStore();
  }

  /** One pass of the loop: every running container of an active pod gets the cpuset the state says. */
  async reconcile(): Promise<void> {
    if (!this.activePods) return;
    this.removeStaleState();
    const active = new Set(this.activePods().map((p) => p.metadata.uid ?? ''));
    const running = await this.config.runtime.listContainers(
      { state: 'CONTAINER_RUNNING' },
      { timeoutMs: UPDATE_TIMEOUT_MS },
    );
    const seen = new Set<string>();
    for (const c of running) {
      const uid = c.labels[POD_UID_LABEL];
      const name = c.labels[CONTAINER_NAME_LABEL];
      if (uid === undefined || name === undefined || !active.has(uid)) continue;
      seen.add(c.id);
      const cpus = this.cpusetFor(uid, name);
      if (cpus === '' || this.lastUpdated.get(c.id) === cpus) continue;
      try {
        await this.config.runtime.updateContainerResources(c.id, cpusetOnly(cpus), {
          timeoutMs: UPDATE_TIMEOUT_MS,
        });
        this.lastUpdated.set(c.id, cpus);
      } catch (err) {
        log.error('ReconcileState: failed to update container', {
          podUID: uid,
          containerName: name,
          containerID: c.id,
          cpuSet: cpus,
          err: errorMessage(err),
        });
      }
    }
    for (const id of [...this.lastUpdated.keys()]) if (!seen.has(id)) this.lastUpdated.delete(id);
  }

  private checkpoint(): CPUManagerCheckpoint {
    const entries: CPUManagerCheckpoint['entries'] = {};
    for (const [uid, containers] of this.state.getCPUAssignments())
      entries[uid] = Object.fromEntries([...containers].map(([name, cpus]) => [name, cpus.toString()]));
    return { policyName: this.policy.name, defaultCpuSet: this.state.getDefaultCPUSet().toString(), entries };
  }

  private storeState(): Promise<void> {
    return writeCPUManagerCheckpoint(this.config.rootDir, this.checkpoint());
  }

  /** Writes one after another, each of the state as it is when its turn comes. */
  private queueStore(): void {
    this.writes = this.writes.then(() =>
      this.storeState().catch((err: unknown) =>
        log.error('Failed to write the CPU manager checkpoint', { err: errorMessage(err) }),
      ),
    );
  }
}

/** Upstream's updateContainerCPUSet sends the cpuset alone; the runtime leaves zero fields as they are. */
function cpusetOnly(cpusetCpus: string): LinuxContainerResources {
  return {
    cpuPeriod: 0,
    cpuQuota: 0,
    cpuShares: 0,
    memoryLimitInBytes: 0,
    oomScoreAdj: 0,
    cpusetCpus,
    cpusetMems: '',
    unified: {},
    memorySwapLimitInBytes: 0,
  };
}
