/**
 * Test equipment: an in-process CRI runtime.v1 server on a unix socket, with an in-memory store of
 * sandboxes, containers and images. Unit tests drive the real gRPC client against it, and
 * bench/relist fills it with hundreds of containers. It follows containerd's answers where the
 * kubelet can tell (NotFound for the status of an unknown object, idempotent removal, names
 * reserved per sandbox), and lets a test set container states, inject errors and delay replies.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import {
  containerConfigFromCri,
  containerFilterFromCri,
  imageSpecFromCri,
  linuxContainerResourcesFromCri,
  podSandboxConfigFromCri,
  podSandboxFilterFromCri,
} from '../convert.js';
import { grpcJsService } from '../../lib/grpc-definitions.js';
import * as cri from '../generated/runtime/v1/api.js';
import { methodName } from '../grpc-connection.js';
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerState,
  ContainerStats,
  ContainerStatus,
  ExecSyncResponse,
  Image,
  ImageSpec,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxState,
  PodSandboxStatus,
  RuntimeCondition,
  VersionResponse,
} from '../types.js';

export interface FakeSandbox {
  id: string;
  config: PodSandboxConfig;
  runtimeHandler: string;
  state: PodSandboxState;
  createdAt: number;
  ip: string;
}

export interface FakeContainer {
  id: string;
  podSandboxId: string;
  config: ContainerConfig;
  state: ContainerState;
  imageRef: string;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  resources?: LinuxContainerResources;
}

/** What a test's exec handler returns; it may also throw a FakeCriError. */
export type FakeExecHandler = (
  container: FakeContainer,
  cmd: string[],
  timeoutSeconds: number,
) => ExecSyncResponse | Promise<ExecSyncResponse>;

/** Throw from a handler (or give to failNext) to answer with a gRPC status. */
export class FakeCriError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
    this.name = 'FakeCriError';
  }
}

export interface FakeCriServerOptions {
  /** Where to listen; a fresh temporary folder's `cri.sock` when absent. */
  socketPath?: string;
  /** Images present from the start; pause:3.9 and busybox:latest when absent. */
  images?: Image[];
  version?: Partial<VersionResponse>;
}

interface InjectedFailure {
  error: FakeCriError;
  remaining: number;
  match?: (request: WireMessage) => boolean;
}

const NS_PER_MS = 1_000_000;

/** A decoded request, as the generated decoder made it, looked at by field name. */
export type WireMessage = Record<string, unknown>;

/** The generated `fromPartial` of a unary method's response message (`Version` → VersionResponse). */
function responseOf(method: string): ((value: object) => object) | undefined {
  const type = (cri as unknown as Record<string, { fromPartial?: (value: object) => object }>)[
    `${method}Response`
  ];
  return type?.fromPartial?.bind(type);
}

function newId(): string {
  return randomBytes(32).toString('hex');
}

/** Expands a short image name the way containerd does: `busybox` is `docker.io/library/busybox:latest`. */
export function normalizeImageRef(ref: string): string {
  if (ref.startsWith('sha256:')) return ref;
  let name = ref;
  const firstSlash = name.indexOf('/');
  const firstPart = firstSlash < 0 ? '' : name.slice(0, firstSlash);
  const hasDomain =
    firstSlash >= 0 && (firstPart.includes('.') || firstPart.includes(':') || firstPart === 'localhost');
  if (!hasDomain) name = `docker.io/${firstSlash < 0 ? 'library/' : ''}${name}`;
  const lastSlash = name.lastIndexOf('/');
  const tail = name.slice(lastSlash + 1);
  if (!tail.includes(':') && !tail.includes('@')) name += ':latest';
  return name;
}

function fakeImage(ref: string, size: number): Image {
  const normalized = normalizeImageRef(ref);
  const digest = randomBytes(32).toString('hex');
  const repo = normalized.slice(0, normalized.lastIndexOf(':'));
  return {
    id: `sha256:${randomBytes(32).toString('hex')}`,
    repoTags: [normalized],
    repoDigests: [`${repo}@sha256:${digest}`],
    size,
    username: '',
    pinned: false,
  };
}

function matchesLabels(
  labels: Record<string, string>,
  selector: Record<string, string> | undefined,
): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector)) if (labels[k] !== v) return false;
  return true;
}

function notFound(kind: string, id: string): FakeCriError {
  return new FakeCriError(
    grpc.status.NOT_FOUND,
    `an error occurred when try to find ${kind} "${id}": not found`,
  );
}

