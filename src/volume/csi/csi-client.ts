/**
 * The kubelet's client of a CSI driver's Node service (upstream: pkg/volume/csi/csi_client.go), over
 * the generated code (./generated). Each operation dials the driver's socket and closes it after, as
 * upstream does; every call carries a deadline. Errors read as grpc-go prints them
 * (`rpc error: code = Internal desc = …`), so events and logs match upstream's.
 */
import type * as grpc from '@grpc/grpc-js';
import { KubeletError } from '../../lib/errors.js';
import { grpcJsUnary, grpcMethods, loadGrpcJs, type GrpcMethod } from '../../lib/grpc-definitions.js';
import { GrpcStatus } from '../../lib/grpc-status.js';
import { goRpcErrorText } from '../../lib/grpc-status-text.js';
import {
  NodeDefinition,
  NodeGetCapabilitiesRequest,
  NodeGetInfoRequest,
  NodePublishVolumeRequest,
  NodeServiceCapability_RPC_Type,
  NodeStageVolumeRequest,
  NodeUnpublishVolumeRequest,
  NodeUnstageVolumeRequest,
  VolumeCapability_AccessMode_Mode,
  type VolumeCapability,
} from './generated/csi/v1/csi.js';

export { VolumeCapability_AccessMode_Mode as CsiAccessMode };

/** An error the driver answered (or the transport gave), with its gRPC code. */
export class CsiRpcError extends KubeletError {
  constructor(
    readonly grpcCode: number,
    details: string,
  ) {
    super('CSI_RPC_FAILED', goRpcErrorText(grpcCode, details));
    this.name = 'CsiRpcError';
  }
}

const NOT_FINAL_CODES: ReadonlySet<number> = new Set([
  GrpcStatus.CANCELLED,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.RESOURCE_EXHAUSTED,
  GrpcStatus.ABORTED,
]);

/**
 * upstream: isFinalError. A call that timed out or found the driver busy or away may still be
 * under way in the driver: what it may have made must not be removed.
 */
export function isFinalError(err: unknown): boolean {
  if (!(err instanceof CsiRpcError)) return true;
  return !NOT_FINAL_CODES.has(err.grpcCode);
}

export interface NodeInfo {
  nodeId: string;
  maxVolumesPerNode: number;
  accessibleTopology: Record<string, string> | undefined;
}

export interface NodeVolumeArgs {
  volumeId: string;
  publishContext?: Record<string, string>;
  stagingTargetPath?: string;
  targetPath?: string;
  accessMode: VolumeCapability_AccessMode_Mode;
  readOnly?: boolean;
  secrets?: Record<string, string>;
  volumeContext?: Record<string, string>;
  fsType: string;
  mountOptions?: string[];
  /** The pod's fsGroup, for drivers with VOLUME_MOUNT_GROUP. */
  volumeMountGroup?: string;
}

/** upstream: the socket is given as a path; a `unix://` prefix is taken off too. */
function grpcTarget(endpoint: string): string {
  const p = endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint;
  return `unix:${p}`;
}

function capability(args: NodeVolumeArgs): VolumeCapability {
  return {
    mount: {
      fsType: args.fsType,
      mountFlags: args.mountOptions ?? [],
      volumeMountGroup: args.volumeMountGroup ?? '',
    },
    accessMode: { mode: args.accessMode },
  };
}

const NODE = grpcMethods(NodeDefinition);

export class CsiDriverClient {
  constructor(
    readonly driverName: string,
    private readonly endpoint: string,
  ) {}

  /** One call on a fresh connection, closed after. */
  private async call<Req, Res>(
    method: GrpcMethod<Req, Res>,
    request: Req,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Res> {
    const grpcJs = await loadGrpcJs();
    const client = new grpcJs.Client(grpcTarget(this.endpoint), grpcJs.credentials.createInsecure());
    try {
      const options = { deadline: new Date(Date.now() + timeoutMs) };
      return await grpcJsUnary(client, method, request, new grpcJs.Metadata(), options, signal).catch(
        (err: grpc.ServiceError) => {
          throw new CsiRpcError(err.code, err.details);
        },
      );
    } finally {
      client.close();
    }
  }

  async nodeGetInfo(timeoutMs: number, signal?: AbortSignal): Promise<NodeInfo> {
    const res = await this.call(NODE.nodeGetInfo, NodeGetInfoRequest.create(), timeoutMs, signal);
    return {
      nodeId: res.nodeId,
      maxVolumesPerNode: res.maxVolumesPerNode,
      accessibleTopology: res.accessibleTopology?.segments,
    };
  }

  async nodeGetCapabilities(
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Set<NodeServiceCapability_RPC_Type>> {
    const res = await this.call(
      NODE.nodeGetCapabilities,
      NodeGetCapabilitiesRequest.create(),
      timeoutMs,
      signal,
    );
    const out = new Set<NodeServiceCapability_RPC_Type>();
    for (const cap of res.capabilities) if (cap.rpc) out.add(cap.rpc.type);
    return out;
  }

  async nodeSupportsStageUnstage(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    return (await this.nodeGetCapabilities(timeoutMs, signal)).has(
      NodeServiceCapability_RPC_Type.STAGE_UNSTAGE_VOLUME,
    );
  }

  async nodePublishVolume(args: NodeVolumeArgs, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (args.volumeId === '') throw new Error('missing volume id');
    if (!args.targetPath) throw new Error('missing target path');
    await this.call(
      NODE.nodePublishVolume,
      NodePublishVolumeRequest.create({
        volumeId: args.volumeId,
        publishContext: args.publishContext ?? {},
        stagingTargetPath: args.stagingTargetPath ?? '',
        targetPath: args.targetPath,
        volumeCapability: capability(args),
        readonly: args.readOnly === true,
        secrets: args.secrets ?? {},
        volumeContext: args.volumeContext ?? {},
      }),
      timeoutMs,
      signal,
    );
  }

  async nodeUnpublishVolume(volumeId: string, targetPath: string, timeoutMs: number): Promise<void> {
    if (volumeId === '') throw new Error('missing volume id');
    if (targetPath === '') throw new Error('missing target path');
    await this.call(
      NODE.nodeUnpublishVolume,
      NodeUnpublishVolumeRequest.create({ volumeId, targetPath }),
      timeoutMs,
    );
  }

  async nodeStageVolume(args: NodeVolumeArgs, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (args.volumeId === '') throw new Error('missing volume id');
    if (!args.stagingTargetPath) throw new Error('missing staging target path');
    await this.call(
      NODE.nodeStageVolume,
      NodeStageVolumeRequest.create({
        volumeId: args.volumeId,
        publishContext: args.publishContext ?? {},
        stagingTargetPath: args.stagingTargetPath,
        volumeCapability: capability(args),
        secrets: args.secrets ?? {},
        volumeContext: args.volumeContext ?? {},
      }),
      timeoutMs,
      signal,
    );
  }

  async nodeUnstageVolume(volumeId: string, stagingTargetPath: string, timeoutMs: number): Promise<void> {
    if (volumeId === '') throw new Error('missing volume id');
    if (stagingTargetPath === '') throw new Error('missing staging target path');
    await this.call(
      NODE.nodeUnstageVolume,
      NodeUnstageVolumeRequest.create({ volumeId, stagingTargetPath }),
      timeoutMs,
    );
  }
}
