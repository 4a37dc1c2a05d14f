/**
 * An in-memory container runtime for unit tests: RuntimeService and ImageService over maps, with
 * containerd's observable rules where tests depend on them (a container needs its sandbox and its
 * image; stopping a sandbox stops its containers; exited containers carry `Completed` or `Error`).
 *
 * It records every call, hands out IDs that sort in creation order, lets a test make a container
 * exit with a code, and injects errors per method.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../../lib/clock.js';
import { realClock } from '../../lib/clock.js';
import { CriNotFoundError } from '../errors.js';
import type {
  AttachRequest,
  AuthConfig,
  CallOptions,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerState,
  ContainerStats,
  ContainerStatusResponse,
  ExecRequest,
  ExecSyncResponse,
  FilesystemUsage,
  Image,
  ImageService,
  ImageSpec,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxState,
  PodSandboxStatusResponse,
  PortForwardRequest,
  RuntimeService,
  RuntimeStatus,
  VersionResponse,
} from '../types.js';

export type FakeMethod = keyof RuntimeService | keyof ImageService;

export interface FakeCall {
  method: FakeMethod;
  args: unknown[];
}

export interface FakeSandbox {
  id: string;
  config: PodSandboxConfig;
  runtimeHandler: string;
  state: PodSandboxState;
  createdAtNs: number;
  ip: string;
}

export interface FakeContainer {
  id: string;
  podSandboxId: string;
  config: ContainerConfig;
  /** The image reference as the runtime resolved it (an image ID). */
  imageRef: string;
  state: ContainerState;
  createdAtNs: number;
  startedAtNs: number;
  finishedAtNs: number;
  exitCode: number;
  reason: string;
  message: string;
  /** The grace period of the last StopContainer call, in seconds. */
  lastStopTimeoutSeconds?: number;
}

export interface FakeImageOptions {
  id?: string;
  uid?: number;
  username?: string;
  size?: number;
}

interface InjectedError {
  error: Error;
  /** How many more calls fail; Infinity for every call until cleared. */
  remaining: number;
}

const NS_PER_MS = 1_000_000;

export class FakeRuntime implements RuntimeService, ImageService {
  readonly calls: FakeCall[] = [];
  readonly sandboxes = new Map<string, FakeSandbox>();
  readonly containers = new Map<string, FakeContainer>();
  readonly images = new Map<string, Image>();
  /** The exit code a running container gets when stopped (SIGTERM honoured = 0; SIGKILL = 137). */
  stopExitCode = 0;
  /** When false, PullImage of an image the fake does not already have fails like an unreachable registry. */
  pullsSucceed = true;
  runtimeName = 'containerd';
  private nextId = 1;
  private nextIp = 2;
  private lastNs = 0;
  private readonly errors = new Map<FakeMethod, InjectedError>();

  constructor(private readonly clock: Clock = realClock) {}

  // ---- test controls ----

  /** Makes the next `times` calls of method fail with error (every call when times is omitted). */
  injectError(method: FakeMethod, error: Error, times = Infinity): void {
    this.errors.set(method, { error, remaining: times });
  }

  clearErrors(): void {
    this.errors.clear();
  }

  callsOf(method: FakeMethod): unknown[][] {
    return this.calls.filter((c) => c.method === method).map((c) => c.args);
  }

  resetCalls(): void {
    this.calls.length = 0;
  }

  /** Adds an image as if it had been pulled; tags are the names it answers to. */
  addImage(tags: string | string[], opts: FakeImageOptions = {}): Image {
    const repoTags = (Array.isArray(tags) ? tags : [tags]).map(normalizeImageName);
    const id = opts.id ?? `sha256:${createHash('sha256').update(repoTags.join(',')).digest('hex')}`;
    const image: Image = {
      id,
      repoTags,
      repoDigests: [],
      size: opts.size ?? 1024,
      uid: opts.uid === undefined ? undefined : { value: opts.uid },
      username: opts.username ?? '',
      pinned: false,
    };
    this.images.set(id, image);
    return image;
  }

