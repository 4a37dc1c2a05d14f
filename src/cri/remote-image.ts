import { KubeletError } from '../lib/errors.js';
import { filesystemUsageFromCri, imageFromCri } from './convert.js';
import {
  ImageFsInfoRequest,
  ImageServiceDefinition,
  ImageStatusRequest,
  ListImagesRequest,
  PullImageRequest,
  RemoveImageRequest,
} from './generated/runtime/v1/api.js';
import { grpcMethods } from '../lib/grpc-definitions.js';
import { GrpcConnection, type CriMethod, type GrpcConnectionOptions } from './grpc-connection.js';
import { DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS } from './remote-runtime.js';
import type {
  AuthConfig,
  CallOptions,
  FilesystemUsage,
  Image,
  ImageService,
  ImageSpec,
  PodSandboxConfig,
} from './types.js';

const IS = grpcMethods(ImageServiceDefinition);

/**
 * Default deadline of PullImage. Upstream sets none and relies on the runtime to notice a stalled
 * pull; we bound every call, generously, because a pull's time grows with the image and the link.
 */
export const DEFAULT_IMAGE_PULL_TIMEOUT_MS = 15 * 60_000;

export interface RemoteImageOptions extends GrpcConnectionOptions {
  /** Deadline of every call but PullImage that does not give its own timeoutMs (default 2 min). */
  runtimeRequestTimeoutMs?: number;
  /** Deadline of PullImage when the call gives no timeoutMs (default 15 min). */
  imagePullTimeoutMs?: number;
}

function invalidResponse(method: string, problem: string): KubeletError {
  return new KubeletError('CRI_ERROR', `${method}: the runtime's response is invalid: ${problem}`);
}

/** runtime.v1.ImageService over gRPC (upstream's remoteImageService). Errors as RemoteRuntimeService's. */
export class RemoteImageService implements ImageService {
  readonly runtimeRequestTimeoutMs: number;
  readonly imagePullTimeoutMs: number;
  private readonly connection: GrpcConnection;
  private readonly ownsConnection: boolean;

  /** Dials endpoint (`unix:///path` or `/path`), or shares an existing connection, which it then does not close. */
  constructor(endpointOrConnection: string | GrpcConnection, options: RemoteImageOptions = {}) {
    this.runtimeRequestTimeoutMs = options.runtimeRequestTimeoutMs ?? DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS;
    this.imagePullTimeoutMs = options.imagePullTimeoutMs ?? DEFAULT_IMAGE_PULL_TIMEOUT_MS;
    this.ownsConnection = typeof endpointOrConnection === 'string';
    this.connection =
      typeof endpointOrConnection === 'string'
        ? new GrpcConnection(endpointOrConnection, options)
        : endpointOrConnection;
  }

  get endpoint(): string {
    return this.connection.endpoint;
  }

  close(): void {
    if (this.ownsConnection) this.connection.close();
  }

  private call<Request, Response>(
    method: CriMethod<Request, Response>,
    request: Request,
    opts: CallOptions | undefined,
    baseTimeoutMs = this.runtimeRequestTimeoutMs,
  ): Promise<Response> {
    return this.connection.call(method, request, {
      timeoutMs: opts?.timeoutMs ?? baseTimeoutMs,
      signal: opts?.signal,
    });
  }

  async listImages(filter?: { image?: ImageSpec }, opts?: CallOptions): Promise<Image[]> {
    const res = await this.call(IS.listImages, ListImagesRequest.fromPartial({ filter }), opts);
    return res.images.map(imageFromCri);
  }

  async imageStatus(image: ImageSpec, verbose = false, opts?: CallOptions): Promise<Image | undefined> {
    const res = await this.call(IS.imageStatus, ImageStatusRequest.fromPartial({ image, verbose }), opts);
    if (!res.image) return undefined;
    const status = imageFromCri(res.image);
    if (!status.id || status.size === 0)
      throw invalidResponse('ImageStatus', `id or size of image ${image.image} is not set`);
    return status;
  }

  async pullImage(
    image: ImageSpec,
    auth: AuthConfig | undefined,
    sandboxConfig: PodSandboxConfig | undefined,
    opts?: CallOptions,
  ): Promise<string> {
    const req = PullImageRequest.fromPartial({ image, auth, sandboxConfig });
    const res = await this.call(IS.pullImage, req, opts, this.imagePullTimeoutMs);
    if (!res.imageRef) throw invalidResponse('PullImage', `imageRef of image ${image.image} is not set`);
    return res.imageRef;
  }

  async removeImage(image: ImageSpec, opts?: CallOptions): Promise<void> {
    await this.call(IS.removeImage, RemoveImageRequest.fromPartial({ image }), opts);
  }

  async imageFsInfo(opts?: CallOptions): Promise<FilesystemUsage[]> {
    const res = await this.call(IS.imageFsInfo, ImageFsInfoRequest.fromPartial({}), opts);
    return res.imageFilesystems.map(filesystemUsageFromCri);
  }
}
