/**
 * cpuManagerPolicyOptions for the static policy (upstream: cpumanager/policy_options.go). Values are
 * Go booleans ("true", "1", "False"...). Only full-pcpus-only is acted on; the others upstream knows
 * are refused by name rather than accepted and ignored.
 */
import { KubeletError } from '../../lib/errors.js';

export const FULL_PCPUS_ONLY = 'full-pcpus-only';
export const DISTRIBUTE_CPUS_ACROSS_NUMA = 'distribute-cpus-across-numa';
export const ALIGN_BY_SOCKET = 'align-by-socket';

export interface StaticPolicyOptions {
  fullPhysicalCPUsOnly: boolean;
}

/** strconv.ParseBool. */
function parseGoBool(name: string, value: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw new KubeletError('INVALID_CONFIG', `bad value for option ${JSON.stringify(name)}: invalid syntax`);
}

export function parseStaticPolicyOptions(options: Readonly<Record<string, string>>): StaticPolicyOptions {
  const opts: StaticPolicyOptions = { fullPhysicalCPUsOnly: false };
  for (const [name, value] of Object.entries(options)) {
    if (name === FULL_PCPUS_ONLY) opts.fullPhysicalCPUsOnly = parseGoBool(name, value);
    else if (name === DISTRIBUTE_CPUS_ACROSS_NUMA || name === ALIGN_BY_SOCKET) {
      throw new KubeletError(
        'INVALID_CONFIG',
        `CPU Manager policy option ${JSON.stringify(name)} is not supported by tskubelet yet`,
      );
    } else
      throw new KubeletError('INVALID_CONFIG', `unknown CPU Manager Policy option: ${JSON.stringify(name)}`);
  }
  return opts;
}
