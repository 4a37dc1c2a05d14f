/**
 * The device plugin Registration service on `kubelet.sock` in the device plugin folder (upstream:
 * pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go). A plugin calls Register with its API
 * version, its resource name and its own socket's name in the same folder; the kubelet checks both,
 * dials the plugin and answers only once it is connected.
 *
 * At start the folder's stale sockets are removed (the checkpoint stays) and kubelet.sock is made
 * anew: plugins watch for that file and register again with a restarted kubelet.
 */
import { lstat, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../../lib/errors.js';
import { grpcMethods } from '../../lib/grpc-definitions.js';
import { GrpcUnaryServer, unaryMethod } from '../../lib/grpc-server/grpc-unary-server.js';
import { shutdownGrpcServer } from '../../lib/grpc-shutdown.js';
import { logger } from '../../lib/log.js';
import { DEVICE_MANAGER_CHECKPOINT } from './checkpoint.js';
import {
  Empty,
  RegisterRequest,
  RegistrationDefinition,
} from './generated/deviceplugin/v1beta1/deviceplugin.js';

const REGISTRATION = grpcMethods(RegistrationDefinition);

const log = logger('devicemanager');

/** Upstream's KubeletSocket file name, in DevicePluginPath. */
export const KUBELET_SOCKET = 'kubelet.sock';
/** Upstream's SupportedVersions. */
export const SUPPORTED_VERSIONS = ['v1beta1'] as const;

/** What the server hands a valid registration to: connect to the plugin, or throw why not. */
export type ConnectPlugin = (
  resourceName: string,
  socketPath: string,
  request: RegisterRequest,
) => Promise<void>;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

function isDNS1123Subdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split('.').every((l) => DNS1123_LABEL.test(l));
}

/** apimachinery's IsQualifiedName: an optional DNS subdomain prefix, '/', and a name of at most 63 characters. */
function isQualifiedName(s: string): boolean {
  const parts = s.split('/');
  let name = s;
  if (parts.length === 2) {
    if (!isDNS1123Subdomain(parts[0] ?? '')) return false;
    name = parts[1] ?? '';
  } else if (parts.length !== 1) return false;
  return name.length > 0 && name.length <= 63 && QUALIFIED_NAME.test(name);
}

/** Upstream's v1helper.IsExtendedResourceName: a domain-qualified name outside kubernetes.io. */
export function isExtendedResourceName(name: string): boolean {
  if (!name.includes('/') || name.includes('kubernetes.io/')) return false;
  if (name.startsWith('requests.')) return false;
  return isQualifiedName(`requests.${name}`);
}

/** The reason a registration is refused, worded as upstream's errUnsupportedVersion/errInvalidResourceName; undefined if valid. */
export function validateRegistration(
  request: Pick<RegisterRequest, 'version' | 'resourceName' | 'endpoint'>,
): string | undefined {
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(request.version)) {
    return `requested API version "${request.version}" is not supported by kubelet. Supported versions are ["${SUPPORTED_VERSIONS.join('" "')}"]`;
  }
  if (!isExtendedResourceName(request.resourceName))
    return `the ResourceName "${request.resourceName}" is invalid`;
  // The endpoint is a file name in the plugin folder; a path could point the kubelet anywhere.
  if (
    request.endpoint === '' ||
    request.endpoint.includes('/') ||
    request.endpoint === '..' ||
    request.endpoint === '.'
  )
    return `the endpoint "${request.endpoint}" is not a file name in the device plugin folder`;
  return undefined;
}

/**
 * Removes the sockets in dir, leaving the checkpoint, other files and folders (upstream:
 * CleanupPluginDirectory).
 */
export async function cleanupPluginDirectory(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (name === DEVICE_MANAGER_CHECKPOINT) continue;
    const file = path.join(dir, name);
    try {
      const st = await lstat(file);
      if (!st.isSocket()) continue;
      await rm(file, { force: true });
    } catch (err) {
      log.error('Failed to remove a stale socket', { path: file, err: errorMessage(err) });
    }
  }
}

export class RegistrationServer {
  private server: GrpcUnaryServer | undefined;

  constructor(
    readonly socketDir: string,
    private readonly connect: ConnectPlugin,
  ) {}

  get socketPath(): string {
    return path.join(this.socketDir, KUBELET_SOCKET);
  }

  async start(): Promise<void> {
    log.v(2, 'Starting device plugin registration server');
    await mkdir(this.socketDir, { recursive: true, mode: 0o750 });
    await cleanupPluginDirectory(this.socketDir);
    // The refusals are plain errors: plugins read them as UNKNOWN, as upstream's.
    this.server = await GrpcUnaryServer.listen({
      socketPath: this.socketPath,
      methods: [
        unaryMethod(REGISTRATION.register, async (req) => {
          await this.register(req);
          return Empty.fromPartial({});
        }),
      ],
    });
    log.v(2, 'Serving device plugin registration server', { socket: this.socketPath });
  }

  private async register(request: RegisterRequest): Promise<void> {
    log.info('Got registration request from device plugin with resource', {
      resourceName: request.resourceName,
    });
    const invalid = validateRegistration(request);
    if (invalid) {
      log.info('Bad registration request from device plugin', {
        resourceName: request.resourceName,
        err: invalid,
      });
      throw new Error(invalid);
    }
    try {
      await this.connect(request.resourceName, path.join(this.socketDir, request.endpoint), request);
    } catch (err) {
      log.info('Error connecting to device plugin client', {
        resourceName: request.resourceName,
        err: errorMessage(err),
      });
      throw err;
    }
  }

  /** Stops serving and removes kubelet.sock, so that plugins see the kubelet gone. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await shutdownGrpcServer(server);
    await rm(this.socketPath, { force: true });
  }
}
