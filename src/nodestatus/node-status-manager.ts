/**
 * Registers the node and keeps its status current (upstream: kubelet_node_status.go
 * registerWithAPIServer, syncNodeStatus, updateNodeStatus, tryUpdateNodeStatus, fastStatusUpdateOnce).
 *
 * Every nodeStatusUpdateFrequency (10 s) it computes the status from the machine, the runtime and the
 * kubelet's own health, and patches nodes/{name}/status only when something changed or
 * nodeStatusReportFrequency (5 min) has passed since the last report: the Lease is the heartbeat.
 * A failed round is retried at once up to nodeStatusUpdateRetry (5) times. While the node is not yet
 * Ready after start, a fast loop (every 100 ms, for up to 2 min) reports Ready the moment it is.
 *
 * Loops: `sync` (registration, then status every update interval) and `fast` (until Ready once).
 * Both stop on stop(), which aborts their API calls and waits for them.
 */
import type { ImageService, Image, RuntimeService, VersionResponse } from '../cri/types.js';
import { mustSucceed } from '../k8s/api-status.js';
import { withDeadline } from '../lib/deadline.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import {
  discoverNodeIP,
  ipFamily,
  isUnspecifiedIP,
  realNetworkHost,
  validateNodeIP,
  type NetworkHost,
} from './host-ip.js';
import { ensureRequiredLabels, initialNodeObject, reconcileExistingNode } from './initial-node.js';
import {
  readMachineInfo,
  realMachineHost,
  rootFsCapacityBytes,
  type MachineHost,
  type MachineInfo,
} from './machine-info.js';
import { nodeRefPath, type NodeApiClient } from './node-client.js';
import { nodeStatusHasChanged } from './node-status-changed.js';
import { patchNodeStatus } from './patch-node-status.js';
import type { RuntimeState } from './runtime-state.js';
import {
  daemonEndpoints,
  diskPressureCondition,
  goArch,
  goOS,
  goRuntime,
  images,
  machineInfo,
  memoryPressureCondition,
  nodeAddress,
  nodeAllocatableReservation,
  type DevicePluginResources,
  pidPressureCondition,
  readyCondition,
  schedulableEvents,
  versionInfo,
  type Setter,
} from './setters.js';
import { nodeRef } from '../api/node.js';
import type { NodeEventRecorder } from './node-event-recorder.js';
import type { EventType } from '../api/core-v1.js';
import type { Node, Taint } from '../api/node.js';
import { loopPeriodMs } from '../lib/loop-period.js';

const log = logger('kubelet');

/** Upstream's nodeStatusUpdateRetry: attempts of one status round before waiting for the next. */
export const NODE_STATUS_UPDATE_RETRY = 5;
/** Upstream's nodeReadyGracePeriod: the fast loop gives up after this. */
export const NODE_READY_GRACE_PERIOD_MS = 120_000;
const FAST_STATUS_PERIOD_MS = 100;
/** Registration back-off: 100 ms doubling to 7 s, waited before every attempt (upstream). */
const REGISTER_INITIAL_STEP_MS = 100;
const REGISTER_MAX_STEP_MS = 7_000;
/** wait.JitterUntil's factor for the status loop. */
const JITTER_FACTOR = 0.04;
/** What the fast loop may reuse of the inputs, so that polling does not mean listing images 10 times a second. */
const FAST_INPUTS_MAX_AGE_MS = 1_000;

/** The KubeletConfiguration fields node status reads (ResolvedKubeletConfig has them all). */
export interface NodeStatusConfig {
  registerNode: boolean;
  registerWithTaints: readonly Taint[];
  maxPods: number;
  podsPerCore: number;
  /** The kubelet API's port, published as daemonEndpoints.kubeletEndpoint. */
  port: number;
  nodeStatusMaxImages: number;
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  nodeLeaseDurationSeconds: number;
  kubeReserved: Readonly<Record<string, string>>;
  systemReserved: Readonly<Record<string, string>>;
  evictionHard: Readonly<Record<string, string>>;
  enableControllerAttachDetach: boolean;
  localStorageCapacityIsolation: boolean;
  providerID: string;
}

