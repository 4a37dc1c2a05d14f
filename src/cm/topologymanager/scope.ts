/**
 * The topology manager's scopes (upstream: topologymanager/scope*.go): where hints are merged and
 * resources allocated. `container` merges each container's hints on its own, init containers first;
 * `pod` merges the whole pod's once and gives every container that affinity; `none` (the `none`
 * policy) merges nothing and only allocates. After a container's affinity is stored, every provider
 * allocates for it in order (CPU, memory, devices); the first refusal refuses the pod.
 *
 * A provider's allocate may answer later (a device plugin's Allocate is an RPC): admission then goes
 * on when it answers, and stays synchronous for pods whose providers all answer at once.
 */
import type { Container, Pod } from '../../api/core-v1.js';
import { errorMessage } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import type { Policy } from './hint-merger.js';
import { affinityString } from './numa-affinity.js';
import type { HintProvider, TopologyHint, TopologyHints } from './topology-hint.js';
import { podRef } from '../../kuberuntime/format.js';

const log = logger('topologymanager');

export const SCOPE_CONTAINER = 'container';
export const SCOPE_POD = 'pod';
/** The scope under the `none` policy. */
export const SCOPE_NONE = 'none';
export const TOPOLOGY_SCOPES: readonly string[] = [SCOPE_CONTAINER, SCOPE_POD];

/** Admission's failure reason when no affinity satisfies the policy (upstream: ErrorTopologyAffinity). */
export const TOPOLOGY_AFFINITY_ERROR = 'TopologyAffinityError';
export const TOPOLOGY_AFFINITY_MESSAGE = 'Resources cannot be allocated with Topology locality';
export const UNEXPECTED_ADMISSION_ERROR = 'UnexpectedAdmissionError';

export type AdmitResult = { admit: true } | { admit: false; reason: string; message: string };

/**
 * A provider's refusal as admission reports it (upstream: admission.GetPodAdmitResult): an error that
 * names its reason (SMTAlignmentError) keeps it; anything else is unexpected.
 */
export function admitResultOf(err: unknown): AdmitResult {
  const reason = (err as { reason?: unknown } | undefined)?.reason;
  if (typeof reason === 'string') return { admit: false, reason, message: errorMessage(err) };
  return {
    admit: false,
    reason: UNEXPECTED_ADMISSION_ERROR,
    message: `Allocate failed due to ${errorMessage(err)}, which is unexpected`,
  };
}

const TOPOLOGY_AFFINITY_REJECTION: AdmitResult = {
  admit: false,
  reason: TOPOLOGY_AFFINITY_ERROR,
  message: TOPOLOGY_AFFINITY_MESSAGE,
};

/** One step of an admission: nothing, or a provider's allocation still under way. */
type Step = void | Promise<void>;

function isPromise(value: unknown): value is Promise<void> {
  return value instanceof Promise;
}

/**
 * Runs the steps synchronously until one is a promise, then the rest after it settles; a rejected
 * step is thrown back into the steps, which turn it into their result.
 */
export function runSteps<T>(steps: Generator<Step, T, void>): T | Promise<T> {
  let next = steps.next();
  while (!next.done) {
    if (isPromise(next.value)) return finishLater(steps, next.value);
    next = steps.next();
  }
  return next.value;
}

async function finishLater<T>(steps: Generator<Step, T, void>, pending: Promise<void>): Promise<T> {
  let waiting: Promise<void> | undefined = pending;
  for (;;) {
    let next: IteratorResult<Step, T>;
    if (waiting === undefined) next = steps.next();
    else {
      try {
        await waiting;
        next = steps.next();
      } catch (err) {
        next = steps.throw(err);
      }
    }
    if (next.done) return next.value;
    waiting = isPromise(next.value) ? next.value : undefined;
  }
}

function hintText(hint: TopologyHint): string {
  return `{${affinityString(hint.numaNodeAffinity)} ${hint.preferred}}`;
}

export class TopologyScope {
  /** podUID → container name → the affinity admission chose. */
  private readonly affinities = new Map<string, Map<string, TopologyHint>>();

  constructor(
    readonly name: string,
    readonly policy: Policy,
    private readonly providers: readonly HintProvider[],
  ) {}

  getAffinity(podUID: string, containerName: string): TopologyHint {
    return this.affinities.get(podUID)?.get(containerName) ?? { numaNodeAffinity: null, preferred: false };
  }

  /** Forgets the affinities of pods not in keep (upstream forgets them as containers are removed). */
  removeStale(keep: ReadonlySet<string>): void {
    for (const uid of [...this.affinities.keys()]) if (!keep.has(uid)) this.affinities.delete(uid);
  }

  admit(pod: Pod): AdmitResult | Promise<AdmitResult> {
    if (this.name === SCOPE_POD) return runSteps(this.admitPod(pod));
    if (this.name === SCOPE_CONTAINER) return runSteps(this.admitContainers(pod));
    return runSteps(this.admitPolicyNone(pod));
  }

  private setAffinity(pod: Pod, container: Container, hint: TopologyHint): void {
    const uid = pod.metadata.uid ?? '';
    let byContainer = this.affinities.get(uid);
    if (!byContainer) this.affinities.set(uid, (byContainer = new Map()));
    byContainer.set(container.name, hint);
  }

  /** Each provider's allocate in order; returns the first refusal (upstream: allocateAlignedResources). */
  private *allocateAligned(pod: Pod, container: Container): Generator<Step, AdmitResult | undefined, void> {
    for (const provider of this.providers) {
      try {
        yield provider.allocate(pod, container);
      } catch (err) {
        return admitResultOf(err);
      }
    }
    return undefined;
  }

  private *admitPolicyNone(pod: Pod): Generator<Step, AdmitResult, void> {
    for (const c of containersOf(pod)) {
      const refused = yield* this.allocateAligned(pod, c);
      if (refused) return refused;
    }
    return { admit: true };
  }

  private *admitContainers(pod: Pod): Generator<Step, AdmitResult, void> {
    for (const c of containersOf(pod)) {
      const hints = this.providers.map((p) => p.getTopologyHints(pod, c));
      const { hint, admit } = this.policy.merge(hints);
      log.info('Best TopologyHint', { bestHint: hintText(hint), pod: podRef(pod), containerName: c.name });
      if (!admit) return TOPOLOGY_AFFINITY_REJECTION;
      this.setAffinity(pod, c, hint);
      const refused = yield* this.allocateAligned(pod, c);
      if (refused) return refused;
    }
    return { admit: true };
  }

  private *admitPod(pod: Pod): Generator<Step, AdmitResult, void> {
    const hints: TopologyHints[] = this.providers.map((p) => p.getPodTopologyHints(pod));
    const { hint, admit } = this.policy.merge(hints);
    log.info('Best TopologyHint', { bestHint: hintText(hint), pod: podRef(pod) });
    if (!admit) return TOPOLOGY_AFFINITY_REJECTION;
    for (const c of containersOf(pod)) {
      this.setAffinity(pod, c, hint);
      const refused = yield* this.allocateAligned(pod, c);
      if (refused) return refused;
    }
    return { admit: true };
  }
}

/** Init containers first, as upstream admits them. */
function containersOf(pod: Pod): Container[] {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
}
