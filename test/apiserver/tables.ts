/**
 * Server-side printing (meta.k8s.io Table) for pods and nodes, with the columns and cell rules of
 * upstream's pkg/printers/internalversion (printPod, printNode), so `kubectl get pods` shows READY,
 * STATUS and RESTARTS as against a real cluster. Other resources are served as plain lists, which
 * kubectl prints with its own NAME/AGE fallback.
 */
import type { KubeObject } from './resources.js';

type Obj = Record<string, unknown>;

export interface TableRequest {
  /** The meta.k8s.io version asked for: v1 or v1beta1. */
  version: string;
  includeObject: 'None' | 'Metadata' | 'Object';
}

/** Reads an Accept header: a Table when its first acceptable type is one, for a resource that prints. */
export function tableRequest(
  accept: string | undefined,
  resource: string,
  includeObject: string | null,
): TableRequest | undefined {
  if (resource !== 'pods' && resource !== 'nodes') return undefined;
  for (const part of (accept ?? '').split(',')) {
    const [type, ...params] = part.split(';').map((s) => s.trim());
    if (type !== 'application/json') continue;
    const p = Object.fromEntries(params.map((kv) => kv.split('=') as [string, string]));
    if (p.as === undefined) return undefined;
    if (p.as === 'Table' && p.g === 'meta.k8s.io' && (p.v === 'v1' || p.v === 'v1beta1')) {
      const include = includeObject === 'None' || includeObject === 'Object' ? includeObject : 'Metadata';
      return { version: p.v, includeObject: include };
    }
  }
  return undefined;
}

export function tableContentType(t: TableRequest): string {
  return `application/json;as=Table;v=${t.version};g=meta.k8s.io`;
}

interface Column {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

function col(name: string, description: string, priority = 0, format = ''): Column {
  return { name, type: 'string', format, description, priority };
}

const NAME_DOC =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated.';
const AGE_DOC =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.';

const POD_COLUMNS: Column[] = [
  col('Name', NAME_DOC, 0, 'name'),
  col('Ready', 'The aggregate readiness state of this pod for accepting traffic.'),
  col('Status', 'The aggregate status of the containers in this pod.'),
  col(
    'Restarts',
    'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.',
  ),
  col('Age', AGE_DOC),
  col(
    'IP',
    'IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.',
    1,
  ),
  col('Node', 'NodeName indicates in which node this pod is scheduled.', 1),
  col('Nominated Node', 'nominatedNodeName is set only when this pod preempts other pods on the node.', 1),
  col('Readiness Gates', 'If specified, all readiness gates will be evaluated for pod readiness.', 1),
];

const NODE_COLUMNS: Column[] = [
  col('Name', NAME_DOC, 0, 'name'),
  col('Status', 'The status of the node'),
  col('Roles', 'The roles of the node'),
  col('Age', AGE_DOC),
  col('Version', 'Kubelet Version reported by the node.'),
  col('Internal-IP', 'List of addresses reachable to the node.', 1),
  col('External-IP', 'List of addresses reachable to the node.', 1),
  col(
    'OS-Image',
    'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).',
    1,
  ),
  col(
    'Kernel-Version',
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    1,
  ),
  col(
    'Container-Runtime',
    'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).',
    1,
  ),
];

function obj(v: unknown): Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {};
}

function list(v: unknown): Obj[] {
  return Array.isArray(v) ? v.map(obj) : [];
}

