/**
 * The node's heartbeat: the Lease kube-node-lease/<node>, renewed every renewInterval (upstream:
 * component-helpers/apimachinery/lease controller with the kubelet's SetNodeOwnerFunc). The node
 * lifecycle controller counts the node alive while renewTime is fresh; the status patch, much
 * rarer, carries what changed.
 *
 * Each renewal updates the last Lease it wrote without reading it first. On a conflict it reads the
 * Lease again; when it cannot reach the server it retries with back-off (200 ms doubling to 7 s)
 * until it can, so an outage ends in a renewal as soon as the server is back.
 */
import type { ApiResult } from '../k8s/api-status.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { leaseRefPath, nodeRefPath, NODE_LEASE_NAMESPACE, type NodeApiClient } from './node-client.js';
import type { Lease, Node } from '../api/node.js';
import { loopPeriodMs } from '../lib/loop-period.js';

const log = logger('kubelet');

/** Immediate retries of one renewal before waiting for the next interval. */
export const MAX_UPDATE_RETRIES = 5;
/** The longest wait between attempts to read or create the Lease. */
export const MAX_BACKOFF_MS = 7_000;
/** Upstream's nodeLeaseRenewIntervalFraction: renew four times per lease duration. */
export const NODE_LEASE_RENEW_INTERVAL_FRACTION = 0.25;
/** wait.JitterUntil's factor for the lease loop. */
const JITTER_FACTOR = 0.04;

/** metav1.MicroTime as the API writes it: RFC 3339 in UTC with six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface NodeLeaseControllerOptions {
  client: NodeApiClient;
  clock: Clock;
  nodeName: string;
  leaseDurationSeconds: number;
  /** Default: a quarter of the lease duration (10 s for 40 s). */
  renewIntervalMs?: number;
  /** Deadline of each API call. */
  requestTimeoutMs: number;
  /** Called when renewals keep failing, e.g. to drop the client's possibly dead connections. */
  onRepeatedHeartbeatFailure?: () => void;
  /** [0, 1): the jitter of the renewal interval; tests pass () => 0. */
  random?: () => number;
}

export class NodeLeaseController {
  private readonly client: NodeApiClient;
  private readonly clock: Clock;
  private readonly nodeName: string;
  private readonly renewIntervalMs: number;
  private readonly random: () => number;
  private latestLease: Lease | undefined;
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private renewals = 0;

  constructor(private readonly opts: NodeLeaseControllerOptions) {
    this.client = opts.client;
    this.clock = opts.clock;
    this.nodeName = opts.nodeName;
    this.renewIntervalMs = loopPeriodMs(
      'node lease',
      opts.renewIntervalMs ?? opts.leaseDurationSeconds * 1000 * NODE_LEASE_RENEW_INTERVAL_FRACTION,
    );
    this.random = opts.random ?? Math.random;
  }

  /** Renews at once, then every renew interval (jittered, counted from the end of the last one). */
  start(): void {
    if (this.controller) return;
    const controller = new AbortController();
    this.controller = controller;
    this.loop = (async () => {
      while (!controller.signal.aborted) {
        await this.sync(controller.signal);
        const waitMs = this.renewIntervalMs * (1 + this.random() * JITTER_FACTOR);
        await this.clock.sleep(waitMs, controller.signal).catch(() => undefined);
      }
    })();
  }

  async stop(): Promise<void> {
    this.controller?.abort(new Error('node lease controller stopping'));
    await this.loop;
    this.controller = undefined;
    this.loop = undefined;
  }

  /** The Lease as last written (undefined before the first success). */
  get lease(): Lease | undefined {
    return this.latestLease;
  }

  /** Successful renewals and creations so far. */
  get renewCount(): number {
    return this.renewals;
  }

  /** One renewal (upstream's sync); never throws. */
  async sync(signal: AbortSignal): Promise<void> {
    try {
      if (this.latestLease) {
        try {
          await this.retryUpdateLease(this.latestLease, signal);
          return;
        } catch (err) {
          if (signal.aborted) return;
          log.info('failed to update lease using latest lease, fallback to ensure lease', {
            err: errorMessage(err),
          });
        }
      }
      const { lease, created } = await this.backoffEnsureLease(signal);
      this.latestLease = lease;
      if (!created && lease) {
        try {
          await this.retryUpdateLease(lease, signal);
        } catch (err) {
          if (!signal.aborted) {
            log.error('Will retry updating lease', {
              err: errorMessage(err),
              interval: `${this.renewIntervalMs}ms`,
            });
          }
        }
      }
    } catch (err) {
      if (!signal.aborted) log.error('Node lease sync failed', { err: errorMessage(err) });
    }
  }

