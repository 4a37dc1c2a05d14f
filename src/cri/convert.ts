/**
 * The one place where the generated runtime.v1 messages (./generated, from upstream's api.proto)
 * meet the project's own types of ./types.ts.
 *
 * Responses: generated decoders fill every scalar, list and map; what the project's types add is
 * numbers for int64 (nanosecond timestamps in a double keep ~256 ns), required sub-messages filled
 * in, and enum values newer than our proto (UNRECOGNIZED) mapped to a safe fallback. The
 * `*FromCri` functions do that. Requests: the facade builds them with the generated `fromPartial`,
 * whose exact types refuse a field the proto does not have; project types that match the proto's
 * shape go in as they are, and only filters (whose state is wrapped) need a `*ToCri` function.
 */
import type * as cri from './generated/runtime/v1/api.js';
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerMetadata,
  ContainerStats,
  ContainerStatus,
  ExecSyncResponse,
  FilesystemUsage,
  Image,
  ImageSpec,
  Int64Value,
  LinuxContainerConfig,
  LinuxContainerResources,
  LinuxContainerSecurityContext,
  LinuxPodSandboxConfig,
  LinuxSandboxSecurityContext,
  Mount,
  NamespaceOption,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxMetadata,
  PodSandboxStatus,
  RuntimeStatus,
  SecurityProfile,
  UInt64Value,
  VersionResponse,
} from './types.js';

/** Drops keys whose value is undefined, so an absent optional field is absent, not present-and-undefined. */
function compact<T extends object>(o: T): T {
  for (const key of Object.keys(o) as (keyof T)[]) if (o[key] === undefined) delete o[key];
  return o;
}

/** An enum value the proto knows; UNRECOGNIZED (a runtime newer than our proto) becomes fallback. */
function known<T extends string>(v: T | 'UNRECOGNIZED', fallback: T): T {
  return v === 'UNRECOGNIZED' ? fallback : v;
}

function optional<M, T>(m: M | undefined, convert: (m: M) => T): T | undefined {
  return m === undefined ? undefined : convert(m);
}

/** Copies a decoded map: ts-proto's maps are plain objects already, but the facade owns its values. */
function strMap(m: { [key: string]: string }): Record<string, string> {
  return { ...m };
}

// ---- generated -> project ----

export function versionFromCri(m: cri.VersionResponse): VersionResponse {
  return {
    version: m.version,
    runtimeName: m.runtimeName,
    runtimeVersion: m.runtimeVersion,
    runtimeApiVersion: m.runtimeApiVersion,
  };
}

export function podSandboxMetadataFromCri(m: cri.PodSandboxMetadata | undefined): PodSandboxMetadata {
  return { name: m?.name ?? '', uid: m?.uid ?? '', namespace: m?.namespace ?? '', attempt: m?.attempt ?? 0 };
}

export function containerMetadataFromCri(m: cri.ContainerMetadata | undefined): ContainerMetadata {
  return { name: m?.name ?? '', attempt: m?.attempt ?? 0 };
}

export function imageSpecFromCri(m: cri.ImageSpec | undefined): ImageSpec {
  const spec: ImageSpec = { image: m?.image ?? '', annotations: strMap(m?.annotations ?? {}) };
  if (m?.userSpecifiedImage) spec.userSpecifiedImage = m.userSpecifiedImage;
  if (m?.runtimeHandler) spec.runtimeHandler = m.runtimeHandler;
  return spec;
}

function int64ValueFromCri(m: cri.Int64Value): Int64Value {
  return { value: Number(m.value) };
}

function uint64ValueFromCri(m: cri.UInt64Value): UInt64Value {
  return { value: Number(m.value) };
}

export function namespaceOptionFromCri(m: cri.NamespaceOption): NamespaceOption {
  const out: NamespaceOption = {
    network: known(m.network, 'POD'),
    pid: known(m.pid, 'POD'),
    ipc: known(m.ipc, 'POD'),
  };
  if (m.targetId) out.targetId = m.targetId;
  return out;
}

function securityProfileFromCri(m: cri.SecurityProfile): SecurityProfile {
  return { profileType: known(m.profileType, 'RuntimeDefault'), localhostRef: m.localhostRef };
}

