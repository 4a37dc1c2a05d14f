/**
 * The pod resources API, `v1.PodResourcesLister` on `<root-dir>/pod-resources/kubelet.sock`
 * (upstream: pkg/kubelet/apis/podresources, v1.30): what monitoring agents read to learn which
 * devices each container holds and which the node can still give.
 *
 * `cpu_ids` are a container's exclusive CPUs and the node's allocatable ones under the CPU manager's
 * static policy (empty under `none`, as upstream). `memory` is the memory manager's: a container's
 * blocks (type, size, NUMA nodes) and each node's allocatable memory and huge pages under `Static`,
 * nothing under `None`, as upstream. Dynamic resources (DRA) are not reported.
 * `Get` answers only with the KubeletPodResourcesGet feature gate on (alpha in v1.30, off by
 * default). Calls past upstream's rate limit (100 per second, bursts of 10) fail with
 * RESOURCE_EXHAUSTED. The deprecated v1alpha1 service is not served.
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Container, Pod } from '../api/core-v1.js';
import type { Clock } from '../lib/clock.js';
import { GrpcUnaryServer, unaryMethod } from '../lib/grpc-server/grpc-unary-server.js';
import { shutdownGrpcServer } from '../lib/grpc-shutdown.js';
import { GrpcStatus, grpcCallError } from '../lib/grpc-status.js';
import { grpcMethods } from '../lib/grpc-definitions.js';
import { logger } from '../lib/log.js';
import { TokenBucketRateLimiter } from '../lib/token-bucket.js';
import type { ResourceDeviceInstances } from '../cm/devicemanager/manager.js';
import {
  PodResourcesListerDefinition,
  AllocatableResourcesResponse,
  type ContainerDevices,
  type ContainerMemory,
  type ContainerResources,
  type GetPodResourcesRequest,
  GetPodResourcesResponse,
  ListPodResourcesResponse,
  type PodResources,
} from './generated/podresources/v1/podresources.js';

const log = logger('podresources');

const LISTER = grpcMethods(PodResourcesListerDefinition);

/** Upstream's config.DefaultKubeletPodResourcesDirName and podresources.Socket. */
export const POD_RESOURCES_DIR_NAME = 'pod-resources';
export const POD_RESOURCES_SOCKET = 'kubelet.sock';
/** Upstream's podresourcesgrpc.DefaultQPS and DefaultBurstTokens. */
export const DEFAULT_QPS = 100;
export const DEFAULT_BURST_TOKENS = 10;

export interface PodsProvider {
  getPods(): Pod[];
  getPodByName(namespace: string, name: string): Pod | undefined;
}

/** The device manager, as this API reads it. */
export interface DevicesProvider {
  updateAllocatedDevices(): void;
  getDevices(podUid: string, containerName: string): ResourceDeviceInstances;
  getAllocatableDevices(): ResourceDeviceInstances;
}

/** The CPU manager (static policy), as this API reads it. */
export interface CPUsProvider {
  /** The container's exclusive CPUs, ascending; empty on the shared pool. */
  getCPUs(podUid: string, containerName: string): number[];
  /** All CPUs but the reserved ones. */
  getAllocatableCPUs(): number[];
}

/** One memory block of the memory manager (its state.Block). */
export interface MemoryBlockInfo {
  numaAffinity: readonly number[] | null;
  type: string;
  size: number;
}

/** The memory manager, as this API reads it. */
export interface MemoryProvider {
  /** The container's blocks; empty when it has none (or under None). */
  getMemory(podUid: string, containerName: string): readonly MemoryBlockInfo[];
  /** One block per NUMA node and memory type with allocatable memory; empty under None. */
  getAllocatableMemory(): readonly MemoryBlockInfo[];
}

/** upstream's containerMemoryFromBlock: a block's nodes become its topology, an empty list if none. */
export function containerMemoryOf(blocks: readonly MemoryBlockInfo[]): ContainerMemory[] {
  return blocks.map((b) => ({
    memoryType: b.type,
    size: b.size,
    topology: { nodes: (b.numaAffinity ?? []).map((id) => ({ ID: id })) },
  }));
}

export interface PodResourcesServerOptions {
  /** `<root-dir>/pod-resources`. */
  socketDir: string;
  pods: PodsProvider;
  devices: DevicesProvider;
  /** Absent under cpuManagerPolicy none: no CPUs are reported. */
  cpus?: CPUsProvider;
  /** Absent: no memory is reported. */
  memory?: MemoryProvider;
  clock: Clock;
  /** The KubeletPodResourcesGet feature gate (default false in v1.30). */
  getEnabled?: boolean;
  qps?: number;
  burst?: number;
}

