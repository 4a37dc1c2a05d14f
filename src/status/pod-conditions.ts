/**
 * The pod conditions the kubelet owns (upstream: pkg/kubelet/status/generate.go), with upstream's
 * reasons and messages, and the bookkeeping of their lastTransitionTime.
 */
import type { DeepReadonly } from '../lib/deep-readonly.js';
import type { ContainerStatus, Pod, PodCondition, PodPhase, PodStatus } from '../api/core-v1.js';
import type { KubePodStatus } from '../kuberuntime/types.js';

export const POD_SCHEDULED = 'PodScheduled';
export const POD_READY = 'Ready';
export const POD_INITIALIZED = 'Initialized';
export const CONTAINERS_READY = 'ContainersReady';
export const POD_READY_TO_START_CONTAINERS = 'PodReadyToStartContainers';
export const DISRUPTION_TARGET = 'DisruptionTarget';

export const UNKNOWN_CONTAINER_STATUSES = 'UnknownContainerStatuses';
export const POD_COMPLETED = 'PodCompleted';
export const POD_FAILED = 'PodFailed';
export const CONTAINERS_NOT_READY = 'ContainersNotReady';
export const CONTAINERS_NOT_INITIALIZED = 'ContainersNotInitialized';
export const READINESS_GATES_NOT_READY = 'ReadinessGatesNotReady';

/** Conditions only the kubelet writes; others in the API status are kept as they are. */
export const KUBELET_OWNED_CONDITIONS: readonly string[] = [
  POD_SCHEDULED,
  POD_READY,
  POD_INITIALIZED,
  CONTAINERS_READY,
  POD_READY_TO_START_CONTAINERS,
];

export function isConditionOwnedByKubelet(type: string): boolean {
  return KUBELET_OWNED_CONDITIONS.includes(type);
}

/** Conditions the kubelet and others both write (upstream: PodConditionSharedByKubelet). */
export function isConditionSharedByKubelet(type: string): boolean {
  return type === DISRUPTION_TARGET;
}

/** A sidecar: an init container that keeps running beside the regular containers. */
export function isRestartableInitContainer(c: { restartPolicy?: string }): boolean {
  return c.restartPolicy === 'Always';
}

/** Go's %s of a []string: `[a b]`. */
function goList(names: string[]): string {
  return `[${names.join(' ')}]`;
}

function findStatus(statuses: readonly ContainerStatus[], name: string): ContainerStatus | undefined {
  return statuses.find((s) => s.name === name);
}

/** Whether any regular container has ever left the waiting state (the pod has been initialized before). */
export function hasAnyRegularContainerStarted(pod: Pod, statuses: readonly ContainerStatus[]): boolean {
  const names = new Set(pod.spec.containers.map((c) => c.name));
  return statuses.some(
    (s) => names.has(s.name) && (s.state?.running !== undefined || s.state?.terminated !== undefined),
  );
}

function terminalContainersReady(phase: PodPhase): PodCondition {
  const c: PodCondition = { type: CONTAINERS_READY, status: 'False' };
  if (phase === 'Failed') c.reason = POD_FAILED;
  else if (phase === 'Succeeded') c.reason = POD_COMPLETED;
  return c;
}

