/**
 * failSwapOn, as upstream's NewContainerManager checks it: the kubelet refuses to start while swap
 * is on (more than the header line in /proc/swaps), unless failSwapOn is false. And
 * memorySwap.swapBehavior: what the node offers for it, and upstream's refusal of LimitedSwap on
 * cgroup v1.
 */
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { SwapSettings } from '../kuberuntime/container-swap.js';

const log = logger('container_manager');

export const DEFAULT_SWAPS_FILE = '/proc/swaps';

export class SwapOnError extends KubeletError {
  constructor(lines: string[]) {
    super(
      'SWAP_ON',
      `running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false. /proc/swaps contained: [${lines.join(' ')}]`,
    );
  }
}

/** Throws SwapOnError when failSwapOn is set and swap is on; a missing file means no swap, as upstream. */
export async function checkSwap(failSwapOn: boolean, swapsFile = DEFAULT_SWAPS_FILE): Promise<void> {
  if (!failSwapOn) return;
  let text: string;
  try {
    text = await readFile(swapsFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      log.info('File does not exist, assuming that swap is disabled', { path: swapsFile });
      return;
    }
    throw err;
  }
  const lines = text.trim().split('\n');
  if (lines.length > 1) throw new SwapOnError(lines);
}

/** The KubeletConfiguration fields this reads: pass the resolved config. */
export interface SwapConfig {
  failSwapOn: boolean;
  memorySwap: { swapBehavior: string };
  featureGates: Readonly<Record<string, boolean>>;
}

export interface SwapMachine {
  /** /sys/fs/cgroup by default. */
  cgroupRoot?: string;
  /** /proc/self/cgroup by default: where the kubelet's own cgroup v2 is. */
  selfCgroup?: string;
  /** /proc/meminfo by default. */
  meminfo?: string;
}

async function exists(p: string): Promise<boolean> {
  return access(p).then(
    () => true,
    () => false,
  );
}

function meminfoBytes(text: string, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : 0;
}

/**
 * Upstream's swapControllerAvailable: memory.memsw.limit_in_bytes on cgroup v1; on v2 memory.swap.max
 * in the kubelet's own cgroup (the root has none).
 */
async function swapControllerAvailable(
  cgroupRoot: string,
  cgroupV2: boolean,
  selfCgroup: string,
): Promise<boolean> {
  if (!cgroupV2) return exists(path.join(cgroupRoot, 'memory', 'memory.memsw.limit_in_bytes'));
  let unified: string | undefined;
  try {
    unified = /^0::(.*)$/m.exec(await readFile(selfCgroup, 'utf8'))?.[1];
  } catch (err) {
    log.v(5, 'Failed to detect the availability of the swap controller, assuming not available', {
      err: errorMessage(err),
    });
    return false;
  }
  return unified !== undefined && exists(path.join(cgroupRoot, unified, 'memory.swap.max'));
}

/**
 * Reads what the node has for swap and refuses, as upstream v1.30's kubelet does before its container
 * manager is made, LimitedSwap on cgroup v1 while NodeSwap (on by default) is enabled.
 */
export async function detectSwapSettings(
  config: SwapConfig,
  machine: SwapMachine = {},
): Promise<SwapSettings> {
  const cgroupRoot = machine.cgroupRoot ?? '/sys/fs/cgroup';
  const cgroupV2 = await exists(path.join(cgroupRoot, 'cgroup.controllers'));
  const nodeSwapEnabled = config.featureGates.NodeSwap ?? true;
  const behavior = config.memorySwap.swapBehavior;
  if (nodeSwapEnabled) {
    if (!cgroupV2 && behavior === 'LimitedSwap')
      throw new KubeletError(
        'INVALID_CONFIG',
        'swap feature is enabled and LimitedSwap but it is only supported with cgroupv2',
      );
    if (!config.failSwapOn && behavior === '')
      log.info('NoSwap is set due to memorySwapBehavior not specified', {
        memorySwapBehavior: behavior,
        FailSwapOn: config.failSwapOn,
      });
  }
  const meminfo = await readFile(machine.meminfo ?? '/proc/meminfo', 'utf8').catch(() => '');
  return {
    behavior,
    nodeSwapEnabled,
    controllerAvailable: await swapControllerAvailable(
      cgroupRoot,
      cgroupV2,
      machine.selfCgroup ?? '/proc/self/cgroup',
    ),
    cgroupV2,
    memoryCapacityBytes: meminfoBytes(meminfo, 'MemTotal'),
    swapCapacityBytes: meminfoBytes(meminfo, 'SwapTotal'),
  };
}