export function linuxContainerResourcesFromCri(m: cri.LinuxContainerResources): LinuxContainerResources {
  return {
    cpuPeriod: Number(m.cpuPeriod),
    cpuQuota: Number(m.cpuQuota),
    cpuShares: Number(m.cpuShares),
    memoryLimitInBytes: Number(m.memoryLimitInBytes),
    oomScoreAdj: Number(m.oomScoreAdj),
    cpusetCpus: m.cpusetCpus,
    cpusetMems: m.cpusetMems,
    unified: strMap(m.unified),
    memorySwapLimitInBytes: Number(m.memorySwapLimitInBytes),
  };
}

function linuxSandboxSecurityContextFromCri(m: cri.LinuxSandboxSecurityContext): LinuxSandboxSecurityContext {
  return compact({
    namespaceOptions: optional(m.namespaceOptions, namespaceOptionFromCri),
    runAsUser: optional(m.runAsUser, int64ValueFromCri),
    runAsGroup: optional(m.runAsGroup, int64ValueFromCri),
    readonlyRootfs: m.readonlyRootfs,
    supplementalGroups: m.supplementalGroups.map(Number),
    privileged: m.privileged,
    seccomp: optional(m.seccomp, securityProfileFromCri),
  });
}

function linuxPodSandboxConfigFromCri(m: cri.LinuxPodSandboxConfig): LinuxPodSandboxConfig {
  return compact({
    cgroupParent: m.cgroupParent,
    securityContext: optional(m.securityContext, linuxSandboxSecurityContextFromCri),
    sysctls: strMap(m.sysctls),
    resources: optional(m.resources, linuxContainerResourcesFromCri),
    overhead: optional(m.overhead, linuxContainerResourcesFromCri),
  });
}

/** As the test server reads a RunPodSandbox or CreateContainer request back. */
export function podSandboxConfigFromCri(m: cri.PodSandboxConfig | undefined): PodSandboxConfig {
  return compact({
    metadata: podSandboxMetadataFromCri(m?.metadata),
    hostname: m?.hostname ?? '',
    logDirectory: m?.logDirectory ?? '',
    dnsConfig: optional(m?.dnsConfig, (d) => ({
      servers: d.servers,
      searches: d.searches,
      options: d.options,
    })),
    portMappings: (m?.portMappings ?? []).map((p) => ({
      protocol: known(p.protocol, 'TCP'),
      containerPort: p.containerPort,
      hostPort: p.hostPort,
      hostIp: p.hostIp,
    })),
    labels: strMap(m?.labels ?? {}),
    annotations: strMap(m?.annotations ?? {}),
    linux: optional(m?.linux, linuxPodSandboxConfigFromCri),
  });
}

export function mountFromCri(m: cri.Mount): Mount {
  return {
    containerPath: m.containerPath,
    hostPath: m.hostPath,
    readonly: m.readonly,
    selinuxRelabel: m.selinuxRelabel,
    propagation: known(m.propagation, 'PROPAGATION_PRIVATE'),
  };
}

function linuxContainerSecurityContextFromCri(
  m: cri.LinuxContainerSecurityContext,
): LinuxContainerSecurityContext {
  return compact({
    capabilities: optional(m.capabilities, (c) => ({
      addCapabilities: c.addCapabilities,
      dropCapabilities: c.dropCapabilities,
    })),
    privileged: m.privileged,
    namespaceOptions: optional(m.namespaceOptions, namespaceOptionFromCri),
    runAsUser: optional(m.runAsUser, int64ValueFromCri),
    runAsGroup: optional(m.runAsGroup, int64ValueFromCri),
    runAsUsername: m.runAsUsername,
    readonlyRootfs: m.readonlyRootfs,
    supplementalGroups: m.supplementalGroups.map(Number),
    noNewPrivs: m.noNewPrivs,
    maskedPaths: m.maskedPaths,
    readonlyPaths: m.readonlyPaths,
    seccomp: optional(m.seccomp, securityProfileFromCri),
    apparmor: optional(m.apparmor, securityProfileFromCri),
    apparmorProfile: m.apparmorProfile === '' ? undefined : m.apparmorProfile,
  });
}

