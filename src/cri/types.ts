/**
 * The project's own view of CRI runtime.v1: the messages the kubelet sends and reads, with the
 * protocol's field names in camelCase. Generated protobuf code stays behind src/cri/remote-*.ts;
 * everything above this folder sees only these types.
 *
 * Timestamps (int64 nanoseconds on the wire) are plain numbers of nanoseconds: a double keeps them
 * to within ~256 ns, plenty for ordering and for the seconds that pod status shows.
 */

export interface VersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface KeyValue {
  key: string;
  value: string;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface DNSConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

export type CriProtocol = 'TCP' | 'UDP' | 'SCTP';

export interface PortMapping {
  protocol: CriProtocol;
  containerPort: number;
  hostPort: number;
  hostIp: string;
}

/** runtime.v1.NamespaceMode: POD = 0, CONTAINER = 1, NODE = 2, TARGET = 3. */
export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

export interface NamespaceOption {
  network: NamespaceMode;
  pid: NamespaceMode;
  ipc: NamespaceMode;
  targetId?: string;
}

export interface Int64Value {
  value: number;
}

export interface SecurityProfile {
  profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhostRef: string;
}

export interface LinuxSandboxSecurityContext {
  namespaceOptions?: NamespaceOption;
  runAsUser?: Int64Value;
  runAsGroup?: Int64Value;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  privileged?: boolean;
  seccomp?: SecurityProfile;
}

export interface LinuxPodSandboxConfig {
  cgroupParent: string;
  securityContext?: LinuxSandboxSecurityContext;
  sysctls: Record<string, string>;
  resources?: LinuxContainerResources;
  overhead?: LinuxContainerResources;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname: string;
  logDirectory: string;
  dnsConfig?: DNSConfig;
  portMappings: PortMapping[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  linux?: LinuxPodSandboxConfig;
}

/** runtime.v1.PodSandboxState: SANDBOX_READY = 0, SANDBOX_NOTREADY = 1. */
export type PodSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';

export interface PodSandboxFilter {
  id?: string;
  state?: PodSandboxState;
  labelSelector?: Record<string, string>;
}

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler: string;
}

export interface PodSandboxNetworkStatus {
  ip: string;
  additionalIps: { ip: string }[];
}

export interface PodSandboxStatus {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: number;
  network?: PodSandboxNetworkStatus;
  linux?: { namespaces?: { options?: NamespaceOption } };
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler: string;
}

export interface PodSandboxStatusResponse {
  status: PodSandboxStatus;
  info: Record<string, string>;
}

export interface ImageSpec {
  image: string;
  annotations?: Record<string, string>;
  userSpecifiedImage?: string;
  runtimeHandler?: string;
}

export interface KeyValueEnv {
  key: string;
  value: string;
}

/** runtime.v1.MountPropagation: PROPAGATION_PRIVATE = 0, HOST_TO_CONTAINER = 1, BIDIRECTIONAL = 2. */
export type MountPropagation =
  'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';

export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
  selinuxRelabel: boolean;
  propagation: MountPropagation;
}

export interface ContainerMetadata {
  name: string;
  attempt: number;
}

export interface LinuxContainerResources {
  cpuPeriod: number;
  cpuQuota: number;
  cpuShares: number;
  memoryLimitInBytes: number;
  oomScoreAdj: number;
  cpusetCpus: string;
  cpusetMems: string;
  unified: Record<string, string>;
  memorySwapLimitInBytes: number;
}

export interface Capability {
  addCapabilities: string[];
  dropCapabilities: string[];
}

export interface LinuxContainerSecurityContext {
  capabilities?: Capability;
  privileged: boolean;
  namespaceOptions?: NamespaceOption;
  runAsUser?: Int64Value;
  runAsGroup?: Int64Value;
  runAsUsername: string;
  readonlyRootfs: boolean;
  supplementalGroups: number[];
  noNewPrivs: boolean;
  maskedPaths: string[];
  readonlyPaths: string[];
  seccomp?: SecurityProfile;
  /** v1.30 sends both: the profile and the older string form (`runtime/default`, `localhost/<name>`). */
  apparmor?: SecurityProfile;
  apparmorProfile?: string;
}

export interface LinuxContainerConfig {
  resources?: LinuxContainerResources;
  securityContext?: LinuxContainerSecurityContext;
}

/** runtime.v1.Device: a host device node made available in a container. */
export interface Device {
  containerPath: string;
  hostPath: string;
  /** cgroup device permissions: some of r, w, m. */
  permissions: string;
}

