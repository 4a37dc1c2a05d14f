/**
 * The v1 PodStatus the kubelet reports for a pod, computed from its spec, what the runtime says of
 * it, and the status reported before (upstream: Kubelet.generateAPIPodStatus, convertStatusToAPIStatus,
 * convertToAPIContainerStatuses and getPhase, plus the probe manager's UpdatePodStatus). A pure
 * function: time, probe results and start failures come in as arguments.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type {
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  PodCondition,
  PodPhase,
  PodStatus,
} from '../api/core-v1.js';
import { isTerminalPhase } from '../api/core-v1.js';
import { mutableCopy, type DeepReadonly } from '../lib/deep-readonly.js';
import type { KubeContainerStatus, KubePodStatus } from '../kuberuntime/types.js';
import { isStaticPod } from '../api/pod-source.js';
import {
  DISRUPTION_TARGET,
  POD_SCHEDULED,
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  generatePodReadyToStartContainersCondition,
  hasAnyRegularContainerStarted,
  isConditionOwnedByKubelet,
  isRestartableInitContainer,
  updateLastTransitionTimes,
} from './pod-conditions.js';
import { getPodQOS } from '../api/qos.js';
import { rfc3339Seconds } from '../api/rfc3339-seconds.js';
import { findContainerStatusByName, shouldContainerBeRestarted } from '../kuberuntime/compute-pod-actions.js';

/** Default waiting reasons of a container that has no runtime state yet. */
export const CONTAINER_CREATING = 'ContainerCreating';
export const POD_INITIALIZING = 'PodInitializing';
/** Reason of a container the runtime lost track of (upstream: ContainerReasonStatusUnknown). */
export const CONTAINER_STATUS_UNKNOWN = 'ContainerStatusUnknown';

/** The last failure to start a container (upstream: the kubelet's reasonCache entry). */
export interface ContainerWaitingReason {
  /** CrashLoopBackOff, ErrImagePull, ImagePullBackOff, CreateContainerConfigError, … */
  reason: string;
  message: string;
}

/** Probe results per container ID (`containerd://<id>`); a container without an entry has no result yet. */
export interface ProbeResults {
  readiness?: ReadonlyMap<string, boolean>;
  startup?: ReadonlyMap<string, boolean>;
}

export interface GenerateAPIPodStatusInput {
  pod: Pod;
  /** What the runtime knows of the pod (the PodCache entry the sync used). */
  podStatus: KubePodStatus;
  /** The status last reported (the StatusManager's); when absent, pod.status is the basis, as upstream. */
  oldPodStatus?: DeepReadonly<PodStatus>;
  /** The pod will run no more containers (its worker is terminating it or it ran to completion). */
  podIsTerminal: boolean;
  /** Now, for startTime and condition transitions. */
  nowMs: number;
  probeResults?: ProbeResults;
  /** By container name: why a container that should be running is not (the last SyncResult failures). */
  waitingReasons?: ReadonlyMap<string, ContainerWaitingReason>;
  /**
   * The node's IPs, primary first. Upstream fills hostIP/hostIPs (and hostNetwork pods' podIPs) only
   * when it has an API client; pass them in to do the same, leave them out to omit those fields.
   */
  hostIPs?: readonly string[];
}

