/**
 * The Node this kubelet registers, and how it adopts one that already exists (upstream:
 * kubelet_node_status.go initialNode, tryRegisterWithAPIServer's reconcile steps). Taints are set
 * only when the node is created: later, taints belong to the cluster (cordon, the node lifecycle
 * controller's not-ready and unreachable taints), and the kubelet leaves them alone.
 */
import { logger } from '../lib/log.js';
import type { Node, Taint } from '../api/node.js';

const log = logger('kubelet');

export const LABEL_HOSTNAME = 'kubernetes.io/hostname';
export const LABEL_OS = 'kubernetes.io/os';
export const LABEL_ARCH = 'kubernetes.io/arch';
/** The beta labels upstream still sets, for old node selectors. */
export const LEGACY_LABEL_OS = 'beta.kubernetes.io/os';
export const LEGACY_LABEL_ARCH = 'beta.kubernetes.io/arch';
/** volutil.ControllerManagedAttachAnnotation: the attach/detach controller, not the kubelet, attaches volumes. */
export const CONTROLLER_MANAGED_ATTACH_ANNOTATION = 'volumes.kubernetes.io/controller-managed-attach-detach';
export const TAINT_NODE_UNSCHEDULABLE = 'node.kubernetes.io/unschedulable';

/** The labels a kubelet owns on an existing node (upstream's updateDefaultLabels list). */
const DEFAULT_LABELS = [
  LABEL_HOSTNAME,
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
  'beta.kubernetes.io/instance-type',
  LABEL_OS,
  LABEL_ARCH,
  'node.kubernetes.io/windows-build',
  LEGACY_LABEL_OS,
  LEGACY_LABEL_ARCH,
];

export interface InitialNodeParams {
  nodeName: string;
  hostname: string;
  /** Go's GOOS and GOARCH names: linux, amd64. */
  operatingSystem: string;
  architecture: string;
  /** --node-labels; they win over the defaults, with a log line, as upstream. */
  nodeLabels: Readonly<Record<string, string>>;
  /** --register-with-taints. */
  registerWithTaints: readonly Taint[];
  /** false registers the node cordoned (the deprecated --register-schedulable=false). */
  registerSchedulable: boolean;
  enableControllerAttachDetach: boolean;
  providerID: string;
  /** --cloud-provider=external: the node waits, tainted, for the cloud controller manager to initialize it. */
  externalCloudProvider?: boolean;
}

/** The taint a node registers with under an external cloud provider (upstream TaintExternalCloudProvider). */
export const TAINT_EXTERNAL_CLOUD_PROVIDER = 'node.cloudprovider.kubernetes.io/uninitialized';

/** The node before its status: metadata and spec of upstream's initialNode (no cloud provider). */
export function initialNodeObject(p: InitialNodeParams): Node {
  const labels: Record<string, string> = {
    [LABEL_HOSTNAME]: p.hostname,
    [LABEL_OS]: p.operatingSystem,
    [LABEL_ARCH]: p.architecture,
    [LEGACY_LABEL_OS]: p.operatingSystem,
    [LEGACY_LABEL_ARCH]: p.architecture,
  };
  const node: Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: p.nodeName, labels },
    spec: {},
  };
  const spec = node.spec!;
  if (!p.registerSchedulable) spec.unschedulable = true;
  const taints: Taint[] = p.registerWithTaints.map((t) => ({ ...t }));
  if (
    spec.unschedulable &&
    !taints.some((t) => t.key === TAINT_NODE_UNSCHEDULABLE && t.effect === 'NoSchedule')
  ) {
    taints.push({ key: TAINT_NODE_UNSCHEDULABLE, effect: 'NoSchedule' });
  }
  if (p.externalCloudProvider)
    taints.push({ key: TAINT_EXTERNAL_CLOUD_PROVIDER, value: 'true', effect: 'NoSchedule' });
  if (taints.length > 0) spec.taints = taints;
  if (p.enableControllerAttachDetach) {
    node.metadata.annotations = { [CONTROLLER_MANAGED_ATTACH_ANNOTATION]: 'true' };
  }
  for (const [k, v] of Object.entries(p.nodeLabels)) {
    if (k in labels) {
      log.info('the node label will overwrite default setting', {
        labelKey: k,
        labelValue: v,
        default: labels[k],
      });
    }
    labels[k] = v;
  }
  if (p.providerID !== '') spec.providerID = p.providerID;
  return node;
}