/** The command-line settings node status reads (KubeletFlags has them all). */
export interface NodeStatusFlags {
  /** --node-ip as given: '', one address, or a comma-separated dual-stack pair. */
  nodeIP: string;
  nodeLabels: Readonly<Record<string, string>>;
  /** --root-dir: its filesystem is the node's ephemeral-storage. */
  rootDirectory: string;
  /** --cloud-provider: '' or 'external'. */
  cloudProvider?: string;
}

/** Eviction signals; until an eviction manager exists the node reports no pressure. */
export interface PressureSignals {
  memory(): boolean;
  disk(): boolean;
  pid(): boolean;
}

export interface NodeStatusManagerOptions {
  nodeName: string;
  /** The kubernetes.io/hostname label and the Hostname address; the node name by default. */
  hostname?: string;
  config: NodeStatusConfig;
  flags: NodeStatusFlags;
  client: NodeApiClient;
  clock: Clock;
  kubeletVersion: string;
  runtimeService: Pick<RuntimeService, 'version'>;
  /** The runtime's name (`containerd`) as its Version answered at start, until it answers again. */
  runtimeName?: string;
  imageService: Pick<ImageService, 'listImages'>;
  runtimeState: RuntimeState;
  /** Refreshes runtimeState from the runtime now (the fast loop calls it; upstream's updateRuntimeUp). */
  updateRuntimeUp?: (signal: AbortSignal) => Promise<void>;
  recorder?: NodeEventRecorder;
  pressure?: PressureSignals;
  /** The node as a watch last saw it, if the kubelet keeps one; else each round reads it. */
  nodeLister?: () => Node | undefined;
  onRepeatedHeartbeatFailure?: () => void;
  /** Deadline of each API and CRI call; default min(update frequency, lease duration), as upstream's heartbeat client. */
  requestTimeoutMs?: number;
  /** Errors of other parts that make the node NotReady (the node shutdown manager's). */
  otherErrors?: () => string[];
  /** The device plugins' resources for capacity and allocatable (the device manager's GetCapacity). */
  devicePluginCapacity?: () => DevicePluginResources;
  /**
   * Hands the Node's spec.podCIDRs (comma-joined) to the runtime; resolves true when it changed, rejects
   * when the runtime refused (upstream's updatePodCIDR).
   */
  updatePodCIDR?: (cidr: string) => Promise<boolean>;
  /** false registers the node cordoned. */
  registerSchedulable?: boolean;
  /** [0, 1): jitter of the update interval; tests pass () => 0. */
  random?: () => number;
  machineHost?: MachineHost;
  networkHost?: NetworkHost;
}

/** What the setters read, gathered before they run. */
interface StatusInputs {
  gatheredAtMs: number;
  version: VersionResponse | undefined;
  images: readonly Image[] | Error;
  discoveredIP: { ip: string } | { error: string };
}

export class NodeStatusManager {
  private readonly opts: NodeStatusManagerOptions;
  private readonly clock: Clock;
  private readonly client: NodeApiClient;
  private readonly nodeName: string;
  private readonly hostname: string;
  private readonly nodeIPs: string[];
  private readonly requestTimeoutMs: number;
  private readonly machineHost: MachineHost;
  private readonly networkHost: NetworkHost;
  private readonly setters: Setter[];
  private readonly operatingSystem = goOS();
  private readonly architecture = goArch();

  private machine: MachineInfo | Error | undefined;
  private rootFsBytes: number | undefined;
  private runtimeName: string | undefined;
  private inputs: StatusInputs | undefined;
  private lastKnownNode: Node | undefined;
  private lastStatusReportTimeMs = 0;
  private registered = false;
  private locked: Promise<void> = Promise.resolve();
  private controller: AbortController | undefined;
  private loops: Promise<void>[] = [];

  constructor(opts: NodeStatusManagerOptions) {
    this.opts = opts;
    this.clock = opts.clock;
    this.client = opts.client;
    this.nodeName = opts.nodeName;
    this.hostname = opts.hostname ?? opts.nodeName;
    this.nodeIPs = opts.flags.nodeIP
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    this.requestTimeoutMs =
      opts.requestTimeoutMs ??
      Math.min(opts.config.nodeStatusUpdateFrequencyMs, opts.config.nodeLeaseDurationSeconds * 1000);
    this.machineHost = opts.machineHost ?? realMachineHost;
    this.networkHost = opts.networkHost ?? realNetworkHost;
    this.runtimeName = opts.runtimeName;
    this.setters = this.defaultNodeStatusFuncs();
  }

