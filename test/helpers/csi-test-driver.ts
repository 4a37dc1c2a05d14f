/**
 * A small CSI node driver for the tests, speaking the real gRPC APIs over unix sockets: the CSI
 * Identity and Node services on its own socket, and the kubelet's plugin registration service on a
 * socket in the kubelet's `plugins_registry` (as node-driver-registrar serves it). NodePublishVolume
 * makes the target folder with a known file in it (`hello.txt`, holding the volume context's
 * `greeting`, and `context.json`, the whole volume context); NodeUnpublishVolume removes it. Every
 * call is recorded, so the tests can say what the kubelet asked.
 */
import * as grpc from '@grpc/grpc-js';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { grpcJsService } from '../../src/lib/grpc-definitions.js';
import {
  RegistrationDefinition,
  type PluginInfo,
  type RegistrationStatus,
} from '../../src/pluginmanager/generated/pluginregistration/v1/api.js';
import {
  IdentityDefinition,
  NodeDefinition,
  NodeServiceCapability_RPC_Type,
} from '../../src/volume/csi/generated/csi/v1/csi.js';

export interface CsiTestDriverOptions {
  name: string;
  /** Where the driver's CSI socket goes. */
  csiSocket: string;
  /** The registration socket: `<root-dir>/plugins_registry/<name>-reg.sock`. */
  registrationSocket: string;
  nodeId?: string;
  versions?: string[];
  /** PluginInfo.type; `CSIPlugin` by default. */
  type?: string;
  stageUnstage?: boolean;
}

export interface RecordedCall {
  method: string;
  request: Record<string, unknown>;
}

type Handler = (
  call: { request: unknown },
  cb: (err: grpc.ServiceError | null, res?: unknown) => void,
) => void;

function unary(fn: (req: Record<string, unknown>) => Promise<unknown> | unknown): Handler {
  return (call, cb) => {
    Promise.resolve()
      .then(() => fn(call.request as Record<string, unknown>))
      .then(
        (res) => cb(null, res),
        (err: Error) =>
          cb(Object.assign(err, { code: grpc.status.INTERNAL, details: err.message }) as grpc.ServiceError),
      );
  };
}

export class CsiTestDriver {
  readonly calls: RecordedCall[] = [];
  readonly statuses: RegistrationStatus[] = [];
  private csiServer: grpc.Server | undefined;
  private regServer: grpc.Server | undefined;

  constructor(readonly opts: CsiTestDriverOptions) {}

  callsOf(method: string): RecordedCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  private record(method: string, request: Record<string, unknown>): void {
    this.calls.push({ method, request });
  }

  async start(): Promise<void> {
    await this.startCsi();
    await this.startRegistration();
  }

  async startCsi(): Promise<void> {
    const s = new grpc.Server();
    const rec = (m: string, fn: (req: Record<string, unknown>) => Promise<unknown> | unknown = () => ({})) =>
      unary((req) => {
        this.record(m, req);
        return fn(req);
      });
    s.addService(grpcJsService(IdentityDefinition), {
      getPluginInfo: rec('GetPluginInfo', () => ({
        name: this.opts.name,
        vendorVersion: '0.1.0',
        manifest: {},
      })),
      probe: rec('Probe', () => ({ ready: true })),
    } as unknown as grpc.UntypedServiceImplementation);
    s.addService(grpcJsService(NodeDefinition), {
      nodeStageVolume: rec('NodeStageVolume'),
      nodeUnstageVolume: rec('NodeUnstageVolume'),
      nodePublishVolume: rec('NodePublishVolume', async (req) => {
        const target = String(req.targetPath);
        const ctx = (req.volumeContext ?? {}) as Record<string, string>;
        await mkdir(target, { recursive: true });
        await writeFile(
          path.join(target, 'hello.txt'),
          `${ctx.greeting ?? 'hello from the CSI test driver'}\n`,
        );
        await writeFile(path.join(target, 'context.json'), JSON.stringify(ctx));
        return {};
      }),
      nodeUnpublishVolume: rec('NodeUnpublishVolume', async (req) => {
        await rm(String(req.targetPath), { recursive: true, force: true });
        return {};
      }),
      nodeGetCapabilities: rec('NodeGetCapabilities', () => ({
        capabilities: this.opts.stageUnstage
          ? [{ rpc: { type: NodeServiceCapability_RPC_Type.STAGE_UNSTAGE_VOLUME } }]
          : [],
      })),
      nodeGetInfo: rec('NodeGetInfo', () => ({
        nodeId: this.opts.nodeId ?? `${this.opts.name}-node`,
        maxVolumesPerNode: 0,
        accessibleTopology: undefined,
      })),
    } as unknown as grpc.UntypedServiceImplementation);
    await rm(this.opts.csiSocket, { force: true });
    await bind(s, this.opts.csiSocket);
    this.csiServer = s;
  }

  async startRegistration(): Promise<void> {
    const s = new grpc.Server();
    s.addService(grpcJsService(RegistrationDefinition), {
      getInfo: unary((req) => {
        this.record('GetInfo', req);
        const info: PluginInfo = {
          type: this.opts.type ?? 'CSIPlugin',
          name: this.opts.name,
          endpoint: this.opts.csiSocket,
          supportedVersions: this.opts.versions ?? ['1.0.0'],
        };
        return info;
      }),
      notifyRegistrationStatus: unary((req) => {
        this.record('NotifyRegistrationStatus', req);
        this.statuses.push(req as unknown as RegistrationStatus);
        return {};
      }),
    } as unknown as grpc.UntypedServiceImplementation);
    await mkdir(path.dirname(this.opts.registrationSocket), { recursive: true });
    await rm(this.opts.registrationSocket, { force: true });
    await bind(s, this.opts.registrationSocket);
    this.regServer = s;
  }

  /** Stops serving registration and removes its socket: the kubelet deregisters the driver. */
  async stopRegistration(): Promise<void> {
    await shutdown(this.regServer);
    this.regServer = undefined;
    await rm(this.opts.registrationSocket, { force: true });
  }

  async stop(): Promise<void> {
    await this.stopRegistration();
    await shutdown(this.csiServer);
    this.csiServer = undefined;
    await rm(this.opts.csiSocket, { force: true });
  }
}

function bind(s: grpc.Server, socket: string): Promise<void> {
  return new Promise((resolve, reject) =>
    s.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
}

function shutdown(s: grpc.Server | undefined): Promise<void> {
  if (!s) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      s.forceShutdown();
      resolve();
    }, 2000);
    s.tryShutdown(() => {
      clearTimeout(t);
      resolve();
    });
  });
}