function defaultExec(_container: FakeContainer, cmd: string[]): ExecSyncResponse {
  const [program, ...args] = cmd;
  const empty = Buffer.alloc(0);
  if (program === 'echo') return { stdout: Buffer.from(args.join(' ') + '\n'), stderr: empty, exitCode: 0 };
  if (program === 'false') return { stdout: empty, stderr: empty, exitCode: 1 };
  if (program === 'true') return { stdout: empty, stderr: empty, exitCode: 0 };
  return { stdout: empty, stderr: Buffer.from(`exec: ${program ?? ''}: not found\n`), exitCode: 127 };
}

export class FakeCriServer {
  readonly socketPath: string;
  readonly sandboxes = new Map<string, FakeSandbox>();
  readonly containers = new Map<string, FakeContainer>();
  /** Keyed by image id. */
  readonly images = new Map<string, Image>();
  /** How often each method was called, by proto name (`ListContainers`). */
  readonly callCounts = new Map<string, number>();
  /** The last decoded request of each method, as it came off the wire. */
  readonly lastRequests = new Map<string, WireMessage>();
  runtimeConditions: RuntimeCondition[] = [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ];
  execHandler: FakeExecHandler = defaultExec;

  private readonly version: VersionResponse;
  private readonly ownedDir: string | undefined;
  private readonly failures = new Map<string, InjectedFailure[]>();
  private readonly delaysMs = new Map<string, number>();
  private readonly pendingDelays = new Set<{ timer: NodeJS.Timeout; release: () => void }>();
  private server: grpc.Server | undefined;
  private nextIp = 2;

  private constructor(options: FakeCriServerOptions) {
    if (options.socketPath) {
      this.socketPath = options.socketPath;
    } else {
      this.ownedDir = mkdtempSync(join(tmpdir(), 'fake-cri-'));
      this.socketPath = join(this.ownedDir, 'cri.sock');
    }
    this.version = {
      version: '0.1.0',
      runtimeName: 'fake-cri',
      runtimeVersion: '0.1.0',
      runtimeApiVersion: 'v1',
      ...options.version,
    };
    const images = options.images ?? [
      fakeImage('registry.k8s.io/pause:3.9', 311_000),
      fakeImage('busybox:latest', 2_100_000),
    ];
    for (const image of images) this.images.set(image.id, image);
  }

  /** Creates the server and starts listening. */
  static async start(options: FakeCriServerOptions = {}): Promise<FakeCriServer> {
    const server = new FakeCriServer(options);
    await server.listen();
    return server;
  }

  get endpoint(): string {
    return `unix://${this.socketPath}`;
  }

  get listening(): boolean {
    return this.server !== undefined;
  }