export function generateAPIPodStatus(input: GenerateAPIPodStatusInput): PodStatus {
  const { pod, podStatus, podIsTerminal, nowMs } = input;
  const apiStatus: PodStatus = pod.status ?? {};
  const oldStatus: DeepReadonly<PodStatus> = input.oldPodStatus ?? apiStatus;
  const hostIPs = input.hostIPs ?? [];
  const initContainers = pod.spec.initContainers ?? [];
  const hasInitContainers = initContainers.length > 0;

  const podIPs = sortPodIPs(podStatus.ips, hostIPs);
  const containerStatuses = convertToAPIContainerStatuses(
    pod,
    podStatus,
    oldStatus.containerStatuses ?? [],
    pod.spec.containers,
    hasInitContainers,
    false,
    input.waitingReasons,
  );
  const initContainerStatuses = convertToAPIContainerStatuses(
    pod,
    podStatus,
    oldStatus.initContainerStatuses ?? [],
    initContainers,
    hasInitContainers,
    true,
    input.waitingReasons,
  );

  // Reported beside the others, but they count for neither the phase nor readiness.
  const ephemeralContainerStatuses = convertToAPIContainerStatuses(
    pod,
    podStatus,
    oldStatus.ephemeralContainerStatuses ?? [],
    pod.spec.ephemeralContainers ?? [],
    hasInitContainers,
    false,
    input.waitingReasons,
  );
  let phase = getPhase(pod, [...containerStatuses, ...initContainerStatuses], podIsTerminal);
  // A phase that was terminal, in our last report or in the API, stays terminal.
  if (phase !== 'Failed' && phase !== 'Succeeded') {
    if (isTerminalPhase(oldStatus.phase)) phase = oldStatus.phase!;
    else if (isTerminalPhase(apiStatus.phase)) phase = apiStatus.phase!;
  }
  let reason: string | undefined;
  let message: string | undefined;
  if (phase === oldStatus.phase) {
    // The reason and message belong to the phase: keep them while it holds.
    reason = oldStatus.reason || apiStatus.reason || undefined;
    message = oldStatus.message || apiStatus.message || undefined;
  }
  if (isTerminalPhase(apiStatus.phase) && phase !== apiStatus.phase) phase = apiStatus.phase!;

  applyProbeResults(pod, containerStatuses, initContainerStatuses, input.probeResults);

  const conditions: PodCondition[] = (apiStatus.conditions ?? [])
    .filter((c) => !isConditionOwnedByKubelet(c.type))
    .map((c) => ({ ...c }));
  const disruption = oldStatus.conditions?.find((c) => c.type === DISRUPTION_TARGET);
  if (disruption) {
    const i = conditions.findIndex((c) => c.type === DISRUPTION_TARGET);
    if (i >= 0) conditions[i] = { ...disruption };
    else conditions.push({ ...disruption });
  }
  const allStatuses = [...initContainerStatuses, ...containerStatuses];
  const generated: PodCondition[] = [generatePodReadyToStartContainersCondition(pod, podStatus)];
  generated.push(generatePodInitializedCondition(pod, allStatuses, phase));
  generated.push(generatePodReadyCondition(pod, [...conditions, ...generated], allStatuses, phase));
  generated.push(generateContainersReadyCondition(pod, allStatuses, phase));
  generated.push({ type: POD_SCHEDULED, status: 'True' });
  for (const c of generated)
    conditions.push({ type: c.type, status: c.status, lastProbeTime: null, ...rest(c) });

  const status: PodStatus = { phase, conditions };
  if (message !== undefined) status.message = message;
  if (reason !== undefined) status.reason = reason;
  let finalPodIPs = podIPs;
  if (hostIPs.length > 0) {
    const node = hostIPs.slice(0, 2);
    status.hostIP = node[0];
    status.hostIPs = node.map((ip) => ({ ip }));
    // Pods on the host network have the node's addresses; a dual-stack node adds its second family.
    if (pod.spec.hostNetwork) {
      if (finalPodIPs.length === 0) finalPodIPs = [node[0]!];
      const second = node[1];
      if (
        second !== undefined &&
        finalPodIPs.length === 1 &&
        ipFamily(finalPodIPs[0]!) !== ipFamily(second)
      ) {
        finalPodIPs = [...finalPodIPs, second];
      }
    }
  }
  if (finalPodIPs.length > 0) {
    status.podIP = finalPodIPs[0];
    status.podIPs = finalPodIPs.map((ip) => ({ ip }));
  }
  status.startTime = oldStatus.startTime || rfc3339Seconds(nowMs);
  if (initContainerStatuses.length > 0) status.initContainerStatuses = initContainerStatuses;
  if (containerStatuses.length > 0) status.containerStatuses = containerStatuses;
  if (ephemeralContainerStatuses.length > 0) status.ephemeralContainerStatuses = ephemeralContainerStatuses;
  status.qosClass = getPodQOS(pod);

  updateLastTransitionTimes(status, oldStatus, rfc3339Seconds(nowMs));
  return status;
}

function rest(c: PodCondition): Partial<PodCondition> {
  const out: Partial<PodCondition> = {};
  if (c.reason !== undefined) out.reason = c.reason;
  if (c.message !== undefined) out.message = c.message;
  return out;
}

function ipFamily(ip: string): 4 | 6 | 0 {
  return isIPv4(ip) ? 4 : isIPv6(ip) ? 6 : 0;
}

/** The first pod IP of the node's primary family, then the first of the other family (upstream: sortPodIPs). */
export function sortPodIPs(podIPs: readonly string[], nodeIPs: readonly string[]): string[] {
  const primaryIsV6 = nodeIPs[0] !== undefined && isIPv6(nodeIPs[0]);
  const primary = podIPs.find((ip) => (primaryIsV6 ? isIPv6(ip) : isIPv4(ip)));
  const secondary = podIPs.find((ip) => (primaryIsV6 ? isIPv4(ip) : isIPv6(ip)));
  return [primary, secondary].filter((ip): ip is string => ip !== undefined);
}

// findContainerStatusByName and shouldContainerBeRestarted are kuberuntime's: the status shows what the sync will do.
export { findContainerStatusByName, shouldContainerBeRestarted };

