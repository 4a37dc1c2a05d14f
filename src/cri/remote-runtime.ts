import { KubeletError } from '../lib/errors.js';
import {
  containerFilterToWire,
  containerFromWire,
  containerStatsFromWire,
  containerStatusFromWire,
  execSyncResponseFromWire,
  podSandboxFilterToWire,
  podSandboxFromWire,
  podSandboxStatusFromWire,
  runtimeStatusFromWire,
  versionFromWire,
  type WireMessage,
} from './convert.js';
import { GrpcConnection, type GrpcConnectionOptions } from './grpc-connection.js';
import type {
  AttachRequest,
  CallOptions,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStats,
  ContainerStatus,
  ContainerStatusResponse,
  ExecRequest,
  ExecSyncResponse,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStatus,
  PodSandboxStatusResponse,
  PortForwardRequest,
  RuntimeService,
  RuntimeStatus,
  VersionResponse,
} from './types.js';

/** The CRI version the kubelet announces in Version (upstream's kubeRuntimeAPIVersion). */
export const KUBE_RUNTIME_API_VERSION = '0.1.0';

/** Upstream's --runtime-request-timeout default. */
export const DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS = 2 * 60_000;

export interface RemoteRuntimeOptions extends GrpcConnectionOptions {
  /** Deadline of every call that does not give its own timeoutMs (default 2 min). */
  runtimeRequestTimeoutMs?: number;
}

function dataOf(m: WireMessage, key: string): WireMessage | undefined {
  const v = m[key];
  return v !== null && typeof v === 'object' ? (v as WireMessage) : undefined;
}

function stringOf(m: WireMessage, key: string): string {
  const v = m[key];
  return typeof v === 'string' ? v : '';
}

function infoOf(m: WireMessage): Record<string, string> {
  const out: Record<string, string> = {};
  const info = dataOf(m, 'info');
  if (info) for (const [k, v] of Object.entries(info)) out[k] = String(v);
  return out;
}

function invalidResponse(method: string, problem: string): KubeletError {
  return new KubeletError('CRI_ERROR', `${method}: the runtime's response is invalid: ${problem}`);
}

// The same sanity checks upstream's remote client makes, so a broken runtime fails loudly here
// rather than as a pod with an empty name or a zero creation time further up.
function verifySandboxStatus(status: PodSandboxStatus): void {
  if (!status.id) throw invalidResponse('PodSandboxStatus', 'status.id is not set');
  const { name, namespace, uid } = status.metadata;
  if (!name || !namespace || !uid) {
    throw invalidResponse(
      'PodSandboxStatus',
      `metadata.name, metadata.namespace or metadata.uid is not set for sandbox ${status.id}`,
    );
  }
  if (status.createdAt === 0)
    throw invalidResponse('PodSandboxStatus', `createdAt is not set for sandbox ${status.id}`);
}

function verifyContainerStatus(status: ContainerStatus): void {
  if (!status.id) throw invalidResponse('ContainerStatus', 'status.id is not set');
  if (!status.metadata.name)
    throw invalidResponse('ContainerStatus', `metadata.name is not set for container ${status.id}`);
  if (status.createdAt === 0)
    throw invalidResponse('ContainerStatus', `createdAt is not set for container ${status.id}`);
  if (!status.image.image)
    throw invalidResponse('ContainerStatus', `image is not set for container ${status.id}`);
}

/**
 * runtime.v1.RuntimeService over gRPC (upstream's remoteRuntimeService). Each call's deadline is
 * opts.timeoutMs, else runtimeRequestTimeoutMs; RunPodSandbox gets twice that (as upstream: sandbox
 * creation includes networking), and StopContainer and ExecSync add their own grace period or
 * command timeout to it. Errors are KubeletErrors (see to-cri-error.ts); an aborted signal rejects
 * with the signal's reason.
 */
export class RemoteRuntimeService implements RuntimeService {
  readonly runtimeRequestTimeoutMs: number;
  private readonly connection: GrpcConnection;
  private readonly ownsConnection: boolean;

  /** Dials endpoint (`unix:///path` or `/path`), or shares an existing connection, which it then does not close. */
  constructor(endpointOrConnection: string | GrpcConnection, options: RemoteRuntimeOptions = {}) {
    this.runtimeRequestTimeoutMs = options.runtimeRequestTimeoutMs ?? DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS;
    this.ownsConnection = typeof endpointOrConnection === 'string';
    this.connection =
      typeof endpointOrConnection === 'string'
        ? new GrpcConnection(endpointOrConnection, options)
        : endpointOrConnection;
  }

  get endpoint(): string {
    return this.connection.endpoint;
  }

  close(): void {
    if (this.ownsConnection) this.connection.close();
  }

  private call(
    method: string,
    request: object,
    opts: CallOptions | undefined,
    baseTimeoutMs = this.runtimeRequestTimeoutMs,
    extraMs = 0,
  ) {
    const timeoutMs = (opts?.timeoutMs ?? baseTimeoutMs) + extraMs;
    return this.connection.call(method, request, { timeoutMs, signal: opts?.signal });
  }

  async version(opts?: CallOptions): Promise<VersionResponse> {
    return versionFromWire(await this.call('Version', { version: KUBE_RUNTIME_API_VERSION }, opts));
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler: string, opts?: CallOptions): Promise<string> {
    const res = await this.call(
      'RunPodSandbox',
      { config, runtimeHandler },
      opts,
      2 * this.runtimeRequestTimeoutMs,
    );
    const id = stringOf(res, 'podSandboxId');
    if (!id) {
      const { namespace, name } = config.metadata;
      throw invalidResponse('RunPodSandbox', `podSandboxId is not set for sandbox ${namespace}/${name}`);
    }
    return id;
  }

