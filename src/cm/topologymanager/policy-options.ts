/**
 * topologyManagerPolicyOptions (upstream: topologymanager/policy_options.go). The one option upstream
 * v1.30 knows, prefer-closest-numa-nodes, is beta and behind TopologyManagerPolicyBetaOptions (on by
 * default); anything else is refused at start by name, never accepted and ignored.
 */
import { KubeletError } from '../../lib/errors.js';

export const PREFER_CLOSEST_NUMA_NODES = 'prefer-closest-numa-nodes';
/** Beta in upstream v1.31 only; refused here with its own reason rather than as unknown. */
export const MAX_ALLOWABLE_NUMA_NODES = 'max-allowable-numa-nodes';

const BETA_OPTIONS: readonly string[] = [PREFER_CLOSEST_NUMA_NODES];

export interface TopologyPolicyOptions {
  preferClosestNUMA: boolean;
}

/** Whether a feature gate is on (its default when the user did not set it). */
export type FeatureGateReader = (gate: string) => boolean;

/** The defaults upstream v1.30 gives the gates read here. */
const GATE_DEFAULTS: Readonly<Record<string, boolean>> = {
  TopologyManagerPolicyOptions: true,
  TopologyManagerPolicyBetaOptions: true,
  TopologyManagerPolicyAlphaOptions: false,
};

export function featureGateReader(gates: Readonly<Record<string, boolean>>): FeatureGateReader {
  return (gate) => gates[gate] ?? GATE_DEFAULTS[gate] ?? false;
}

/** strconv.ParseBool. */
function parseGoBool(name: string, value: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw new KubeletError(
    'INVALID_CONFIG',
    `bad value for option ${JSON.stringify(name)}: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`,
  );
}

/** Upstream's CheckPolicyOptionAvailable. */
function checkOptionAvailable(name: string, gateOn: FeatureGateReader): void {
  if (name === MAX_ALLOWABLE_NUMA_NODES)
    throw new KubeletError(
      'INVALID_CONFIG',
      `Topology Manager Policy option ${JSON.stringify(name)} is not supported by tskubelet (upstream v1.31 adds it); machines with more than 8 NUMA nodes are refused`,
    );
  if (!BETA_OPTIONS.includes(name))
    throw new KubeletError(
      'INVALID_CONFIG',
      `unknown Topology Manager Policy option: ${JSON.stringify(name)}`,
    );
  if (!gateOn('TopologyManagerPolicyBetaOptions'))
    throw new KubeletError(
      'INVALID_CONFIG',
      `Topology Manager Policy Beta-level Options not enabled, but option ${JSON.stringify(name)} provided`,
    );
}

/** Parses the options; throws INVALID_CONFIG with upstream's wording for what upstream refuses. */
export function parseTopologyPolicyOptions(
  options: Readonly<Record<string, string>>,
  gateOn: FeatureGateReader,
): TopologyPolicyOptions {
  const opts: TopologyPolicyOptions = { preferClosestNUMA: false };
  const names = Object.keys(options);
  if (names.length > 0 && !gateOn('TopologyManagerPolicyOptions'))
    throw new KubeletError(
      'INVALID_CONFIG',
      `topology manager policy options ${JSON.stringify(options)} require feature gates "TopologyManagerPolicyOptions" enabled`,
    );
  for (const name of names.sort()) {
    checkOptionAvailable(name, gateOn);
    if (name === PREFER_CLOSEST_NUMA_NODES) opts.preferClosestNUMA = parseGoBool(name, options[name] ?? '');
  }
  return opts;
}