  /** Starts listening again after stop(), on the same socket and with the same store. */
  async listen(): Promise<void> {
    if (this.server) return;
    await unlink(this.socketPath).catch(() => undefined);
    const server = new grpc.Server();
    const runtimeService = grpcJsService(cri.RuntimeServiceDefinition);
    const imageService = grpcJsService(cri.ImageServiceDefinition);
    server.addService(runtimeService, this.handlers(runtimeService));
    server.addService(imageService, this.handlers(imageService));
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(`unix://${this.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      );
    });
    this.server = server;
  }

  /** Stops listening and drops open connections, as a runtime that died would; the store is kept. */
  async stop(): Promise<void> {
    for (const pending of this.pendingDelays) {
      clearTimeout(pending.timer);
      pending.release();
    }
    this.pendingDelays.clear();
    const server = this.server;
    this.server = undefined;
    server?.forceShutdown();
    await unlink(this.socketPath).catch(() => undefined);
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.listen();
  }

  /** Stops and removes the temporary folder it made. */
  async close(): Promise<void> {
    await this.stop();
    if (this.ownedDir) rmSync(this.ownedDir, { recursive: true, force: true });
  }

  // ---- controls for tests ----

  /** Answers the next `times` calls of method (those whose request matches, if given) with this status. */
  failNext(
    method: string,
    code: grpc.status,
    message: string,
    options: { times?: number; match?: (request: WireMessage) => boolean } = {},
  ): void {
    const list = this.failures.get(method) ?? [];
    list.push({
      error: new FakeCriError(code, message),
      remaining: options.times ?? 1,
      match: options.match,
    });
    this.failures.set(method, list);
  }

  /** Holds every reply of method for ms (0 removes the delay). */
  setDelay(method: string, ms: number): void {
    if (ms > 0) this.delaysMs.set(method, ms);
    else this.delaysMs.delete(method);
  }

  /** Moves a container to state, as if its process started or exited (exit details default to a clean exit). */
  setContainerState(
    id: string,
    state: ContainerState,
    details: {
      exitCode?: number;
      reason?: string;
      message?: string;
      startedAt?: number;
      finishedAt?: number;
    } = {},
  ): void {
    const c = this.containers.get(id);
    if (!c) throw new Error(`fake CRI: no container ${id}`);
    const nowNs = Date.now() * NS_PER_MS;
    c.state = state;
    if (state === 'CONTAINER_RUNNING') {
      c.startedAt = details.startedAt ?? (c.startedAt || nowNs);
      c.finishedAt = 0;
      c.exitCode = 0;
      c.reason = '';
    }
    if (state === 'CONTAINER_EXITED') {
      c.startedAt = details.startedAt ?? (c.startedAt || nowNs);
      c.finishedAt = details.finishedAt ?? nowNs;
      c.exitCode = details.exitCode ?? 0;
      c.reason = details.reason ?? (c.exitCode === 0 ? 'Completed' : 'Error');
    }
    if (details.message !== undefined) c.message = details.message;
  }

  setSandboxState(id: string, state: PodSandboxState): void {
    const s = this.sandboxes.get(id);
    if (!s) throw new Error(`fake CRI: no sandbox ${id}`);
    s.state = state;
  }

  /** Puts a sandbox in the store without an RPC (bench set-up). */
  addSandbox(
    config: PodSandboxConfig,
    options: { state?: PodSandboxState; runtimeHandler?: string } = {},
  ): string {
    const id = newId();
    this.sandboxes.set(id, {
      id,
      config,
      runtimeHandler: options.runtimeHandler ?? '',
      state: options.state ?? 'SANDBOX_READY',
      createdAt: Date.now() * NS_PER_MS,
      ip: this.allocateIp(),
    });
    return id;
  }

  /** Puts a container in the store without an RPC (bench set-up); it must not reuse a name and attempt in its sandbox. */
  addContainer(
    podSandboxId: string,
    config: ContainerConfig,
    state: ContainerState = 'CONTAINER_RUNNING',
  ): string {
    const c = this.newContainer(podSandboxId, config);
    if (state !== 'CONTAINER_CREATED') this.setContainerState(c.id, state);
    return c.id;
  }

  /** Adds an image as if it had been pulled; returns its id. */
  addImage(ref: string, size = 1_000_000): string {
    const image = fakeImage(ref, size);
    this.images.set(image.id, image);
    return image.id;
  }

  findImage(ref: string): Image | undefined {
    if (this.images.has(ref)) return this.images.get(ref);
    const normalized = normalizeImageRef(ref);
    for (const image of this.images.values()) {
      if (image.repoTags.includes(normalized) || image.repoDigests.includes(normalized)) return image;
    }
    return undefined;
  }

  // ---- the RPCs ----

  private handlers(service: grpc.ServiceDefinition): grpc.UntypedServiceImplementation {
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [key, definition] of Object.entries(service)) {
      const method = methodName(definition);
      const toResponse = responseOf(method);
      if (definition.responseStream || !toResponse) {
        // Streaming RPCs (GetContainerEvents) are not part of what the fake runtime serves.
        impl[key] = (call: grpc.ServerWritableStream<WireMessage, object>) =>
          call.destroy(
            Object.assign(new Error(`fake CRI: ${method} is not served by this fake runtime`), {
              code: grpc.status.UNIMPLEMENTED,
            }),
          );
        continue;
      }
      impl[key] = (call: grpc.ServerUnaryCall<WireMessage, object>, callback: grpc.sendUnaryData<object>) => {
        void this.dispatch(method, call.request, (err, value) =>
          err ? callback(err) : callback(null, toResponse(value ?? {})),
        );
      };
    }
    return impl;
  }

  private async dispatch(
    method: string,
    request: WireMessage,
    callback: grpc.sendUnaryData<object>,
  ): Promise<void> {
    this.callCounts.set(method, (this.callCounts.get(method) ?? 0) + 1);
    this.lastRequests.set(method, request);
    const delayMs = this.delaysMs.get(method);
    if (delayMs) await this.hold(delayMs);
    try {
      const injected = this.takeFailure(method, request);
      if (injected) throw injected;
      callback(null, await this.handle(method, request));
    } catch (err) {
      if (err instanceof FakeCriError) callback({ code: err.code, details: err.message });
      else callback({ code: grpc.status.UNKNOWN, details: err instanceof Error ? err.message : String(err) });
    }
  }

  // stop() releases held replies at once, so a stopped server leaves no timer behind.
  private hold(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const pending = {
        timer: setTimeout(() => {
          this.pendingDelays.delete(pending);
          resolve();
        }, ms),
        release: resolve,
      };
      this.pendingDelays.add(pending);
    });
  }

  private takeFailure(method: string, request: WireMessage): FakeCriError | undefined {
    const list = this.failures.get(method);
    if (!list) return undefined;
    const index = list.findIndex((f) => !f.match || f.match(request));
    const failure = list[index];
    if (!failure) return undefined;
    if (--failure.remaining <= 0) list.splice(index, 1);
    return failure.error;
  }

  private async handle(method: string, req: WireMessage): Promise<object> {
    const s = (key: string): string => (typeof req[key] === 'string' ? (req[key] as string) : '');
    const m = <T>(key: string): T | undefined => (req[key] ? (req[key] as T) : undefined);
    switch (method) {
      case 'Version':
        return this.version;
      case 'Status':
        return { status: { conditions: this.runtimeConditions }, info: {} };
      // containerd keeps the CIDR only for a CNI config template; tests read the request from lastRequests.
      case 'UpdateRuntimeConfig':
        return {};

      case 'RunPodSandbox':
        return {
          podSandboxId: this.addSandbox(podSandboxConfigFromCri(m('config')), {
            runtimeHandler: s('runtimeHandler'),
          }),
        };
      case 'StopPodSandbox':
        return this.stopPodSandbox(s('podSandboxId'));
      case 'RemovePodSandbox':
        return this.removePodSandbox(s('podSandboxId'));
      case 'PodSandboxStatus':
        return { status: this.sandboxStatus(this.sandbox(s('podSandboxId'))), info: {} };
      case 'ListPodSandbox':
        return { items: this.listSandboxes(podSandboxFilterFromCri(m('filter'))) };

      case 'CreateContainer': {
        const sandbox = this.sandbox(s('podSandboxId'));
        if (sandbox.state !== 'SANDBOX_READY') {
          throw new FakeCriError(
            grpc.status.NOT_FOUND,
            `failed to get sandbox container task: no running task found: task ${sandbox.id} not found`,
          );
        }
        return { containerId: this.newContainer(sandbox.id, containerConfigFromCri(m('config'))).id };
      }
      case 'StartContainer': {
        const c = this.container(s('containerId'));
        if (c.state !== 'CONTAINER_CREATED') {
          throw new FakeCriError(
            grpc.status.UNKNOWN,
            `failed to set starting state for container "${c.id}": container is in ${c.state} state`,
          );
        }
        this.setContainerState(c.id, 'CONTAINER_RUNNING');
        return {};
      }
      case 'StopContainer': {
        const c = this.container(s('containerId'));
        // What a process that ignores SIGTERM, like `sleep` as pid 1, gets at the end of its grace period.
        if (c.state === 'CONTAINER_RUNNING')
          this.setContainerState(c.id, 'CONTAINER_EXITED', { exitCode: 137 });
        return {};
      }
      case 'RemoveContainer':
        this.containers.delete(s('containerId'));
        return {};
      case 'ListContainers':
        return { containers: this.listContainers(containerFilterFromCri(m('filter'))) };
      case 'ContainerStatus':
        return { status: this.containerStatus(this.container(s('containerId'))), info: {} };
      case 'UpdateContainerResources': {
        const c = this.container(s('containerId'));
        const linux = m<cri.LinuxContainerResources>('linux');
        if (linux) c.resources = linuxContainerResourcesFromCri(linux);
        return {};
      }
      case 'ReopenContainerLog': {
        const c = this.container(s('containerId'));
        if (c.state !== 'CONTAINER_RUNNING')
          throw new FakeCriError(grpc.status.UNKNOWN, `container "${c.id}" is not running`);
        return {};
      }

      case 'ExecSync': {
        const id = s('containerId');
        const c = this.containers.get(id);
        if (!c) {
          throw new FakeCriError(
            grpc.status.NOT_FOUND,
            `failed to exec in container: failed to find container "${id}" in store: not found`,
          );
        }
        if (c.state !== 'CONTAINER_RUNNING') {
          throw new FakeCriError(
            grpc.status.UNKNOWN,
            `failed to exec in container: container is in ${c.state} state`,
          );
        }
        const cmd = Array.isArray(req.cmd) ? (req.cmd as string[]) : [];
        return await this.execHandler(c, cmd, Number(req.timeout ?? 0));
      }
      case 'Exec':
      case 'Attach':
        this.container(s('containerId'));
        return { url: `http://127.0.0.1:10010/${method.toLowerCase()}/${randomBytes(8).toString('hex')}` };
      case 'PortForward':
        this.sandbox(s('podSandboxId'));
        return { url: `http://127.0.0.1:10010/portforward/${randomBytes(8).toString('hex')}` };

      case 'ContainerStats':
        return { stats: this.containerStats(this.container(s('containerId'))) };
      case 'ListContainerStats': {
        // ContainerStatsFilter has ContainerFilter's fields but the state, so the same reader serves.
        const filter = { ...containerFilterFromCri(m('filter')), state: 'CONTAINER_RUNNING' as const };
        return { stats: this.listContainers(filter).map((c) => this.containerStats(this.container(c.id))) };
      }

      default: {
        const answer = this.handleImageService(method, req);
        if (answer) return answer;
        throw new FakeCriError(grpc.status.UNIMPLEMENTED, `fake CRI does not implement ${method}`);
      }
    }
  }