function linuxContainerConfigFromCri(m: cri.LinuxContainerConfig): LinuxContainerConfig {
  return compact({
    resources: optional(m.resources, linuxContainerResourcesFromCri),
    securityContext: optional(m.securityContext, linuxContainerSecurityContextFromCri),
  });
}

/** As the test server reads a CreateContainer request back. */
export function containerConfigFromCri(m: cri.ContainerConfig | undefined): ContainerConfig {
  return compact({
    metadata: containerMetadataFromCri(m?.metadata),
    image: imageSpecFromCri(m?.image),
    command: m?.command ?? [],
    args: m?.args ?? [],
    workingDir: m?.workingDir ?? '',
    envs: (m?.envs ?? []).map((e) => ({ key: e.key, value: e.value })),
    mounts: (m?.mounts ?? []).map(mountFromCri),
    labels: strMap(m?.labels ?? {}),
    annotations: strMap(m?.annotations ?? {}),
    logPath: m?.logPath ?? '',
    stdin: m?.stdin ?? false,
    stdinOnce: m?.stdinOnce ?? false,
    tty: m?.tty ?? false,
    linux: optional(m?.linux, linuxContainerConfigFromCri),
    // Only when there are some, so that configs without devices read back as they were written.
    devices: m?.devices.length
      ? m.devices.map((d) => ({
          containerPath: d.containerPath,
          hostPath: d.hostPath,
          permissions: d.permissions,
        }))
      : undefined,
    CDIDevices: m?.CDIDevices.length ? m.CDIDevices.map((d) => ({ name: d.name })) : undefined,
  });
}

export function podSandboxFromCri(m: cri.PodSandbox): PodSandbox {
  return {
    id: m.id,
    metadata: podSandboxMetadataFromCri(m.metadata),
    state: known(m.state, 'SANDBOX_NOTREADY'),
    createdAt: Number(m.createdAt),
    labels: strMap(m.labels),
    annotations: strMap(m.annotations),
    runtimeHandler: m.runtimeHandler,
  };
}

export function podSandboxStatusFromCri(m: cri.PodSandboxStatus): PodSandboxStatus {
  return compact({
    id: m.id,
    metadata: podSandboxMetadataFromCri(m.metadata),
    state: known(m.state, 'SANDBOX_NOTREADY'),
    createdAt: Number(m.createdAt),
    network: optional(m.network, (n) => ({
      ip: n.ip,
      additionalIps: n.additionalIps.map((p) => ({ ip: p.ip })),
    })),
    linux: optional(m.linux, (l) =>
      compact({
        namespaces: optional(l.namespaces, (ns) => ({
          options: optional(ns.options, namespaceOptionFromCri),
        })),
      }),
    ),
    labels: strMap(m.labels),
    annotations: strMap(m.annotations),
    runtimeHandler: m.runtimeHandler,
  });
}

export function containerFromCri(m: cri.Container): Container {
  return {
    id: m.id,
    podSandboxId: m.podSandboxId,
    metadata: containerMetadataFromCri(m.metadata),
    image: imageSpecFromCri(m.image),
    imageRef: m.imageRef,
    state: known(m.state, 'CONTAINER_UNKNOWN'),
    createdAt: Number(m.createdAt),
    labels: strMap(m.labels),
    annotations: strMap(m.annotations),
  };
}

export function containerStatusFromCri(m: cri.ContainerStatus): ContainerStatus {
  return {
    id: m.id,
    metadata: containerMetadataFromCri(m.metadata),
    state: known(m.state, 'CONTAINER_UNKNOWN'),
    createdAt: Number(m.createdAt),
    startedAt: Number(m.startedAt),
    finishedAt: Number(m.finishedAt),
    exitCode: m.exitCode,
    image: imageSpecFromCri(m.image),
    imageRef: m.imageRef,
    reason: m.reason,
    message: m.message,
    labels: strMap(m.labels),
    annotations: strMap(m.annotations),
    mounts: m.mounts.map(mountFromCri),
    logPath: m.logPath,
  };
}

export function execSyncResponseFromCri(m: cri.ExecSyncResponse): ExecSyncResponse {
  return { stdout: m.stdout, stderr: m.stderr, exitCode: m.exitCode };
}