  /** Makes a running (or created) container exit, as if its process ended with exitCode. */
  exitContainer(id: string, exitCode: number, opts: { reason?: string; message?: string } = {}): void {
    const c = this.mustContainer(id);
    if (c.startedAtNs === 0) c.startedAtNs = this.nowNs();
    c.state = 'CONTAINER_EXITED';
    c.exitCode = exitCode;
    c.finishedAtNs = this.nowNs();
    c.reason = opts.reason ?? (exitCode === 0 ? 'Completed' : 'Error');
    c.message = opts.message ?? '';
  }

  /** Marks a sandbox not ready, as when its pause process dies or the node reboots. */
  setSandboxState(id: string, state: PodSandboxState): void {
    this.mustSandbox(id).state = state;
  }

  /** The containers with the given name label, oldest first. */
  containersNamed(name: string): FakeContainer[] {
    return [...this.containers.values()].filter((c) => c.config.metadata.name === name);
  }

  // ---- RuntimeService ----

  async version(opts?: CallOptions): Promise<VersionResponse> {
    this.enter('version', [], opts);
    return {
      version: '0.1.0',
      runtimeName: this.runtimeName,
      runtimeVersion: '1.6.0-fake',
      runtimeApiVersion: 'v1',
    };
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler: string, opts?: CallOptions): Promise<string> {
    this.enter('runPodSandbox', [config, runtimeHandler], opts);
    const id = this.newId('sandbox');
    const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === 'NODE';
    this.sandboxes.set(id, {
      id,
      config: structuredClone(config),
      runtimeHandler,
      state: 'SANDBOX_READY',
      createdAtNs: this.nowNs(),
      ip: hostNetwork ? '' : `10.88.0.${this.nextIp++}`,
    });
    return id;
  }

