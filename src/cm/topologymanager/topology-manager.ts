/**
 * The topology manager (upstream: topologymanager/topology_manager.go): at admission it asks the
 * resource managers (its hint providers: CPU, memory, devices) where on the machine's NUMA nodes each
 * container could get what it asks for, merges their answers under its policy, refuses the pod with
 * TopologyAffinityError when the policy finds no acceptable placement, and otherwise stores the
 * chosen affinity and lets each provider allocate along it.
 */
import type { Pod } from '../../api/core-v1.js';
import { errorMessage, KubeletError } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import type { Policy } from './hint-merger.js';
import { discoverNUMAInfo, type NUMAInfo } from './numa-info.js';
import {
  BestEffortPolicy,
  NonePolicy,
  POLICY_BEST_EFFORT,
  POLICY_NONE,
  POLICY_RESTRICTED,
  POLICY_SINGLE_NUMA_NODE,
  RestrictedPolicy,
  SingleNumaNodePolicy,
} from './policies.js';
import {
  featureGateReader,
  parseTopologyPolicyOptions,
  type TopologyPolicyOptions,
} from './policy-options.js';
import { SCOPE_CONTAINER, SCOPE_NONE, SCOPE_POD, TopologyScope, type AdmitResult } from './scope.js';
import type { HintProvider, TopologyAffinityStore, TopologyHint } from './topology-hint.js';

export { TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE, type AdmitResult } from './scope.js';

const log = logger('topologymanager');

/** Upstream refuses every policy but none on machines with more NUMA nodes than this. */
export const MAX_ALLOWABLE_NUMA_NODES = 8;

export interface TopologyManagerConfig {
  policyName: string;
  scopeName: string;
  policyOptions: Readonly<Record<string, string>>;
  /** The kubelet's feature gates as configured (the policy options' gates are read from them). */
  featureGates?: Readonly<Record<string, boolean>>;
  /** Normally /sys. */
  sysfsRoot?: string;
}

export class TopologyManager implements TopologyAffinityStore {
  private readonly providers: HintProvider[] = [];
  private readonly scope: TopologyScope;

  constructor(
    policy: Policy,
    scopeName: string,
    /** The NUMA node IDs (empty under the `none` policy, which never reads them). */
    readonly numaNodes: readonly number[],
  ) {
    this.scope = new TopologyScope(scopeName, policy, this.providers);
  }

  get scopeName(): string {
    return this.scope.name;
  }

  /** Providers are asked, and allocate, in the order they are added (upstream: CPU, memory, devices). */
  addHintProvider(provider: HintProvider): void {
    this.providers.push(provider);
  }

  getAffinity(podUID: string, containerName: string): TopologyHint {
    return this.scope.getAffinity(podUID, containerName);
  }

  getPolicyName(): string {
    return this.scope.policy.name;
  }

  /**
   * The admit handler (upstream: manager.Admit). activePods are the pods that hold resources now: the
   * affinities of any other pod are forgotten first. Synchronous unless a provider answers later.
   */
  admit(pod: Pod, activePods: readonly Pod[]): AdmitResult | Promise<AdmitResult> {
    this.scope.removeStale(new Set([...activePods, pod].map((p) => p.metadata.uid ?? '')));
    return this.scope.admit(pod);
  }
}

function policyFor(name: string, numaInfo: NUMAInfo, opts: TopologyPolicyOptions): Policy {
  switch (name) {
    case POLICY_BEST_EFFORT:
      return new BestEffortPolicy(numaInfo, opts);
    case POLICY_RESTRICTED:
      return new RestrictedPolicy(numaInfo, opts);
    case POLICY_SINGLE_NUMA_NODE:
      return new SingleNumaNodePolicy(numaInfo);
    default:
      throw new KubeletError('INVALID_CONFIG', `unknown policy: "${name}"`);
  }
}

/**
 * Builds the manager for a policy and scope, refusing what upstream refuses at start: an unknown
 * policy, scope or policy option, and more than 8 NUMA nodes under any policy but none.
 */
export async function createTopologyManager(config: TopologyManagerConfig): Promise<TopologyManager> {
  // Before the policy, as upstream: under none too a bad option is refused, not ignored.
  const opts = parseTopologyPolicyOptions(config.policyOptions, featureGateReader(config.featureGates ?? {}));
  if (config.policyName === POLICY_NONE) {
    log.info('Creating topology manager with none policy');
    return new TopologyManager(new NonePolicy(), SCOPE_NONE, []);
  }
  log.info('Creating topology manager with policy per scope', {
    topologyPolicyName: config.policyName,
    topologyScopeName: config.scopeName,
    topologyPolicyOptions: opts,
  });
  let numaInfo: NUMAInfo;
  try {
    numaInfo = await discoverNUMAInfo(config.sysfsRoot ?? '/sys', opts.preferClosestNUMA);
  } catch (err) {
    throw new KubeletError('INVALID_CONFIG', `cannot discover NUMA topology: ${errorMessage(err)}`, {
      cause: err,
    });
  }
  if (numaInfo.nodes.length > MAX_ALLOWABLE_NUMA_NODES)
    throw new KubeletError(
      'INVALID_CONFIG',
      `unsupported on machines with more than ${MAX_ALLOWABLE_NUMA_NODES} NUMA Nodes`,
    );
  const policy = policyFor(config.policyName, numaInfo, opts);
  if (config.scopeName !== SCOPE_CONTAINER && config.scopeName !== SCOPE_POD)
    throw new KubeletError('INVALID_CONFIG', `unknown scope: "${config.scopeName}"`);
  return new TopologyManager(policy, config.scopeName, numaInfo.nodes);
}
