/**
 * The one place where runtime.v1 wire messages meet the facade types of ./types.ts.
 *
 * Decoded messages (see cri-proto.ts) already use the facade's camelCase names, string enums,
 * numbers and Buffers, and carry every scalar, list and map; what they lack is the facade's
 * guarantees: absent sub-messages arrive as null, unknown enum values as numbers. The `*FromWire`
 * functions below supply those guarantees. In the other direction protobufjs encodes facade objects
 * as they are (it skips undefined fields and keys it does not know), so only the shapes that differ
 * on the wire (filters, whose state is wrapped in a message) need a `*ToWire` function.
 */
import type {
  Capability,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerMetadata,
  ContainerState,
  ContainerStats,
  ContainerStatus,
  CriProtocol,
  DNSConfig,
  ExecSyncResponse,
  FilesystemUsage,
  Image,
  ImageSpec,
  Int64Value,
  KeyValueEnv,
  LinuxContainerConfig,
  LinuxContainerResources,
  LinuxContainerSecurityContext,
  LinuxPodSandboxConfig,
  LinuxSandboxSecurityContext,
  Mount,
  MountPropagation,
  NamespaceMode,
  NamespaceOption,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxMetadata,
  PodSandboxNetworkStatus,
  PodSandboxState,
  PodSandboxStatus,
  PortMapping,
  RuntimeCondition,
  RuntimeStatus,
  SecurityProfile,
  UInt64Value,
  VersionResponse,
} from './types.js';

/** A decoded protobuf message: field names in camelCase, values as cri-proto.ts's load options make them. */
export type WireMessage = Record<string, unknown>;

// ---- readers: tolerant of null, absent and mistyped values, so a runtime's omission never throws ----

function msg(v: unknown): WireMessage | undefined {
  return v !== null && typeof v === 'object' && !Buffer.isBuffer(v) && !Array.isArray(v)
    ? (v as WireMessage)
    : undefined;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function num(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v !== '') return Number(v);
  return 0;
}

function bool(v: unknown): boolean {
  return v === true;
}

function bytes(v: unknown): Buffer {
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v);
  return Buffer.alloc(0);
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(str) : [];
}

function numbers(v: unknown): number[] {
  return Array.isArray(v) ? v.map(num) : [];
}

function list<T>(v: unknown, convert: (m: WireMessage) => T): T[] {
  if (!Array.isArray(v)) return [];
  const out: T[] = [];
  for (const item of v) {
    const m = msg(item);
    if (m) out.push(convert(m));
  }
  return out;
}

function strMap(v: unknown): Record<string, string> {
  const m = msg(v);
  const out: Record<string, string> = {};
  if (m) for (const [k, val] of Object.entries(m)) out[k] = str(val);
  return out;
}

function optional<T>(v: unknown, convert: (m: WireMessage) => T): T | undefined {
  const m = msg(v);
  return m ? convert(m) : undefined;
}

/** Drops keys whose value is undefined, so an absent optional field is absent, not present-and-undefined. */
function compact<T extends object>(o: T): T {
  for (const key of Object.keys(o) as (keyof T)[]) if (o[key] === undefined) delete o[key];
  return o;
}

/** A value of a closed string enum; a number means the runtime sent a value newer than our proto. */
function enumValue<T extends string>(v: unknown, values: readonly T[], fallback: T): T {
  return typeof v === 'string' && (values as readonly string[]).includes(v) ? (v as T) : fallback;
}

