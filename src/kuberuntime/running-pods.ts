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

/** A listed container with what its labels and annotations say about its pod. */
interface ListedContainer {
  running: RunningContainer;
  podUid: string;
  podName: string;
  podNamespace: string;
  terminationGracePeriodSeconds: number | undefined;
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
}

/** A group of getPods results: one per listing filter, since each keeps its own last pods. */
export class RunningPodAssembler {
  // Keyed by the listed objects, which the list cache keeps alive only while they are listed. Only
  // frozen items are kept: an object that can change (a test's stub) is converted every time.
  private readonly sandboxes = new WeakMap<PodSandbox, RunningSandbox>();
  private readonly containers = new WeakMap<Container, ListedContainer>();
  /** The pods the last assemble() returned, by UID. */
  private lastPods = new Map<string, RunningPod>();

  /** Newest first: of two pods with one name (one still terminating), the newer is found first. */
  assemble(sandboxes: readonly PodSandbox[], containers: readonly Container[]): RunningPod[] {
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
        };
        drafts.set(uid, draft);
      }
      return draft;
    };
    for (const s of sandboxes) {
      const draft = draftOf(s.metadata.uid, s.metadata.name, s.metadata.namespace);
      const sandbox = this.sandbox(s);
      if (draft.sandboxes === undefined && draft.last?.sandboxes[draft.sandboxCount] !== sandbox)
        draft.sandboxes = draft.last?.sandboxes.slice(0, draft.sandboxCount) ?? [];
      draft.sandboxes?.push(sandbox);
      draft.sandboxCount++;
      draft.createdAtNs = s.createdAt;
    }
    for (const c of containers) {
      const listed = this.container(c);
      const draft = draftOf(listed.podUid, listed.podName, listed.podNamespace);
      if (draft.terminationGracePeriodSeconds === undefined)
        draft.terminationGracePeriodSeconds = listed.terminationGracePeriodSeconds;
      if (draft.containers === undefined && draft.last?.containers[draft.containerCount] !== listed.running)
        draft.containers = draft.last?.containers.slice(0, draft.containerCount) ?? [];
      draft.containers?.push(listed.running);
      draft.containerCount++;
    }

    const ordered = [...drafts.values()].sort((a, b) => b.createdAtNs - a.createdAtNs);
    const pods = new Map<string, RunningPod>();
    const out = ordered.map((draft) => {
      const pod = reuse(draft) ?? freezePod(draft);
      pods.set(pod.uid, pod);
      return pod;
    });
    this.lastPods = pods;
    return out;
  }

  private sandbox(s: PodSandbox): RunningSandbox {
    const known = this.sandboxes.get(s);
    if (known) return known;
    const running: RunningSandbox = Object.freeze({
      id: s.id,
      state: s.state === 'SANDBOX_READY' ? 'ready' : 'notready',
      createdAtMs: Math.floor(s.createdAt / NS_PER_MS),
      createdAtNs: s.createdAt,
    });
    if (Object.isFrozen(s)) this.sandboxes.set(s, running);
    return running;
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
    };
    if (Object.isFrozen(c)) this.containers.set(c, listed);
    return listed;
  }
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
