/**
 * Makes sure a container's image is on the node before the container is created, per its pull
 * policy, with a back-off per pod and image after a failed pull (upstream: images.imageManager
 * EnsureImageExists, applyDefaultImageTag, shouldPullImage, evalCRIPullErr).
 */
import type { Container, Pod, PullPolicy } from '../api/core-v1.js';
import type { ImageService, ImageSpec, PodSandboxConfig } from '../cri/types.js';
import type { Backoff } from '../lib/backoff.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { containerFieldPath, EventReason, type EventRecorder, type EventType } from './event-recorder.js';
import { formatGoDuration } from './format.js';

const log = logger('kuberuntime');

/** The container state reasons an image failure shows in pod status (upstream images/types.go). */
export type ImageFailureReason =
  | 'ErrImagePull'
  | 'ImagePullBackOff'
  | 'ErrImageNeverPull'
  | 'InvalidImageName'
  | 'ImageInspectError'
  | 'RegistryUnavailable'
  | 'SignatureValidationFailed';

export type EnsureImageResult =
  { ok: true; imageRef: string } | { ok: false; reason: ImageFailureReason; message: string };

// The CRI errors a runtime may prefix its pull errors with (cri-api pkg/errors).
const REGISTRY_UNAVAILABLE = 'RegistryUnavailable';
const SIGNATURE_VALIDATION_FAILED = 'SignatureValidationFailed';

const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[0-9a-fA-F:]+\\])(?::[0-9]+)?`;
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*';
const REFERENCE = new RegExp(
  `^(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*(?::[\\w][\\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`,
);

interface ParsedImageName {
  tag: string;
  digest: string;
}

/** The tag and digest of an image reference; throws on a malformed one, in the reference library's words. */
export function parseImageName(image: string): ParsedImageName {
  if (!REFERENCE.test(image)) {
    const lower = image.toLowerCase();
    const onlyCase = lower !== image && REFERENCE.test(lower);
    throw new Error(
      `couldn't parse image name "${image}": invalid reference format${onlyCase ? ': repository name must be lowercase' : ''}`,
    );
  }
  const at = image.indexOf('@');
  const name = at >= 0 ? image.slice(0, at) : image;
  const digest = at >= 0 ? image.slice(at + 1) : '';
  const lastSlash = name.lastIndexOf('/');
  const colon = name.indexOf(':', lastSlash + 1);
  return { tag: colon >= 0 ? name.slice(colon + 1) : '', digest };
}

/**
 * `busybox` becomes `busybox:latest`. Only the tag is added, never a registry or `library/`: the
 * runtime owns the rules for short names.
 */
export function applyDefaultImageTag(image: string): string {
  const { tag, digest } = parseImageName(image);
  return tag === '' && digest === '' ? `${image}:latest` : image;
}

/** The API server's default: Always for `:latest` or an untagged image, else IfNotPresent. */
export function defaultPullPolicy(image: string): PullPolicy {
  try {
    const { tag, digest } = parseImageName(image);
    return tag === 'latest' || (tag === '' && digest === '') ? 'Always' : 'IfNotPresent';
  } catch {
    return 'IfNotPresent';
  }
}

function shouldPullImage(policy: PullPolicy, present: boolean): boolean {
  if (policy === 'Never') return false;
  return policy === 'Always' || !present;
}

const GRPC_CODE_NAMES = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

/**
 * A runtime error as Go's gRPC client prints it (`rpc error: code = NotFound desc = …`), which is what
 * upstream puts in the container's waiting message and users grep for.
 */
export function runtimeErrorMessage(err: unknown): string {
  const cause = (err as { cause?: unknown } | undefined)?.cause as
    { code?: unknown; details?: unknown } | undefined;
  if (cause && typeof cause.code === 'number' && typeof cause.details === 'string') {
    return `rpc error: code = ${GRPC_CODE_NAMES[cause.code] ?? `Code(${cause.code})`} desc = ${cause.details}`;
  }
  return errorMessage(err);
}

export interface ImagePullerOptions {
  imageService: ImageService;
  /** Per pod and image: 10 s doubling to 300 s upstream. */
  backoff: Backoff;
  clock: Clock;
  recorder?: EventRecorder;
  /** The runtime handler of the pod's RuntimeClass, passed with image calls. */
  runtimeHandler?: string;
}

export class ImagePuller {
  // The Backoff keeps delays; the time of each key's last failure is what back-off is measured from.
  private readonly lastFailureMs = new Map<string, number>();

  constructor(private readonly opts: ImagePullerOptions) {}

