/**
 * The Kubernetes core/v1 API types the kubelet reads and writes, taken from the `kubernetes-types`
 * package (v1.30, generated from the API's OpenAPI schema) so that every field the API has is known.
 *
 * They are wrapped in three ways, each for a reason:
 * - a pod read from a manifest or the API always has `metadata` and `spec` (the decoders refuse one
 *   without), so `Pod` makes them required, and its `status` writable (the kubelet builds it);
 * - enum fields the kubelet switches on keep their closed set of values (the generated types say
 *   `string`), so a misspelled value is a type error;
 * - a quantity may also be a number (`cpu: 1` in YAML), as the API server's decoder accepts.
 */
import type * as v1 from 'kubernetes-types/core/v1.js';
import type * as meta from 'kubernetes-types/meta/v1.js';

/** The API marks server-set fields read-only; the kubelet sets some of them (a static pod's UID). */
type Writable<T> = { -readonly [K in keyof T]: T[K] };

export type ObjectMeta = Writable<meta.ObjectMeta>;
export type OwnerReference = meta.OwnerReference;

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';
export type Protocol = 'TCP' | 'UDP' | 'SCTP';

/** A resource.Quantity as written in JSON or YAML: a string, or a bare number. */
export type Quantity = string | number;

export type ContainerPort = Omit<v1.ContainerPort, 'protocol'> & { protocol?: Protocol };
export type ObjectFieldSelector = v1.ObjectFieldSelector;
export type ResourceFieldSelector = Omit<v1.ResourceFieldSelector, 'divisor'> & { divisor?: Quantity };
export type KeySelector = v1.ConfigMapKeySelector;
export type EnvVarSource = Omit<v1.EnvVarSource, 'resourceFieldRef'> & {
  resourceFieldRef?: ResourceFieldSelector;
};
export type EnvVar = Omit<v1.EnvVar, 'valueFrom'> & { valueFrom?: EnvVarSource };
export type EnvFromSource = v1.EnvFromSource;

export type ResourceRequirements = Omit<v1.ResourceRequirements, 'limits' | 'requests'> & {
  limits?: Record<string, Quantity>;
  requests?: Record<string, Quantity>;
};

export type VolumeMount = Omit<v1.VolumeMount, 'mountPropagation'> & {
  mountPropagation?: 'None' | 'HostToContainer' | 'Bidirectional';
};

export type ExecAction = v1.ExecAction;
export type HTTPHeader = v1.HTTPHeader;
export type HTTPGetAction = Omit<v1.HTTPGetAction, 'scheme'> & { scheme?: 'HTTP' | 'HTTPS' };
export type TCPSocketAction = v1.TCPSocketAction;
export type GRPCAction = v1.GRPCAction;

export type ProbeHandler = Pick<v1.Probe, 'exec' | 'tcpSocket' | 'grpc'> & { httpGet?: HTTPGetAction };
export type Probe = Omit<v1.Probe, 'httpGet'> & ProbeHandler;
export type LifecycleHandler = Omit<v1.LifecycleHandler, 'httpGet'> & { httpGet?: HTTPGetAction };
export interface Lifecycle {
  postStart?: LifecycleHandler;
  preStop?: LifecycleHandler;
}

export type Capabilities = v1.Capabilities;
export type SeccompProfile = Omit<v1.SeccompProfile, 'type'> & {
  type: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
};
export type AppArmorProfile = Omit<v1.AppArmorProfile, 'type'> & {
  type: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
};
export type SecurityContext = Omit<v1.SecurityContext, 'procMount' | 'seccompProfile' | 'appArmorProfile'> & {
  procMount?: 'Default' | 'Unmasked';
  seccompProfile?: SeccompProfile;
  appArmorProfile?: AppArmorProfile;
};

/** The fields a container's type narrows, shared by Container and EphemeralContainer. */
type ContainerNarrowed =
  | 'ports'
  | 'env'
  | 'resources'
  | 'volumeMounts'
  | 'livenessProbe'
  | 'readinessProbe'
  | 'startupProbe'
  | 'lifecycle'
  | 'imagePullPolicy'
  | 'securityContext'
  | 'terminationMessagePolicy'
  | 'restartPolicy';
