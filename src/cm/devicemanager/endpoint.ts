/**
 * One registered device plugin as the kubelet sees it (upstream: the v1beta1 client and
 * endpointImpl): the gRPC connection to the plugin's socket, its ListAndWatch stream, and the calls
 * the device manager makes on it. Once the stream ends the endpoint is stopped: its devices stay
 * counted (as unhealthy) for upstream's grace period, then the resource goes to zero.
 */
import type * as grpc from '@grpc/grpc-js';
import { errorMessage } from '../../lib/errors.js';
import { grpcJsUnary, grpcMethods, loadGrpcJs, type GrpcMethod } from '../../lib/grpc-definitions.js';
import { logger } from '../../lib/log.js';
import {
  AllocateRequest,
  DevicePluginDefinition,
  Empty,
  PreStartContainerRequest,
  PreferredAllocationRequest,
  type AllocateResponse,
  type Device,
  type DevicePluginOptions,
  type ListAndWatchResponse,
  type PreferredAllocationResponse,
} from './generated/deviceplugin/v1beta1/deviceplugin.js';

const log = logger('devicemanager');

/** Upstream dials a plugin's socket for at most 10 s. */
export const PLUGIN_DIAL_TIMEOUT_MS = 10_000;
/** Upstream's KubeletPreStartContainerRPCTimeoutInSecs. */
export const PRE_START_CONTAINER_TIMEOUT_MS = 30_000;
/** Upstream calls Allocate and GetPreferredAllocation without a deadline; here every RPC has one. */
export const ALLOCATE_TIMEOUT_MS = 30_000;
export const OPTIONS_TIMEOUT_MS = 10_000;

/** What the device manager needs of an endpoint; the fake in unit tests implements it too. */
export interface Endpoint {
  readonly resourceName: string;
  /** True once the plugin went away (its stream ended) or never connected (restored from a checkpoint). */
  isStopped(): boolean;
  /** True once stopped for longer than the grace period. */
  stopGracePeriodExpired(nowMs: number): boolean;
  getPreferredAllocation(
    available: string[],
    mustInclude: string[],
    size: number,
  ): Promise<PreferredAllocationResponse>;
  allocate(deviceIds: string[]): Promise<AllocateResponse>;
  preStartContainer(deviceIds: string[]): Promise<void>;
}

/** Upstream's endpointStopGracePeriod. */
export const ENDPOINT_STOP_GRACE_PERIOD_MS = 5 * 60_000;

/** An endpoint known only from the checkpoint, until its plugin registers again (upstream: newStoppedEndpointImpl). */
export class StoppedEndpoint implements Endpoint {
  constructor(
    readonly resourceName: string,
    private readonly stoppedAtMs: number,
  ) {}
  isStopped(): boolean {
    return true;
  }
  stopGracePeriodExpired(nowMs: number): boolean {
    return nowMs - this.stoppedAtMs > ENDPOINT_STOP_GRACE_PERIOD_MS;
  }
  private stopped(): Promise<never> {
    return Promise.reject(new Error(`endpoint ${this.resourceName} has been stopped`));
  }
  getPreferredAllocation(): Promise<PreferredAllocationResponse> {
    return this.stopped();
  }
  allocate(): Promise<AllocateResponse> {
    return this.stopped();
  }
  preStartContainer(): Promise<void> {
    return this.stopped();
  }
}

export interface PluginEndpointHandler {
  /** Each ListAndWatch answer: the plugin's full device list. */
  onDevices(resourceName: string, devices: Device[]): void;
  /** The stream ended: the plugin is gone (or restarting). */
  onDisconnected(endpoint: PluginEndpoint): void;
}

const DEVICE_PLUGIN = grpcMethods(DevicePluginDefinition);

/**
 * A live plugin: dialled at registration, streaming its devices until it goes away. grpc-js is loaded
 * when the first plugin registers: a node without device plugins never loads it.
 */
export class PluginEndpoint implements Endpoint {
  private connection: { grpcJs: typeof grpc; client: grpc.Client } | undefined;
  private stoppedAtMs: number | undefined;
  private stream: grpc.ClientReadableStream<ListAndWatchResponse> | undefined;
  options: DevicePluginOptions = { preStartRequired: false, getPreferredAllocationAvailable: false };

  constructor(
    readonly resourceName: string,
    readonly socketPath: string,
    private readonly handler: PluginEndpointHandler,
    private readonly now: () => number,
  ) {}

