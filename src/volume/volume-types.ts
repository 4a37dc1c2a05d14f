/**
 * The API shapes the volume plugins read: the volume sources of a pod (typed in core-v1), and the
 * objects behind them (ConfigMap, Secret, PersistentVolumeClaim, PersistentVolume, TokenRequest),
 * from the `kubernetes-types` package.
 */
import type * as authentication from 'kubernetes-types/authentication/v1.js';
import type * as v1 from 'kubernetes-types/core/v1.js';
import type { NodeSelectorTerm, ObjectMeta, HostPathVolumeSource, Volume } from '../api/core-v1.js';

export type {
  ConfigMapVolumeSource,
  DownwardAPIVolumeFile,
  DownwardAPIVolumeSource,
  EmptyDirVolumeSource,
  HostPathType,
  HostPathVolumeSource,
  KeyToPath,
  PersistentVolumeClaimVolumeSource,
  ProjectedVolumeSource,
  SecretVolumeSource,
  ServiceAccountTokenProjection,
  VolumeProjection,
} from '../api/core-v1.js';

/** A CSI inline (ephemeral) volume of a pod, and a PersistentVolume's CSI source. */
export type CSIVolumeSource = v1.CSIVolumeSource;
export type CSIPersistentVolumeSource = v1.CSIPersistentVolumeSource;

/** The volume sources this node understands are typed on core-v1's Volume. */
export type PodVolume = Volume;

/** An object the volume plugins read: as the API types it, with its metadata required. */
type WithMeta<T extends { metadata?: unknown }> = Omit<T, 'metadata'> & { metadata: ObjectMeta };

/** binaryData is base64, as JSON carries bytes. */
export type ConfigMap = WithMeta<v1.ConfigMap>;
/** data is base64, as JSON carries bytes. */
export type Secret = WithMeta<v1.Secret>;

export type PersistentVolume = Omit<WithMeta<v1.PersistentVolume>, 'spec'> & {
  spec: Omit<v1.PersistentVolumeSpec, 'hostPath' | 'nodeAffinity'> & {
    hostPath?: HostPathVolumeSource;
    nodeAffinity?: { required?: { nodeSelectorTerms: NodeSelectorTerm[] } };
  };
};
export type PersistentVolumeClaim = Omit<WithMeta<v1.PersistentVolumeClaim>, 'spec'> & {
  spec: v1.PersistentVolumeClaimSpec;
};

export type BoundObjectReference = authentication.BoundObjectReference;
/** No audiences (upstream sends null) means the API server's own. */
export type TokenRequestSpec = Omit<authentication.TokenRequestSpec, 'audiences'> & { audiences?: string[] };
export type TokenRequest = Omit<authentication.TokenRequest, 'spec'> & { spec: TokenRequestSpec };
