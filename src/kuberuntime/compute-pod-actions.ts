/**
 * What SyncPod must do to bring a pod's runtime state to its spec (upstream: computePodActions,
 * PodSandboxChanged, findNextInitContainerToRun, ShouldContainerBeRestarted, doBackOff). Pure: it
 * reads the pod and the runtime's status and decides; the manager acts.
 */
import type { Container, Pod } from '../api/core-v1.js';
import type { Backoff } from '../lib/backoff.js';
import { hashContainer } from './container-hash.js';
import { formatGoDuration } from '../lib/go-duration.js';
import { formatPod } from './format.js';
import { networkNamespaceForPod } from './sandbox-config.js';
import type { KubeContainerStatus, KubePodStatus } from './types.js';

/** Why a running container is killed (upstream containerKillReason). */
export type ContainerKillReason = 'StartupProbe' | 'LivenessProbe' | 'FailedPostStartHook' | 'Unknown' | '';

export interface ContainerToKill {
  /** The runtime's container ID. */
  id: string;
  name: string;
  container: Container;
  message: string;
  reason: ContainerKillReason;
}

export interface PodActions {
  /** Stop every container and the sandbox. */
  killPod: boolean;
  /** Create a new sandbox (after killing the pod when it has one). */
  createSandbox: boolean;
  /** The existing sandbox the containers start in; '' when a new one is needed. */
  sandboxId: string;
  /** The attempt number for the new sandbox's metadata. */
  attempt: number;
  /**
   * Indices into pod.spec.initContainers, in spec order: the next regular init container (they run
   * one at a time) and any restartable ones (sidecars) to (re)start.
   */
  initContainersToStart: number[];
  /** Indices into pod.spec.containers. */
  containersToStart: number[];
  /** Indices into pod.spec.ephemeralContainers: those never started (they are never restarted). */
  ephemeralContainersToStart: number[];
  /** Keyed by runtime container ID. */
  containersToKill: Map<string, ContainerToKill>;
}

/** The prober's verdicts (upstream proberesults.Result). */
export type ProbeVerdict = 'Success' | 'Failure' | 'Unknown';

/** What the prober last found for a runtime container ID; undefined while it has not probed it yet. */
export interface ProbeResults {
  liveness(containerId: string): ProbeVerdict | undefined;
  startup(containerId: string): ProbeVerdict | undefined;
}

/** The newest status of the named container (statuses are newest first; ties go to the first). */
export function findContainerStatusByName(
  podStatus: KubePodStatus,
  name: string,
): KubeContainerStatus | undefined {
  let found: KubeContainerStatus | undefined;
  for (const s of podStatus.containerStatuses) {
    if (s.name === name && (!found || s.createdAtMs > found.createdAtMs)) found = s;
  }
  return found;
}

export function shouldRestartOnFailure(pod: Pod): boolean {
  return (pod.spec.restartPolicy ?? 'Always') !== 'Never';
}

function containerSucceeded(c: Container, podStatus: KubePodStatus): boolean {
  const s = findContainerStatusByName(podStatus, c.name);
  if (!s || s.state === 'running') return false;
  return s.exitCode === 0;
}

/** Exited non-zero, unknown, or OOM-killed: an init container that must run again. */
export function isInitContainerFailed(status: KubeContainerStatus): boolean {
  if (status.reason === 'OOMKilled') return true;
  if (status.state === 'exited' && status.exitCode !== 0) return true;
  return status.state === 'unknown';
}

/** Whether the container should be (re)started, from its newest status and the pod's restart policy. */
export function shouldContainerBeRestarted(
  container: Container,
  pod: Pod,
  podStatus: KubePodStatus,
): boolean {
  // A pod marked for deletion is not restarted.
  if (pod.metadata.deletionTimestamp) return false;
  const status = findContainerStatusByName(podStatus, container.name);
  // Never started (or all its attempts were garbage collected).
  if (!status) return true;
  if (status.state === 'running') return false;
  if (status.state === 'unknown' || status.state === 'created') return true;
  const policy = pod.spec.restartPolicy ?? 'Always';
  if (policy === 'Never') return false;
  if (policy === 'OnFailure') return status.exitCode !== 0;
  return true;
}

