/**
 * cpuManagerPolicyOptions for the static policy (upstream: cpumanager/policy_options.go, v1.30):
 * full-pcpus-only (beta, behind CPUManagerPolicyBetaOptions, on by default), and
 * distribute-cpus-across-numa and align-by-socket (alpha, behind CPUManagerPolicyAlphaOptions, off
 * by default). Values are Go booleans ("true", "1", "False"...); any combination is allowed, but
 * align-by-socket is refused with the topology manager's single-numa-node policy and on machines with
 * more sockets than NUMA nodes.
 */
import { KubeletError } from '../../lib/errors.js';
import { goQuote } from '../../lib/go-quote.js';
import type { CPUTopology } from './topology.js';

export const FULL_PCPUS_ONLY = 'full-pcpus-only';
export const DISTRIBUTE_CPUS_ACROSS_NUMA = 'distribute-cpus-across-numa';
export const ALIGN_BY_SOCKET = 'align-by-socket';

const ALPHA_OPTIONS = new Set([DISTRIBUTE_CPUS_ACROSS_NUMA, ALIGN_BY_SOCKET]);
const BETA_OPTIONS = new Set([FULL_PCPUS_ONLY]);

export interface StaticPolicyOptions {
  fullPhysicalCPUsOnly: boolean;
  /** Spread a request needing more than one NUMA node evenly over them. */
  distributeCPUsAcrossNUMA: boolean;
  /** CPUs count as aligned at the socket rather than the NUMA node. */
  alignBySocket: boolean;
}

/** What the options are checked against: the feature gates and the topology manager's policy. */
export interface PolicyOptionsContext {
  featureGates?: Readonly<Record<string, boolean>>;
  /** topologyManagerPolicy ('none' when unset). */
  topologyManagerPolicy?: string;
}

function invalid(message: string): KubeletError {
  return new KubeletError('INVALID_CONFIG', message);
}

/** strconv.ParseBool, with upstream's wrapping of its error. */
function parseGoBool(name: string, value: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw invalid(
    `bad value for option ${goQuote(name)}: strconv.ParseBool: parsing ${goQuote(value)}: invalid syntax`,
  );
}

/** Upstream's CheckPolicyOptionAvailable. */
function checkPolicyOptionAvailable(name: string, gates: Readonly<Record<string, boolean>>): void {
  if (!ALPHA_OPTIONS.has(name) && !BETA_OPTIONS.has(name))
    throw invalid(`unknown CPU Manager Policy option: ${goQuote(name)}`);
  if (ALPHA_OPTIONS.has(name) && !(gates.CPUManagerPolicyAlphaOptions ?? false))
    throw invalid(`CPU Manager Policy Alpha-level Options not enabled, but option ${goQuote(name)} provided`);
  if (BETA_OPTIONS.has(name) && !(gates.CPUManagerPolicyBetaOptions ?? true))
    throw invalid(`CPU Manager Policy Beta-level Options not enabled, but option ${goQuote(name)} provided`);
}

/** Upstream's NewStaticPolicyOptions. */
export function parseStaticPolicyOptions(
  options: Readonly<Record<string, string>>,
  ctx: PolicyOptionsContext = {},
): StaticPolicyOptions {
  const opts: StaticPolicyOptions = {
    fullPhysicalCPUsOnly: false,
    distributeCPUsAcrossNUMA: false,
    alignBySocket: false,
  };
  for (const [name, value] of Object.entries(options)) {
    checkPolicyOptionAvailable(name, ctx.featureGates ?? {});
    if (name === FULL_PCPUS_ONLY) opts.fullPhysicalCPUsOnly = parseGoBool(name, value);
    else if (name === DISTRIBUTE_CPUS_ACROSS_NUMA) opts.distributeCPUsAcrossNUMA = parseGoBool(name, value);
    else opts.alignBySocket = parseGoBool(name, value);
  }
  return opts;
}

/** Upstream's ValidateStaticPolicyOptions: what the options need of the machine and the topology manager. */
export function validateStaticPolicyOptions(
  opts: StaticPolicyOptions,
  topology: CPUTopology,
  ctx: PolicyOptionsContext = {},
): void {
  if (!opts.alignBySocket) return;
  // Upstream's words, its "Topolgy" included.
  if (ctx.topologyManagerPolicy === 'single-numa-node')
    throw invalid(
      `Topolgy manager single-numa-node policy is incompatible with CPUManager ${ALIGN_BY_SOCKET} policy option`,
    );
  if (topology.numSockets > topology.numNUMANodes)
    throw invalid(
      'Align by socket is not compatible with hardware where number of sockets are more than number of NUMA',
    );
}
