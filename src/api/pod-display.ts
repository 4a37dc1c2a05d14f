/**
 * How kubectl shows a pod in a table (its printPod): the READY, STATUS and RESTARTS columns, and
 * its human durations (AGE, "(5s ago)"). The node page and `tskubelet get pods` both print these,
 * so a person sees on the node what kubectl would show.
 */
import type { ContainerStatus, Pod } from './core-v1.js';

export interface PodDisplay {
  /** READY: "ready/total". */
  ready: string;
  /** STATUS: the phase, or the reason a container gives (CrashLoopBackOff, Init:0/1, Completed, …). */
  status: string;
  restarts: number;
  /** When a container last finished before its restart (ms since the epoch), for "(5s ago)". */
  lastRestartMs?: number;
}

function isRestartableInit(pod: Pod, name: string): boolean {
  return pod.spec.initContainers?.find((c) => c.name === name)?.restartPolicy === 'Always';
}

function lastTerminatedMs(cs: ContainerStatus): number | undefined {
  const at = cs.lastState?.terminated?.finishedAt;
  return at ? Date.parse(at) : undefined;
}

function conditionTrue(pod: Pod, type: string): boolean {
  return pod.status?.conditions?.some((c) => c.type === type && c.status === 'True') ?? false;
}

/** kubectl's printPod, for the columns a node can fill (no node-unreachable case). */
export function podDisplay(pod: Pod): PodDisplay {
  const status = pod.status ?? {};
  const initSpecs = pod.spec.initContainers ?? [];
  let restarts = 0;
  let totalContainers = pod.spec.containers.length;
  let readyContainers = 0;
  let lastRestartMs: number | undefined;
  const noteRestart = (cs: ContainerStatus) => {
    const t = lastTerminatedMs(cs);
    if (t !== undefined && (lastRestartMs === undefined || t > lastRestartMs)) lastRestartMs = t;
  };
  let reason = status.reason || status.phase || 'Pending';

  for (const s of initSpecs) if (s.restartPolicy === 'Always') totalContainers++;
  let initializing = false;
  let sidecarRestarts = 0;
  const inits = status.initContainerStatuses ?? [];
  for (let i = 0; i < inits.length; i++) {
    const cs = inits[i]!;
    restarts += cs.restartCount ?? 0;
    if (cs.restartCount) noteRestart(cs);
    const sidecar = isRestartableInit(pod, cs.name);
    if (sidecar) {
      sidecarRestarts += cs.restartCount ?? 0;
      if (cs.started && cs.ready) readyContainers++;
    }
    const st = cs.state ?? {};
    if (st.terminated && st.terminated.exitCode === 0) continue;
    if (sidecar && cs.started) continue;
    if (st.terminated) {
      const t = st.terminated;
      reason = t.reason
        ? `Init:${t.reason}`
        : t.signal
          ? `Init:Signal:${t.signal}`
          : `Init:ExitCode:${t.exitCode}`;
    } else if (st.waiting?.reason && st.waiting.reason !== 'PodInitializing') {
      reason = `Init:${st.waiting.reason}`;
    } else {
      reason = `Init:${i}/${initSpecs.length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || conditionTrue(pod, 'Initialized')) {
    restarts = sidecarRestarts;
    let hasRunning = false;
    const containers = status.containerStatuses ?? [];
    for (let i = containers.length - 1; i >= 0; i--) {
      const cs = containers[i]!;
      restarts += cs.restartCount ?? 0;
      if (cs.restartCount) noteRestart(cs);
      const st = cs.state ?? {};
      if (st.waiting?.reason) reason = st.waiting.reason;
      else if (st.terminated?.reason) reason = st.terminated.reason;
      else if (st.terminated)
        reason = st.terminated.signal
          ? `Signal:${st.terminated.signal}`
          : `ExitCode:${st.terminated.exitCode}`;
      else if (cs.ready && st.running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    if (reason === 'Completed' && hasRunning) reason = conditionTrue(pod, 'Ready') ? 'Running' : 'NotReady';
  }
  if (pod.metadata.deletionTimestamp) reason = 'Terminating';
  return {
    ready: `${readyContainers}/${totalContainers}`,
    status: reason,
    restarts,
    ...(lastRestartMs !== undefined ? { lastRestartMs } : {}),
  };
}

/** kubectl's RESTARTS cell: "3", or "3 (12s ago)" once a container has restarted. */
export function restartsText(d: PodDisplay, nowMs: number): string {
  if (d.restarts === 0 || d.lastRestartMs === undefined) return String(d.restarts);
  return `${d.restarts} (${humanDuration(nowMs - d.lastRestartMs)} ago)`;
}

/** k8s.io/apimachinery's duration.HumanDuration: "45s", "3m20s", "5h", "2d3h", … */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const d = Math.floor(hours / 24) % 365;
    return d === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${d}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

/** kubectl's AGE of an RFC 3339 timestamp, "<unknown>" when there is none. */
export function ageText(timestamp: string | undefined, nowMs: number): string {
  if (!timestamp) return '<unknown>';
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? '<unknown>' : humanDuration(nowMs - t);
}
