/**
 * The ContainerConfig for one start of a container (upstream: generateContainerConfig, makeMounts,
 * applyPlatformSpecificContainerConfig).
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import type { Container, Pod, Quantity } from '../api/core-v1.js';
import type { CDIDevice, ContainerConfig, Device, Image, Mount } from '../cri/types.js';
import { hashContainer } from './container-hash.js';
import { expandContainerCommandAndArgs, makeEnvironmentVariables, type EnvSources } from './container-env.js';
import { generateLinuxContainerResources } from './container-resources.js';
import type { SwapSettings } from './container-swap.js';
import type { EventRecorder } from './event-recorder.js';
import { newContainerAnnotations, newContainerLabels } from './labels.js';
import { buildContainerLogsDirectory } from './sandbox-config.js';
import { generateLinuxContainerSecurityContext, verifyRunAsNonRoot } from './security-context.js';
import { checkedPodUid } from '../api/pod-uid.js';

/** The API server's defaults for these; pods from files may come without them. */
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';
export const DEFAULT_TERMINATION_MESSAGE_POLICY = 'File';

export interface ContainerConfigOptions {
  podLogsDir: string;
  /** --root-dir: pods' folders live in `<rootDir>/pods/<uid>`. */
  rootDir: string;
  nodeName: string;
  hostIPs: string[];
  nodeAllocatable: { cpu: Quantity; memory: Quantity; 'ephemeral-storage'?: Quantity };
  memoryCapacityBytes: number;
  cpuCFSQuota: boolean;
  cpuCFSQuotaPeriodUs: number;
  /** What containers may swap (memorySwap.swapBehavior); without it swap is left to the runtime. */
  swap?: SwapSettings;
  seccompDefault: boolean;
  envSources: EnvSources;
  /** Where warnings about the spec go (skipped envFrom keys). */
  recorder?: EventRecorder;
  /** The container's volume mounts (the volume manager's); the termination message mount is added here. */
  volumeMounts?: Mount[];
  /** What the container's device plugins' Allocate answered (upstream: the device manager's run options). */
  devices?: DeviceRunOptions;
  /** The CPU manager's cpuset for the container (upstream: PreCreateContainer's CpusetCpus). */
  cpusetCpus?: string;
  /** The memory manager's NUMA nodes for the container (upstream: PreCreateContainer's CpusetMems). */
  cpusetMems?: string;
  /** A short random name for the termination message file; injectable for tests. */
  randomId?: () => string;
  signal?: AbortSignal;
}

/** Env, mounts, device nodes, annotations and CDI devices that a container's devices bring. */
export interface DeviceRunOptions {
  envs: { name: string; value: string }[];
  mounts: Mount[];
  devices: Device[];
  annotations: { name: string; value: string }[];
  cdiDevices: CDIDevice[];
}

export interface ContainerStartInput {
  pod: Pod;
  container: Container;
  restartCount: number;
  /** The image as the runtime resolved it (an image ID). */
  imageRef: string;
  /** ImageStatus of that image, for its user. */
  image: Image | undefined;
  podIP: string;
  podIPs: string[];
  /** An ephemeral container's target container (the runtime's ID), for its process namespace. */
  targetContainerId?: string;
}

/** `<name>/<restartCount>.log`, relative to the pod's log folder. */
export function buildContainerLogsPath(containerName: string, restartCount: number): string {
  return path.join(containerName, `${restartCount}.log`);
}

/** The container with the API server's defaults for the fields this layer reads, where a pod from a file lacks them. */
export function withContainerDefaults(container: Container): Container {
  return {
    ...container,
    terminationMessagePath: container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH,
    terminationMessagePolicy: container.terminationMessagePolicy ?? DEFAULT_TERMINATION_MESSAGE_POLICY,
  };
}

