/**
 * Makes sure a container's image is on the node before the container is created, per its pull
 * policy, with a back-off per pod and image after a failed pull (upstream: images.imageManager
 * EnsureImageExists, applyDefaultImageTag, shouldPullImage, evalCRIPullErr).
 */
import type { Container, Pod, PullPolicy } from '../api/core-v1.js';
import type { AuthConfig, Image, ImageService, ImageSpec, PodSandboxConfig } from '../cri/types.js';
import type { Backoff } from '../lib/backoff.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { containerFieldPath, EventReason, type EventRecorder } from './event-recorder.js';
import type { EventType } from '../api/core-v1.js';
import type { DockerConfigProvider } from '../credentialprovider/plugin-provider.js';
import { lookupProviders, makeDockerKeyring, repositoryToPull, type PullSecret } from './docker-keyring.js';
import { formatGoDuration } from '../lib/go-duration.js';
import { TokenBucketRateLimiter } from '../lib/token-bucket.js';
import { Slots } from '../lib/slots.js';
import { goRpcErrorText } from '../lib/grpc-status-text.js';

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

/**
 * On success, the image's ID and, when this call read it, its status: the container's config needs
 * the image's user, and taking it from here saves the runtime a second ImageStatus per container
 * (upstream asks again in getImageUser).
 */
export type EnsureImageResult =
  | { ok: true; imageRef: string; image?: Image }
  | { ok: false; reason: ImageFailureReason; message: string; retryAfterMs?: number };

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

/**
 * The repository path the reference library checks for case before anything else (its
 * splitDockerDomain): the first component is a registry only if it has a dot or a port, is
 * `localhost`, or has capitals; Docker Hub's one-component names get `library/`.
 */
function remoteName(image: string): string {
  const slash = image.indexOf('/');
  const first = slash === -1 ? '' : image.slice(0, slash);
  const isDomain =
    slash !== -1 && (/[.:]/.test(first) || first === 'localhost' || first.toLowerCase() !== first);
  let remainder = isDomain ? image.slice(slash + 1) : image;
  const domain = isDomain ? first : 'docker.io';
  if ((domain === 'docker.io' || domain === 'index.docker.io') && !remainder.includes('/'))
    remainder = `library/${remainder}`;
  const tagSep = remainder.indexOf(':');
  return tagSep === -1 ? remainder : remainder.slice(0, tagSep);
}

