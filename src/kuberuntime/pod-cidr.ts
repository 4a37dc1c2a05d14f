/**
 * The node's pod CIDR handed to the runtime (upstream: Kubelet.updatePodCIDR and the runtime
 * manager's UpdatePodCIDR). containerd keeps it for a CNI config template, when one is configured.
 */
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { RuntimeService } from '../cri/types.js';

const log = logger('kubelet');

export class PodCIDRUpdater {
  private current = '';
  /** Calls run one after another, as upstream's mutex makes them: a later CIDR never lands first. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly runtime: RuntimeService) {}

  /** The CIDR the runtime last accepted ('' before any). */
  get podCIDR(): string {
    return this.current;
  }

  /**
   * Hands cidr to the runtime when it differs from the last one; true when it did (or tried: a
   * failed call may still have changed it, as upstream reasons). Rejects with the runtime's error.
   */
  update(cidr: string): Promise<boolean> {
    const next = this.queue.then(() => this.apply(cidr));
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Upstream's start-time call with the configuration's podCIDR: a failure is logged, not fatal. */
  async updateFromConfig(cidr: string): Promise<void> {
    try {
      await this.update(cidr);
    } catch (err) {
      log.error('Pod CIDR update failed', { err: errorMessage(err) });
    }
  }

  private async apply(cidr: string): Promise<boolean> {
    if (cidr === this.current) return false;
    log.info('Updating runtime config through cri with podcidr', { CIDR: cidr });
    try {
      await this.runtime.updateRuntimeConfig(cidr);
    } catch (err) {
      throw new Error(`failed to update pod CIDR: ${errorMessage(err)}`, { cause: err });
    }
    log.info('Updating Pod CIDR', { originalPodCIDR: this.current, newPodCIDR: cidr });
    this.current = cidr;
    return true;
  }
}