  // ---- lifecycle -------------------------------------------------------------------------------------

  /** Starts the status loop (registering first, when registerNode) and the fast loop; returns at once. */
  start(): void {
    if (this.controller) return;
    const controller = new AbortController();
    this.controller = controller;
    const { signal } = controller;
    const periodMs = loopPeriodMs('node status', this.opts.config.nodeStatusUpdateFrequencyMs);
    const random = this.opts.random ?? Math.random;
    this.loops.push(
      (async () => {
        while (!signal.aborted) {
          await this.syncNodeStatus(signal);
          await this.clock.sleep(periodMs * (1 + random() * JITTER_FACTOR), signal).catch(() => undefined);
        }
      })(),
      this.fastStatusUpdateOnce(signal),
    );
  }

  async stop(): Promise<void> {
    this.controller?.abort(new Error('node status manager stopping'));
    await Promise.all(this.loops);
    this.loops = [];
    this.controller = undefined;
  }

  /** One status round now, outside the loop's rhythm (upstream: a shutdown's `go syncNodeStatus()`); a no-op before start. */
  syncNow(): Promise<void> {
    const signal = this.controller?.signal;
    return signal ? this.syncNodeStatus(signal) : Promise.resolve();
  }

  get registrationCompleted(): boolean {
    return this.registered;
  }

  /** The node as the server last returned it to this manager. */
  get node(): Node | undefined {
    return this.lastKnownNode;
  }

  /** When the status was last patched (ms since the epoch; 0 before the first). */
  get lastStatusReportMs(): number {
    return this.lastStatusReportTimeMs;
  }

  // ---- the status round ------------------------------------------------------------------------------

  /** One round (upstream's syncNodeStatus): register if needed, then update the status. Never throws. */
  async syncNodeStatus(signal: AbortSignal): Promise<void> {
    await this.withLock(async () => {
      if (this.opts.config.registerNode) await this.registerWithAPIServer(signal);
      if (signal.aborted) return;
      try {
        await this.updateNodeStatus(signal);
      } catch (err) {
        if (!signal.aborted) log.error('Unable to update node status', { err: errorMessage(err) });
      }
    });
  }

  private async withLock(fn: () => Promise<void>): Promise<void> {
    const previous = this.locked;
    let release!: () => void;
    this.locked = new Promise((resolve) => (release = resolve));
    await previous;
    try {
      await fn();
    } finally {
      release();
    }
  }

  /** Tries up to NODE_STATUS_UPDATE_RETRY times; throws when every try failed. */
  async updateNodeStatus(signal: AbortSignal): Promise<void> {
    log.v(5, 'Updating node status');
    for (let i = 0; i < NODE_STATUS_UPDATE_RETRY; i++) {
      try {
        await this.tryUpdateNodeStatus(i, signal);
        return;
      } catch (err) {
        if (signal.aborted) throw err;
        if (i > 0) this.opts.onRepeatedHeartbeatFailure?.();
        log.error('Error updating node status, will retry', { err: errorMessage(err) });
      }
    }
    throw new Error('update node status exceeds retry count');
  }

  private async tryUpdateNodeStatus(tryNumber: number, signal: AbortSignal): Promise<void> {
    // The first try may use the watched copy; a retry (after a conflict, say) reads the server's.
    let original = tryNumber === 0 ? this.opts.nodeLister?.() : undefined;
    if (!original) {
      let got;
      try {
        got = await this.client.get<Node>(nodeRefPath(this.nodeName), this.callOptions(signal));
      } catch (err) {
        throw new Error(`error getting node "${this.nodeName}": ${errorMessage(err)}`, { cause: err });
      }
      original = mustSucceed(got, `error getting node "${this.nodeName}"`);
      this.lastKnownNode = original;
    }
    const { node, changed } = await this.updateNode(original, signal, 0);
    const reportDue =
      this.clock.now() - this.lastStatusReportTimeMs >= this.opts.config.nodeStatusReportFrequencyMs;
    if (!changed && !reportDue) return;
    await this.patchNodeStatus(original, node, signal);
  }