/** The tag and digest of an image reference; throws on a malformed one, in the reference library's words. */
export function parseImageName(image: string): ParsedImageName {
  const remote = remoteName(image);
  if (remote.toLowerCase() !== remote)
    throw new Error(
      `couldn't parse image name "${image}": invalid reference format: repository name (${remote}) must be lowercase`,
    );
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

/**
 * A runtime error as Go's gRPC client prints it (`rpc error: code = NotFound desc = …`), which is what
 * upstream puts in the container's waiting message and users grep for.
 */
export function runtimeErrorMessage(err: unknown): string {
  const cause = (err as { cause?: unknown } | undefined)?.cause as
    { code?: unknown; details?: unknown } | undefined;
  if (cause && typeof cause.code === 'number' && typeof cause.details === 'string') {
    return goRpcErrorText(cause.code, cause.details);
  }
  return errorMessage(err);
}

/** What a pull observer is told when the pull it was told of ends. */
export type PullOutcome = { ok: true; sizeBytes: number } | { ok: false };

/**
 * Told of each pull while it runs (after it waited for its turn), e.g. to follow its progress in
 * the runtime's content store; `finished` is called once per `pullStarted`.
 */
export interface PullObserver {
  pullStarted(image: string): { finished(outcome: PullOutcome): void };
}

/** Told when a pod's image pull starts and when one succeeds (upstream's podPullingTimeRecorder). */
export interface PodPullingTimeRecorder {
  recordImageStartedPulling(podUid: string): void;
  recordImageFinishedPulling(podUid: string): void;
}

export interface ImagePullerOptions {
  imageService: ImageService;
  pullObserver?: PullObserver;
  pullingTimeRecorder?: PodPullingTimeRecorder;
  /** Per pod and image: 10 s doubling to 300 s upstream. */
  backoff: Backoff;
  clock: Clock;
  recorder?: EventRecorder;
  /** The runtime handler of the pod's RuntimeClass, passed with image calls. */
  runtimeHandler?: string;
  /** serializeImagePulls (default true): one pull at a time on the node, in the order asked. */
  serializeImagePulls?: boolean;
  /** maxParallelImagePulls: with serializeImagePulls off, at most this many at once (undefined: no limit). */
  maxParallelImagePulls?: number;
  /** registryPullQPS (upstream default 5; 0 no limit) and registryBurst (default 10): a pull over the rate fails at once. */
  registryPullQPS?: number;
  registryBurst?: number;
  /**
   * The node's credential providers (--image-credential-provider-config), asked for every pull
   * after the pod's pull secrets, as upstream's node keyring is.
   */
  credentialProviders?: readonly DockerConfigProvider[];
}

export class ImagePuller {
  // The Backoff keeps delays; the time of each key's last failure is what back-off is measured from.
  private readonly lastFailureMs = new Map<string, number>();
  private readonly slots: Slots | undefined;
  private readonly rateLimiter: TokenBucketRateLimiter | undefined;

  constructor(private readonly opts: ImagePullerOptions) {
    const serialize = opts.serializeImagePulls ?? true;
    // Upstream's serial puller is a one-worker queue, its parallel one a semaphore of
    // maxParallelImagePulls tokens: both are slots here, waiting in the order they came.
    const limit = serialize ? 1 : opts.maxParallelImagePulls;
    this.slots = limit !== undefined && limit > 0 ? new Slots(limit) : undefined;
    const qps = opts.registryPullQPS ?? 0;
    this.rateLimiter =
      qps > 0
        ? new TokenBucketRateLimiter(qps, Math.max(1, opts.registryBurst ?? 10), opts.clock)
        : undefined;
  }

  /**
   * Makes sure the container's image is on the node (upstream imageManager.EnsureImageExists). The
   * pull secrets are asked for only when a pull is about to happen, and then before it waits for a
   * pull slot (the runtime manager gives back the pod's start slot then).
   */
  async ensureImageExists(
    pod: Pod,
    container: Container,
    sandboxConfig: PodSandboxConfig | undefined,
    signal?: AbortSignal,
    pullSecrets?: () => Promise<PullSecret[]>,
  ): Promise<EnsureImageResult> {
    const requested = container.image ?? '';
    const fieldPath = containerFieldPath(pod, container.name);
    const emit = (type: EventType, reason: string, message: string, logLevel: 'info' | 'warn'): void => {
      const kv = { pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`, image: requested };
      // A success is the event alone at the default verbosity, as upstream (its events are logged
      // at 3; standalone tskubelet logs each event at 0): not a second line per container start.
      if (logLevel === 'warn') log.warn(message, kv);
      else log.v(3, message, kv);
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
    let present: Image | undefined;
    try {
      present = await this.opts.imageService.imageStatus(spec, false, { signal });
      imageRef = present?.id ?? '';
    } catch (err) {
      const message = `Failed to inspect image "${requested}": ${runtimeErrorMessage(err)}`;
      emit('Warning', EventReason.FailedToInspectImage, message, 'warn');
      return { ok: false, reason: 'ImageInspectError', message };
    }

    const policy = container.imagePullPolicy ?? defaultPullPolicy(requested);
    if (!shouldPullImage(policy, imageRef !== '')) {
      if (imageRef !== '') {
        emit(
          'Normal',
          EventReason.PulledImage,
          `Container image "${requested}" already present on machine`,
          'info',
        );
        return { ok: true, imageRef, image: present };
      }
      const message = `Container image "${requested}" is not present with pull policy of Never`;
      emit('Warning', EventReason.ErrImageNeverPullPolicy, message, 'warn');
      return { ok: false, reason: 'ErrImageNeverPull', message };
    }

    const key = `${pod.metadata.uid ?? ''}_${requested}`;
    const last = this.lastFailureMs.get(key);
    if (last !== undefined && this.opts.backoff.isInBackoffSince(key, last)) {
      const message = `Back-off pulling image "${requested}"`;
      emit('Normal', EventReason.BackOffPullImage, message, 'info');
      return {
        ok: false,
        reason: 'ImagePullBackOff',
        message,
        retryAfterMs: this.opts.backoff.remainingMs(key, last),
      };
    }

    emit('Normal', EventReason.PullingImage, `Pulling image "${requested}"`, 'info');
    this.opts.pullingTimeRecorder?.recordImageStartedPulling(pod.metadata.uid ?? '');
    const startMs = this.opts.clock.now();
    let pullMs = 0;
    let observed: ReturnType<PullObserver['pullStarted']> | undefined;
    try {
      const secrets = pullSecrets ? await pullSecrets() : [];
      const release = await this.slots?.acquire(signal);
      const pullStartMs = this.opts.clock.now();
      observed = this.opts.pullObserver?.pullStarted(image);
      try {
        imageRef = await this.pullWithCredentials(spec, secrets, sandboxConfig, signal);
      } finally {
        release?.();
        pullMs = this.opts.clock.now() - pullStartMs;
      }
      this.opts.pullingTimeRecorder?.recordImageFinishedPulling(pod.metadata.uid ?? '');
    } catch (err) {
      observed?.finished({ ok: false });
      const raw = runtimeErrorMessage(err);
      emit('Warning', EventReason.FailedToPullImage, `Failed to pull image "${requested}": ${raw}`, 'warn');
      this.opts.backoff.next(key);
      this.lastFailureMs.set(key, this.opts.clock.now());
      return { ok: false, ...evalPullError(image, raw) };
    }
    const tookMs = this.opts.clock.now() - startMs;
    let size = 0;
    let pulled: Image | undefined;
    try {
      pulled = await this.opts.imageService.imageStatus({ ...spec, image: imageRef }, false, {
        signal,
      });
      size = pulled?.size ?? 0;
    } catch {
      // The size is only for the event.
    }
    observed?.finished({ ok: true, sizeBytes: size });
    emit(
      'Normal',
      EventReason.PulledImage,
      `Successfully pulled image "${requested}" in ${formatGoDuration(pullMs)} (${formatGoDuration(tookMs)} including waiting). Image size: ${size} bytes.`,
      'info',
    );
    this.opts.backoff.gc();
    for (const k of this.lastFailureMs.keys())
      if (this.opts.backoff.get(k) === 0) this.lastFailureMs.delete(k);
    return { ok: true, imageRef, image: pulled };
  }

  /**
   * Without matching credentials one anonymous pull; with them, each in turn until one works, and
   * every error when none does (upstream kubeGenericRuntimeManager.PullImage). The pod's pull
   * secrets come first, then the node's providers (upstream's UnionDockerKeyring of the secrets'
   * keyring and the node's).
   */
  private async pullWithCredentials(
    spec: ImageSpec,
    secrets: PullSecret[],
    sandboxConfig: PodSandboxConfig | undefined,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const repository = repositoryToPull(spec.image);
    const creds = [
      ...(secrets.length > 0 ? makeDockerKeyring(secrets).lookup(repository) : []),
      ...(await lookupProviders(this.opts.credentialProviders ?? [], repository)),
    ];
    if (creds.length === 0) return this.throttledPull(spec, undefined, sandboxConfig, signal);
    const errors: unknown[] = [];
    for (const auth of creds) {
      try {
        return await this.throttledPull(spec, auth, sandboxConfig, signal);
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length === 1) throw errors[0];
    // utilerrors.NewAggregate's text for several errors.
    throw new Error(`[${errors.map((e) => runtimeErrorMessage(e)).join(', ')}]`);
  }

  private throttledPull(
    spec: ImageSpec,
    auth: AuthConfig | undefined,
    sandboxConfig: PodSandboxConfig | undefined,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    if (this.rateLimiter && !this.rateLimiter.tryAccept())
      return Promise.reject(new Error('pull QPS exceeded'));
    return this.opts.imageService.pullImage(spec, auth, sandboxConfig, { signal });
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
