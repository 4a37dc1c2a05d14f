/**
 * What a scenario is (a pod, where upstream's behaviour for it is written down, and the whole status
 * and events upstream v1.30 gives it) and the builders expectations are written with. The builders
 * spell out upstream's fixed texts once: the condition reasons and messages of
 * pkg/kubelet/status/generate.go, the container states of kubelet_pods.go's
 * convertToAPIContainerStatuses, and the kuberuntime events' messages.
 */
import type { Container, Pod } from '../../src/api/core-v1.js';
import { CONTAINER_ID, IMAGE_ID, IP, lit, re, TIME, type ExpectedEvent, type Matcher } from './expect.js';

/** The busybox the runtime stack imports, as containerd's CRI reports it once a container ran. */
export const BUSYBOX_RESOLVED = 'docker.io/library/busybox:latest';

/** What a scenario's expectations may refer to: the pod as the API server knows it. */
export interface ScenarioContext {
  name: string;
  namespace: string;
  uid: string;
  /** upstream's format.Pod: `name_namespace(uid)`, in back-off messages. */
  podRef: string;
}

export interface DeletionStep {
  /** Delete the pod once its status satisfies this. */
  when: (p: Pod) => boolean;
  gracePeriodSeconds?: number;
  /** How long after the delete the pod must be gone from the API (upstream's grace period timing). */
  goneAfterMs: { min: number; max: number };
}

export interface Scenario {
  /** The pod's name too. */
  name: string;
  area: string;
  /** Where upstream v1.30 shows this behaviour: file and test (or function) names. */
  sources: string[];
  spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>;
  metadata?: Partial<Pod['metadata']>;
  /** Upstream's whole status at the settled moment; absent for scenarios whose end is the pod's deletion. */
  status?: (ctx: ScenarioContext) => Record<string, unknown>;
  events: (ctx: ScenarioContext) => ExpectedEvent[];
  deletion?: DeletionStep;
  /** The bound for reaching the expected state after the pod is created. */
  timeoutMs: number;
  /** In the short form that `npm test` runs. */
  short?: boolean;
  /** Set only where tskubelet still differs and could not be fixed in time: why. */
  knownDifferent?: string;
}

export function busybox(name: string, script: string, extra: Partial<Container> = {}): Container {
  return {
    name,
    image: 'busybox',
    imagePullPolicy: 'IfNotPresent',
    command: ['sh', '-c', script],
    ...extra,
  };
}

/** A container that sleeps; as PID 1 without a handler it ignores SIGTERM and dies by SIGKILL (137). */
export function sleeper(name: string, extra: Partial<Container> = {}): Container {
  return busybox(name, 'exec sleep 3600', extra);
}

/** A container that exits at once on SIGTERM (0), for clean stops. */
export function polite(name: string, extra: Partial<Container> = {}): Container {
  return busybox(name, "trap 'exit 0' TERM; sleep 3600 & wait", extra);
}

/** Go's fmt %s of a []string: `[a b]`. */
function goList(names: string[]): string {
  return `[${names.join(' ')}]`;
}

type CondStatus = 'True' | 'False';

function cond(type: string, status: CondStatus, reason?: string, message?: string): Record<string, unknown> {
  const c: Record<string, unknown> = { type, status };
  if (reason) c.reason = reason;
  if (message) c.message = message;
  return c;
}

/** The five conditions, sorted by type as normaliseStatus sorts them. */
function conditions(parts: {
  sandbox: CondStatus;
  initialized: Record<string, unknown>;
  containersReady: Record<string, unknown>;
  ready: Record<string, unknown>;
}): Record<string, unknown>[] {
  return [
    parts.containersReady,
    parts.initialized,
    cond('PodReadyToStartContainers', parts.sandbox),
    cond('PodScheduled', 'True'),
    parts.ready,
  ];
}

/** All containers ready (GenerateContainersReadyCondition/GeneratePodReadyCondition True). */
export function readyConditions(): Record<string, unknown>[] {
  return conditions({
    sandbox: 'True',
    initialized: cond('Initialized', 'True'),
    containersReady: cond('ContainersReady', 'True'),
    ready: cond('Ready', 'True'),
  });
}