  /** A copy of original with the current status; changed when anything but heartbeats differs. */
  private async updateNode(
    original: Node,
    signal: AbortSignal,
    inputsMaxAgeMs: number,
  ): Promise<{ node: Node; changed: boolean }> {
    const node = structuredClone(original);
    const podCIDRChanged = await this.updatePodCIDR(node);
    const labelsRestored = ensureRequiredLabels(node, this.operatingSystem, this.architecture);
    await this.gatherInputs(signal, inputsMaxAgeMs);
    this.setNodeStatus(node);
    return {
      node,
      changed: podCIDRChanged || labelsRestored || nodeStatusHasChanged(original.status, node.status),
    };
  }

  /**
   * The pod CIDR the control plane gave the node goes to the runtime; a change (or a failed attempt,
   * which may still have changed it, as upstream reasons) makes the round report its status.
   */
  private async updatePodCIDR(node: Node): Promise<boolean> {
    const cidrs = node.spec?.podCIDRs ?? [];
    if (cidrs.length === 0 || !this.opts.updatePodCIDR) return false;
    try {
      return await this.opts.updatePodCIDR(cidrs.join(','));
    } catch (err) {
      log.error('Error updating pod CIDR', { err: errorMessage(err) });
      return true;
    }
  }

  private async patchNodeStatus(original: Node, node: Node, signal: AbortSignal): Promise<Node> {
    const updated = await patchNodeStatus(
      this.client,
      this.nodeName,
      original,
      node,
      this.callOptions(signal),
    );
    this.lastStatusReportTimeMs = this.clock.now();
    this.lastKnownNode = updated;
    return updated;
  }

  /** Runs every setter; one that fails is logged and the others still run. */
  setNodeStatus(node: Node): void {
    for (const [i, setter] of this.setters.entries()) {
      try {
        setter(node);
      } catch (err) {
        log.error('Failed to set some node status fields', {
          node: this.nodeName,
          position: i,
          err: errorMessage(err),
        });
      }
    }
  }

  // ---- registration ----------------------------------------------------------------------------------

  /** Registers the node, retrying with back-off until it works or the manager stops. */
  async registerWithAPIServer(signal: AbortSignal): Promise<void> {
    if (this.registered) return;
    let stepMs = REGISTER_INITIAL_STEP_MS;
    while (!signal.aborted) {
      try {
        await this.clock.sleep(stepMs, signal);
      } catch {
        return;
      }
      stepMs = Math.min(stepMs * 2, REGISTER_MAX_STEP_MS);
      let node: Node;
      try {
        node = await this.initialNode(signal);
      } catch (err) {
        log.error('Unable to construct v1.Node object for kubelet', { err: errorMessage(err) });
        continue;
      }
      log.info('Attempting to register node', { node: this.nodeName });
      if (await this.tryRegisterWithAPIServer(node, signal)) {
        log.info('Successfully registered node', { node: this.nodeName });
        this.registered = true;
        return;
      }
    }
  }

  /** The Node to create: labels, annotations, taints and a full status. */
  async initialNode(signal: AbortSignal): Promise<Node> {
    const node = initialNodeObject({
      nodeName: this.nodeName,
      hostname: this.hostname,
      operatingSystem: this.operatingSystem,
      architecture: this.architecture,
      nodeLabels: this.opts.flags.nodeLabels,
      registerWithTaints: this.opts.config.registerWithTaints,
      registerSchedulable: this.opts.registerSchedulable ?? true,
      enableControllerAttachDetach: this.opts.config.enableControllerAttachDetach,
      providerID: this.opts.config.providerID,
      externalCloudProvider: this.opts.flags.cloudProvider === 'external',
    });
    await this.gatherInputs(signal, 0);
    this.setNodeStatus(node);
    return node;
  }

  /** Creates the node, or adopts the existing one; false when the attempt must be repeated. */
  private async tryRegisterWithAPIServer(node: Node, signal: AbortSignal): Promise<boolean> {
    try {
      const created = await this.client.create<Node>(nodeRefPath(), node, this.callOptions(signal));
      if (created.ok) {
        this.lastKnownNode = created.object;
        return true;
      }
      if (created.reason !== 'AlreadyExists') {
        log.error('Unable to register node with API server', {
          node: this.nodeName,
          err: created.status.message,
        });
        return false;
      }
      const got = await this.client.get<Node>(nodeRefPath(this.nodeName), this.callOptions(signal));
      if (!got.ok) {
        log.error('Unable to register node with API server, error getting existing node', {
          node: this.nodeName,
          err: got.status.message ?? got.reason,
        });
        return false;
      }
      const original = got.object;
      const existing = structuredClone(original);
      this.lastKnownNode = original;
      log.info('Node was previously registered', { node: this.nodeName });
      if (reconcileExistingNode(node, existing)) {
        this.lastKnownNode = await patchNodeStatus(
          this.client,
          this.nodeName,
          original,
          existing,
          this.callOptions(signal),
        );
      }
      return true;
    } catch (err) {
      if (!signal.aborted) {
        log.error('Unable to register node with API server', { node: this.nodeName, err: errorMessage(err) });
      }
      return false;
    }
  }

