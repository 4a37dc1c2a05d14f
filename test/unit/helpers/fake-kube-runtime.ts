/**
 * A scripted Runtime for the managers' unit tests (pleg, podworkers, status): tests set the pods and
 * statuses it reports and the failures it throws, and read back the calls it received.
 */
import type { Pod } from '../../../src/api/core-v1.js';
import type { VersionResponse } from '../../../src/cri/types.js';
import type { Backoff } from '../../../src/lib/backoff.js';
import type {
  KubeContainerStatus,
  KubePodStatus,
  PodSyncResult,
  RunningContainer,
  RunningPod,
  RunningSandbox,
  Runtime,
} from '../../../src/kuberuntime/types.js';

export class FakeKubeRuntime implements Runtime {
  readonly type = 'containerd';
  pods: RunningPod[] = [];
  statuses = new Map<string, KubePodStatus>();
  /** When set, getPods throws it. */
  getPodsError: Error | undefined;
  /** Per pod UID, an error getPodStatus throws. */
  podStatusErrors = new Map<string, Error>();
  /** When set, getPods waits for it before answering. */
  getPodsGate: Promise<void> | undefined;
  readonly calls: string[] = [];

  async version(): Promise<VersionResponse> {
    return { version: '0.1.0', runtimeName: 'containerd', runtimeVersion: '1.6.20', runtimeApiVersion: 'v1' };
  }

  async syncPod(pod: Pod, _status: KubePodStatus, _backoff: Backoff): Promise<PodSyncResult> {
    this.calls.push(`syncPod ${pod.metadata.uid ?? ''}`);
    return { results: [], failed: false };
  }

  async killPod(_pod: Pod | undefined, runningPod: RunningPod, _grace?: number): Promise<void> {
    this.calls.push(`killPod ${runningPod.uid}`);
  }

  /** Per pod UID, the listing the last getPodStatus was given. */
  readonly listed = new Map<string, RunningPod | undefined>();
  /** Runs inside each getPodStatus, e.g. to let time pass while the runtime answers. */
  onGetPodStatus: (() => void) | undefined;

  async getPodStatus(
    uid: string,
    name: string,
    namespace: string,
    listed?: RunningPod,
  ): Promise<KubePodStatus> {
    this.calls.push(`getPodStatus ${uid}`);
    this.listed.set(uid, listed);
    this.onGetPodStatus?.();
    const err = this.podStatusErrors.get(uid);
    if (err) throw err;
    const status = this.statuses.get(uid);
    if (status) return structuredClone(status);
    return { uid, name, namespace, ips: [], sandboxStatuses: [], containerStatuses: [], timestampMs: 0 };
  }

  async getPods(_all: boolean): Promise<readonly RunningPod[]> {
    this.calls.push('getPods');
    if (this.getPodsGate) await this.getPodsGate;
    if (this.getPodsError) throw this.getPodsError;
    return structuredClone(this.pods);
  }

  async garbageCollect(): Promise<void> {}
}

export function runningPod(
  uid: string,
  sandboxes: Partial<RunningSandbox>[],
  containers: Partial<RunningContainer>[],
): RunningPod {
  return {
    uid,
    name: `pod-${uid}`,
    namespace: 'default',
    sandboxes: sandboxes.map((s, i) => ({
      id: `sb-${uid}-${i}`,
      state: 'ready',
      createdAtMs: 0,
      createdAtNs: 0,
      ...s,
    })),
    containers: containers.map((c, i) => ({
      id: `c-${uid}-${i}`,
      name: `c${i}`,
      image: 'busybox',
      imageRef: 'sha256:abc',
      hash: '1',
      state: 'running',
      podSandboxId: `sb-${uid}-0`,
      ...c,
    })),
  };
}

export function kubePodStatus(uid: string, extra: Partial<KubePodStatus> = {}): KubePodStatus {
  return {
    uid,
    name: `pod-${uid}`,
    namespace: 'default',
    ips: [],
    sandboxStatuses: [],
    containerStatuses: [],
    timestampMs: 0,
    ...extra,
  };
}

export function kubeContainerStatus(
  extra: Partial<KubeContainerStatus> & { id: string; name: string },
): KubeContainerStatus {
  return {
    containerID: `containerd://${extra.id}`,
    state: 'running',
    createdAtMs: 0,
    startedAtMs: 0,
    finishedAtMs: 0,
    exitCode: 0,
    image: 'busybox',
    imageRef: 'sha256:abc',
    hash: '1',
    restartCount: 0,
    reason: '',
    message: '',
    podSandboxId: 'sb',
    ...extra,
  };
}

/** Lets pending promise callbacks run (several rounds, for chains of awaits). */
export async function flushPromises(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