/** Initialized, with these containers not ready: ContainersNotReady `containers with unready status: [..]`. */
export function unreadyConditions(
  unready: string[],
  sandbox: CondStatus = 'True',
): Record<string, unknown>[] {
  const message = `containers with unready status: ${goList(unready)}`;
  return conditions({
    sandbox,
    initialized: cond('Initialized', 'True'),
    containersReady: cond('ContainersReady', 'False', 'ContainersNotReady', message),
    ready: cond('Ready', 'False', 'ContainersNotReady', message),
  });
}

/** Init containers not done: ContainersNotInitialized `containers with incomplete status: [..]`. */
export function uninitializedConditions(
  incomplete: string[],
  unready: string[],
  sandbox: CondStatus = 'True',
): Record<string, unknown>[] {
  const message = `containers with unready status: ${goList(unready)}`;
  return conditions({
    sandbox,
    initialized: cond(
      'Initialized',
      'False',
      'ContainersNotInitialized',
      `containers with incomplete status: ${goList(incomplete)}`,
    ),
    containersReady: cond('ContainersReady', 'False', 'ContainersNotReady', message),
    ready: cond('Ready', 'False', 'ContainersNotReady', message),
  });
}

/**
 * A pod in a terminal phase: Ready and ContainersReady False with PodCompleted or PodFailed, the sandbox
 * gone; Initialized True with PodCompleted for a Succeeded pod, as given otherwise.
 */
export function terminalConditions(
  phase: 'Succeeded' | 'Failed',
  initialized: Record<string, unknown> = cond(
    'Initialized',
    'True',
    phase === 'Succeeded' ? 'PodCompleted' : undefined,
  ),
): Record<string, unknown>[] {
  const reason = phase === 'Succeeded' ? 'PodCompleted' : 'PodFailed';
  return conditions({
    sandbox: 'False',
    initialized,
    containersReady: cond('ContainersReady', 'False', reason),
    ready: cond('Ready', 'False', reason),
  });
}

export function initializedFalse(incomplete: string[]): Record<string, unknown> {
  return cond(
    'Initialized',
    'False',
    'ContainersNotInitialized',
    `containers with incomplete status: ${goList(incomplete)}`,
  );
}

interface StatusOptions {
  ready?: boolean;
  started?: boolean;
  restartCount?: number | Matcher;
  lastState?: Record<string, unknown> | Matcher;
  image?: string;
}

function containerBase(name: string, ran: boolean, o: StatusOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {
    name,
    ready: o.ready ?? false,
    started: o.started ?? false,
    restartCount: o.restartCount ?? 0,
    image: o.image ?? (ran ? BUSYBOX_RESOLVED : 'busybox'),
    imageID: ran ? IMAGE_ID : '',
    lastState: o.lastState ?? {},
  };
  if (ran) out.containerID = CONTAINER_ID;
  return out;
}

export function running(name: string, o: StatusOptions = {}): Record<string, unknown> {
  return {
    ...containerBase(name, true, { ready: true, started: true, ...o }),
    state: { running: { startedAt: TIME } },
  };
}

/** Waiting; `ran` when an earlier run left its IDs and image (CrashLoopBackOff, a failed postStart). */
export function waiting(
  name: string,
  reason: string,
  message?: string | Matcher,
  o: StatusOptions & { ran?: boolean } = {},
): Record<string, unknown> {
  const w: Record<string, unknown> = { reason };
  if (message !== undefined) w.message = message;
  return { ...containerBase(name, o.ran ?? false, o), state: { waiting: w } };
}

export function terminatedState(
  exitCode: number,
  reason?: string,
  message?: string | Matcher,
): Record<string, unknown> {
  const t: Record<string, unknown> = {
    exitCode,
    reason: reason ?? (exitCode === 0 ? 'Completed' : 'Error'),
    startedAt: TIME,
    finishedAt: TIME,
    containerID: CONTAINER_ID,
  };
  if (message !== undefined) t.message = message;
  return { terminated: t };
}