interface ContainerFields {
  ports?: ContainerPort[];
  env?: EnvVar[];
  resources?: ResourceRequirements;
  volumeMounts?: VolumeMount[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: Lifecycle;
  imagePullPolicy?: PullPolicy;
  securityContext?: SecurityContext;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
  /** Only on init containers: `Always` makes one a sidecar. */
  restartPolicy?: 'Always';
}
export type Container = Omit<v1.Container, ContainerNarrowed> & ContainerFields;
export type EphemeralContainer = Omit<v1.EphemeralContainer, ContainerNarrowed> & ContainerFields;

export type Toleration = Omit<v1.Toleration, 'operator' | 'effect'> & {
  operator?: 'Exists' | 'Equal';
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
};

export type PodSecurityContext = Omit<
  v1.PodSecurityContext,
  'fsGroupChangePolicy' | 'seccompProfile' | 'appArmorProfile'
> & {
  fsGroupChangePolicy?: 'OnRootMismatch' | 'Always';
  seccompProfile?: SeccompProfile;
  appArmorProfile?: AppArmorProfile;
};

export type PodDNSConfig = v1.PodDNSConfig;
export type HostAlias = v1.HostAlias;

export type KeyToPath = v1.KeyToPath;
export type EmptyDirVolumeSource = Omit<v1.EmptyDirVolumeSource, 'medium' | 'sizeLimit'> & {
  medium?: '' | 'Memory' | 'HugePages' | `HugePages-${string}`;
  sizeLimit?: Quantity;
};
export type HostPathType =
  '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';
export type HostPathVolumeSource = Omit<v1.HostPathVolumeSource, 'type'> & { type?: HostPathType };
export type ConfigMapVolumeSource = v1.ConfigMapVolumeSource;
export type SecretVolumeSource = v1.SecretVolumeSource;
export type DownwardAPIVolumeFile = Omit<v1.DownwardAPIVolumeFile, 'resourceFieldRef'> & {
  resourceFieldRef?: ResourceFieldSelector;
};
export type DownwardAPIVolumeSource = Omit<v1.DownwardAPIVolumeSource, 'items'> & {
  items?: DownwardAPIVolumeFile[];
};
export type ServiceAccountTokenProjection = v1.ServiceAccountTokenProjection;
export type VolumeProjection = Omit<v1.VolumeProjection, 'downwardAPI'> & {
  downwardAPI?: { items?: DownwardAPIVolumeFile[] };
};
export type ProjectedVolumeSource = Omit<v1.ProjectedVolumeSource, 'sources'> & {
  sources?: VolumeProjection[];
};
export type PersistentVolumeClaimVolumeSource = v1.PersistentVolumeClaimVolumeSource;

/** A pod's volume: one source (the narrowed ones are those the volume plugins read). */
export type Volume = Omit<v1.Volume, 'emptyDir' | 'hostPath' | 'downwardAPI' | 'projected'> & {
  emptyDir?: EmptyDirVolumeSource;
  hostPath?: HostPathVolumeSource;
  downwardAPI?: DownwardAPIVolumeSource;
  projected?: ProjectedVolumeSource;
};

/** The name of one of a volume's sources, e.g. `emptyDir`. */
export type VolumeSourceKey = Exclude<keyof Volume, 'name'>;

/** Every source the v1.30 API knows, in the order upstream's validation lists them. */
export const VOLUME_SOURCES: readonly VolumeSourceKey[] = [
  'hostPath',
  'emptyDir',
  'gcePersistentDisk',
  'awsElasticBlockStore',
  'gitRepo',
  'secret',
  'nfs',
  'iscsi',
  'glusterfs',
  'persistentVolumeClaim',
  'rbd',
  'flexVolume',
  'cinder',
  'cephfs',
  'flocker',
  'downwardAPI',
  'fc',
  'azureFile',
  'configMap',
  'vsphereVolume',
  'quobyte',
  'azureDisk',
  'photonPersistentDisk',
  'projected',
  'portworxVolume',
  'scaleIO',
  'storageos',
  'csi',
  'ephemeral',
];

export type DNSPolicy = 'ClusterFirst' | 'ClusterFirstWithHostNet' | 'Default' | 'None';

export type PodSpec = Omit<
  v1.PodSpec,
  | 'volumes'
  | 'initContainers'
  | 'containers'
  | 'ephemeralContainers'
  | 'restartPolicy'
  | 'dnsPolicy'
  | 'securityContext'
  | 'tolerations'
  | 'overhead'
> & {
  volumes?: Volume[];
  initContainers?: Container[];
  containers: Container[];
  ephemeralContainers?: EphemeralContainer[];
  restartPolicy?: RestartPolicy;
  dnsPolicy?: DNSPolicy;
  securityContext?: PodSecurityContext;
  tolerations?: Toleration[];
  overhead?: Record<string, Quantity>;
};

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
export type ConditionStatus = 'True' | 'False' | 'Unknown';
export type PodQOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** lastProbeTime is written as null by the API server and by upstream's status manager. */
export type PodCondition = Omit<v1.PodCondition, 'status' | 'lastProbeTime'> & {
  status: ConditionStatus;
  lastProbeTime?: string | null;
};

export type ContainerStateWaiting = v1.ContainerStateWaiting;
export type ContainerStateRunning = v1.ContainerStateRunning;
export type ContainerStateTerminated = v1.ContainerStateTerminated;
export type ContainerState = v1.ContainerState;
export type ContainerStatus = Omit<v1.ContainerStatus, 'allocatedResources' | 'resources'> & {
  allocatedResources?: Record<string, Quantity>;
  resources?: ResourceRequirements;
};
export type PodIP = v1.PodIP;
export type HostIP = v1.HostIP;

export type PodStatus = Omit<
  v1.PodStatus,
  | 'phase'
  | 'conditions'
  | 'qosClass'
  | 'containerStatuses'
  | 'initContainerStatuses'
  | 'ephemeralContainerStatuses'
> & {
  phase?: PodPhase;
  conditions?: PodCondition[];
  qosClass?: PodQOSClass;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  ephemeralContainerStatuses?: ContainerStatus[];
};

export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PodSpec;
  status?: PodStatus;
}

export interface PodList {
  kind: 'PodList';
  apiVersion: 'v1';
  metadata: meta.ListMeta;
  items: Pod[];
}

/** A node affinity's requirement. */
export type NodeSelectorRequirement = Omit<v1.NodeSelectorRequirement, 'operator'> & {
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
};

/** Its requirements are ANDed. */
export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

/** A reference to an object, e.g. the one an event is about; fieldPath names a part, `spec.containers{app}`. */
export type ObjectReference = v1.ObjectReference;

/** core/v1 Event.type. */
export type EventType = 'Normal' | 'Warning';

/** Failed and Succeeded are final: a pod never leaves them (upstream: podutil.IsPodPhaseTerminal). */
export function isTerminalPhase(phase: string | undefined): phase is 'Failed' | 'Succeeded' {
  return phase === 'Failed' || phase === 'Succeeded';
}

/** name_namespace: upstream's "pod full name", the key for pods whose UID is not known. */
export function podFullName(pod: Pod): string {
  return `${pod.metadata.name ?? ''}_${pod.metadata.namespace ?? ''}`;
}

export function podUid(pod: Pod): string {
  return pod.metadata.uid ?? '';
}