export interface SandboxChange {
  changed: boolean;
  attempt: number;
  /** The newest sandbox; '' when none is usable as the old one (network namespace change). */
  sandboxId: string;
}

/** Whether the pod needs a new sandbox: none, not ready, several ready, another network mode, or no IP. */
export function podSandboxChanged(pod: Pod, podStatus: KubePodStatus): SandboxChange {
  const newest = podStatus.sandboxStatuses[0];
  if (!newest) return { changed: true, attempt: 0, sandboxId: '' };
  let ready = 0;
  let maxAttempt = 0;
  for (const s of podStatus.sandboxStatuses) {
    if (s.state === 'SANDBOX_READY') ready++;
    maxAttempt = Math.max(maxAttempt, s.metadata.attempt);
  }
  if (ready > 1) return { changed: true, attempt: maxAttempt + 1, sandboxId: newest.id };
  if (newest.state !== 'SANDBOX_READY')
    return { changed: true, attempt: maxAttempt + 1, sandboxId: newest.id };
  const network = newest.linux?.namespaces?.options?.network ?? 'POD';
  if (network !== networkNamespaceForPod(pod))
    return { changed: true, attempt: maxAttempt + 1, sandboxId: '' };
  if (!pod.spec.hostNetwork && newest.network !== undefined && newest.network.ip === '') {
    return { changed: true, attempt: maxAttempt + 1, sandboxId: newest.id };
  }
  return { changed: false, attempt: maxAttempt, sandboxId: newest.id };
}

export interface NextInitContainer {
  /** The failed init container's status, when next is one that failed. */
  status?: KubeContainerStatus;
  next?: Container;
  done: boolean;
}

/** The init container to run next, or done when they have all succeeded. */
export function findNextInitContainerToRun(pod: Pod, podStatus: KubePodStatus): NextInitContainer {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return { done: true };
  // A running app container means initialization finished once, even if its records were removed since.
  for (const c of pod.spec.containers) {
    if (findContainerStatusByName(podStatus, c.name)?.state === 'running') return { done: true };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const c = inits[i] as Container;
    const s = findContainerStatusByName(podStatus, c.name);
    if (s && isInitContainerFailed(s)) return { status: s, next: c, done: false };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const s = findContainerStatusByName(podStatus, (inits[i] as Container).name);
    if (!s) continue;
    if (s.state === 'running') return { done: false };
    if (s.state === 'exited') {
      if (i === inits.length - 1) return { done: true };
      return { next: inits[i + 1], done: false };
    }
  }
  return { next: inits[0], done: false };
}