  /** The ImageService's methods; undefined for any other. */
  private handleImageService(method: string, req: WireMessage): object | undefined {
    const m = <T>(key: string): T | undefined => (req[key] ? (req[key] as T) : undefined);
    switch (method) {
      case 'ListImages': {
        const spec = m<cri.ImageFilter>('filter')?.image;
        const wanted = spec ? imageSpecFromCri(spec).image : '';
        const all = [...this.images.values()];
        return { images: wanted ? all.filter((i) => i === this.findImage(wanted)) : all };
      }
      case 'ImageStatus':
        return { image: this.findImage(imageSpecFromCri(m('image')).image), info: {} };
      case 'PullImage': {
        const spec: ImageSpec = imageSpecFromCri(m('image'));
        const image = this.findImage(spec.image) ?? this.images.get(this.addImage(spec.image))!;
        return { imageRef: image.id };
      }
      case 'RemoveImage': {
        const image = this.findImage(imageSpecFromCri(m('image')).image);
        if (image) this.images.delete(image.id);
        return {};
      }
      case 'ImageFsInfo': {
        let usedBytes = 0;
        for (const image of this.images.values()) usedBytes += image.size;
        return {
          imageFilesystems: [
            {
              timestamp: Date.now() * NS_PER_MS,
              fsId: { mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs' },
              usedBytes: { value: usedBytes },
              inodesUsed: { value: this.images.size * 100 },
            },
          ],
        };
      }
      default:
        return undefined;
    }
  }

  // ---- store helpers ----

  private allocateIp(): string {
    const n = this.nextIp++;
    return `10.88.${Math.floor(n / 250) % 250}.${(n % 250) + 2}`;
  }

  private sandbox(id: string): FakeSandbox {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox) throw notFound('sandbox', id);
    return sandbox;
  }