const CONTAINER_STATES: readonly ContainerState[] = [
  'CONTAINER_CREATED',
  'CONTAINER_RUNNING',
  'CONTAINER_EXITED',
  'CONTAINER_UNKNOWN',
];
const SANDBOX_STATES: readonly PodSandboxState[] = ['SANDBOX_READY', 'SANDBOX_NOTREADY'];
const NAMESPACE_MODES: readonly NamespaceMode[] = ['POD', 'CONTAINER', 'NODE', 'TARGET'];
const PROTOCOLS: readonly CriProtocol[] = ['TCP', 'UDP', 'SCTP'];
const PROPAGATIONS: readonly MountPropagation[] = [
  'PROPAGATION_PRIVATE',
  'PROPAGATION_HOST_TO_CONTAINER',
  'PROPAGATION_BIDIRECTIONAL',
];
const PROFILE_TYPES: readonly SecurityProfile['profileType'][] = [
  'RuntimeDefault',
  'Unconfined',
  'Localhost',
];

// ---- wire -> facade ----

export function versionFromWire(m: WireMessage): VersionResponse {
  return {
    version: str(m.version),
    runtimeName: str(m.runtimeName),
    runtimeVersion: str(m.runtimeVersion),
    runtimeApiVersion: str(m.runtimeApiVersion),
  };
}

export function podSandboxMetadataFromWire(m: WireMessage | undefined): PodSandboxMetadata {
  return { name: str(m?.name), uid: str(m?.uid), namespace: str(m?.namespace), attempt: num(m?.attempt) };
}

export function containerMetadataFromWire(m: WireMessage | undefined): ContainerMetadata {
  return { name: str(m?.name), attempt: num(m?.attempt) };
}

export function imageSpecFromWire(m: WireMessage | undefined): ImageSpec {
  const spec: ImageSpec = { image: str(m?.image), annotations: strMap(m?.annotations) };
  const userSpecified = str(m?.userSpecifiedImage);
  if (userSpecified) spec.userSpecifiedImage = userSpecified;
  const handler = str(m?.runtimeHandler);
  if (handler) spec.runtimeHandler = handler;
  return spec;
}

function int64ValueFromWire(m: WireMessage): Int64Value {
  return { value: num(m.value) };
}

function uint64ValueFromWire(m: WireMessage): UInt64Value {
  return { value: num(m.value) };
}

export function namespaceOptionFromWire(m: WireMessage): NamespaceOption {
  const out: NamespaceOption = {
    network: enumValue(m.network, NAMESPACE_MODES, 'POD'),
    pid: enumValue(m.pid, NAMESPACE_MODES, 'POD'),
    ipc: enumValue(m.ipc, NAMESPACE_MODES, 'POD'),
  };
  const target = str(m.targetId);
  if (target) out.targetId = target;
  return out;
}

function securityProfileFromWire(m: WireMessage): SecurityProfile {
  return {
    profileType: enumValue(m.profileType, PROFILE_TYPES, 'RuntimeDefault'),
    localhostRef: str(m.localhostRef),
  };
}

export function linuxContainerResourcesFromWire(m: WireMessage): LinuxContainerResources {
  return {
    cpuPeriod: num(m.cpuPeriod),
    cpuQuota: num(m.cpuQuota),
    cpuShares: num(m.cpuShares),
    memoryLimitInBytes: num(m.memoryLimitInBytes),
    oomScoreAdj: num(m.oomScoreAdj),
    cpusetCpus: str(m.cpusetCpus),
    cpusetMems: str(m.cpusetMems),
    unified: strMap(m.unified),
    memorySwapLimitInBytes: num(m.memorySwapLimitInBytes),
  };
}

function dnsConfigFromWire(m: WireMessage): DNSConfig {
  return { servers: strings(m.servers), searches: strings(m.searches), options: strings(m.options) };
}

function portMappingFromWire(m: WireMessage): PortMapping {
  return {
    protocol: enumValue(m.protocol, PROTOCOLS, 'TCP'),
    containerPort: num(m.containerPort),
    hostPort: num(m.hostPort),
    hostIp: str(m.hostIp),
  };
}

