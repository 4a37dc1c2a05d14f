/**
 * failSwapOn, as upstream's NewContainerManager checks it: the kubelet refuses to start while swap
 * is on (more than the header line in /proc/swaps), unless failSwapOn is false.
 */
import { readFile } from 'node:fs/promises';
import { KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';

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