export function generateContainersReadyCondition(
  pod: Pod,
  statuses: readonly ContainerStatus[],
  phase: PodPhase,
): PodCondition {
  const unknown: string[] = [];
  const unready: string[] = [];
  const check = (name: string) => {
    const s = findStatus(statuses, name);
    if (!s) unknown.push(name);
    else if (!s.ready) unready.push(name);
  };
  for (const c of pod.spec.initContainers ?? []) if (isRestartableInitContainer(c)) check(c.name);
  for (const c of pod.spec.containers) check(c.name);

  if (phase === 'Succeeded' && unknown.length === 0) return terminalContainersReady(phase);
  // Containers of a failed pod may still be stopping: never report them ready.
  if (phase === 'Failed') return terminalContainersReady(phase);

  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${goList(unknown)}`);
  if (unready.length > 0) messages.push(`containers with unready status: ${goList(unready)}`);
  if (messages.length > 0) {
    return {
      type: CONTAINERS_READY,
      status: 'False',
      reason: CONTAINERS_NOT_READY,
      message: messages.join(', '),
    };
  }
  return { type: CONTAINERS_READY, status: 'True' };
}

interface ReadinessGate {
  conditionType: string;
}

export function generatePodReadyCondition(
  pod: Pod,
  conditions: readonly PodCondition[],
  statuses: readonly ContainerStatus[],
  phase: PodPhase,
): PodCondition {
  const containersReady = generateContainersReadyCondition(pod, statuses, phase);
  if (containersReady.status !== 'True') {
    const c: PodCondition = { type: POD_READY, status: containersReady.status };
    if (containersReady.reason !== undefined) c.reason = containersReady.reason;
    if (containersReady.message !== undefined) c.message = containersReady.message;
    return c;
  }
  const gates = (pod.spec as { readinessGates?: ReadinessGate[] }).readinessGates ?? [];
  const messages: string[] = [];
  for (const gate of gates) {
    const c = conditions.find((x) => x.type === gate.conditionType);
    if (!c)
      messages.push(`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`);
    else if (c.status !== 'True') {
      messages.push(
        `the status of pod readiness gate "${gate.conditionType}" is not "True", but ${c.status}`,
      );
    }
  }
  if (messages.length > 0) {
    return {
      type: POD_READY,
      status: 'False',
      reason: READINESS_GATES_NOT_READY,
      message: messages.join(', '),
    };
  }
  return { type: POD_READY, status: 'True' };
}

/**
 * Whether the Ready the API shows disagrees, in status or message, with the one the pod's own
 * status gives now that its readiness gates' conditions may have changed (upstream
 * NeedToReconcilePodReadiness): a controller's pods/status patch of a gate then calls for a sync.
 */
export function needToReconcilePodReadiness(pod: Pod): boolean {
  const gates = (pod.spec as { readinessGates?: ReadinessGate[] }).readinessGates ?? [];
  if (gates.length === 0) return false;
  const status = pod.status ?? {};
  const current = status.conditions?.find((c) => c.type === POD_READY);
  // Only a Ready that exists is reconciled: the first sync makes it.
  if (!current) return false;
  const wanted = generatePodReadyCondition(
    pod,
    status.conditions ?? [],
    status.containerStatuses ?? [],
    status.phase ?? 'Pending',
  );
  return current.status !== wanted.status || (current.message ?? '') !== (wanted.message ?? '');
}

export function generatePodInitializedCondition(
  pod: Pod,
  statuses: readonly ContainerStatus[],
  phase: PodPhase,
): PodCondition {
  const unknown: string[] = [];
  const incomplete: string[] = [];
  for (const c of pod.spec.initContainers ?? []) {
    const s = findStatus(statuses, c.name);
    if (!s) {
      unknown.push(c.name);
      continue;
    }
    // A sidecar counts once it has started; a plain init container once it has succeeded.
    const initialized = isRestartableInitContainer(c) ? s.started === true : s.ready;
    if (!initialized) incomplete.push(c.name);
  }
  if (phase === 'Succeeded' && unknown.length === 0) {
    return { type: POD_INITIALIZED, status: 'True', reason: POD_COMPLETED };
  }
  // Regular containers ran, so the pod was initialized, even if a sidecar is restarting now.
  if (hasAnyRegularContainerStarted(pod, statuses)) return { type: POD_INITIALIZED, status: 'True' };
  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${goList(unknown)}`);
  if (incomplete.length > 0) messages.push(`containers with incomplete status: ${goList(incomplete)}`);
  if (messages.length > 0) {
    return {
      type: POD_INITIALIZED,
      status: 'False',
      reason: CONTAINERS_NOT_INITIALIZED,
      message: messages.join(', '),
    };
  }
  return { type: POD_INITIALIZED, status: 'True' };
}

/**
 * Whether the pod needs a new sandbox (upstream: PodSandboxChanged): none yet, more than one ready,
 * the newest not ready, its network namespace mode not what the pod asks, or no IP for a pod network.
 */
export function podSandboxChanged(pod: Pod, podStatus: KubePodStatus): boolean {
  const newest = podStatus.sandboxStatuses[0];
  if (!newest) return true;
  const ready = podStatus.sandboxStatuses.filter((s) => s.state === 'SANDBOX_READY').length;
  if (ready > 1) return true;
  if (newest.state !== 'SANDBOX_READY') return true;
  const wantNetwork = pod.spec.hostNetwork ? 'NODE' : 'POD';
  const haveNetwork = newest.linux?.namespaces?.options?.network ?? 'POD';
  if (haveNetwork !== wantNetwork) return true;
  if (!pod.spec.hostNetwork && newest.network !== undefined && newest.network.ip === '') return true;
  return false;
}

export function generatePodReadyToStartContainersCondition(pod: Pod, podStatus: KubePodStatus): PodCondition {
  return {
    type: POD_READY_TO_START_CONTAINERS,
    status: podSandboxChanged(pod, podStatus) ? 'False' : 'True',
  };
}

/** The conditions whose lastTransitionTime the kubelet keeps (upstream: updateStatusInternal). */
const TRANSITION_TRACKED: readonly string[] = [
  CONTAINERS_READY,
  POD_READY,
  POD_INITIALIZED,
  POD_READY_TO_START_CONTAINERS,
  POD_SCHEDULED,
  DISRUPTION_TARGET,
];

/**
 * Gives each tracked condition of status the lastTransitionTime of the same condition in oldStatus
 * when its status is unchanged, else nowRfc3339. Mutates status.
 */
export function updateLastTransitionTimes(
  status: PodStatus,
  oldStatus: DeepReadonly<PodStatus> | undefined,
  nowRfc3339: string,
): void {
  for (const condition of status.conditions ?? []) {
    if (!TRANSITION_TRACKED.includes(condition.type)) continue;
    const old = oldStatus?.conditions?.find((c) => c.type === condition.type);
    condition.lastTransitionTime =
      old && old.status === condition.status && old.lastTransitionTime ? old.lastTransitionTime : nowRfc3339;
  }
}