export function terminated(
  name: string,
  exitCode: number,
  reason?: string,
  o: StatusOptions & { message?: string | Matcher } = {},
): Record<string, unknown> {
  return { ...containerBase(name, true, o), state: terminatedState(exitCode, reason, o.message) };
}

/** CrashLoopBackOff: `back-off <d> restarting failed container=<c> pod=<name_ns(uid)>`, the last run kept. */
export function crashLooping(
  ctx: ScenarioContext,
  name: string,
  last: Record<string, unknown>,
  o: StatusOptions = {},
): Record<string, unknown> {
  return waiting(
    name,
    'CrashLoopBackOff',
    re(new RegExp(`^back-off \\d+m?\\d*s restarting failed container=${name} pod=${lit(ctx.podRef)}$`)),
    { ran: true, restartCount: o.restartCount ?? 1, lastState: last, ...o },
  );
}

export type QosClass = 'BestEffort' | 'Burstable' | 'Guaranteed';

/** The whole status of a pod that has a sandbox (or had one), as generateAPIPodStatus writes it. */
export function podStatus(parts: {
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  conditions: Record<string, unknown>[];
  containerStatuses: Record<string, unknown>[];
  initContainerStatuses?: Record<string, unknown>[];
  qosClass?: QosClass;
  /**
   * Has the pod an IP (its sandbox ran)? A terminal pod keeps the one it had: its sandbox is stopped,
   * but the PLEG keeps the last IPs of a pod whose sandboxes all exited (generic.go getPodIPs), and
   * SyncTerminatedPod writes the final status from that cache.
   */
  podIP?: boolean;
  reason?: string;
  message?: string;
}): Record<string, unknown> {
  const out: Record<string, unknown> = {
    phase: parts.phase,
    conditions: parts.conditions,
    hostIP: IP,
    hostIPs: [{ ip: IP }],
    startTime: TIME,
    qosClass: parts.qosClass ?? 'BestEffort',
    containerStatuses: parts.containerStatuses,
  };
  if (parts.podIP ?? true) {
    out.podIP = IP;
    out.podIPs = [{ ip: IP }];
  }
  if (parts.initContainerStatuses) out.initContainerStatuses = parts.initContainerStatuses;
  if (parts.reason) out.reason = parts.reason;
  if (parts.message) out.message = parts.message;
  return out;
}

const field = (name: string, init = false): string =>
  `spec.${init ? 'initContainers' : 'containers'}{${name}}`;

/** The events of a container started from the local busybox (kuberuntime_container.go startContainer). */
export function startedEvents(name: string, o: { init?: boolean; image?: string } = {}): ExpectedEvent[] {
  const fieldPath = field(name, o.init);
  return [
    {
      type: 'Normal',
      reason: 'Pulled',
      fieldPath,
      message: `Container image "${o.image ?? 'busybox'}" already present on machine`,
    },
    { type: 'Normal', reason: 'Created', fieldPath, message: `Created container ${name}` },
    { type: 'Normal', reason: 'Started', fieldPath, message: `Started container ${name}` },
  ];
}

/** `Back-off restarting failed container <c> in pod <name_ns(uid)>` (kuberuntime_manager.go doBackOff). */
export function backOffEvent(
  ctx: ScenarioContext,
  name: string,
  o: { init?: boolean; optional?: boolean } = {},
): ExpectedEvent {
  return {
    type: 'Warning',
    reason: 'BackOff',
    fieldPath: field(name, o.init),
    message: `Back-off restarting failed container ${name} in pod ${ctx.podRef}`,
    optional: o.optional,
  };
}

/** `Stopping container <c>` (kuberuntime_container.go killContainer with no message). */
export function killingEvent(name: string, o: { init?: boolean; message?: string } = {}): ExpectedEvent {
  return {
    type: 'Normal',
    reason: 'Killing',
    fieldPath: field(name, o.init),
    message: o.message ?? `Stopping container ${name}`,
  };
}

export { field as fieldPathOf };