export function computePodActions(pod: Pod, podStatus: KubePodStatus, probes?: ProbeResults): PodActions {
  const sandbox = podSandboxChanged(pod, podStatus);
  const changes: PodActions = {
    killPod: sandbox.changed,
    createSandbox: sandbox.changed,
    sandboxId: sandbox.sandboxId,
    attempt: sandbox.attempt,
    initContainersToStart: [],
    containersToStart: [],
    ephemeralContainersToStart: [],
    containersToKill: new Map(),
  };

  // A new sandbox means everything starts over, init containers included.
  if (sandbox.changed) {
    if (!shouldRestartOnFailure(pod) && sandbox.attempt !== 0 && podStatus.containerStatuses.length !== 0) {
      // The pod has run and must not run again: only kill what is left.
      changes.createSandbox = false;
      return changes;
    }
    const toStart: number[] = [];
    pod.spec.containers.forEach((c, idx) => {
      if (pod.spec.restartPolicy === 'OnFailure' && containerSucceeded(c, podStatus)) return;
      toStart.push(idx);
    });
    if (toStart.length === 0 && findNextInitContainerToRun(pod, podStatus).done) {
      changes.createSandbox = false;
      return changes;
    }
    if ((pod.spec.initContainers ?? []).length > 0) {
      changes.initContainersToStart = [0];
      return changes;
    }
    changes.containersToStart = toStart;
    return changes;
  }

  // Ephemeral containers may start before initialization completes: debugging a stuck init
  // container is what they are for. One that has a status, whatever it is, has had its one run.
  (pod.spec.ephemeralContainers ?? []).forEach((c, idx) => {
    if (!findContainerStatusByName(podStatus, c.name)) changes.ephemeralContainersToStart.push(idx);
  });

  const hasInitialized = computeInitContainerActions(pod, podStatus, changes, probes);
  // Initialization failed or is under way: app containers wait.
  if (changes.killPod || !hasInitialized) return changes;

  let keepCount = 0;
  pod.spec.containers.forEach((container, idx) => {
    const status = findContainerStatusByName(podStatus, container.name);
    if (!status || status.state !== 'running') {
      if (shouldContainerBeRestarted(container, pod, podStatus)) {
        changes.containersToStart.push(idx);
        if (status && status.state === 'unknown') {
          changes.containersToKill.set(status.id, {
            id: status.id,
            name: status.name,
            container,
            message: `Container is in "${status.state}" state, try killing it before restart`,
            reason: 'Unknown',
          });
        }
      }
      return;
    }
    let message: string;
    let reason: ContainerKillReason = '';
    let restart = shouldRestartOnFailure(pod);
    if (status.hash !== hashContainer(container)) {
      message = `Container ${container.name} definition changed`;
      // A changed spec restarts whatever the restart policy says.
      restart = true;
    } else if (probes?.liveness(status.id) === 'Failure') {
      message = `Container ${container.name} failed liveness probe`;
      reason = 'LivenessProbe';
    } else if (probes?.startup(status.id) === 'Failure') {
      message = `Container ${container.name} failed startup probe`;
      reason = 'StartupProbe';
    } else {
      keepCount++;
      return;
    }
    if (restart) {
      message = `${message}, will be restarted`;
      changes.containersToStart.push(idx);
    }
    changes.containersToKill.set(status.id, { id: status.id, name: status.name, container, message, reason });
  });

  if (keepCount === 0 && changes.containersToStart.length === 0) {
    changes.killPod = true;
    // Sidecars must not keep a pod alive whose main containers are done.
    changes.initContainersToStart = [];
  }
  return changes;
}

/** An init container with restartPolicy Always: a sidecar that keeps running beside the app containers. */
export function isRestartableInitContainer(container: Container): boolean {
  return container.restartPolicy === 'Always';
}

/**
 * The init containers' actions (upstream computeInitContainerActions, the SidecarContainers way):
 * start the first regular init container not yet run, keep sidecars running (restarting them when
 * they exit, fail their probes or change), and report whether initialization is complete.
 */
