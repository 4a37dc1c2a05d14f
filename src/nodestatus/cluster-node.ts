/**
 * The node's side of cluster mode in one piece, for the kubelet's wiring: the runtime health loop
 * (upstream's updateRuntimeUp every 5 s), node registration and status, and the node Lease.
 *
 * Start order: the `Starting` event, the runtime health loop, then status and Lease side by side (the
 * Lease waits for the node to exist before it is created, so that it can name the node its owner).
 * Stop order: status and Lease first (their API calls are aborted), then the runtime loop. Nothing is
 * deleted on stop: the node stays registered and its Lease simply expires, as upstream.
 */
import type { ImageService, RuntimeService } from '../cri/types.js';
import type { Clock } from '../lib/clock.js';
import type { PlegHealth } from '../pleg/generic-pleg.js';
import { NodeLeaseController } from './node-lease-controller.js';
import type { NodeApiClient } from './node-client.js';
import {
  NodeStatusManager,
  type NodeStatusConfig,
  type NodeStatusFlags,
  type NodeStatusManagerOptions,
} from './node-status-manager.js';
import { RUNTIME_UP_PERIOD_MS, RuntimeState } from './runtime-state.js';
import { NodeEventReason } from './setters.js';
import { nodeRef } from '../api/node.js';
import type { NodeEventRecorder } from './node-event-recorder.js';
import type { Node } from '../api/node.js';

export interface ClusterNodeOptions {
  nodeName: string;
  hostname?: string;
  /** The resolved KubeletConfiguration (only the fields of NodeStatusConfig are read). */
  config: NodeStatusConfig;
  /** The parsed flags (only nodeIP, nodeLabels and rootDirectory are read). */
  flags: NodeStatusFlags;
  /** The API client; upstream gives heartbeats a client without rate limiting. */
  client: NodeApiClient;
  clock: Clock;
  /** status.nodeInfo.kubeletVersion (cmd's KUBELET_VERSION). */
  kubeletVersion: string;
  runtimeService: Pick<RuntimeService, 'version' | 'status'>;
  imageService: Pick<ImageService, 'listImages'>;
  /** The runtime's name as its Version answered at start (`containerd`). */
  runtimeName?: string;
  /** The PLEG's health; an unhealthy PLEG makes the node NotReady, as upstream's "PLEG" health check. */
  plegHealth?: () => PlegHealth;
  recorder?: NodeEventRecorder;
  pressure?: NodeStatusManagerOptions['pressure'];
  devicePluginCapacity?: NodeStatusManagerOptions['devicePluginCapacity'];
  updatePodCIDR?: NodeStatusManagerOptions['updatePodCIDR'];
  nodeLister?: () => Node | undefined;
  onRepeatedHeartbeatFailure?: () => void;
  /** Errors of other parts that make the node NotReady (the node shutdown manager's). */
  otherErrors?: () => string[];
  /** Deadline of each API and CRI call; default min(nodeStatusUpdateFrequency, nodeLeaseDuration). */
  requestTimeoutMs?: number;
  random?: () => number;
  machineHost?: NodeStatusManagerOptions['machineHost'];
  networkHost?: NodeStatusManagerOptions['networkHost'];
}

export class ClusterNode {
  readonly runtimeState: RuntimeState;
  readonly nodeStatus: NodeStatusManager;
  readonly lease: NodeLeaseController;
  private readonly controller = new AbortController();
  private runtimeLoop: Promise<void> | undefined;
  private state: 'NEW' | 'RUNNING' | 'STOPPED' = 'NEW';

  constructor(private readonly opts: ClusterNodeOptions) {
    this.runtimeState = new RuntimeState(opts.clock);
    const plegHealth = opts.plegHealth;
    if (plegHealth) this.runtimeState.addHealthCheck({ name: 'PLEG', check: plegHealth });
    const requestTimeoutMs =
      opts.requestTimeoutMs ??
      Math.min(opts.config.nodeStatusUpdateFrequencyMs, opts.config.nodeLeaseDurationSeconds * 1000);
    this.nodeStatus = new NodeStatusManager({
      ...opts,
      requestTimeoutMs,
      runtimeState: this.runtimeState,
      updateRuntimeUp: (signal) => this.updateRuntimeUp(signal),
    });
    this.lease = new NodeLeaseController({
      client: opts.client,
      clock: opts.clock,
      nodeName: opts.nodeName,
      leaseDurationSeconds: opts.config.nodeLeaseDurationSeconds,
      requestTimeoutMs,
      ...(opts.onRepeatedHeartbeatFailure
        ? { onRepeatedHeartbeatFailure: opts.onRepeatedHeartbeatFailure }
        : {}),
      ...(opts.random ? { random: opts.random } : {}),
    });
  }

  /** Starts every loop and returns at once; registration and the first status follow in the background. */
  start(): void {
    if (this.state !== 'NEW') throw new Error(`cluster node cannot start from state ${this.state}`);
    this.state = 'RUNNING';
    this.opts.recorder?.eventFor(
      nodeRef(this.opts.nodeName),
      'Normal',
      NodeEventReason.StartingKubelet,
      'Starting kubelet.',
    );
    const { signal } = this.controller;
    this.runtimeLoop = (async () => {
      while (!signal.aborted) {
        await this.updateRuntimeUp(signal);
        await this.opts.clock.sleep(RUNTIME_UP_PERIOD_MS, signal).catch(() => undefined);
      }
    })();
    this.nodeStatus.start();
    this.lease.start();
  }

  async stop(): Promise<void> {
    if (this.state !== 'RUNNING') return;
    this.state = 'STOPPED';
    await Promise.all([this.nodeStatus.stop(), this.lease.stop()]);
    this.controller.abort(new Error('cluster node stopping'));
    await this.runtimeLoop;
  }

  /** Asks the runtime for its status now (bounded by the request deadline) and records it. */
  updateRuntimeUp(signal: AbortSignal): Promise<void> {
    const timeoutMs =
      this.opts.requestTimeoutMs ??
      Math.min(
        this.opts.config.nodeStatusUpdateFrequencyMs,
        this.opts.config.nodeLeaseDurationSeconds * 1000,
      );
    return this.runtimeState.updateRuntimeUp(
      async (s) =>
        (await this.opts.runtimeService.status(false, { timeoutMs, ...(s ? { signal: s } : {}) })).status,
      signal,
    );
  }
}