  // ---- fast status update ----------------------------------------------------------------------------

  /**
   * Until the node is first Ready: every 100 ms, recompute the status of the last known node and patch
   * it as soon as it would be Ready, instead of waiting up to an update interval. Gives up after
   * NODE_READY_GRACE_PERIOD_MS.
   */
  private async fastStatusUpdateOnce(signal: AbortSignal): Promise<void> {
    const startMs = this.clock.now();
    while (!signal.aborted) {
      const timedOut = this.clock.now() - startMs >= NODE_READY_GRACE_PERIOD_MS;
      let done = false;
      await this.withLock(async () => {
        done = await this.fastNodeStatusUpdate(signal, timedOut);
      });
      if (done) return;
      await this.clock.sleep(FAST_STATUS_PERIOD_MS, signal).catch(() => undefined);
    }
  }

  /** One step of the fast loop; true when it is over. */
  private async fastNodeStatusUpdate(signal: AbortSignal, timedOut: boolean): Promise<boolean> {
    if (timedOut) {
      log.error('Node not becoming ready in time after startup');
      return true;
    }
    const original = this.opts.nodeLister?.() ?? this.lastKnownNode;
    if (!original) return false;
    const readyBefore = original.status?.conditions?.find((c) => c.type === 'Ready');
    if (!readyBefore) return false;
    if (readyBefore.status === 'True') return true;
    await this.opts.updateRuntimeUp?.(signal).catch(() => undefined);
    const { node, changed } = await this.updateNode(original, signal, FAST_INPUTS_MAX_AGE_MS);
    if (!changed) return false;
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    if (!ready || ready.status === 'False') return false;
    log.info('Fast updating node status as it just became ready');
    try {
      await this.patchNodeStatus(original, node, signal);
    } catch (err) {
      if (signal.aborted) return true;
      // The copy was probably stale: the regular round reads the server's and tries again.
      log.error('Error updating node status, will retry with syncNodeStatus', { err: errorMessage(err) });
      try {
        await this.updateNodeStatus(signal);
      } catch (retryErr) {
        if (!signal.aborted) log.error('Unable to update node status', { err: errorMessage(retryErr) });
      }
    }
    return true;
  }

  // ---- inputs and setters ----------------------------------------------------------------------------

  private callOptions(signal: AbortSignal): { signal: AbortSignal; timeoutMs: number } {
    return { signal, timeoutMs: this.requestTimeoutMs };
  }

  /** Reads what the setters need: machine facts once, runtime version, images and the node's IP each round. */
  private async gatherInputs(signal: AbortSignal, maxAgeMs: number): Promise<void> {
    if (this.inputs && maxAgeMs > 0 && this.clock.now() - this.inputs.gatheredAtMs < maxAgeMs) return;
    if (this.machine === undefined || this.machine instanceof Error) {
      try {
        this.machine = await readMachineInfo(this.machineHost);
      } catch (err) {
        this.machine = err instanceof Error ? err : new Error(String(err));
      }
    }
    if (this.rootFsBytes === undefined) {
      try {
        this.rootFsBytes = await rootFsCapacityBytes(this.opts.flags.rootDirectory, this.machineHost);
      } catch (err) {
        log.error('Unable to get rootfs data', { err: errorMessage(err) });
      }
    }
    const call = this.callOptions(signal);
    let version: VersionResponse | undefined;
    try {
      version = await this.opts.runtimeService.version(call);
      this.runtimeName = version.runtimeName;
    } catch (err) {
      log.v(2, 'Unable to get the container runtime version', { err: errorMessage(err) });
    }
    let imageList: readonly Image[] | Error;
    try {
      imageList = await this.opts.imageService.listImages(undefined, call);
    } catch (err) {
      imageList = err instanceof Error ? err : new Error(String(err));
    }
    this.inputs = {
      gatheredAtMs: this.clock.now(),
      version,
      images: imageList,
      discoveredIP: await this.discoverIP(signal),
    };
  }

