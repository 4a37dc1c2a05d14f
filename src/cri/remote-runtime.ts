import { KubeletError } from '../lib/errors.js';
import {
  containerFilterToCri,
  containerFromCri,
  containerStatsFromCri,
  containerStatusFromCri,
  execSyncResponseFromCri,
  podSandboxFilterToCri,
  podSandboxFromCri,
  podSandboxStatusFromCri,
  runtimeStatusFromCri,
  versionFromCri,
} from './convert.js';
import {
  AttachRequest as CriAttachRequest,
  Container as CriContainer,
  ContainerStatsRequest,
  ContainerStatusRequest,
  CreateContainerRequest,
  ExecRequest as CriExecRequest,
  ExecSyncRequest,
  ListContainerStatsRequest,
  ListContainersRequest,
  ListPodSandboxRequest,
  PodSandbox as CriPodSandbox,
  PodSandboxStatusRequest,
  PortForwardRequest as CriPortForwardRequest,
  RemoveContainerRequest,
  RemovePodSandboxRequest,
  ReopenContainerLogRequest,
  RunPodSandboxRequest,
  RuntimeServiceDefinition,
  StartContainerRequest,
  StatusRequest,
  StopContainerRequest,
  StopPodSandboxRequest,
  UpdateContainerResourcesRequest,
  UpdateRuntimeConfigRequest,
  VersionRequest,
} from './generated/runtime/v1/api.js';
import { grpcMethods } from '../lib/grpc-definitions.js';
import { GrpcConnection, type CriMethod, type GrpcConnectionOptions } from './grpc-connection.js';
import { CreatedLogPaths } from './created-log-paths.js';
import { ListItemCache } from './list-item-cache.js';
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

/** A list call whose answer comes back as its bytes, for ListItemCache to decode item by item. */
function rawAnswer<Request, Response>(method: CriMethod<Request, Response>): CriMethod<Request, Buffer> {
  return { ...method, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b };
}

const RS = grpcMethods(RuntimeServiceDefinition);
const LIST_CONTAINERS = rawAnswer(RS.listContainers);
const LIST_POD_SANDBOX = rawAnswer(RS.listPodSandbox);

/** True when a filter filters nothing: such a listing holds every item, so the cache may forget the rest. */
function filtersNothing(filter: PodSandboxFilter | ContainerFilter | undefined): boolean {
  if (!filter) return true;
  const f = filter as ContainerFilter;
  return !f.id && f.state === undefined && !f.podSandboxId && Object.keys(f.labelSelector ?? {}).length === 0;
}

function invalidResponse(method: string, problem: string): KubeletError {
  return new KubeletError('CRI_ERROR', `${method}: the runtime's response is invalid: ${problem}`);
}