  /** Dials the plugin (waiting up to 10 s for its socket) and asks for its options; throws when it cannot. */
  async connect(): Promise<void> {
    const grpcJs = await loadGrpcJs();
    this.checkRunning();
    const client = new grpcJs.Client(`unix://${this.socketPath}`, grpcJs.credentials.createInsecure());
    this.connection = { grpcJs, client };
    await new Promise<void>((resolve, reject) =>
      client.waitForReady(Date.now() + PLUGIN_DIAL_TIMEOUT_MS, (err) => (err ? reject(err) : resolve())),
    ).catch((err: unknown) => {
      throw new Error(`failed to dial device plugin: ${errorMessage(err)}`);
    });
    try {
      this.options = await this.unary(
        DEVICE_PLUGIN.getDevicePluginOptions,
        Empty.fromPartial({}),
        OPTIONS_TIMEOUT_MS,
      );
    } catch (err) {
      throw new Error(`failed to get device plugin options: ${errorMessage(err)}`);
    }
  }

  /** Opens ListAndWatch; each answer goes to the handler, and the end of the stream stops the endpoint. */
  run(): void {
    const { grpcJs, client } = this.connected();
    const method = DEVICE_PLUGIN.listAndWatch;
    const stream = client.makeServerStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      Empty.fromPartial({}),
      new grpcJs.Metadata(),
    );
    this.stream = stream;
    let ended = false;
    const end = (why: string): void => {
      if (ended) return;
      ended = true;
      if (this.stoppedAtMs === undefined)
        log.error('ListAndWatch ended unexpectedly for device plugin', {
          resource: this.resourceName,
          err: why,
        });
      this.stop();
      this.handler.onDisconnected(this);
    };
    stream.on('data', (response: ListAndWatchResponse) => {
      log.v(2, 'State pushed for device plugin', {
        resource: this.resourceName,
        resourceCapacity: response.devices.length,
      });
      this.handler.onDevices(this.resourceName, response.devices);
    });
    stream.on('error', (err: Error) => end(errorMessage(err)));
    stream.on('end', () => end('the stream ended'));
    stream.on('close', () => end('the stream closed'));
  }

  isStopped(): boolean {
    return this.stoppedAtMs !== undefined;
  }

  stopGracePeriodExpired(nowMs: number): boolean {
    return this.stoppedAtMs !== undefined && nowMs - this.stoppedAtMs > ENDPOINT_STOP_GRACE_PERIOD_MS;
  }

  /** Marks the endpoint stopped (the grace period starts) and closes the connection. */
  stop(): void {
    if (this.stoppedAtMs === undefined) this.stoppedAtMs = this.now();
    this.stream?.cancel();
    this.connection?.client.close();
  }

  private checkRunning(): void {
    if (this.isStopped()) throw new Error(`endpoint ${this.resourceName} has been stopped`);
  }

  private connected(): { grpcJs: typeof grpc; client: grpc.Client } {
    if (!this.connection) throw new Error(`endpoint ${this.resourceName} is not connected`);
    return this.connection;
  }

  private unary<Req, Res>(method: GrpcMethod<Req, Res>, request: Req, timeoutMs: number): Promise<Res> {
    const { grpcJs, client } = this.connected();
    return grpcJsUnary(client, method, request, new grpcJs.Metadata(), { deadline: Date.now() + timeoutMs });
  }

  async getPreferredAllocation(
    available: string[],
    mustInclude: string[],
    size: number,
  ): Promise<PreferredAllocationResponse> {
    this.checkRunning();
    const req = PreferredAllocationRequest.fromPartial({
      containerRequests: [
        { availableDeviceIDs: available, mustIncludeDeviceIDs: mustInclude, allocationSize: size },
      ],
    });
    return this.unary(DEVICE_PLUGIN.getPreferredAllocation, req, ALLOCATE_TIMEOUT_MS);
  }

  async allocate(deviceIds: string[]): Promise<AllocateResponse> {
    this.checkRunning();
    const req = AllocateRequest.fromPartial({ containerRequests: [{ devicesIds: deviceIds }] });
    return this.unary(DEVICE_PLUGIN.allocate, req, ALLOCATE_TIMEOUT_MS);
  }

  async preStartContainer(deviceIds: string[]): Promise<void> {
    this.checkRunning();
    const req = PreStartContainerRequest.fromPartial({ devicesIds: deviceIds });
    await this.unary(DEVICE_PLUGIN.preStartContainer, req, PRE_START_CONTAINER_TIMEOUT_MS);
  }
}