  private container(id: string): FakeContainer {
    const c = this.containers.get(id);
    if (!c) throw notFound('container', id);
    return c;
  }

  private newContainer(podSandboxId: string, config: ContainerConfig): FakeContainer {
    const sandbox = this.sandbox(podSandboxId);
    for (const other of this.containers.values()) {
      if (
        other.podSandboxId === podSandboxId &&
        other.config.metadata.name === config.metadata.name &&
        other.config.metadata.attempt === config.metadata.attempt
      ) {
        const { name: podName, namespace, uid } = sandbox.config.metadata;
        const name = `${config.metadata.name}_${podName}_${namespace}_${uid}_${config.metadata.attempt}`;
        throw new FakeCriError(
          grpc.status.UNKNOWN,
          `failed to reserve container name "${name}": name "${name}" is reserved for "${other.id}"`,
        );
      }
    }
    const image = this.findImage(config.image.image);
    if (!image) {
      throw new FakeCriError(
        grpc.status.NOT_FOUND,
        `failed to resolve image "${config.image.image}": not found`,
      );
    }
    const c: FakeContainer = {
      id: newId(),
      podSandboxId,
      config,
      state: 'CONTAINER_CREATED',
      imageRef: image.id,
      createdAt: Date.now() * NS_PER_MS,
      startedAt: 0,
      finishedAt: 0,
      exitCode: 0,
      reason: '',
      message: '',
    };
    this.containers.set(c.id, c);
    return c;
  }