/** Throws KubeletError CREATE_CONTAINER_CONFIG when the spec cannot be turned into a config. */
export async function generateContainerConfig(
  input: ContainerStartInput,
  opts: ContainerConfigOptions,
): Promise<ContainerConfig> {
  const { pod, restartCount } = input;
  const container = withContainerDefaults(input.container);
  verifyRunAsNonRoot(pod, container, input.image);

  const envs = await makeEnvironmentVariables(pod, container, {
    podIP: input.podIP,
    podIPs: input.podIPs,
    hostIPs: opts.hostIPs,
    nodeName: opts.nodeName,
    nodeAllocatable: opts.nodeAllocatable,
    sources: opts.envSources,
    recorder: opts.recorder,
    signal: opts.signal,
  });
  const { command, args } = expandContainerCommandAndArgs(container, envs);

  await mkdir(buildContainerLogsDirectory(opts.podLogsDir, pod, container.name), {
    recursive: true,
    mode: 0o755,
  });
  // Upstream's order: the devices' mounts, then the volumes', then the termination message.
  const dev = opts.devices;
  const mounts = [...(dev?.mounts ?? []), ...(opts.volumeMounts ?? [])];
  const terminationMount = await makeTerminationMessageMount(pod, container, opts);
  if (terminationMount) mounts.push(terminationMount);

  return {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: input.imageRef, userSpecifiedImage: container.image ?? '' },
    command,
    args,
    workingDir: container.workingDir ?? '',
    // The devices' env first: the container's own, after it, wins where both set a name.
    envs: [...(dev?.envs ?? []), ...envs].map((e) => ({ key: e.name, value: e.value })),
    mounts,
    labels: newContainerLabels(container, pod),
    // The kubelet's own annotations win over a device plugin's.
    annotations: {
      ...Object.fromEntries((dev?.annotations ?? []).map((a) => [a.name, a.value])),
      ...newContainerAnnotations(container, pod, { hash: hashContainer(container), restartCount }),
    },
    logPath: buildContainerLogsPath(container.name, restartCount),
    stdin: container.stdin === true,
    stdinOnce: container.stdinOnce === true,
    tty: container.tty === true,
    linux: {
      resources: {
        ...generateLinuxContainerResources(pod, container, opts),
        cpusetCpus: opts.cpusetCpus ?? '',
        cpusetMems: opts.cpusetMems ?? '',
      },
      securityContext: generateLinuxContainerSecurityContext(pod, container, {
        image: input.image,
        seccompDefault: opts.seccompDefault,
        seccompProfileRoot: path.join(opts.rootDir, 'seccomp'),
        pidNamespaceTargetId: input.targetContainerId,
      }),
    },
    ...(dev && dev.devices.length > 0 ? { devices: dev.devices } : {}),
    ...(dev && dev.cdiDevices.length > 0 ? { CDIDevices: dev.cdiDevices } : {}),
  };
}

/** `<rootDir>/pods/<uid>/containers/<name>`: per-container files the kubelet keeps for the pod. */
export function podContainerDir(rootDir: string, podUid: string, containerName: string): string {
  return path.join(rootDir, 'pods', checkedPodUid(podUid), 'containers', containerName);
}

/**
 * Creates an empty, world-writable file for this start of the container and mounts it at its
 * terminationMessagePath; the kubelet reads it back when the container exits. The random name
 * keeps one start's message from another's.
 */
async function makeTerminationMessageMount(
  pod: Pod,
  container: Container,
  opts: ContainerConfigOptions,
): Promise<Mount | undefined> {
  if (!container.terminationMessagePath) return undefined;
  const dir = podContainerDir(opts.rootDir, pod.metadata.uid ?? '', container.name);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  const hostPath = path.join(dir, (opts.randomId ?? defaultRandomId)());
  const file = await open(hostPath, 'w', 0o666);
  await file.close();
  // The mode given to open is masked by the umask; the container's user may be anyone.
  await chmod(hostPath, 0o666);
  return {
    containerPath: container.terminationMessagePath,
    hostPath,
    readonly: false,
    selinuxRelabel: false,
    propagation: 'PROPAGATION_PRIVATE',
  };
}

function defaultRandomId(): string {
  return randomBytes(4).toString('hex');
}