function linuxSandboxSecurityContextFromWire(m: WireMessage): LinuxSandboxSecurityContext {
  return compact({
    namespaceOptions: optional(m.namespaceOptions, namespaceOptionFromWire),
    runAsUser: optional(m.runAsUser, int64ValueFromWire),
    runAsGroup: optional(m.runAsGroup, int64ValueFromWire),
    readonlyRootfs: bool(m.readonlyRootfs),
    supplementalGroups: numbers(m.supplementalGroups),
    privileged: bool(m.privileged),
    seccomp: optional(m.seccomp, securityProfileFromWire),
  });
}

function linuxPodSandboxConfigFromWire(m: WireMessage): LinuxPodSandboxConfig {
  return compact({
    cgroupParent: str(m.cgroupParent),
    securityContext: optional(m.securityContext, linuxSandboxSecurityContextFromWire),
    sysctls: strMap(m.sysctls),
    resources: optional(m.resources, linuxContainerResourcesFromWire),
    overhead: optional(m.overhead, linuxContainerResourcesFromWire),
  });
}

export function podSandboxConfigFromWire(m: WireMessage | undefined): PodSandboxConfig {
  return compact({
    metadata: podSandboxMetadataFromWire(msg(m?.metadata)),
    hostname: str(m?.hostname),
    logDirectory: str(m?.logDirectory),
    dnsConfig: optional(m?.dnsConfig, dnsConfigFromWire),
    portMappings: list(m?.portMappings, portMappingFromWire),
    labels: strMap(m?.labels),
    annotations: strMap(m?.annotations),
    linux: optional(m?.linux, linuxPodSandboxConfigFromWire),
  });
}

export function mountFromWire(m: WireMessage): Mount {
  return {
    containerPath: str(m.containerPath),
    hostPath: str(m.hostPath),
    readonly: bool(m.readonly),
    selinuxRelabel: bool(m.selinuxRelabel),
    propagation: enumValue(m.propagation, PROPAGATIONS, 'PROPAGATION_PRIVATE'),
  };
}

function keyValueFromWire(m: WireMessage): KeyValueEnv {
  return { key: str(m.key), value: str(m.value) };
}

function capabilityFromWire(m: WireMessage): Capability {
  return { addCapabilities: strings(m.addCapabilities), dropCapabilities: strings(m.dropCapabilities) };
}

function linuxContainerSecurityContextFromWire(m: WireMessage): LinuxContainerSecurityContext {
  return compact({
    capabilities: optional(m.capabilities, capabilityFromWire),
    privileged: bool(m.privileged),
    namespaceOptions: optional(m.namespaceOptions, namespaceOptionFromWire),
    runAsUser: optional(m.runAsUser, int64ValueFromWire),
    runAsGroup: optional(m.runAsGroup, int64ValueFromWire),
    runAsUsername: str(m.runAsUsername),
    readonlyRootfs: bool(m.readonlyRootfs),
    supplementalGroups: numbers(m.supplementalGroups),
    noNewPrivs: bool(m.noNewPrivs),
    maskedPaths: strings(m.maskedPaths),
    readonlyPaths: strings(m.readonlyPaths),
    seccomp: optional(m.seccomp, securityProfileFromWire),
  });
}

function linuxContainerConfigFromWire(m: WireMessage): LinuxContainerConfig {
  return compact({
    resources: optional(m.resources, linuxContainerResourcesFromWire),
    securityContext: optional(m.securityContext, linuxContainerSecurityContextFromWire),
  });
}

export function containerConfigFromWire(m: WireMessage | undefined): ContainerConfig {
  return compact({
    metadata: containerMetadataFromWire(msg(m?.metadata)),
    image: imageSpecFromWire(msg(m?.image)),
    command: strings(m?.command),
    args: strings(m?.args),
    workingDir: str(m?.workingDir),
    envs: list(m?.envs, keyValueFromWire),
    mounts: list(m?.mounts, mountFromWire),
    labels: strMap(m?.labels),
    annotations: strMap(m?.annotations),
    logPath: str(m?.logPath),
    stdin: bool(m?.stdin),
    stdinOnce: bool(m?.stdinOnce),
    tty: bool(m?.tty),
    linux: optional(m?.linux, linuxContainerConfigFromWire),
  });
}