function computeInitContainerActions(
  pod: Pod,
  podStatus: KubePodStatus,
  changes: PodActions,
  probes: ProbeResults | undefined,
): boolean {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return true;
  // An app container created or running means the pod initialized once, whatever became of the
  // init containers' records since. An exited one proves nothing: after a reboot all are exited.
  let podHasInitialized = pod.spec.containers.some((c) => {
    const state = findContainerStatusByName(podStatus, c.name)?.state;
    return state === 'created' || state === 'running';
  });
  let isPreviouslyInitialized = podHasInitialized;
  const restartOnFailure = shouldRestartOnFailure(pod);
  const toStart: number[] = [];
  const kill = (
    status: KubeContainerStatus,
    container: Container,
    message: string,
    reason: ContainerKillReason,
  ): void => {
    changes.containersToKill.set(status.id, {
      id: status.id,
      name: container.name,
      container,
      message,
      reason,
    });
  };

  // Backwards: finished init containers may have been removed, so the last one with a record tells
  // how far initialization got.
  for (let i = inits.length - 1; i >= 0; i--) {
    const container = inits[i] as Container;
    const restartable = isRestartableInitContainer(container);
    const status = findContainerStatusByName(podStatus, container.name);
    if (!status) {
      // A sidecar whose record is gone, after initialization passed it: start it again.
      if (isPreviouslyInitialized && restartable) toStart.push(i);
      continue;
    }
    // After initialization only sidecars need looking after.
    if (isPreviouslyInitialized && !restartable) continue;

    switch (status.state) {
      case 'created':
        // Created and started are one step here; stuck in created means the start failed.
        toStart.push(i);
        break;
      case 'running': {
        if (!restartable) break; // A regular init container: wait for it to finish.
        if (container.startupProbe) {
          const startup = probes?.startup(status.id);
          if (startup === undefined) break; // Not probed yet: wait.
          if (startup !== 'Success') {
            if (startup === 'Failure') {
              kill(
                status,
                container,
                `Init container ${container.name} failed startup probe`,
                'StartupProbe',
              );
              toStart.push(i);
            }
            break;
          }
        }
        if (i === inits.length - 1) podHasInitialized = true;
        else if (!isPreviouslyInitialized) toStart.push(i + 1); // Started for the first time: on to the next.
        if (status.hash !== hashContainer(container)) {
          kill(status, container, `Init container ${container.name} definition changed`, '');
          toStart.push(i);
          break;
        }
        // Unlike an app container, a sidecar does not wait for liveness to let the next one start.
        if (container.livenessProbe) {
          const liveness = probes?.liveness(status.id);
          if (liveness === undefined) break;
          if (liveness === 'Failure') {
            kill(
              status,
              container,
              `Init container ${container.name} failed liveness probe`,
              'LivenessProbe',
            );
            toStart.push(i);
          }
        }
        break;
      }
      case 'exited':
        if (restartable) {
          toStart.push(i);
        } else if (isInitContainerFailed(status)) {
          if (!restartOnFailure) {
            changes.killPod = true;
            changes.initContainersToStart = [];
            return false;
          }
          toStart.push(i);
        } else if (i === inits.length - 1) {
          podHasInitialized = true;
        } else {
          toStart.push(i + 1);
        }
        break;
      default:
        // Unknown: it may still run, so it is stopped before it starts again.
        if (!restartable && !restartOnFailure) {
          changes.killPod = true;
          changes.initContainersToStart = [];
          return false;
        }
        kill(
          status,
          container,
          `Init container is in "${status.state}" state, try killing it before restart`,
          'Unknown',
        );
        toStart.push(i);
    }
    isPreviouslyInitialized = true;
  }
  if (!isPreviouslyInitialized) toStart.push(0);
  // Gathered backwards; started in spec order.
  changes.initContainersToStart = toStart.reverse();
  return podHasInitialized;
}

/** The crash-loop back-off key: a changed spec starts a fresh back-off (upstream GetStableKey). */
export function getStableKey(pod: Pod, container: Container): string {
  const m = pod.metadata;
  return `${m.name ?? ''}_${m.namespace ?? ''}_${m.uid ?? ''}_${container.name}_${hashContainer(container)}`;
}

export type BackOffDecision =
  | { inBackOff: false }
  | { inBackOff: true; reason: 'CrashLoopBackOff'; message: string; retryAfterMs: number };

/**
 * Whether starting the container again must wait: measured from when its newest attempt exited.
 * When it need not, the attempt is counted, so the next wait is longer (10 s doubling to 300 s).
 */
export function doBackOff(
  pod: Pod,
  container: Container,
  podStatus: KubePodStatus,
  backoff: Backoff,
): BackOffDecision {
  let exited: KubeContainerStatus | undefined;
  for (const s of podStatus.containerStatuses) {
    if (s.name === container.name && s.state === 'exited' && (!exited || s.createdAtMs > exited.createdAtMs))
      exited = s;
  }
  if (!exited) return { inBackOff: false };
  const key = getStableKey(pod, container);
  if (backoff.isInBackoffSince(key, exited.finishedAtMs)) {
    return {
      inBackOff: true,
      reason: 'CrashLoopBackOff',
      message: `back-off ${formatGoDuration(backoff.get(key))} restarting failed container=${container.name} pod=${formatPod(pod)}`,
      retryAfterMs: backoff.remainingMs(key, exited.finishedAtMs),
    };
  }
  backoff.next(key);
  return { inBackOff: false };
}