/** One ContainerDevices per device and NUMA node, as upstream's containerDevicesFromResourceDeviceInstances. */
export function containerDevicesOf(devs: ResourceDeviceInstances): ContainerDevices[] {
  const out: ContainerDevices[] = [];
  for (const [resourceName, byId] of devs)
    for (const [id, d] of byId) {
      // A plugin need not report topology: the device is listed anyway, without one.
      if (d.numaNodes.length === 0) out.push({ resourceName, deviceIds: [id], topology: undefined });
      else
        for (const n of d.numaNodes)
          out.push({ resourceName, deviceIds: [id], topology: { nodes: [{ ID: n }] } });
    }
  return out;
}

/** The handlers, apart from the socket, so that unit tests call them directly. */
export class PodResourcesLister {
  constructor(private readonly opts: Omit<PodResourcesServerOptions, 'socketDir' | 'clock'>) {}

  private containerResources(pod: Pod, container: Container): ContainerResources {
    return {
      name: container.name,
      devices: containerDevicesOf(this.opts.devices.getDevices(pod.metadata.uid ?? '', container.name)),
      cpuIds: this.opts.cpus?.getCPUs(pod.metadata.uid ?? '', container.name) ?? [],
      memory: containerMemoryOf(this.opts.memory?.getMemory(pod.metadata.uid ?? '', container.name) ?? []),
      dynamicResources: [],
    };
  }

  private podResources(pod: Pod): PodResources {
    // Sidecars (restartable init containers) hold resources as long as the pod runs (SidecarContainers, on in v1.30).
    const sidecars = (pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always');
    return {
      name: pod.metadata.name ?? '',
      namespace: pod.metadata.namespace ?? '',
      containers: [...sidecars, ...pod.spec.containers].map((c) => this.containerResources(pod, c)),
    };
  }

  list(): ListPodResourcesResponse {
    const pods = this.opts.pods.getPods();
    this.opts.devices.updateAllocatedDevices();
    return ListPodResourcesResponse.fromPartial({ podResources: pods.map((p) => this.podResources(p)) });
  }

  getAllocatableResources(): AllocatableResourcesResponse {
    return AllocatableResourcesResponse.fromPartial({
      devices: containerDevicesOf(this.opts.devices.getAllocatableDevices()),
      cpuIds: this.opts.cpus?.getAllocatableCPUs() ?? [],
      memory: containerMemoryOf(this.opts.memory?.getAllocatableMemory() ?? []),
    });
  }

  /** Throws upstream's errors (the gate off, the pod unknown). */
  get(req: GetPodResourcesRequest): GetPodResourcesResponse {
    if (!this.opts.getEnabled) throw new Error('PodResources API Get method disabled');
    const pod = this.opts.pods.getPodByName(req.podNamespace, req.podName);
    if (!pod) throw new Error(`pod ${req.podName} in namespace ${req.podNamespace} not found`);
    this.opts.devices.updateAllocatedDevices();
    return GetPodResourcesResponse.fromPartial({ podResources: this.podResources(pod) });
  }
}

export class PodResourcesServer {
  private server: GrpcUnaryServer | undefined;
  readonly lister: PodResourcesLister;
  private readonly limiter: TokenBucketRateLimiter;

  constructor(private readonly opts: PodResourcesServerOptions) {
    this.lister = new PodResourcesLister(opts);
    this.limiter = new TokenBucketRateLimiter(
      opts.qps ?? DEFAULT_QPS,
      opts.burst ?? DEFAULT_BURST_TOKENS,
      opts.clock,
    );
  }

  get socketPath(): string {
    return path.join(this.opts.socketDir, POD_RESOURCES_SOCKET);
  }

  /** Each call passes the rate limiter first (upstream: LimiterUnaryServerInterceptor); errors are UNKNOWN, as Go's are. */
  private limited<Req, Res>(fn: (req: Req) => Res): (req: Req) => Res {
    return (req) => {
      if (!this.limiter.tryAccept())
        throw grpcCallError(GrpcStatus.RESOURCE_EXHAUSTED, 'rejected by rate limit');
      return fn(req);
    };
  }

  /** Makes the folder, replaces a stale socket, and serves (upstream: ListenAndServePodResources). */
  async start(): Promise<void> {
    await mkdir(this.opts.socketDir, { recursive: true, mode: 0o750 });
    await rm(this.socketPath, { force: true });
    this.server = await GrpcUnaryServer.listen({
      socketPath: this.socketPath,
      methods: [
        unaryMethod(
          LISTER.list,
          this.limited(() => this.lister.list()),
        ),
        unaryMethod(
          LISTER.getAllocatableResources,
          this.limited(() => this.lister.getAllocatableResources()),
        ),
        unaryMethod(
          LISTER.get,
          this.limited((req: GetPodResourcesRequest) => this.lister.get(req)),
        ),
      ],
    });
    log.v(2, 'Serving the pod resources API', { socket: this.socketPath });
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await shutdownGrpcServer(server);
    await rm(this.socketPath, { force: true });
  }
}