export function podSandboxFromWire(m: WireMessage): PodSandbox {
  return {
    id: str(m.id),
    metadata: podSandboxMetadataFromWire(msg(m.metadata)),
    state: enumValue(m.state, SANDBOX_STATES, 'SANDBOX_NOTREADY'),
    createdAt: num(m.createdAt),
    labels: strMap(m.labels),
    annotations: strMap(m.annotations),
    runtimeHandler: str(m.runtimeHandler),
  };
}

function networkStatusFromWire(m: WireMessage): PodSandboxNetworkStatus {
  return { ip: str(m.ip), additionalIps: list(m.additionalIps, (p) => ({ ip: str(p.ip) })) };
}

export function podSandboxStatusFromWire(m: WireMessage): PodSandboxStatus {
  const linux = msg(m.linux);
  const namespaces = msg(linux?.namespaces);
  return compact({
    id: str(m.id),
    metadata: podSandboxMetadataFromWire(msg(m.metadata)),
    state: enumValue(m.state, SANDBOX_STATES, 'SANDBOX_NOTREADY'),
    createdAt: num(m.createdAt),
    network: optional(m.network, networkStatusFromWire),
    linux: linux
      ? {
          namespaces: namespaces
            ? { options: optional(namespaces.options, namespaceOptionFromWire) }
            : undefined,
        }
      : undefined,
    labels: strMap(m.labels),
    annotations: strMap(m.annotations),
    runtimeHandler: str(m.runtimeHandler),
  });
}

export function containerFromWire(m: WireMessage): Container {
  return {
    id: str(m.id),
    podSandboxId: str(m.podSandboxId),
    metadata: containerMetadataFromWire(msg(m.metadata)),
    image: imageSpecFromWire(msg(m.image)),
    imageRef: str(m.imageRef),
    state: enumValue(m.state, CONTAINER_STATES, 'CONTAINER_UNKNOWN'),
    createdAt: num(m.createdAt),
    labels: strMap(m.labels),
    annotations: strMap(m.annotations),
  };
}

export function containerStatusFromWire(m: WireMessage): ContainerStatus {
  return {
    id: str(m.id),
    metadata: containerMetadataFromWire(msg(m.metadata)),
    state: enumValue(m.state, CONTAINER_STATES, 'CONTAINER_UNKNOWN'),
    createdAt: num(m.createdAt),
    startedAt: num(m.startedAt),
    finishedAt: num(m.finishedAt),
    exitCode: num(m.exitCode),
    image: imageSpecFromWire(msg(m.image)),
    imageRef: str(m.imageRef),
    reason: str(m.reason),
    message: str(m.message),
    labels: strMap(m.labels),
    annotations: strMap(m.annotations),
    mounts: list(m.mounts, mountFromWire),
    logPath: str(m.logPath),
  };
}

export function execSyncResponseFromWire(m: WireMessage): ExecSyncResponse {
  return { stdout: bytes(m.stdout), stderr: bytes(m.stderr), exitCode: num(m.exitCode) };
}

function runtimeConditionFromWire(m: WireMessage): RuntimeCondition {
  return { type: str(m.type), status: bool(m.status), reason: str(m.reason), message: str(m.message) };
}

export function runtimeStatusFromWire(m: WireMessage | undefined): RuntimeStatus {
  return { conditions: list(m?.conditions, runtimeConditionFromWire) };
}

export function filesystemUsageFromWire(m: WireMessage): FilesystemUsage {
  return compact({
    timestamp: num(m.timestamp),
    fsId: optional(m.fsId, (f) => ({ mountpoint: str(f.mountpoint) })),
    usedBytes: optional(m.usedBytes, uint64ValueFromWire),
    inodesUsed: optional(m.inodesUsed, uint64ValueFromWire),
  });
}