  private callOptions(signal: AbortSignal) {
    return { signal, timeoutMs: this.opts.requestTimeoutMs };
  }

  /** Reads (or creates) the Lease until it works or the controller stops; created tells which. */
  private async backoffEnsureLease(
    signal: AbortSignal,
  ): Promise<{ lease: Lease | undefined; created: boolean }> {
    let sleepMs = 100;
    for (;;) {
      try {
        return await this.ensureLease(signal);
      } catch (err) {
        if (signal.aborted) return { lease: undefined, created: false };
        sleepMs = Math.min(2 * sleepMs, MAX_BACKOFF_MS);
        log.error('Failed to ensure lease exists, will retry', {
          err: errorMessage(err),
          interval: `${sleepMs}ms`,
        });
        try {
          await this.clock.sleep(sleepMs, signal);
        } catch {
          return { lease: undefined, created: false };
        }
      }
    }
  }

  private async ensureLease(signal: AbortSignal): Promise<{ lease: Lease | undefined; created: boolean }> {
    const got = await this.client.get<Lease>(leaseRefPath(this.nodeName), this.callOptions(signal));
    if (got.ok) return { lease: got.object, created: false };
    if (got.reason !== 'NotFound') throw new Error(`getting lease: ${got.status.message ?? got.reason}`);
    // Created at once, as upstream's setNodeOwnerFunc never fails: without the Node (not registered
    // yet) the Lease has no owner reference, and a later renewal adds it.
    const { lease } = await this.newLease(undefined, signal);
    const made = await this.client.create<Lease>(leaseRefPath(), lease, this.callOptions(signal));
    if (!made.ok) throw new Error(`creating lease: ${made.status.message ?? made.reason}`);
    this.renewals++;
    return { lease: made.object, created: true };
  }

  private async retryUpdateLease(base: Lease, signal: AbortSignal): Promise<void> {
    let current: Lease | undefined = base;
    for (let i = 0; i < MAX_UPDATE_RETRIES; i++) {
      if (!current) break;
      const { lease } = await this.newLease(current, signal);
      let result: ApiResult<Lease> | undefined;
      let failure: string;
      try {
        result = await this.client.update<Lease>(
          leaseRefPath(this.nodeName),
          lease,
          this.callOptions(signal),
        );
        if (result.ok) {
          this.latestLease = result.object;
          this.renewals++;
          return;
        }
        failure = result.status.message ?? result.reason;
      } catch (err) {
        if (signal.aborted) throw err;
        failure = errorMessage(err);
      }
      log.error('Failed to update lease', { err: failure });
      if (result && !result.ok && result.reason === 'Conflict') {
        // Someone else wrote the Lease: start again from the server's copy.
        current = (await this.backoffEnsureLease(signal)).lease;
        continue;
      }
      if (i > 0) this.opts.onRepeatedHeartbeatFailure?.();
    }
    throw new Error(`failed ${MAX_UPDATE_RETRIES} attempts to update lease`);
  }

  /**
   * The Lease to write: a fresh one, or base renewed now. It points to the node as its owner once the
   * node can be read (upstream's setNodeOwnerFunc), so deleting the node deletes its Lease.
   */
  private async newLease(base: Lease | undefined, signal: AbortSignal): Promise<{ lease: Lease }> {
    const lease: Lease = base
      ? structuredClone(base)
      : {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.nodeName, namespace: NODE_LEASE_NAMESPACE },
          spec: { holderIdentity: this.nodeName, leaseDurationSeconds: this.opts.leaseDurationSeconds },
        };
    lease.spec = { ...lease.spec, renewTime: microTime(this.clock.now()) };
    if ((lease.metadata.ownerReferences ?? []).length > 0) return { lease };
    let ownerError: string;
    try {
      const node = await this.client.get<Node>(nodeRefPath(this.nodeName), this.callOptions(signal));
      if (node.ok && node.object.metadata.uid) {
        lease.metadata.ownerReferences = [
          { apiVersion: 'v1', kind: 'Node', name: this.nodeName, uid: node.object.metadata.uid },
        ];
        return { lease };
      }
      ownerError = node.ok ? 'node has no uid' : (node.status.message ?? node.reason);
    } catch (err) {
      ownerError = errorMessage(err);
    }
    log.error('Failed to get node when trying to set owner ref to the node lease', {
      node: this.nodeName,
      err: ownerError,
    });
    return { lease };
  }
}