function withoutEmpty<T extends object>(o: T): T {
  const out = { ...o };
  for (const k of Object.keys(out) as (keyof T)[]) {
    if (out[k] === '' || out[k] === undefined) delete out[k];
  }
  return out;
}

function convertContainerStatus(
  cs: KubeContainerStatus,
  old: DeepReadonly<ContainerStatus> | undefined,
): ContainerStatus {
  const status: ContainerStatus = {
    name: cs.name,
    state: {},
    lastState: {},
    ready: false,
    restartCount: cs.restartCount,
    image: cs.image,
    imageID: cs.imageRef,
    containerID: cs.containerID,
  };
  switch (cs.state) {
    case 'running':
      status.state = { running: cs.startedAtMs ? { startedAt: rfc3339Seconds(cs.startedAtMs) } : {} };
      break;
    case 'created':
      // Created but not started: waiting to run.
      status.state = { waiting: {} };
      break;
    case 'exited':
      status.state = {
        terminated: withoutEmpty({
          exitCode: cs.exitCode,
          reason: cs.reason,
          message: cs.message,
          startedAt: cs.startedAtMs ? rfc3339Seconds(cs.startedAtMs) : undefined,
          finishedAt: cs.finishedAtMs ? rfc3339Seconds(cs.finishedAtMs) : undefined,
          containerID: cs.containerID,
        }),
      };
      break;
    case 'unknown':
      if (old?.state?.running) {
        // It ran and the runtime lost it: report it stopped, not waiting, so a run-once pod is not run twice.
        status.state = {
          terminated: {
            exitCode: 137,
            reason: CONTAINER_STATUS_UNKNOWN,
            message: 'The container could not be located when the pod was terminated',
          },
        };
        status.restartCount = old.restartCount + 1;
      } else {
        status.state = { waiting: {} };
      }
      break;
  }
  return status;
}