/** duration.HumanDuration: the AGE column's wording. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${hours / 24}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 365 * 8)
    return days % 365 === 0 ? `${days / 365}y` : `${Math.floor(days / 365)}y${days % 365}d`;
  return `${Math.floor(days / 365)}y`;
}

function since(ts: unknown, nowMs: number): string {
  return typeof ts === 'string' && ts ? humanDuration(nowMs - Date.parse(ts)) : '<unknown>';
}

function podCells(pod: KubeObject, nowMs: number): unknown[] {
  const spec = obj(pod.spec);
  const status = obj(pod.status);
  const containers = list(spec.containers);
  const initSpecs = list(spec.initContainers);
  const sidecars = new Set(initSpecs.filter((c) => c.restartPolicy === 'Always').map((c) => c.name));
  const totalContainers = containers.length + sidecars.size;
  let readyContainers = 0;
  let restarts = 0;
  let sidecarRestarts = 0;
  let lastRestart = 0;
  let lastSidecarRestart = 0;
  const phase = String(status.phase ?? '');
  let reason = (status.reason as string | undefined) || phase;
  for (const c of list(status.conditions)) {
    if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';
  }

  const finishedAt = (cs: Obj) => Date.parse(String(obj(obj(cs.lastState).terminated).finishedAt ?? '')) || 0;
  let initializing = false;
  const initStatuses = list(status.initContainerStatuses);
  for (let i = 0; i < initStatuses.length; i++) {
    const cs = initStatuses[i]!;
    const state = obj(cs.state);
    const terminated = state.terminated ? obj(state.terminated) : undefined;
    const waiting = state.waiting ? obj(state.waiting) : undefined;
    restarts += Number(cs.restartCount ?? 0);
    lastRestart = Math.max(lastRestart, finishedAt(cs));
    if (sidecars.has(cs.name)) {
      sidecarRestarts += Number(cs.restartCount ?? 0);
      lastSidecarRestart = Math.max(lastSidecarRestart, finishedAt(cs));
    }
    if (terminated && terminated.exitCode === 0) continue;
    if (sidecars.has(cs.name) && cs.started === true) {
      if (cs.ready === true) readyContainers++;
      continue;
    }
    if (terminated) {
      reason = terminated.reason
        ? `Init:${String(terminated.reason)}`
        : terminated.signal
          ? `Init:Signal:${String(terminated.signal)}`
          : `Init:ExitCode:${String(terminated.exitCode ?? 0)}`;
    } else if (waiting && waiting.reason && waiting.reason !== 'PodInitializing') {
      reason = `Init:${String(waiting.reason)}`;
    } else {
      reason = `Init:${i}/${initSpecs.length}`;
    }
    initializing = true;
    break;
  }

  const initialized = list(status.conditions).some((c) => c.type === 'Initialized' && c.status === 'True');
  if (!initializing || initialized) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const statuses = list(status.containerStatuses);
    for (let i = statuses.length - 1; i >= 0; i--) {
      const cs = statuses[i]!;
      const state = obj(cs.state);
      restarts += Number(cs.restartCount ?? 0);
      lastRestart = Math.max(lastRestart, finishedAt(cs));
      const waiting = state.waiting ? obj(state.waiting) : undefined;
      const terminated = state.terminated ? obj(state.terminated) : undefined;
      if (waiting?.reason) reason = String(waiting.reason);
      else if (terminated?.reason) reason = String(terminated.reason);
      else if (terminated) {
        reason = terminated.signal
          ? `Signal:${String(terminated.signal)}`
          : `ExitCode:${String(terminated.exitCode ?? 0)}`;
      } else if (cs.ready === true && state.running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    if (reason === 'Completed' && hasRunning) {
      const ready = list(status.conditions).some((c) => c.type === 'Ready' && c.status === 'True');
      reason = ready ? 'Running' : 'NotReady';
    }
  }

  if (pod.metadata.deletionTimestamp && status.reason === 'NodeLost') reason = 'Unknown';
  else if (pod.metadata.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed')
    reason = 'Terminating';

  const restartsCell =
    restarts !== 0 && lastRestart > 0
      ? `${restarts} (${humanDuration(nowMs - lastRestart)} ago)`
      : String(restarts);
  const podIps = list(status.podIPs);
  const gates = list(spec.readinessGates);
  let gatesCell = '<none>';
  if (gates.length > 0) {
    const conditions = list(status.conditions);
    const trueCount = gates.filter(
      (g) => conditions.find((c) => c.type === g.conditionType)?.status === 'True',
    ).length;
    gatesCell = `${trueCount}/${gates.length}`;
  }
  return [
    pod.metadata.name ?? '',
    `${readyContainers}/${totalContainers}`,
    reason,
    restartsCell,
    since(pod.metadata.creationTimestamp, nowMs),
    (podIps[0]?.ip as string | undefined) || '<none>',
    (spec.nodeName as string | undefined) || '<none>',
    (status.nominatedNodeName as string | undefined) || '<none>',
    gatesCell,
  ];
}

function nodeCells(node: KubeObject, nowMs: number): unknown[] {
  const status = obj(node.status);
  const info = obj(status.nodeInfo);
  const ready = list(status.conditions).find((c) => c.type === 'Ready');
  const states = ready ? [ready.status === 'True' ? 'Ready' : 'NotReady'] : ['Unknown'];
  if (obj(node.spec).unschedulable === true) states.push('SchedulingDisabled');
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(node.metadata.labels ?? {})) {
    if (k.startsWith('node-role.kubernetes.io/')) roles.add(k.slice('node-role.kubernetes.io/'.length));
    else if (k === 'kubernetes.io/role' && v) roles.add(v);
  }
  const address = (type: string) =>
    (list(status.addresses).find((a) => a.type === type)?.address as string | undefined) ?? '<none>';
  const orUnknown = (v: unknown) => (typeof v === 'string' && v ? v : '<unknown>');
  return [
    node.metadata.name ?? '',
    states.join(','),
    roles.size > 0 ? [...roles].sort().join(',') : '<none>',
    since(node.metadata.creationTimestamp, nowMs),
    (info.kubeletVersion as string | undefined) ?? '',
    address('InternalIP'),
    address('ExternalIP'),
    orUnknown(info.osImage),
    orUnknown(info.kernelVersion),
    orUnknown(info.containerRuntimeVersion),
  ];
}

/** A Table of objects of one resource; headers are left out for the later events of a watch. */
export function toTable(
  resource: string,
  items: KubeObject[],
  t: TableRequest,
  meta: Record<string, unknown>,
  nowMs: number,
  withHeaders = true,
): object {
  const columns = resource === 'pods' ? POD_COLUMNS : NODE_COLUMNS;
  const cells = resource === 'pods' ? podCells : nodeCells;
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${t.version}`,
    metadata: meta,
    columnDefinitions: withHeaders ? columns : null,
    rows: items.map((o) => {
      const phase = obj(o.status).phase;
      const conditions =
        resource === 'pods' && (phase === 'Succeeded' || phase === 'Failed')
          ? [
              {
                type: 'Completed',
                status: 'True',
                reason: phase,
                message: phase === 'Succeeded' ? 'The pod has completed successfully.' : 'The pod failed.',
              },
            ]
          : undefined;
      return {
        cells: cells(o, nowMs),
        ...(conditions ? { conditions } : {}),
        ...(t.includeObject === 'Object'
          ? { object: o }
          : t.includeObject === 'Metadata'
            ? {
                object: {
                  kind: 'PartialObjectMetadata',
                  apiVersion: `meta.k8s.io/${t.version}`,
                  metadata: o.metadata,
                },
              }
            : {}),
      };
    }),
  };
}
