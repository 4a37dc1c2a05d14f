/**
 * The kubelet's client of a CSI driver's Node service (upstream: pkg/volume/csi/csi_client.go), over
 * the generated code (./generated). Each operation dials the driver's socket and closes it after, as
 * upstream does; every call carries a deadline. Errors read as grpc-go prints them
 * (`rpc error: code = Internal desc = …`), so events and logs match upstream's.
 */
import * as grpc from '@grpc/grpc-js';
import { KubeletError } from '../../lib/errors.js';
import { goRpcErrorText } from '../../lib/grpc-status-text.js';
import {
  NodeClient,
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
    readonly grpcCode: grpc.status,
    details: string,
  ) {
    super('CSI_RPC_FAILED', goRpcErrorText(grpcCode, details));
    this.name = 'CsiRpcError';
  }
}

/**
 * upstream: isFinalError. A call that timed out or found the driver busy or away may still be
 * under way in the driver: what it may have made must not be removed.
 */
export function isFinalError(err: unknown): boolean {
  if (!(err instanceof CsiRpcError)) return true;
  return ![
    grpc.status.CANCELLED,
    grpc.status.DEADLINE_EXCEEDED,
    grpc.status.UNAVAILABLE,
    grpc.status.RESOURCE_EXHAUSTED,
    grpc.status.ABORTED,
  ].includes(err.grpcCode);
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

type Unary<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (err: grpc.ServiceError | null, res: Res) => void,
) => grpc.ClientUnaryCall;

export class CsiDriverClient {
  constructor(
    readonly driverName: string,
    private readonly endpoint: string,
  ) {}

  /** One call on a fresh connection, closed after. */
  private async call<Req, Res>(
    pick: (c: NodeClient) => Unary<Req, Res>,
    request: Req,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Res> {
    const client = new NodeClient(grpcTarget(this.endpoint), grpc.credentials.createInsecure());
    try {
      return await new Promise<Res>((resolve, reject) => {
        const call = pick(client).call(
          client,
          request,
          new grpc.Metadata(),
          { deadline: new Date(Date.now() + timeoutMs) },
          (err, res) => (err ? reject(new CsiRpcError(err.code, err.details)) : resolve(res)),
        );
        signal?.addEventListener('abort', () => call.cancel(), { once: true });
      });
    } finally {
      client.close();
    }
  }

  async nodeGetInfo(timeoutMs: number, signal?: AbortSignal): Promise<NodeInfo> {
    const res = await this.call((c) => c.nodeGetInfo, NodeGetInfoRequest.create(), timeoutMs, signal);
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
      (c) => c.nodeGetCapabilities,
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
      (c) => c.nodePublishVolume,
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
      (c) => c.nodeUnpublishVolume,
      NodeUnpublishVolumeRequest.create({ volumeId, targetPath }),
      timeoutMs,
    );
  }

  async nodeStageVolume(args: NodeVolumeArgs, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (args.volumeId === '') throw new Error('missing volume id');
    if (!args.stagingTargetPath) throw new Error('missing staging target path');
    await this.call(
      (c) => c.nodeStageVolume,
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
      (c) => c.nodeUnstageVolume,
      NodeUnstageVolumeRequest.create({ volumeId, stagingTargetPath }),
      timeoutMs,
    );
  }
}
