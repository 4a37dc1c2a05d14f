/**
 * The core/v1 shapes the volume plugins read, with the API's field names: the volume sources of a
 * pod (core-v1's Volume keeps them open), and the objects behind them (ConfigMap, Secret,
 * PersistentVolumeClaim, PersistentVolume, TokenRequest).
 */
import type {
  ObjectFieldSelector,
  NodeSelectorTerm,
  ObjectMeta,
  Quantity,
  ResourceFieldSelector,
  Volume,
} from '../api/core-v1.js';

export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

export interface EmptyDirVolumeSource {
  medium?: '' | 'Memory' | 'HugePages' | `HugePages-${string}`;
  sizeLimit?: Quantity;
}

export type HostPathType =
  '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

export interface HostPathVolumeSource {
  path: string;
  type?: HostPathType;
}

export interface ConfigMapVolumeSource {
  name?: string;
  items?: KeyToPath[];
  defaultMode?: number;
  optional?: boolean;
}

export interface SecretVolumeSource {
  secretName?: string;
  items?: KeyToPath[];
  defaultMode?: number;
  optional?: boolean;
}

export interface DownwardAPIVolumeFile {
  path: string;
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: ResourceFieldSelector;
  mode?: number;
}

export interface DownwardAPIVolumeSource {
  items?: DownwardAPIVolumeFile[];
  defaultMode?: number;
}

export interface ServiceAccountTokenProjection {
  audience?: string;
  expirationSeconds?: number;
  path: string;
}

export interface VolumeProjection {
  secret?: { name?: string; items?: KeyToPath[]; optional?: boolean };
  configMap?: { name?: string; items?: KeyToPath[]; optional?: boolean };
  downwardAPI?: { items?: DownwardAPIVolumeFile[] };
  serviceAccountToken?: ServiceAccountTokenProjection;
  clusterTrustBundle?: unknown;
}

export interface ProjectedVolumeSource {
  sources?: VolumeProjection[];
  defaultMode?: number;
}

export interface PersistentVolumeClaimVolumeSource {
  claimName: string;
  readOnly?: boolean;
}

/** A CSI inline (ephemeral) volume of a pod. */
export interface CSIVolumeSource {
  driver: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodePublishSecretRef?: { name?: string };
}

/** A PersistentVolume's CSI source. */
export interface CSIPersistentVolumeSource {
  driver: string;
  volumeHandle: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodeStageSecretRef?: { name?: string; namespace?: string };
  nodePublishSecretRef?: { name?: string; namespace?: string };
}

/** The sources this node understands, on top of core-v1's open Volume. */
export interface PodVolume extends Volume {
  emptyDir?: EmptyDirVolumeSource;
  hostPath?: HostPathVolumeSource;
  configMap?: ConfigMapVolumeSource;
  secret?: SecretVolumeSource;
  downwardAPI?: DownwardAPIVolumeSource;
  projected?: ProjectedVolumeSource;
  persistentVolumeClaim?: PersistentVolumeClaimVolumeSource;
  csi?: CSIVolumeSource;
}

export interface ConfigMap {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  data?: Record<string, string>;
  /** base64, as JSON carries bytes. */
  binaryData?: Record<string, string>;
}

export interface Secret {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  /** base64, as JSON carries bytes. */
  data?: Record<string, string>;
  type?: string;
}

export interface PersistentVolume {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    hostPath?: HostPathVolumeSource;
    local?: { path: string; fsType?: string };
    csi?: CSIPersistentVolumeSource;
    accessModes?: string[];
    mountOptions?: string[];
    claimRef?: { namespace?: string; name?: string; uid?: string };
    nodeAffinity?: { required?: { nodeSelectorTerms: NodeSelectorTerm[] } };
    volumeMode?: 'Filesystem' | 'Block';
    [field: string]: unknown;
  };
  status?: { phase?: string };
}

export interface PersistentVolumeClaim {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { volumeName?: string; [field: string]: unknown };
  status?: { phase?: string };
}

export interface BoundObjectReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  uid?: string;
}

export interface TokenRequestSpec {
  audiences?: string[];
  expirationSeconds?: number;
  boundObjectRef?: BoundObjectReference;
}

export interface TokenRequest {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec: TokenRequestSpec;
  status?: { token: string; expirationTimestamp: string };
}