/** A list answer that does not decode fails as CRI_ERROR, as any other call's undecodable answer does. */
function decodeListAnswer<T>(method: string, decode: () => T): T {
  try {
    return decode();
  } catch (err) {
    throw invalidResponse(method, err instanceof Error ? err.message : String(err));
  }
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
  // Listed items are shared between calls and callers, frozen (see ListItemCache). The map fields:
  // Container's labels (8) and annotations (9), PodSandbox's labels (5) and annotations (6).
  private readonly containerItems = new ListItemCache(
    (b) => containerFromCri(CriContainer.decode(b)),
    new Set([8, 9]),
  );
  private readonly sandboxItems = new ListItemCache(
    (b) => podSandboxFromCri(CriPodSandbox.decode(b)),
    new Set([5, 6]),
  );
  private readonly logPaths = new CreatedLogPaths();

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

  private call<Request, Response>(
    method: CriMethod<Request, Response>,
    request: Request,
    opts: CallOptions | undefined,
    baseTimeoutMs = this.runtimeRequestTimeoutMs,
    extraMs = 0,
  ): Promise<Response> {
    const timeoutMs = (opts?.timeoutMs ?? baseTimeoutMs) + extraMs;
    return this.connection.call(method, request, { timeoutMs, signal: opts?.signal });
  }

  async version(opts?: CallOptions): Promise<VersionResponse> {
    const req = VersionRequest.fromPartial({ version: KUBE_RUNTIME_API_VERSION });
    return versionFromCri(await this.call(RS.version, req, opts));
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler: string, opts?: CallOptions): Promise<string> {
    const req = RunPodSandboxRequest.fromPartial({ config, runtimeHandler });
    const res = await this.call(RS.runPodSandbox, req, opts, 2 * this.runtimeRequestTimeoutMs);
    if (!res.podSandboxId) {
      const { namespace, name } = config.metadata;
      throw invalidResponse('RunPodSandbox', `podSandboxId is not set for sandbox ${namespace}/${name}`);
    }
    return res.podSandboxId;
  }

  async stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.call(RS.stopPodSandbox, StopPodSandboxRequest.fromPartial({ podSandboxId }), opts);
  }

  async removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.call(RS.removePodSandbox, RemovePodSandboxRequest.fromPartial({ podSandboxId }), opts);
  }

  async podSandboxStatus(
    podSandboxId: string,
    verbose = false,
    opts?: CallOptions,
  ): Promise<PodSandboxStatusResponse> {
    const req = PodSandboxStatusRequest.fromPartial({ podSandboxId, verbose });
    const res = await this.call(RS.podSandboxStatus, req, opts);
    if (!res.status) throw invalidResponse('PodSandboxStatus', `no status for sandbox ${podSandboxId}`);
    const status = podSandboxStatusFromCri(res.status);
    verifySandboxStatus(status);
    return { status, info: { ...res.info } };
  }

  async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    const req = ListPodSandboxRequest.fromPartial({ filter: podSandboxFilterToCri(filter) });
    const answer = await this.call(LIST_POD_SANDBOX, req, opts);
    return decodeListAnswer('ListPodSandbox', () =>
      this.sandboxItems.decodeList(answer, filtersNothing(filter)),
    );
  }

  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string> {
    const req = CreateContainerRequest.fromPartial({ podSandboxId, config, sandboxConfig });
    const res = await this.call(RS.createContainer, req, opts);
    if (!res.containerId)
      throw invalidResponse(
        'CreateContainer',
        `containerId is not set for container ${config.metadata.name}`,
      );
    this.logPaths.created(res.containerId, sandboxConfig.logDirectory, config.logPath);
    return res.containerId;
  }

  async startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.call(RS.startContainer, StartContainerRequest.fromPartial({ containerId }), opts);
  }

  async stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    const graceMs = Math.max(timeoutSeconds, 0) * 1000;
    const req = StopContainerRequest.fromPartial({ containerId, timeout: Math.trunc(timeoutSeconds) });
    await this.call(RS.stopContainer, req, opts, undefined, graceMs);
  }

  async removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.call(RS.removeContainer, RemoveContainerRequest.fromPartial({ containerId }), opts);
    this.logPaths.removed(containerId);
  }

  createdContainerLogPath(containerId: string): string | undefined {
    return this.logPaths.get(containerId);
  }

  async listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    const req = ListContainersRequest.fromPartial({ filter: containerFilterToCri(filter) });
    const answer = await this.call(LIST_CONTAINERS, req, opts);
    return decodeListAnswer('ListContainers', () =>
      this.containerItems.decodeList(answer, filtersNothing(filter)),
    );
  }

  async containerStatus(
    containerId: string,
    verbose = false,
    opts?: CallOptions,
  ): Promise<ContainerStatusResponse> {
    const req = ContainerStatusRequest.fromPartial({ containerId, verbose });
    const res = await this.call(RS.containerStatus, req, opts);
    if (!res.status) throw invalidResponse('ContainerStatus', `no status for container ${containerId}`);
    const status = containerStatusFromCri(res.status);
    verifyContainerStatus(status);
    return { status, info: { ...res.info } };
  }

  async updateContainerResources(
    containerId: string,
    linux: LinuxContainerResources,
    opts?: CallOptions,
  ): Promise<void> {
    const req = UpdateContainerResourcesRequest.fromPartial({ containerId, linux });
    await this.call(RS.updateContainerResources, req, opts);
  }

  async reopenContainerLog(containerId: string, opts?: CallOptions): Promise<void> {
    await this.call(RS.reopenContainerLog, ReopenContainerLogRequest.fromPartial({ containerId }), opts);
  }

  async execSync(
    containerId: string,
    cmd: string[],
    timeoutSeconds: number,
    opts?: CallOptions,
  ): Promise<ExecSyncResponse> {
    // A timeout of 0 asks the runtime to run the command for ever; the call still ends at the plain deadline.
    const commandMs = Math.max(timeoutSeconds, 0) * 1000;
    const req = ExecSyncRequest.fromPartial({ containerId, cmd, timeout: Math.trunc(timeoutSeconds) });
    return execSyncResponseFromCri(await this.call(RS.execSync, req, opts, undefined, commandMs));
  }

  private checkedUrl(method: string, url: string): string {
    if (!url) throw invalidResponse(method, 'url is not set');
    return url;
  }

  async exec(req: ExecRequest, opts?: CallOptions): Promise<string> {
    const res = await this.call(RS.exec, CriExecRequest.fromPartial(req), opts);
    return this.checkedUrl('Exec', res.url);
  }

  async attach(req: AttachRequest, opts?: CallOptions): Promise<string> {
    const res = await this.call(RS.attach, CriAttachRequest.fromPartial(req), opts);
    return this.checkedUrl('Attach', res.url);
  }

  async portForward(req: PortForwardRequest, opts?: CallOptions): Promise<string> {
    const res = await this.call(RS.portForward, CriPortForwardRequest.fromPartial(req), opts);
    return this.checkedUrl('PortForward', res.url);
  }

  async containerStats(containerId: string, opts?: CallOptions): Promise<ContainerStats | undefined> {
    const res = await this.call(RS.containerStats, ContainerStatsRequest.fromPartial({ containerId }), opts);
    return res.stats ? containerStatsFromCri(res.stats) : undefined;
  }

  async listContainerStats(
    filter?: { id?: string; podSandboxId?: string; labelSelector?: Record<string, string> },
    opts?: CallOptions,
  ): Promise<ContainerStats[]> {
    const req = ListContainerStatsRequest.fromPartial({ filter });
    const res = await this.call(RS.listContainerStats, req, opts);
    return res.stats.map(containerStatsFromCri);
  }

  async status(
    verbose = false,
    opts?: CallOptions,
  ): Promise<{ status: RuntimeStatus; info: Record<string, string> }> {
    const res = await this.call(RS.status, StatusRequest.fromPartial({ verbose }), opts);
    const status = runtimeStatusFromCri(res.status);
    // Upstream refuses a status without both required conditions (RuntimeReady and NetworkReady).
    if (status.conditions.length < 2)
      throw invalidResponse('Status', 'RuntimeReady or NetworkReady condition is not set');
    return { status, info: { ...res.info } };
  }

  async updateRuntimeConfig(podCIDR: string, opts?: CallOptions): Promise<void> {
    const req = UpdateRuntimeConfigRequest.fromPartial({
      runtimeConfig: { networkConfig: { podCidr: podCIDR } },
    });
    await this.call(RS.updateRuntimeConfig, req, opts);
  }
}