  private async discoverIP(signal: AbortSignal): Promise<{ ip: string } | { error: string }> {
    const [first] = this.nodeIPs;
    const specified = first !== undefined && !isUnspecifiedIP(first);
    if (specified || ipFamily(this.hostname) !== undefined) return { error: 'not needed' };
    const prefer = first !== undefined && ipFamily(first) === 6 ? 6 : 4;
    const deadline = withDeadline(this.clock, this.requestTimeoutMs, signal);
    try {
      return { ip: await discoverNodeIP(this.nodeName, this.networkHost, prefer, deadline.signal) };
    } catch (err) {
      return { error: errorMessage(err) };
    } finally {
      deadline.dispose();
    }
  }

  private recordNodeStatusEvent(type: EventType, reason: string): void {
    log.v(2, 'Recording event message for node', { node: this.nodeName, event: reason });
    this.opts.recorder?.eventFor(
      nodeRef(this.nodeName),
      type,
      reason,
      `Node ${this.nodeName} status is now: ${reason}`,
    );
  }

  private recordEvent(type: EventType, reason: string, message: string): void {
    this.opts.recorder?.eventFor(nodeRef(this.nodeName), type, reason, message);
  }

  /** Upstream's defaultNodeStatusFuncs, in its order: the Ready condition comes after the others. */
  private defaultNodeStatusFuncs(): Setter[] {
    const c = this.opts.config;
    const now = () => this.clock.now();
    const statusEvent = (type: EventType, reason: string) => this.recordNodeStatusEvent(type, reason);
    const pressure = this.opts.pressure;
    const machine = () => this.machine ?? new Error('machine info not read yet');
    return [
      nodeAddress({
        nodeIPs: this.nodeIPs,
        hostname: this.hostname,
        validateNodeIP: (ip) => validateNodeIP(ip, this.networkHost),
        discoveredIP: () => this.inputs?.discoveredIP ?? { error: 'not discovered yet' },
      }),
      machineInfo({
        nodeName: this.nodeName,
        maxPods: c.maxPods,
        podsPerCore: c.podsPerCore,
        machineInfo: machine,
        ephemeralStorageCapacityBytes: () => (c.localStorageCapacityIsolation ? this.rootFsBytes : undefined),
        allocatableReservation: (capacity) =>
          nodeAllocatableReservation(capacity, {
            systemReserved: c.systemReserved,
            kubeReserved: c.kubeReserved,
            evictionHard: c.evictionHard,
          }),
        recordEvent: (type, reason, message) => this.recordEvent(type, reason, message),
        devicePluginCapacity: this.opts.devicePluginCapacity,
      }),
      (node) => {
        const m = machine();
        versionInfo({
          kernelVersion: m instanceof Error ? undefined : m.kernelVersion,
          osImage: m instanceof Error ? undefined : m.osImage,
          runtimeType: this.runtimeName ?? 'Unknown',
          runtimeVersion: () => this.inputs?.version?.runtimeVersion,
          kubeletVersion: this.opts.kubeletVersion,
        })(node);
      },
      daemonEndpoints(c.port),
      images(c.nodeStatusMaxImages, () => this.inputs?.images ?? new Error('image list not read yet')),
      goRuntime(this.operatingSystem, this.architecture),
      memoryPressureCondition(now, () => pressure?.memory() ?? false, statusEvent),
      diskPressureCondition(now, () => pressure?.disk() ?? false, statusEvent),
      pidPressureCondition(now, () => pressure?.pid() ?? false, statusEvent),
      readyCondition({
        nowMs: now,
        runtimeErrors: () => this.opts.runtimeState.runtimeErrors(),
        networkErrors: () => this.opts.runtimeState.networkErrors(),
        ...(this.opts.otherErrors ? { otherErrors: this.opts.otherErrors } : {}),
        localStorageCapacityIsolation: c.localStorageCapacityIsolation,
        recordEvent: statusEvent,
      }),
      schedulableEvents(statusEvent),
    ];
  }
}
