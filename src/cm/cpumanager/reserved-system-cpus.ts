/**
 * reservedSystemCPUs as upstream's kubelet applies it at start (cmd/kubelet/app/server.go): the set
 * must be online CPUs, and its size replaces systemReserved.cpu while kubeReserved.cpu is dropped,
 * before node allocatable, the kubepods cgroup or the CPU manager read the reservations.
 */
import { errorMessage, KubeletError } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import { CPUSet } from './cpu-set.js';
import { discoverTopology } from './topology.js';

const log = logger('kubelet');

interface Reservations {
  reservedSystemCPUs: string;
  systemReserved: Readonly<Record<string, string>>;
  kubeReserved: Readonly<Record<string, string>>;
}

/** The configuration with the reservation applied; the same object when reservedSystemCPUs is empty. */
export async function withReservedSystemCPUs<C extends Reservations>(
  config: C,
  sysfsRoot?: string,
): Promise<C> {
  if (config.reservedSystemCPUs === '') return config;
  const online = (await discoverTopology(sysfsRoot)).details.cpus();
  let reserved: CPUSet;
  try {
    reserved = CPUSet.parse(config.reservedSystemCPUs);
  } catch (err) {
    throw new KubeletError('INVALID_CONFIG', `unable to parse reserved-cpus list: ${errorMessage(err)}`);
  }
  if (!reserved.isSubsetOf(online))
    throw new KubeletError(
      'INVALID_CONFIG',
      `reserved-cpus: ${config.reservedSystemCPUs} is not a subset of online-cpus: ${online.toString()}`,
    );
  if (reserved.isEmpty()) return config;
  log.info(
    'Option --reserved-cpus is specified, it will overwrite the cpu setting in KubeReserved and SystemReserved',
    {
      kubeReservedCPUs: config.kubeReserved,
      systemReservedCPUs: config.systemReserved,
    },
  );
  const { cpu: _dropped, ...kubeReserved } = config.kubeReserved;
  const systemReserved = { ...config.systemReserved, cpu: String(reserved.size) };
  log.info('After cpu setting is overwritten', {
    kubeReservedCPUs: kubeReserved,
    systemReservedCPUs: systemReserved,
  });
  return { ...config, systemReserved, kubeReserved };
}
