/**
 * The storage.k8s.io objects the CSI volume plugin reads (upstream reads them through listers):
 * the CSIDriver, which says which volume lifecycle modes a driver takes, whether it wants the pod's
 * identity on mount, whether it needs attaching and how fsGroup applies; and the VolumeAttachment
 * that says a PersistentVolume is attached to this node.
 */
import type { RestClient } from '../../k8s/rest-client.js';

const CALL_TIMEOUT_MS = 10_000;

export type VolumeLifecycleMode = 'Persistent' | 'Ephemeral';
export type FSGroupPolicy = 'None' | 'File' | 'ReadWriteOnceWithFSType';

export interface CSIDriverObject {
  metadata: { name?: string };
  spec: {
    attachRequired?: boolean;
    podInfoOnMount?: boolean;
    volumeLifecycleModes?: VolumeLifecycleMode[];
    fsGroupPolicy?: FSGroupPolicy;
    requiresRepublish?: boolean;
  };
}

export interface VolumeAttachmentObject {
  metadata: { name?: string };
  spec?: { attacher?: string; nodeName?: string };
  status?: {
    attached?: boolean;
    attachmentMetadata?: Record<string, string>;
    attachError?: { message?: string };
  };
}

export interface CsiObjectSource {
  /** undefined when the driver has no CSIDriver object. */
  getCSIDriver(name: string, signal?: AbortSignal): Promise<CSIDriverObject | undefined>;
  getVolumeAttachment(name: string, signal?: AbortSignal): Promise<VolumeAttachmentObject | undefined>;
}

export class ApiCsiObjectSource implements CsiObjectSource {
  constructor(private readonly client: RestClient) {}

  getCSIDriver(name: string, signal?: AbortSignal): Promise<CSIDriverObject | undefined> {
    return this.get<CSIDriverObject>('csidrivers', name, signal);
  }

  getVolumeAttachment(name: string, signal?: AbortSignal): Promise<VolumeAttachmentObject | undefined> {
    return this.get<VolumeAttachmentObject>('volumeattachments', name, signal);
  }

  private async get<T extends { metadata: object }>(
    resource: string,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<T | undefined> {
    const res = await this.client.get<T>(
      { apiVersion: 'storage.k8s.io/v1', resource, name },
      { signal, timeoutMs: CALL_TIMEOUT_MS },
    );
    if (res.ok) return res.object;
    if (res.reason === 'NotFound') return undefined;
    throw new Error(res.status.message ?? res.reason);
  }
}