export function containerStatsFromWire(m: WireMessage): ContainerStats {
  const attributes = msg(m.attributes);
  return compact({
    attributes: {
      id: str(attributes?.id),
      metadata: containerMetadataFromWire(msg(attributes?.metadata)),
      labels: strMap(attributes?.labels),
      annotations: strMap(attributes?.annotations),
    },
    cpu: optional(m.cpu, (c) =>
      compact({
        timestamp: num(c.timestamp),
        usageCoreNanoSeconds: optional(c.usageCoreNanoSeconds, uint64ValueFromWire),
        usageNanoCores: optional(c.usageNanoCores, uint64ValueFromWire),
      }),
    ),
    memory: optional(m.memory, (mem) =>
      compact({
        timestamp: num(mem.timestamp),
        workingSetBytes: optional(mem.workingSetBytes, uint64ValueFromWire),
        availableBytes: optional(mem.availableBytes, uint64ValueFromWire),
        usageBytes: optional(mem.usageBytes, uint64ValueFromWire),
        rssBytes: optional(mem.rssBytes, uint64ValueFromWire),
        pageFaults: optional(mem.pageFaults, uint64ValueFromWire),
        majorPageFaults: optional(mem.majorPageFaults, uint64ValueFromWire),
      }),
    ),
    writableLayer: optional(m.writableLayer, filesystemUsageFromWire),
  });
}

export function imageFromWire(m: WireMessage): Image {
  return compact({
    id: str(m.id),
    repoTags: strings(m.repoTags),
    repoDigests: strings(m.repoDigests),
    size: num(m.size),
    uid: optional(m.uid, int64ValueFromWire),
    username: str(m.username),
    spec: optional(m.spec, (s) => imageSpecFromWire(s)),
    pinned: bool(m.pinned),
  });
}

/** Request filters as the test server reads them back. */
export function podSandboxFilterFromWire(m: WireMessage | undefined): PodSandboxFilter {
  const filter: PodSandboxFilter = {};
  if (!m) return filter;
  if (str(m.id)) filter.id = str(m.id);
  const state = msg(m.state);
  if (state) filter.state = enumValue(state.state, SANDBOX_STATES, 'SANDBOX_NOTREADY');
  const selector = strMap(m.labelSelector);
  if (Object.keys(selector).length > 0) filter.labelSelector = selector;
  return filter;
}

export function containerFilterFromWire(m: WireMessage | undefined): ContainerFilter {
  const filter: ContainerFilter = {};
  if (!m) return filter;
  if (str(m.id)) filter.id = str(m.id);
  if (str(m.podSandboxId)) filter.podSandboxId = str(m.podSandboxId);
  const state = msg(m.state);
  if (state) filter.state = enumValue(state.state, CONTAINER_STATES, 'CONTAINER_UNKNOWN');
  const selector = strMap(m.labelSelector);
  if (Object.keys(selector).length > 0) filter.labelSelector = selector;
  return filter;
}

// ---- facade -> wire, where the shapes differ ----

export function podSandboxFilterToWire(filter: PodSandboxFilter | undefined): WireMessage | undefined {
  if (!filter) return undefined;
  return {
    id: filter.id ?? '',
    // The state is wrapped so that "no state filter" differs from SANDBOX_READY, the enum's zero.
    state: filter.state === undefined ? undefined : { state: filter.state },
    labelSelector: filter.labelSelector ?? {},
  };
}

export function containerFilterToWire(filter: ContainerFilter | undefined): WireMessage | undefined {
  if (!filter) return undefined;
  return {
    id: filter.id ?? '',
    state: filter.state === undefined ? undefined : { state: filter.state },
    podSandboxId: filter.podSandboxId ?? '',
    labelSelector: filter.labelSelector ?? {},
  };
}
