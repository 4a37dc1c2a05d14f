/**
 * The runtime's sandboxes and containers grouped into pods (upstream: kubeGenericRuntimeManager.GetPods).
 * The PLEG asks for this on every relist, once a second and more often while pods start, and nearly
 * every pod comes back as it was: rebuilding each pod every time was the largest share of what a
 * relist allocated. The CRI client hands back the same frozen object for a listed item while the item
 * is unchanged (src/cri/list-item-cache.ts), so here each listed item is converted once, and a pod
 * whose items are all the ones of the last listing is the same frozen RunningPod as then, which lets
 * the PLEG pass over it with one comparison.
 */
import type { Container, PodSandbox } from '../cri/types.js';
import { toKubeContainerState } from './container-status.js';
import { getContainerInfoFromAnnotations, getContainerInfoFromLabels } from './labels.js';
import type { RunningContainer, RunningPod, RunningSandbox } from './types.js';

const NS_PER_MS = 1_000_000;

/** A listed sandbox, converted, with the listing that last held it. */
interface ListedSandbox {
  running: RunningSandbox;
  podUid: string;
  podName: string;
  podNamespace: string;
  /** The assemble() call that last held it; -1 before the first. */
  listedIn: number;
  /** Whether the call before the one under way held it too. */
  carried: boolean;
}

/** A listed container with what its labels and annotations say about its pod. */
interface ListedContainer {
  running: RunningContainer;
  podUid: string;
  podName: string;
  podNamespace: string;
  terminationGracePeriodSeconds: number | undefined;
  listedIn: number;
  carried: boolean;
}

/**
 * A pod while a listing is read. While its items come in as the same objects, in the same order, as
 * in its last pod, only a count moves; its own arrays are made at the first item that differs.
 */
interface PodDraft {
  uid: string;
  name: string;
  namespace: string;
  terminationGracePeriodSeconds?: number;
  last: RunningPod | undefined;
  sandboxCount: number;
  containerCount: number;
  sandboxes?: RunningSandbox[];
  containers?: RunningContainer[];
  /** The creation time of its last listed sandbox, which orders the pods. */
  createdAtNs: number;
  /** Its items the last listing held too. */
  carriedCount: number;
}

/**
 * A group of getPods results: one per listing filter, since each keeps its own last pods.
 *
 * Only the pods with an item that is new since the last listing (a changed item is a new object)
 * are put together again; the others are the pods of the last result, and a listing of the very
 * items of the last one is the last result itself, which the PLEG passes over whole. When an item
 * went from a pod with nothing new (a container removed), every pod is put together again.
 */
export class RunningPodAssembler {
  // Keyed by the listed objects, which the list cache keeps alive only while they are listed. Only
  // frozen items are kept: an object that can change (a test's stub) is converted every time.
  private readonly sandboxes = new WeakMap<PodSandbox, ListedSandbox>();
  private readonly containers = new WeakMap<Container, ListedContainer>();
  /** The pods the last assemble() returned, by UID, and as returned. */
  private lastPods = new Map<string, RunningPod>();
  private lastResult: readonly RunningPod[] = Object.freeze([]);
  /** How many items the last listing held. */
  private lastItemCount = 0;
  private listings = 0;

  /** Newest first: of two pods with one name (one still terminating), the newer is found first. */
  assemble(sandboxes: readonly PodSandbox[], containers: readonly Container[]): readonly RunningPod[] {
    const listing = ++this.listings;
    const listedSandboxes = sandboxes.map((s) => this.sandbox(s));
    const listedContainers = containers.map((c) => this.container(c));
    // Pods with an item the last listing did not hold, and how many of its items this one holds.
    let changed: Set<string> | undefined;
    let carried = 0;
    const mark = (listed: ListedSandbox | ListedContainer): void => {
      listed.carried = listed.listedIn === listing - 1;
      listed.listedIn = listing;
      if (listed.carried) carried++;
      else (changed ??= new Set()).add(listed.podUid);
    };
    listedSandboxes.forEach(mark);
    listedContainers.forEach(mark);
    const lost = this.lastItemCount - carried;
    this.lastItemCount = sandboxes.length + containers.length;
    if (!changed && lost === 0) return this.lastResult;

    const only = changed;
    const partial = only && this.drafts(listedSandboxes, listedContainers, only);
    // Partly only when every item gone went from a pod that has something new.
    if (only && partial && lost === this.lostFrom(partial)) {
      const kept = this.lastResult.filter((pod) => !only.has(pod.uid));
      this.lastResult = Object.freeze(mergeNewestFirst(kept, this.podsOf(partial)));
    } else {
      const drafts = this.drafts(listedSandboxes, listedContainers, undefined);
      this.lastPods = new Map();
      this.lastResult = Object.freeze(this.podsOf(drafts));
    }
    return this.lastResult;
  }

  /** The drafts' pods, newest first (the last ones where nothing of a pod changed), as lastPods. */
  private podsOf(drafts: readonly PodDraft[]): RunningPod[] {
    const pods = drafts.map((draft) => {
      const pod = reuse(draft) ?? freezePod(draft);
      this.lastPods.set(pod.uid, pod);
      return pod;
    });
    // Stable: pods created at the same time keep the order they came in.
    return pods.sort((a, b) => createdAtNs(b) - createdAtNs(a));
  }

  /** How many items the drafts' pods held at the last listing that this one does not. */
  private lostFrom(drafts: readonly PodDraft[]): number {
    let lost = 0;
    for (const draft of drafts) {
      if (draft.last) lost += draft.last.sandboxes.length + draft.last.containers.length - draft.carriedCount;
    }
    return lost;
  }