function convertToAPIContainerStatuses(
  pod: Pod,
  podStatus: KubePodStatus,
  previous: readonly DeepReadonly<ContainerStatus>[],
  containers: readonly Container[],
  hasInitContainers: boolean,
  isInitContainer: boolean,
  waitingReasons: ReadonlyMap<string, ContainerWaitingReason> | undefined,
): ContainerStatus[] {
  const oldStatuses = new Map(previous.map((s) => [s.name, s]));
  const defaultReason = hasInitContainers ? POD_INITIALIZING : CONTAINER_CREATING;
  const statuses = new Map<string, ContainerStatus>();

  for (const c of containers) {
    let status: ContainerStatus = {
      name: c.name,
      state: { waiting: { reason: defaultReason } },
      lastState: {},
      ready: false,
      restartCount: 0,
      image: c.image ?? '',
      imageID: '',
    };
    const old = oldStatuses.get(c.name);
    if (old) {
      if (old.state?.terminated) status = mutableCopy<ContainerStatus>(old);
      else {
        status.restartCount = old.restartCount;
        status.lastState = mutableCopy<ContainerState>(old.lastState ?? {});
      }
    }
    statuses.set(c.name, status);
  }

  // A container the runtime no longer has but that was running: it stopped, even if we never saw how.
  for (const c of containers) {
    if (podStatus.containerStatuses.some((cs) => cs.name === c.name)) continue;
    const old = oldStatuses.get(c.name);
    if (!old || old.state?.terminated || !old.state?.running) continue;
    const status = statuses.get(c.name)!;
    if (status.state?.waiting?.reason !== defaultReason) continue;
    if (status.lastState?.terminated) continue;
    status.lastState = {
      terminated: {
        exitCode: 137,
        reason: CONTAINER_STATUS_UNKNOWN,
        message:
          'The container could not be located when the pod was deleted.  The container used to be Running',
      },
    };
    if (!pod.metadata.deletionTimestamp) status.restartCount += 1;
  }

  // The newest attempt gives the state, the one before it the last state.
  const newestFirst = [...podStatus.containerStatuses].sort((a, b) => b.createdAtMs - a.createdAtMs);
  const seen = new Map<string, number>();
  for (const cs of newestFirst) {
    const current = statuses.get(cs.name);
    if (!current) continue;
    const count = seen.get(cs.name) ?? 0;
    if (count >= 2) continue;
    const converted = convertContainerStatus(cs, oldStatuses.get(cs.name));
    if (count === 0) statuses.set(cs.name, converted);
    else current.lastState = converted.state ?? {};
    seen.set(cs.name, count + 1);
  }

  // A container that will be started again waits, with the reason its last start failed.
  for (const c of containers) {
    if (isInitContainer) {
      const s = findContainerStatusByName(podStatus, c.name);
      if (s && s.state === 'exited' && s.exitCode === 0) continue;
    }
    if (!shouldContainerBeRestarted(c, pod, podStatus)) continue;
    const why = waitingReasons?.get(c.name);
    if (!why) continue;
    const status = statuses.get(c.name)!;
    if (status.state?.terminated) status.lastState = status.state;
    status.state = { waiting: withoutEmpty({ reason: why.reason, message: why.message }) };
  }

  if (isInitContainer) return containers.map((c) => statuses.get(c.name)!);
  return [...statuses.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Sets started and ready as the probe manager would (upstream: prober manager UpdatePodStatus). */
function applyProbeResults(
  pod: Pod,
  containerStatuses: ContainerStatus[],
  initContainerStatuses: ContainerStatus[],
  probes: ProbeResults | undefined,
): void {
  const isStarted = (spec: Container | undefined, s: ContainerStatus): boolean => {
    if (!s.state?.running) return false;
    const result = s.containerID ? probes?.startup?.get(s.containerID) : undefined;
    if (result !== undefined) return result;
    // A startup probe that has not yet succeeded holds the container back.
    return !spec?.startupProbe;
  };
  const isReady = (spec: Container | undefined, s: ContainerStatus): boolean => {
    if (!s.state?.running) return false;
    if (s.containerID && probes?.readiness?.get(s.containerID) === true) return true;
    // Without a readiness probe a started container is ready; with one, only once it has passed.
    return !spec?.readinessProbe;
  };
  for (const s of containerStatuses) {
    const spec = pod.spec.containers.find((c) => c.name === s.name);
    const started = isStarted(spec, s);
    s.started = started;
    if (started) s.ready = isReady(spec, s);
  }
  for (const s of initContainerStatuses) {
    const spec = pod.spec.initContainers?.find((c) => c.name === s.name);
    const started = isStarted(spec, s);
    s.started = started;
    if (!spec || !isRestartableInitContainer(spec)) {
      // A plain init container is ready once it has succeeded.
      if (s.state?.terminated && s.state.terminated.exitCode === 0) s.ready = true;
      continue;
    }
    if (started) s.ready = isReady(spec, s);
  }
}

function stateOf(s: ContainerStatus): ContainerState {
  return s.state ?? {};
}

/** The pod's phase from its container statuses (upstream: getPhase), for every restart policy and init containers. */
export function getPhase(pod: Pod, statuses: readonly ContainerStatus[], podIsTerminal: boolean): PodPhase {
  const spec = pod.spec;
  const restartPolicy = spec.restartPolicy ?? 'Always';
  const find = (name: string) => statuses.find((s) => s.name === name);
  let pendingRestartableInit = 0;
  let pendingRegularInit = 0;
  let failedInitialization = 0;

  for (const c of spec.initContainers ?? []) {
    if (isRestartableInitContainer(c)) continue;
    const s = find(c.name);
    if (!s) {
      pendingRegularInit++;
      continue;
    }
    const state = stateOf(s);
    if (state.running) pendingRegularInit++;
    else if (state.terminated) {
      if (state.terminated.exitCode !== 0) failedInitialization++;
    } else if (state.waiting) {
      const last = s.lastState?.terminated;
      if (last) {
        if (last.exitCode !== 0) failedInitialization++;
      } else pendingRegularInit++;
    } else pendingRegularInit++;
  }

  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;

  for (const c of spec.initContainers ?? []) {
    if (!isRestartableInitContainer(c)) continue;
    const s = find(c.name);
    if (!s) {
      unknown++;
      continue;
    }
    const state = stateOf(s);
    if (state.running) {
      if (s.started !== true) pendingRestartableInit++;
      running++;
    } else if (state.terminated) {
      // A stopped sidecar does not count towards the phase.
    } else if (state.waiting) {
      if (!s.lastState?.terminated) {
        pendingRestartableInit++;
        waiting++;
      }
    } else {
      pendingRestartableInit++;
      unknown++;
    }
  }

  for (const c of spec.containers) {
    const s = find(c.name);
    if (!s) {
      unknown++;
      continue;
    }
    const state = stateOf(s);
    if (state.running) running++;
    else if (state.terminated) {
      stopped++;
      if (state.terminated.exitCode === 0) succeeded++;
    } else if (state.waiting) {
      if (s.lastState?.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }

  if (failedInitialization > 0 && restartPolicy === 'Never') return 'Failed';

  if (
    pendingRegularInit > 0 ||
    (pendingRestartableInit > 0 && !hasAnyRegularContainerStarted(pod, statuses)) ||
    waiting > 0
  ) {
    return 'Pending';
  }
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    // Upstream does not yet give static pods a terminal phase this way (kubernetes#116484).
    if (podIsTerminal && !isStaticPod(pod)) return stopped === succeeded ? 'Succeeded' : 'Failed';
    if (restartPolicy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (restartPolicy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}