/** Upstream's reconcileCMADAnnotationWithExistingNode; true when existing was changed. */
export function reconcileCMADAnnotation(initial: Node, existing: Node): boolean {
  const wanted = initial.metadata.annotations?.[CONTROLLER_MANAGED_ATTACH_ANNOTATION];
  const current = existing.metadata.annotations?.[CONTROLLER_MANAGED_ATTACH_ANNOTATION];
  if ((wanted ?? '') === (current ?? '')) return false;
  if (wanted === undefined) {
    log.info('Controller attach-detach setting changed to false; updating existing Node');
    delete existing.metadata.annotations?.[CONTROLLER_MANAGED_ATTACH_ANNOTATION];
  } else {
    log.info('Controller attach-detach setting changed to true; updating existing Node');
    existing.metadata.annotations = {
      ...existing.metadata.annotations,
      [CONTROLLER_MANAGED_ATTACH_ANNOTATION]: wanted,
    };
  }
  return true;
}

/**
 * Upstream's updateDefaultLabels: the labels the kubelet owns take the initial node's values; an
 * empty value removes the label. Labels of --node-labels outside that list are set only at creation.
 */
export function updateDefaultLabels(initial: Node, existing: Node): boolean {
  const labels = (existing.metadata.labels ??= {});
  let needsUpdate = false;
  for (const label of DEFAULT_LABELS) {
    const value = initial.metadata.labels?.[label];
    if (value === undefined) continue;
    if ((labels[label] ?? '') !== value) {
      labels[label] = value;
      needsUpdate = true;
    }
    if (labels[label] === '') delete labels[label];
  }
  return needsUpdate;
}

/** Upstream's updateDefaultResources: a node without capacity or allocatable takes the initial one's. */
export function updateDefaultResources(initial: Node, existing: Node): boolean {
  let requiresUpdate = false;
  const status = (existing.status ??= {});
  if (status.capacity === undefined) {
    if (initial.status?.capacity !== undefined) {
      status.capacity = { ...initial.status.capacity };
      requiresUpdate = true;
    } else status.capacity = {};
  }
  if (status.allocatable === undefined) {
    if (initial.status?.allocatable !== undefined) {
      status.allocatable = { ...initial.status.allocatable };
      requiresUpdate = true;
    } else status.allocatable = {};
  }
  return requiresUpdate;
}

/** Upstream's reconcileHugePageResource: huge page sizes follow the machine, gone sizes are removed. */
export function reconcileHugePageResource(initial: Node, existing: Node): boolean {
  let requiresUpdate = updateDefaultResources(initial, existing);
  const capacity = existing.status!.capacity!;
  const allocatable = existing.status!.allocatable!;
  const supported = new Set<string>();
  for (const [name, value] of Object.entries(initial.status?.capacity ?? {})) {
    if (!name.startsWith('hugepages-')) continue;
    supported.add(name);
    const wantedAllocatable = initial.status?.allocatable?.[name];
    const had = name in capacity;
    if (!had || capacity[name] !== value) {
      capacity[name] = value;
      requiresUpdate = true;
    }
    if (wantedAllocatable !== undefined && (!had || allocatable[name] !== wantedAllocatable)) {
      allocatable[name] = wantedAllocatable;
      requiresUpdate = true;
    }
  }
  for (const name of Object.keys(capacity)) {
    if (!name.startsWith('hugepages-') || supported.has(name)) continue;
    delete capacity[name];
    delete allocatable[name];
    log.info('Removing huge page resource which is no longer supported', { resourceName: name });
    requiresUpdate = true;
  }
  return requiresUpdate;
}

/** Every reconcile step of tryRegisterWithAPIServer on a node that already exists; true when it must be patched. */
export function reconcileExistingNode(initial: Node, existing: Node): boolean {
  let requiresUpdate = reconcileCMADAnnotation(initial, existing);
  requiresUpdate = updateDefaultLabels(initial, existing) || requiresUpdate;
  requiresUpdate = updateDefaultResources(initial, existing) || requiresUpdate;
  requiresUpdate = reconcileHugePageResource(initial, existing) || requiresUpdate;
  return requiresUpdate;
}

/**
 * The os and arch labels must match the machine on every update, whoever changed them (upstream's
 * updateNode); true when they had to be put back.
 */
export function ensureRequiredLabels(node: Node, operatingSystem: string, architecture: string): boolean {
  let changed = false;
  const labels = (node.metadata.labels ??= {});
  if (labels[LABEL_OS] !== operatingSystem) {
    labels[LABEL_OS] = operatingSystem;
    changed = true;
  }
  if (labels[LABEL_ARCH] !== architecture) {
    labels[LABEL_ARCH] = architecture;
    changed = true;
  }
  return changed;
}