  /** The pods of the listing (only those in `only`, when given), their items in listing order. */
  private drafts(
    sandboxes: readonly ListedSandbox[],
    containers: readonly ListedContainer[],
    only: ReadonlySet<string> | undefined,
  ): PodDraft[] {
    const drafts = new Map<string, PodDraft>();
    const draftOf = (uid: string, name: string, namespace: string): PodDraft => {
      let draft = drafts.get(uid);
      if (!draft) {
        draft = {
          uid,
          name,
          namespace,
          last: this.lastPods.get(uid),
          sandboxCount: 0,
          containerCount: 0,
          createdAtNs: 0,
          carriedCount: 0,
        };
        drafts.set(uid, draft);
      }
      return draft;
    };
    for (const listed of sandboxes) {
      if (only && !only.has(listed.podUid)) continue;
      const draft = draftOf(listed.podUid, listed.podName, listed.podNamespace);
      const sandbox = listed.running;
      if (draft.sandboxes === undefined && draft.last?.sandboxes[draft.sandboxCount] !== sandbox)
        draft.sandboxes = draft.last?.sandboxes.slice(0, draft.sandboxCount) ?? [];
      draft.sandboxes?.push(sandbox);
      draft.sandboxCount++;
      draft.createdAtNs = sandbox.createdAtNs;
      if (listed.carried) draft.carriedCount++;
    }
    for (const listed of containers) {
      if (only && !only.has(listed.podUid)) continue;
      const draft = draftOf(listed.podUid, listed.podName, listed.podNamespace);
      if (draft.terminationGracePeriodSeconds === undefined)
        draft.terminationGracePeriodSeconds = listed.terminationGracePeriodSeconds;
      if (draft.containers === undefined && draft.last?.containers[draft.containerCount] !== listed.running)
        draft.containers = draft.last?.containers.slice(0, draft.containerCount) ?? [];
      draft.containers?.push(listed.running);
      draft.containerCount++;
      if (listed.carried) draft.carriedCount++;
    }
    return [...drafts.values()];
  }

  private sandbox(s: PodSandbox): ListedSandbox {
    const known = this.sandboxes.get(s);
    if (known) return known;
    const listed: ListedSandbox = {
      running: Object.freeze({
        id: s.id,
        state: s.state === 'SANDBOX_READY' ? 'ready' : 'notready',
        createdAtMs: Math.floor(s.createdAt / NS_PER_MS),
        createdAtNs: s.createdAt,
      }),
      podUid: s.metadata.uid,
      podName: s.metadata.name,
      podNamespace: s.metadata.namespace,
      listedIn: -1,
      carried: false,
    };
    if (Object.isFrozen(s)) this.sandboxes.set(s, listed);
    return listed;
  }

  private container(c: Container): ListedContainer {
    const known = this.containers.get(c);
    if (known) return known;
    const labels = getContainerInfoFromLabels(c.labels);
    const annotations = getContainerInfoFromAnnotations(c.annotations);
    const listed: ListedContainer = {
      running: Object.freeze({
        id: c.id,
        name: c.metadata.name,
        image: c.image.image,
        imageRef: c.imageRef,
        hash: annotations.hash,
        podSandboxId: c.podSandboxId,
        state: toKubeContainerState(c.state),
      }),
      podUid: labels.podUid,
      podName: labels.podName,
      podNamespace: labels.podNamespace,
      terminationGracePeriodSeconds: annotations.podTerminationGracePeriodSeconds,
      listedIn: -1,
      carried: false,
    };
    if (Object.isFrozen(c)) this.containers.set(c, listed);
    return listed;
  }
}

/**
 * Two lists of pods, each newest first, as one, as a stable sort of the two one after the other
 * would order them: the few changed pods of a relist go in among the others without sorting them all.
 */
function mergeNewestFirst(kept: readonly RunningPod[], changed: readonly RunningPod[]): RunningPod[] {
  const out: RunningPod[] = [];
  let k = 0;
  for (const pod of changed) {
    const at = createdAtNs(pod);
    while (k < kept.length && createdAtNs(kept[k]!) >= at) out.push(kept[k++]!);
    out.push(pod);
  }
  while (k < kept.length) out.push(kept[k++]!);
  return out;
}

/** What orders the pods: the creation time of the pod's last listed sandbox (0 without one). */
function createdAtNs(pod: RunningPod): number {
  return pod.sandboxes[pod.sandboxes.length - 1]?.createdAtNs ?? 0;
}

/** The last listing's pod when nothing about it changed. */
function reuse(draft: PodDraft): RunningPod | undefined {
  const last = draft.last;
  if (
    last &&
    draft.sandboxes === undefined &&
    draft.containers === undefined &&
    draft.sandboxCount === last.sandboxes.length &&
    draft.containerCount === last.containers.length &&
    last.name === draft.name &&
    last.namespace === draft.namespace &&
    last.terminationGracePeriodSeconds === draft.terminationGracePeriodSeconds
  )
    return last;
  return undefined;
}

function freezePod(draft: PodDraft): RunningPod {
  const pod: RunningPod = {
    uid: draft.uid,
    name: draft.name,
    namespace: draft.namespace,
    sandboxes: Object.freeze(draft.sandboxes ?? draft.last?.sandboxes.slice(0, draft.sandboxCount) ?? []),
    containers: Object.freeze(
      draft.containers ?? draft.last?.containers.slice(0, draft.containerCount) ?? [],
    ),
  };
  if (draft.terminationGracePeriodSeconds !== undefined)
    pod.terminationGracePeriodSeconds = draft.terminationGracePeriodSeconds;
  return Object.freeze(pod);
}