  private stopPodSandbox(id: string): object {
    const sandbox = this.sandbox(id);
    for (const c of this.containers.values()) {
      if (c.podSandboxId === id && c.state === 'CONTAINER_RUNNING')
        this.setContainerState(c.id, 'CONTAINER_EXITED', { exitCode: 137 });
    }
    sandbox.state = 'SANDBOX_NOTREADY';
    return {};
  }

  private removePodSandbox(id: string): object {
    if (!this.sandboxes.has(id)) return {};
    for (const c of [...this.containers.values()]) if (c.podSandboxId === id) this.containers.delete(c.id);
    this.sandboxes.delete(id);
    return {};
  }

  private listSandboxes(filter: PodSandboxFilter): PodSandbox[] {
    const out: PodSandbox[] = [];
    for (const sb of this.sandboxes.values()) {
      if (filter.id && !sb.id.startsWith(filter.id)) continue;
      if (filter.state && sb.state !== filter.state) continue;
      if (!matchesLabels(sb.config.labels, filter.labelSelector)) continue;
      out.push({
        id: sb.id,
        metadata: sb.config.metadata,
        state: sb.state,
        createdAt: sb.createdAt,
        labels: sb.config.labels,
        annotations: sb.config.annotations,
        runtimeHandler: sb.runtimeHandler,
      });
    }
    return out;
  }

  private sandboxStatus(sb: FakeSandbox): PodSandboxStatus {
    const hostNetwork = sb.config.linux?.securityContext?.namespaceOptions?.network === 'NODE';
    return {
      id: sb.id,
      metadata: sb.config.metadata,
      state: sb.state,
      createdAt: sb.createdAt,
      network: { ip: hostNetwork ? '' : sb.ip, additionalIps: [] },
      linux: {
        namespaces: {
          options: sb.config.linux?.securityContext?.namespaceOptions ?? {
            network: 'POD',
            pid: 'CONTAINER',
            ipc: 'POD',
          },
        },
      },
      labels: sb.config.labels,
      annotations: sb.config.annotations,
      runtimeHandler: sb.runtimeHandler,
    };
  }

  private listContainers(filter: ContainerFilter): Container[] {
    const out: Container[] = [];
    for (const c of this.containers.values()) {
      if (filter.id && !c.id.startsWith(filter.id)) continue;
      if (filter.podSandboxId && !c.podSandboxId.startsWith(filter.podSandboxId)) continue;
      if (filter.state && c.state !== filter.state) continue;
      if (!matchesLabels(c.config.labels, filter.labelSelector)) continue;
      out.push({
        id: c.id,
        podSandboxId: c.podSandboxId,
        metadata: c.config.metadata,
        image: c.config.image,
        imageRef: c.imageRef,
        state: c.state,
        createdAt: c.createdAt,
        labels: c.config.labels,
        annotations: c.config.annotations,
      });
    }
    return out;
  }

  private containerStatus(c: FakeContainer): ContainerStatus {
    const sandbox = this.sandboxes.get(c.podSandboxId);
    const logPath = c.config.logPath && sandbox ? join(sandbox.config.logDirectory, c.config.logPath) : '';
    return {
      id: c.id,
      metadata: c.config.metadata,
      state: c.state,
      createdAt: c.createdAt,
      startedAt: c.startedAt,
      finishedAt: c.finishedAt,
      exitCode: c.exitCode,
      image: c.config.image,
      imageRef: c.imageRef,
      reason: c.reason,
      message: c.message,
      labels: c.config.labels,
      annotations: c.config.annotations,
      mounts: c.config.mounts,
      logPath,
    };
  }

  private containerStats(c: FakeContainer): ContainerStats {
    const timestamp = Date.now() * NS_PER_MS;
    return {
      attributes: {
        id: c.id,
        metadata: c.config.metadata,
        labels: c.config.labels,
        annotations: c.config.annotations,
      },
      cpu: { timestamp, usageCoreNanoSeconds: { value: 1_000_000 }, usageNanoCores: { value: 1000 } },
      memory: { timestamp, workingSetBytes: { value: 4096 * 1024 } },
      writableLayer: {
        timestamp,
        fsId: { mountpoint: '/' },
        usedBytes: { value: 4096 },
        inodesUsed: { value: 4 },
      },
    };
  }
}