  async stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.call('StopPodSandbox', { podSandboxId }, opts);
  }

  async removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.call('RemovePodSandbox', { podSandboxId }, opts);
  }

  async podSandboxStatus(
    podSandboxId: string,
    verbose = false,
    opts?: CallOptions,
  ): Promise<PodSandboxStatusResponse> {
    const res = await this.call('PodSandboxStatus', { podSandboxId, verbose }, opts);
    const wireStatus = dataOf(res, 'status');
    if (!wireStatus) throw invalidResponse('PodSandboxStatus', `no status for sandbox ${podSandboxId}`);
    const status = podSandboxStatusFromWire(wireStatus);
    verifySandboxStatus(status);
    return { status, info: infoOf(res) };
  }

  async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    const res = await this.call('ListPodSandbox', { filter: podSandboxFilterToWire(filter) }, opts);
    const items = res.items;
    return Array.isArray(items) ? items.map((m: WireMessage) => podSandboxFromWire(m)) : [];
  }

  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string> {
    const res = await this.call('CreateContainer', { podSandboxId, config, sandboxConfig }, opts);
    const id = stringOf(res, 'containerId');
    if (!id)
      throw invalidResponse(
        'CreateContainer',
        `containerId is not set for container ${config.metadata.name}`,
      );
    return id;
  }

  async startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.call('StartContainer', { containerId }, opts);
  }

  async stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    const graceMs = Math.max(timeoutSeconds, 0) * 1000;
    await this.call('StopContainer', { containerId, timeout: timeoutSeconds }, opts, undefined, graceMs);
  }

  async removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.call('RemoveContainer', { containerId }, opts);
  }

  async listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    const res = await this.call('ListContainers', { filter: containerFilterToWire(filter) }, opts);
    const containers = res.containers;
    return Array.isArray(containers) ? containers.map((m: WireMessage) => containerFromWire(m)) : [];
  }

  async containerStatus(
    containerId: string,
    verbose = false,
    opts?: CallOptions,
  ): Promise<ContainerStatusResponse> {
    const res = await this.call('ContainerStatus', { containerId, verbose }, opts);
    const wireStatus = dataOf(res, 'status');
    if (!wireStatus) throw invalidResponse('ContainerStatus', `no status for container ${containerId}`);
    const status = containerStatusFromWire(wireStatus);
    verifyContainerStatus(status);
    return { status, info: infoOf(res) };
  }

  async updateContainerResources(
    containerId: string,
    linux: LinuxContainerResources,
    opts?: CallOptions,
  ): Promise<void> {
    await this.call('UpdateContainerResources', { containerId, linux }, opts);
  }

  async reopenContainerLog(containerId: string, opts?: CallOptions): Promise<void> {
    await this.call('ReopenContainerLog', { containerId }, opts);
  }

  async execSync(
    containerId: string,
    cmd: string[],
    timeoutSeconds: number,
    opts?: CallOptions,
  ): Promise<ExecSyncResponse> {
    // A timeout of 0 asks the runtime to run the command for ever; the call still ends at the plain deadline.
    const commandMs = Math.max(timeoutSeconds, 0) * 1000;
    const res = await this.call(
      'ExecSync',
      { containerId, cmd, timeout: timeoutSeconds },
      opts,
      undefined,
      commandMs,
    );
    return execSyncResponseFromWire(res);
  }

  private async streamingUrl(
    method: string,
    request: object,
    opts: CallOptions | undefined,
  ): Promise<string> {
    const url = stringOf(await this.call(method, request, opts), 'url');
    if (!url) throw invalidResponse(method, 'url is not set');
    return url;
  }

  exec(req: ExecRequest, opts?: CallOptions): Promise<string> {
    return this.streamingUrl('Exec', req, opts);
  }

  attach(req: AttachRequest, opts?: CallOptions): Promise<string> {
    return this.streamingUrl('Attach', req, opts);
  }

  portForward(req: PortForwardRequest, opts?: CallOptions): Promise<string> {
    return this.streamingUrl('PortForward', req, opts);
  }

  async containerStats(containerId: string, opts?: CallOptions): Promise<ContainerStats | undefined> {
    const stats = dataOf(await this.call('ContainerStats', { containerId }, opts), 'stats');
    return stats ? containerStatsFromWire(stats) : undefined;
  }

  async listContainerStats(
    filter?: { id?: string; podSandboxId?: string; labelSelector?: Record<string, string> },
    opts?: CallOptions,
  ): Promise<ContainerStats[]> {
    const res = await this.call('ListContainerStats', { filter }, opts);
    const stats = res.stats;
    return Array.isArray(stats) ? stats.map((m: WireMessage) => containerStatsFromWire(m)) : [];
  }

  async status(
    verbose = false,
    opts?: CallOptions,
  ): Promise<{ status: RuntimeStatus; info: Record<string, string> }> {
    const res = await this.call('Status', { verbose }, opts);
    const status = runtimeStatusFromWire(dataOf(res, 'status'));
    // Upstream refuses a status without both required conditions (RuntimeReady and NetworkReady).
    if (status.conditions.length < 2)
      throw invalidResponse('Status', 'RuntimeReady or NetworkReady condition is not set');
    return { status, info: infoOf(res) };
  }
}