/** runtime.v1.CDIDevice: a fully qualified CDI device name (vendor.com/class=name). */
export interface CDIDevice {
  name: string;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: ImageSpec;
  command: string[];
  args: string[];
  workingDir: string;
  envs: KeyValueEnv[];
  mounts: Mount[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  logPath: string;
  stdin: boolean;
  stdinOnce: boolean;
  tty: boolean;
  linux?: LinuxContainerConfig;
  /** Device nodes, from device plugins' Allocate answers. */
  devices?: Device[];
  /** CDI devices, from device plugins' Allocate answers. */
  CDIDevices?: CDIDevice[];
}

/** runtime.v1.ContainerState: CREATED = 0, RUNNING = 1, EXITED = 2, UNKNOWN = 3. */
export type ContainerState =
  'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';

export interface ContainerFilter {
  id?: string;
  state?: ContainerState;
  podSandboxId?: string;
  labelSelector?: Record<string, string>;
}

export interface Container {
  id: string;
  podSandboxId: string;
  metadata: ContainerMetadata;
  image: ImageSpec;
  imageRef: string;
  state: ContainerState;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface ContainerStatus {
  id: string;
  metadata: ContainerMetadata;
  state: ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image: ImageSpec;
  imageRef: string;
  reason: string;
  message: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: Mount[];
  logPath: string;
}

export interface ContainerStatusResponse {
  status: ContainerStatus;
  info: Record<string, string>;
}

export interface ExecSyncResponse {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

export interface ExecRequest {
  containerId: string;
  cmd: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface AttachRequest {
  containerId: string;
  stdin: boolean;
  tty: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface PortForwardRequest {
  podSandboxId: string;
  port: number[];
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface RuntimeStatus {
  conditions: RuntimeCondition[];
}

export interface UInt64Value {
  value: number;
}

export interface ContainerStats {
  attributes: {
    id: string;
    metadata: ContainerMetadata;
    labels: Record<string, string>;
    annotations: Record<string, string>;
  };
  cpu?: { timestamp: number; usageCoreNanoSeconds?: UInt64Value; usageNanoCores?: UInt64Value };
  memory?: {
    timestamp: number;
    workingSetBytes?: UInt64Value;
    availableBytes?: UInt64Value;
    usageBytes?: UInt64Value;
    rssBytes?: UInt64Value;
    pageFaults?: UInt64Value;
    majorPageFaults?: UInt64Value;
  };
  writableLayer?: {
    timestamp: number;
    fsId?: { mountpoint: string };
    usedBytes?: UInt64Value;
    inodesUsed?: UInt64Value;
  };
}

export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  uid?: Int64Value;
  username: string;
  spec?: ImageSpec;
  pinned: boolean;
}

export interface AuthConfig {
  username?: string;
  password?: string;
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

export interface FilesystemUsage {
  timestamp: number;
  fsId?: { mountpoint: string };
  usedBytes?: UInt64Value;
  inodesUsed?: UInt64Value;
}

/** Per-call options: every call has a deadline; the client applies runtimeRequestTimeout when none is given. */
export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** runtime.v1.RuntimeService, as the kubelet uses it. Absent objects are NotFound errors from the runtime, surfaced as `CriNotFoundError`. */
export interface RuntimeService {
  version(opts?: CallOptions): Promise<VersionResponse>;
  runPodSandbox(config: PodSandboxConfig, runtimeHandler: string, opts?: CallOptions): Promise<string>;
  stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void>;
  removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void>;
  podSandboxStatus(
    podSandboxId: string,
    verbose?: boolean,
    opts?: CallOptions,
  ): Promise<PodSandboxStatusResponse>;
  listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]>;
  createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string>;
  startContainer(containerId: string, opts?: CallOptions): Promise<void>;
  /** timeoutSeconds is the grace period the runtime gives before SIGKILL; the call's own deadline is extended by it. */
  stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void>;
  removeContainer(containerId: string, opts?: CallOptions): Promise<void>;
  listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]>;
  containerStatus(
    containerId: string,
    verbose?: boolean,
    opts?: CallOptions,
  ): Promise<ContainerStatusResponse>;
  updateContainerResources(
    containerId: string,
    linux: LinuxContainerResources,
    opts?: CallOptions,
  ): Promise<void>;
  reopenContainerLog(containerId: string, opts?: CallOptions): Promise<void>;
  /**
   * The log path of a container this client created (its sandbox's log directory and its config's
   * log path, as ContainerStatus reports it), without a call; undefined when it does not know.
   */
  createdContainerLogPath?(containerId: string): string | undefined;
  execSync(
    containerId: string,
    cmd: string[],
    timeoutSeconds: number,
    opts?: CallOptions,
  ): Promise<ExecSyncResponse>;
  /** Returns the runtime's streaming URL. */
  exec(req: ExecRequest, opts?: CallOptions): Promise<string>;
  attach(req: AttachRequest, opts?: CallOptions): Promise<string>;
  portForward(req: PortForwardRequest, opts?: CallOptions): Promise<string>;
  containerStats(containerId: string, opts?: CallOptions): Promise<ContainerStats | undefined>;
  listContainerStats(
    filter?: { id?: string; podSandboxId?: string; labelSelector?: Record<string, string> },
    opts?: CallOptions,
  ): Promise<ContainerStats[]>;
  status(
    verbose?: boolean,
    opts?: CallOptions,
  ): Promise<{ status: RuntimeStatus; info: Record<string, string> }>;
  /** Hands the runtime the node's pod CIDR (upstream's UpdateRuntimeConfig, its only field today). */
  updateRuntimeConfig(podCIDR: string, opts?: CallOptions): Promise<void>;
}

/** runtime.v1.ImageService, as the kubelet uses it. */
export interface ImageService {
  listImages(filter?: { image?: ImageSpec }, opts?: CallOptions): Promise<Image[]>;
  /** undefined when the image is not present. */
  imageStatus(image: ImageSpec, verbose?: boolean, opts?: CallOptions): Promise<Image | undefined>;
  /** Returns the image reference (the image ID the runtime resolved). */
  pullImage(
    image: ImageSpec,
    auth: AuthConfig | undefined,
    sandboxConfig: PodSandboxConfig | undefined,
    opts?: CallOptions,
  ): Promise<string>;
  removeImage(image: ImageSpec, opts?: CallOptions): Promise<void>;
  imageFsInfo(opts?: CallOptions): Promise<FilesystemUsage[]>;
}
