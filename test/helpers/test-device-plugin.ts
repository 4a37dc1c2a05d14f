/**
 * A small device plugin for tests, speaking the real device plugin API (v1beta1) over unix
 * sockets: it serves `DevicePlugin` on a socket in the kubelet's device plugin folder, registers
 * with the kubelet's `kubelet.sock`, streams its device list, and answers Allocate with an env var,
 * a mount and a device node per request, as a GPU plugin would. Test equipment, not product.
 */
import * as grpc from '@grpc/grpc-js';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import {
  AllocateResponse,
  DevicePluginOptions,
  DevicePluginService,
  Empty,
  ListAndWatchResponse,
  PreferredAllocationResponse,
  PreStartContainerResponse,
  RegisterRequest,
  type AllocateRequest,
  type Device,
  type PreferredAllocationRequest,
} from '../../src/cm/devicemanager/generated/deviceplugin/v1beta1/deviceplugin.js';
import { grpcUnaryCall, unixSocketClient } from './grpc-unary-call.js';

export interface TestDevicePluginOptions {
  /** The kubelet's device plugin folder (`<root-dir>/device-plugins`). */
  pluginDir: string;
  resourceName: string;
  /** The socket's file name in pluginDir. */
  endpoint: string;
  devices: { id: string; healthy?: boolean }[];
  /** Host folder whose `<device id>` subfolders are mounted at /dev-data; default none. */
  dataDir?: string;
  /** Offer GetPreferredAllocation, answering with the devices sorted in reverse. */
  preferredAllocation?: boolean;
}

export class TestDevicePlugin {
  private server: grpc.Server | undefined;
  private streams = new Set<grpc.ServerWritableStream<Empty, ListAndWatchResponse>>();
  private devices: Device[];
  /** Every Allocate request's device IDs, in order. */
  readonly allocations: string[][] = [];
  readonly preferredRequests: PreferredAllocationRequest[] = [];

  constructor(readonly opts: TestDevicePluginOptions) {
    this.devices = opts.devices.map((d) => ({
      ID: d.id,
      health: d.healthy === false ? 'Unhealthy' : 'Healthy',
      topology: undefined,
    }));
  }

  get socketPath(): string {
    return path.join(this.opts.pluginDir, this.opts.endpoint);
  }

  async serve(): Promise<void> {
    await rm(this.socketPath, { force: true });
    const server = new grpc.Server();
    server.addService(DevicePluginService, {
      getDevicePluginOptions: (_c: unknown, cb: grpc.sendUnaryData<DevicePluginOptions>) =>
        cb(
          null,
          DevicePluginOptions.fromPartial({
            getPreferredAllocationAvailable: this.opts.preferredAllocation ?? false,
          }),
        ),
      listAndWatch: (stream: grpc.ServerWritableStream<Empty, ListAndWatchResponse>) => {
        this.streams.add(stream);
        stream.write(ListAndWatchResponse.fromPartial({ devices: this.devices }));
        stream.on('cancelled', () => this.streams.delete(stream));
        stream.on('close', () => this.streams.delete(stream));
      },
      getPreferredAllocation: (
        call: grpc.ServerUnaryCall<PreferredAllocationRequest, PreferredAllocationResponse>,
        cb: grpc.sendUnaryData<PreferredAllocationResponse>,
      ) => {
        this.preferredRequests.push(call.request);
        cb(
          null,
          PreferredAllocationResponse.fromPartial({
            containerResponses: call.request.containerRequests.map((r) => ({
              deviceIDs: [...r.availableDeviceIDs].sort().reverse().slice(0, r.allocationSize),
            })),
          }),
        );
      },
      allocate: (
        call: grpc.ServerUnaryCall<AllocateRequest, AllocateResponse>,
        cb: grpc.sendUnaryData<AllocateResponse>,
      ) => {
        const responses = call.request.containerRequests.map((r) => {
          this.allocations.push(r.devicesIds);
          const first = r.devicesIds[0] ?? '';
          return {
            envs: { TEST_DEVICE_IDS: r.devicesIds.join(',') },
            mounts: this.opts.dataDir
              ? [
                  {
                    containerPath: '/dev-data',
                    hostPath: path.join(this.opts.dataDir, first),
                    readOnly: true,
                  },
                ]
              : [],
            devices: [{ containerPath: '/dev/test-device', hostPath: '/dev/null', permissions: 'rw' }],
            annotations: { 'example.com/allocated': r.devicesIds.join(',') },
          };
        });
        cb(null, AllocateResponse.fromPartial({ containerResponses: responses }));
      },
      preStartContainer: (_c: unknown, cb: grpc.sendUnaryData<PreStartContainerResponse>) => cb(null, {}),
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    this.server = server;
  }

  /** Registers with the kubelet's kubelet.sock; rejects with the kubelet's refusal. */
  async register(overrides: Partial<RegisterRequest> = {}): Promise<void> {
    const client = unixSocketClient(path.join(this.opts.pluginDir, 'kubelet.sock'));
    const req = RegisterRequest.fromPartial({
      version: 'v1beta1',
      endpoint: this.opts.endpoint,
      resourceName: this.opts.resourceName,
      options: { getPreferredAllocationAvailable: this.opts.preferredAllocation ?? false },
      ...overrides,
    });
    try {
      await grpcUnaryCall(
        client,
        '/v1beta1.Registration/Register',
        { request: RegisterRequest, response: Empty },
        req,
      );
    } finally {
      client.close();
    }
  }

  /** Changes the device list and streams it to the kubelet. */
  setDevices(devices: { id: string; healthy?: boolean }[]): void {
    this.devices = devices.map((d) => ({
      ID: d.id,
      health: d.healthy === false ? 'Unhealthy' : 'Healthy',
      topology: undefined,
    }));
    for (const s of this.streams) s.write(ListAndWatchResponse.fromPartial({ devices: this.devices }));
  }

  async stop(): Promise<void> {
    for (const s of this.streams) s.end();
    this.streams.clear();
    const server = this.server;
    this.server = undefined;
    if (server) server.forceShutdown();
    await rm(this.socketPath, { force: true });
  }
}