  async stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    this.enter('stopPodSandbox', [podSandboxId], opts);
    const s = this.mustSandbox(podSandboxId);
    for (const c of this.containers.values()) {
      if (c.podSandboxId === podSandboxId && c.state === 'CONTAINER_RUNNING') this.stop(c);
    }
    s.state = 'SANDBOX_NOTREADY';
  }

  async removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    this.enter('removePodSandbox', [podSandboxId], opts);
    // Removing what is already gone succeeds, as CRI asks of runtimes.
    if (!this.sandboxes.has(podSandboxId)) return;
    for (const [id, c] of this.containers) if (c.podSandboxId === podSandboxId) this.containers.delete(id);
    this.sandboxes.delete(podSandboxId);
  }

  async podSandboxStatus(
    podSandboxId: string,
    _verbose?: boolean,
    opts?: CallOptions,
  ): Promise<PodSandboxStatusResponse> {
    this.enter('podSandboxStatus', [podSandboxId], opts);
    const s = this.mustSandbox(podSandboxId);
    const nsOptions = s.config.linux?.securityContext?.namespaceOptions;
    return {
      status: {
        id: s.id,
        metadata: { ...s.config.metadata },
        state: s.state,
        createdAt: s.createdAtNs,
        network: { ip: s.ip, additionalIps: [] },
        linux: {
          namespaces: {
            options: nsOptions ? { ...nsOptions } : { network: 'POD', pid: 'CONTAINER', ipc: 'POD' },
          },
        },
        labels: { ...s.config.labels },
        annotations: { ...s.config.annotations },
        runtimeHandler: s.runtimeHandler,
      },
      info: {},
    };
  }

  async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    this.enter('listPodSandbox', [filter], opts);
    const out: PodSandbox[] = [];
    for (const s of this.sandboxes.values()) {
      if (filter?.id && s.id !== filter.id) continue;
      if (filter?.state && s.state !== filter.state) continue;
      if (filter?.labelSelector && !matchesSelector(s.config.labels, filter.labelSelector)) continue;
      out.push({
        id: s.id,
        metadata: { ...s.config.metadata },
        state: s.state,
        createdAt: s.createdAtNs,
        labels: { ...s.config.labels },
        annotations: { ...s.config.annotations },
        runtimeHandler: s.runtimeHandler,
      });
    }
    return out;
  }

  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string> {
    this.enter('createContainer', [podSandboxId, config, sandboxConfig], opts);
    this.mustSandbox(podSandboxId);
    const image = this.findImage(config.image.image);
    if (!image) throw new Error(`failed to get image "${config.image.image}": not found`);
    const id = this.newId('container');
    this.containers.set(id, {
      id,
      podSandboxId,
      config: structuredClone(config),
      imageRef: image.id,
      state: 'CONTAINER_CREATED',
      createdAtNs: this.nowNs(),
      startedAtNs: 0,
      finishedAtNs: 0,
      exitCode: 0,
      reason: '',
      message: '',
    });
    return id;
  }

  async startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    this.enter('startContainer', [containerId], opts);
    const c = this.mustContainer(containerId);
    if (c.state !== 'CONTAINER_CREATED')
      throw new Error(`container ${containerId} is in ${c.state} state, not created`);
    const sandbox = this.mustSandbox(c.podSandboxId);
    if (sandbox.state !== 'SANDBOX_READY') throw new Error(`sandbox ${sandbox.id} is not running`);
    c.state = 'CONTAINER_RUNNING';
    c.startedAtNs = this.nowNs();
  }

  async stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    this.enter('stopContainer', [containerId, timeoutSeconds], opts);
    const c = this.mustContainer(containerId);
    c.lastStopTimeoutSeconds = timeoutSeconds;
    if (c.state === 'CONTAINER_RUNNING') this.stop(c);
    else if (c.state === 'CONTAINER_CREATED') {
      c.state = 'CONTAINER_EXITED';
      c.finishedAtNs = this.nowNs();
    }
  }

  async removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    this.enter('removeContainer', [containerId], opts);
    this.containers.delete(containerId);
  }

  async listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    this.enter('listContainers', [filter], opts);
    const out: Container[] = [];
    for (const c of this.containers.values()) {
      if (filter?.id && c.id !== filter.id) continue;
      if (filter?.state && c.state !== filter.state) continue;
      if (filter?.podSandboxId && c.podSandboxId !== filter.podSandboxId) continue;
      if (filter?.labelSelector && !matchesSelector(c.config.labels, filter.labelSelector)) continue;
      out.push({
        id: c.id,
        podSandboxId: c.podSandboxId,
        metadata: { ...c.config.metadata },
        image: { ...c.config.image },
        imageRef: c.imageRef,
        state: c.state,
        createdAt: c.createdAtNs,
        labels: { ...c.config.labels },
        annotations: { ...c.config.annotations },
      });
    }
    return out;
  }

  async containerStatus(
    containerId: string,
    _verbose?: boolean,
    opts?: CallOptions,
  ): Promise<ContainerStatusResponse> {
    this.enter('containerStatus', [containerId], opts);
    const c = this.mustContainer(containerId);
    const sandbox = this.sandboxes.get(c.podSandboxId);
    const logDir = sandbox?.config.logDirectory ?? '';
    return {
      status: {
        id: c.id,
        metadata: { ...c.config.metadata },
        state: c.state,
        createdAt: c.createdAtNs,
        startedAt: c.startedAtNs,
        finishedAt: c.finishedAtNs,
        exitCode: c.exitCode,
        image: { ...c.config.image },
        imageRef: c.imageRef,
        reason: c.reason,
        message: c.message,
        labels: { ...c.config.labels },
        annotations: { ...c.config.annotations },
        mounts: c.config.mounts.map((m) => ({ ...m })),
        logPath: c.config.logPath && logDir ? `${logDir}/${c.config.logPath}` : c.config.logPath,
      },
      info: {},
    };
  }

  async updateContainerResources(
    containerId: string,
    linux: LinuxContainerResources,
    opts?: CallOptions,
  ): Promise<void> {
    this.enter('updateContainerResources', [containerId, linux], opts);
    const c = this.mustContainer(containerId);
    c.config.linux = { ...(c.config.linux ?? {}), resources: { ...linux } };
  }

  async reopenContainerLog(containerId: string, opts?: CallOptions): Promise<void> {
    this.enter('reopenContainerLog', [containerId], opts);
    this.mustContainer(containerId);
  }

  async execSync(
    containerId: string,
    cmd: string[],
    timeoutSeconds: number,
    opts?: CallOptions,
  ): Promise<ExecSyncResponse> {
    this.enter('execSync', [containerId, cmd, timeoutSeconds], opts);
    const c = this.mustContainer(containerId);
    if (c.state !== 'CONTAINER_RUNNING') throw new Error(`container ${containerId} is not running`);
    return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 };
  }

  async exec(req: ExecRequest, opts?: CallOptions): Promise<string> {
    this.enter('exec', [req], opts);
    this.mustContainer(req.containerId);
    return `http://127.0.0.1:0/exec/${req.containerId}`;
  }

  async attach(req: AttachRequest, opts?: CallOptions): Promise<string> {
    this.enter('attach', [req], opts);
    this.mustContainer(req.containerId);
    return `http://127.0.0.1:0/attach/${req.containerId}`;
  }

  async portForward(req: PortForwardRequest, opts?: CallOptions): Promise<string> {
    this.enter('portForward', [req], opts);
    this.mustSandbox(req.podSandboxId);
    return `http://127.0.0.1:0/portforward/${req.podSandboxId}`;
  }

  async containerStats(containerId: string, opts?: CallOptions): Promise<ContainerStats | undefined> {
    this.enter('containerStats', [containerId], opts);
    const c = this.containers.get(containerId);
    return c ? this.statsOf(c) : undefined;
  }

  async listContainerStats(
    filter?: { id?: string; podSandboxId?: string; labelSelector?: Record<string, string> },
    opts?: CallOptions,
  ): Promise<ContainerStats[]> {
    this.enter('listContainerStats', [filter], opts);
    return [...this.containers.values()]
      .filter((c) => c.state === 'CONTAINER_RUNNING')
      .filter((c) => !filter?.id || c.id === filter.id)
      .filter((c) => !filter?.podSandboxId || c.podSandboxId === filter.podSandboxId)
      .filter((c) => !filter?.labelSelector || matchesSelector(c.config.labels, filter.labelSelector))
      .map((c) => this.statsOf(c));
  }

  async updateRuntimeConfig(podCIDR: string, opts?: CallOptions): Promise<void> {
    this.enter('updateRuntimeConfig', [podCIDR], opts);
  }

  async status(
    _verbose?: boolean,
    opts?: CallOptions,
  ): Promise<{ status: RuntimeStatus; info: Record<string, string> }> {
    this.enter('status', [], opts);
    return {
      status: {
        conditions: [
          { type: 'RuntimeReady', status: true, reason: '', message: '' },
          { type: 'NetworkReady', status: true, reason: '', message: '' },
        ],
      },
      info: {},
    };
  }

  // ---- ImageService ----

  async listImages(filter?: { image?: ImageSpec }, opts?: CallOptions): Promise<Image[]> {
    this.enter('listImages', [filter], opts);
    if (filter?.image?.image) {
      const found = this.findImage(filter.image.image);
      return found ? [structuredClone(found)] : [];
    }
    return [...this.images.values()].map((i) => structuredClone(i));
  }

  async imageStatus(image: ImageSpec, _verbose?: boolean, opts?: CallOptions): Promise<Image | undefined> {
    this.enter('imageStatus', [image], opts);
    const found = this.findImage(image.image);
    return found ? structuredClone(found) : undefined;
  }

  async pullImage(
    image: ImageSpec,
    auth: AuthConfig | undefined,
    sandboxConfig: PodSandboxConfig | undefined,
    opts?: CallOptions,
  ): Promise<string> {
    this.enter('pullImage', [image, auth, sandboxConfig], opts);
    const existing = this.findImage(image.image);
    if (existing) return existing.id;
    if (!this.pullsSucceed) {
      throw new Error(
        `failed to pull and unpack image "${normalizeImageName(image.image)}": failed to resolve reference: ` +
          `dial tcp: lookup registry: no such host`,
      );
    }
    return this.addImage(image.image).id;
  }

  async removeImage(image: ImageSpec, opts?: CallOptions): Promise<void> {
    this.enter('removeImage', [image], opts);
    const found = this.findImage(image.image);
    if (found) this.images.delete(found.id);
  }

  async imageFsInfo(opts?: CallOptions): Promise<FilesystemUsage[]> {
    this.enter('imageFsInfo', [], opts);
    let used = 0;
    for (const i of this.images.values()) used += i.size;
    return [
      {
        timestamp: this.nowNs(),
        fsId: { mountpoint: '/fake/images' },
        usedBytes: { value: used },
        inodesUsed: { value: this.images.size },
      },
    ];
  }

  // ---- internals ----

  private enter(method: FakeMethod, args: unknown[], opts: CallOptions | undefined): void {
    this.calls.push({ method, args });
    if (opts?.signal?.aborted) throw opts.signal.reason ?? new Error('aborted');
    const injected = this.errors.get(method);
    if (injected && injected.remaining > 0) {
      injected.remaining--;
      if (injected.remaining <= 0) this.errors.delete(method);
      throw injected.error;
    }
  }

  private stop(c: FakeContainer): void {
    c.state = 'CONTAINER_EXITED';
    c.exitCode = this.stopExitCode;
    c.finishedAtNs = this.nowNs();
    c.reason = this.stopExitCode === 0 ? 'Completed' : 'Error';
  }

  private statsOf(c: FakeContainer): ContainerStats {
    const ts = this.nowNs();
    return {
      attributes: {
        id: c.id,
        metadata: { ...c.config.metadata },
        labels: { ...c.config.labels },
        annotations: { ...c.config.annotations },
      },
      cpu: { timestamp: ts, usageCoreNanoSeconds: { value: 0 } },
      memory: { timestamp: ts, workingSetBytes: { value: 0 } },
    };
  }

  private findImage(ref: string): Image | undefined {
    const byId = this.images.get(ref) ?? this.images.get(`sha256:${ref}`);
    if (byId) return byId;
    const name = normalizeImageName(ref);
    for (const image of this.images.values()) if (image.repoTags.includes(name)) return image;
    return undefined;
  }

  private mustSandbox(id: string): FakeSandbox {
    const s = this.sandboxes.get(id);
    if (!s) throw new CriNotFoundError(`an error occurred when try to find sandbox "${id}": not found`);
    return s;
  }

  private mustContainer(id: string): FakeContainer {
    const c = this.containers.get(id);
    if (!c) throw new CriNotFoundError(`an error occurred when try to find container "${id}": not found`);
    return c;
  }

  private newId(kind: 'sandbox' | 'container'): string {
    // Zero-padded so that IDs sort in creation order, whatever their kind.
    return `${kind}-${String(this.nextId++).padStart(6, '0')}`;
  }

  private nowNs(): number {
    // Creation order must show in timestamps even when the clock stands still; the step is above
    // a double's resolution (256 ns) at today's epoch nanoseconds.
    const ns = Math.max(this.clock.now() * NS_PER_MS, this.lastNs + 1024);
    this.lastNs = ns;
    return ns;
  }
}

function matchesSelector(labels: Record<string, string>, selector: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector)) if (labels[k] !== v) return false;
  return true;
}

/** What containerd resolves a short name to: `busybox` → `docker.io/library/busybox:latest`. */
export function normalizeImageName(ref: string): string {
  if (ref.startsWith('sha256:')) return ref;
  let name = ref;
  const at = name.indexOf('@');
  const beforeDigest = at >= 0 ? name.slice(0, at) : name;
  const lastSlash = beforeDigest.lastIndexOf('/');
  const hasTag = beforeDigest.slice(lastSlash + 1).includes(':');
  if (at < 0 && !hasTag) name = `${name}:latest`;
  const firstSlash = name.indexOf('/');
  const firstPart = firstSlash < 0 ? '' : name.slice(0, firstSlash);
  const hasDomain =
    firstSlash >= 0 && (firstPart.includes('.') || firstPart.includes(':') || firstPart === 'localhost');
  if (!hasDomain) name = firstSlash < 0 ? `docker.io/library/${name}` : `docker.io/${name}`;
  return name;
}