export function runtimeStatusFromCri(m: cri.RuntimeStatus | undefined): RuntimeStatus {
  return {
    conditions: (m?.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
    })),
  };
}

export function filesystemUsageFromCri(m: cri.FilesystemUsage): FilesystemUsage {
  return compact({
    timestamp: Number(m.timestamp),
    fsId: optional(m.fsId, (f) => ({ mountpoint: f.mountpoint })),
    usedBytes: optional(m.usedBytes, uint64ValueFromCri),
    inodesUsed: optional(m.inodesUsed, uint64ValueFromCri),
  });
}

export function containerStatsFromCri(m: cri.ContainerStats): ContainerStats {
  return compact({
    attributes: {
      id: m.attributes?.id ?? '',
      metadata: containerMetadataFromCri(m.attributes?.metadata),
      labels: strMap(m.attributes?.labels ?? {}),
      annotations: strMap(m.attributes?.annotations ?? {}),
    },
    cpu: optional(m.cpu, (c) =>
      compact({
        timestamp: Number(c.timestamp),
        usageCoreNanoSeconds: optional(c.usageCoreNanoSeconds, uint64ValueFromCri),
        usageNanoCores: optional(c.usageNanoCores, uint64ValueFromCri),
      }),
    ),
    memory: optional(m.memory, (mem) =>
      compact({
        timestamp: Number(mem.timestamp),
        workingSetBytes: optional(mem.workingSetBytes, uint64ValueFromCri),
        availableBytes: optional(mem.availableBytes, uint64ValueFromCri),
        usageBytes: optional(mem.usageBytes, uint64ValueFromCri),
        rssBytes: optional(mem.rssBytes, uint64ValueFromCri),
        pageFaults: optional(mem.pageFaults, uint64ValueFromCri),
        majorPageFaults: optional(mem.majorPageFaults, uint64ValueFromCri),
      }),
    ),
    writableLayer: optional(m.writableLayer, filesystemUsageFromCri),
  });
}

export function imageFromCri(m: cri.Image): Image {
  return compact({
    id: m.id,
    repoTags: m.repoTags,
    repoDigests: m.repoDigests,
    size: Number(m.size),
    uid: optional(m.uid, int64ValueFromCri),
    username: m.username,
    spec: optional(m.spec, imageSpecFromCri),
    pinned: m.pinned,
  });
}

/** Request filters as the test server reads them back. */
export function podSandboxFilterFromCri(m: cri.PodSandboxFilter | undefined): PodSandboxFilter {
  const filter: PodSandboxFilter = {};
  if (!m) return filter;
  if (m.id) filter.id = m.id;
  if (m.state) filter.state = known(m.state.state, 'SANDBOX_NOTREADY');
  if (Object.keys(m.labelSelector).length > 0) filter.labelSelector = strMap(m.labelSelector);
  return filter;
}

export function containerFilterFromCri(
  m: cri.ContainerFilter | cri.ContainerStatsFilter | undefined,
): ContainerFilter {
  const filter: ContainerFilter = {};
  if (!m) return filter;
  if (m.id) filter.id = m.id;
  if (m.podSandboxId) filter.podSandboxId = m.podSandboxId;
  if ('state' in m && m.state) filter.state = known(m.state.state, 'CONTAINER_UNKNOWN');
  if (Object.keys(m.labelSelector).length > 0) filter.labelSelector = strMap(m.labelSelector);
  return filter;
}

// ---- project -> generated, where the shapes differ ----

export function podSandboxFilterToCri(
  filter: PodSandboxFilter | undefined,
): cri.PodSandboxFilter | undefined {
  if (!filter) return undefined;
  return {
    id: filter.id ?? '',
    // The state is wrapped so that "no state filter" differs from SANDBOX_READY, the enum's zero.
    state: filter.state === undefined ? undefined : { state: filter.state },
    labelSelector: filter.labelSelector ?? {},
  };
}

export function containerFilterToCri(filter: ContainerFilter | undefined): cri.ContainerFilter | undefined {
  if (!filter) return undefined;
  return {
    id: filter.id ?? '',
    state: filter.state === undefined ? undefined : { state: filter.state },
    podSandboxId: filter.podSandboxId ?? '',
    labelSelector: filter.labelSelector ?? {},
  };
}