  async ensureImageExists(
    pod: Pod,
    container: Container,
    sandboxConfig: PodSandboxConfig | undefined,
    signal?: AbortSignal,
  ): Promise<EnsureImageResult> {
    const requested = container.image ?? '';
    const fieldPath = containerFieldPath(pod, container.name);
    const emit = (type: EventType, reason: string, message: string, logLevel: 'info' | 'warn'): void => {
      log[logLevel](message, {
        pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
        image: requested,
      });
      this.opts.recorder?.event(pod, fieldPath, type, reason, message);
    };

    let image: string;
    try {
      image = applyDefaultImageTag(requested);
    } catch (err) {
      const message = `Failed to apply default image tag "${requested}": ${errorMessage(err)}`;
      emit('Warning', EventReason.FailedToInspectImage, message, 'warn');
      return { ok: false, reason: 'InvalidImageName', message };
    }
    const spec: ImageSpec = { image, annotations: { ...(pod.metadata.annotations ?? {}) } };
    if (this.opts.runtimeHandler) spec.runtimeHandler = this.opts.runtimeHandler;

    let imageRef = '';
    try {
      imageRef = (await this.opts.imageService.imageStatus(spec, false, { signal }))?.id ?? '';
    } catch (err) {
      const message = `Failed to inspect image "${image}": ${runtimeErrorMessage(err)}`;
      emit('Warning', EventReason.FailedToInspectImage, message, 'warn');
      return { ok: false, reason: 'ImageInspectError', message };
    }

    const policy = container.imagePullPolicy ?? defaultPullPolicy(requested);
    const present = imageRef !== '';
    if (!shouldPullImage(policy, present)) {
      if (present) {
        emit(
          'Normal',
          EventReason.PulledImage,
          `Container image "${image}" already present on machine`,
          'info',
        );
        return { ok: true, imageRef };
      }
      const message = `Container image "${image}" is not present with pull policy of Never`;
      emit('Warning', EventReason.ErrImageNeverPullPolicy, message, 'warn');
      return { ok: false, reason: 'ErrImageNeverPull', message };
    }

    const key = `${pod.metadata.uid ?? ''}_${image}`;
    const last = this.lastFailureMs.get(key);
    if (last !== undefined && this.opts.backoff.isInBackoffSince(key, last)) {
      const message = `Back-off pulling image "${image}"`;
      emit('Normal', EventReason.BackOffPullImage, message, 'info');
      return { ok: false, reason: 'ImagePullBackOff', message };
    }

    emit('Normal', EventReason.PullingImage, `Pulling image "${image}"`, 'info');
    const startMs = this.opts.clock.now();
    try {
      imageRef = await this.opts.imageService.pullImage(spec, undefined, sandboxConfig, { signal });
    } catch (err) {
      const raw = runtimeErrorMessage(err);
      emit('Warning', EventReason.FailedToPullImage, `Failed to pull image "${image}": ${raw}`, 'warn');
      this.opts.backoff.next(key);
      this.lastFailureMs.set(key, this.opts.clock.now());
      return { ok: false, ...evalPullError(image, raw) };
    }
    const tookMs = this.opts.clock.now() - startMs;
    let size = '';
    try {
      const status = await this.opts.imageService.imageStatus({ ...spec, image: imageRef }, false, {
        signal,
      });
      if (status) size = ` Image size: ${status.size} bytes.`;
    } catch {
      // The size is only for the event.
    }
    const took = formatGoDuration(tookMs);
    emit(
      'Normal',
      EventReason.PulledImage,
      `Successfully pulled image "${image}" in ${took} (${took} including waiting).${size}`,
      'info',
    );
    this.opts.backoff.gc();
    for (const k of this.lastFailureMs.keys())
      if (this.opts.backoff.get(k) === 0) this.lastFailureMs.delete(k);
    return { ok: true, imageRef };
  }
}

function evalPullError(image: string, raw: string): { reason: ImageFailureReason; message: string } {
  // Runtimes flag these two cases by the message's prefix; gRPC errors carry no wrapped error types.
  const desc = raw.replace(/^rpc error: code = \w+ desc = /, '');
  if (desc.startsWith(REGISTRY_UNAVAILABLE)) {
    return {
      reason: 'RegistryUnavailable',
      message: `image pull failed for ${image} because the registry is unavailable${desc.slice(REGISTRY_UNAVAILABLE.length)}`,
    };
  }
  if (desc.startsWith(SIGNATURE_VALIDATION_FAILED)) {
    return {
      reason: 'SignatureValidationFailed',
      message: `image pull failed for ${image} because the signature validation failed${desc.slice(SIGNATURE_VALIDATION_FAILED.length)}`,
    };
  }
  return { reason: 'ErrImagePull', message: raw };
}
