/**
 * Node-level admission: whether a new pod may run here next to the pods already admitted (upstream:
 * lifecycle.predicateAdmitHandler, with preemption.CriticalPodAdmissionHandler as its failure handler).
 *
 * In upstream's order: the node must be known (InvalidNodeInfo); the pod's `kubernetes.io/os` label and
 * its spec.os must name this OS; then the scheduler's admission check against the node: resources
 * (pods, cpu, memory, ephemeral-storage, then the scalar resources, each against allocatable minus what
 * the other admitted pods request), required node affinity and nodeSelector, spec.nodeName, host
 * ports, and, for pods that are not static, the node's NoExecute taints. Only the first failure is
 * reported, worded as upstream words it, and the kubelet turns it into a Failed pod.
 *
 * A critical pod (static, mirror, or of system-critical priority) is never refused for resources
 * alone: it is admitted, and the verdict names the lower-priority pods the kubelet must preempt to
 * make room, chosen as upstream chooses them (fewest pods, BestEffort before Burstable before
 * Guaranteed). When no such set exists it is refused as UnexpectedAdmissionError.
 */
import type {
  Container,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  Pod,
  PodStatus,
  Toleration,
} from '../api/core-v1.js';
import { podRequests } from '../api/pod-resources.js';
import { milliValueOf, parseQuantity, valueOf, type ResourceQuantity } from '../api/quantity.js';
import { NodeStatusManager, type NodeStatusManagerOptions } from '../nodestatus/node-status-manager.js';
import { RuntimeState } from '../nodestatus/runtime-state.js';
import type { Node, Taint } from '../api/node.js';
import { getPodQOS } from '../api/qos.js';
import { isCriticalPod, isStaticPod } from '../api/pod-source.js';

export type AdmitResult =
  | {
      admit: true;
      /** Pods to preempt so that a critical pod fits: the kubelet fails and kills each (see preemptedPodStatus). */
      preempt: Pod[];
    }
  | { admit: false; reason: string; message: string };

/** Upstream's reasons (pkg/kubelet/lifecycle/predicate.go). */
export const AdmissionReason = {
  InvalidNodeInfo: 'InvalidNodeInfo',
  PodOSSelectorNodeLabelDoesNotMatch: 'PodOSSelectorNodeLabelDoesNotMatch',
  PodOSNotSupported: 'PodOSNotSupported',
  UnexpectedAdmissionError: 'UnexpectedAdmissionError',
  OutOfCPU: 'OutOfcpu',
  OutOfMemory: 'OutOfmemory',
  OutOfEphemeralStorage: 'OutOfephemeral-storage',
  OutOfPods: 'OutOfpods',
} as const;

/** The scheduler plugins whose names become the reason of a failed predicate. */
export const PredicateName = {
  NodeAffinity: 'NodeAffinity',
  NodeName: 'NodeName',
  NodePorts: 'NodePorts',
  TaintToleration: 'TaintToleration',
} as const;

const NODE_AFFINITY_ERR_REASON = "node(s) didn't match Pod's node affinity/selector";
const NODE_NAME_ERR_REASON = "node(s) didn't match the requested node name";
const NODE_PORTS_ERR_REASON = "node(s) didn't have free ports for the requested pod ports";
const TAINT_TOLERATION_ERR_REASON = "node(s) had taints that the pod didn't tolerate";

/** What the kubelet sets on a pod it preempts, and says in the Warning event (upstream: events.PreemptContainer). */
export const PREEMPT_REASON = 'Preempting';
export const PREEMPT_MESSAGE = 'Preempted in order to admit critical pod';
const PREEMPT_CONDITION_MESSAGE = 'Pod was preempted by Kubelet to accommodate a critical pod.';

const LABEL_OS = 'kubernetes.io/os';
/** runtime.GOOS: tskubelet runs on Linux only. */
const NODE_OS = 'linux';

// ---- the verdict -----------------------------------------------------------------------------------

type FailureReason =
  | { kind: 'resource'; resourceName: string; requested: bigint; used: bigint; capacity: bigint }
  | { kind: 'predicate'; predicateName: string; desc: string };

/**
 * Whether pod may run next to otherPods (the admitted pods that are still active, without pod itself)
 * on node (undefined when the kubelet knows none).
 */
export function canAdmitPod(pod: Pod, otherPods: readonly Pod[], node: Node | undefined): AdmitResult {
  if (!node) {
    return {
      admit: false,
      reason: AdmissionReason.InvalidNodeInfo,
      message: 'Kubelet cannot get node info.',
    };
  }
  // The checks preemption cannot help come first, so that no pod is evicted for nothing.
  if (rejectBasedOnOSSelector(pod, node)) {
    return {
      admit: false,
      reason: AdmissionReason.PodOSSelectorNodeLabelDoesNotMatch,
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    };
  }
  if (pod.spec.os !== undefined && pod.spec.os.name !== NODE_OS) {
    return {
      admit: false,
      reason: AdmissionReason.PodOSNotSupported,
      message: "Failed to admit pod as the OS field doesn't match node OS",
    };
  }

  const allocatable = nodeAllocatable(node);
  let reasons = generalFilter(pod, otherPods, node, allocatable);
  let preempt: Pod[] = [];
  if (reasons.length > 0 && isCriticalPod(pod)) {
    // Insufficient resources are no reason to refuse a critical pod: room is made for it instead.
    const other = reasons.filter((r) => r.kind === 'predicate');
    if (other.length > 0) reasons = other;
    else {
      const requirements = reasons.map((r) =>
        r.kind === 'resource'
          ? { resourceName: r.resourceName, quantity: r.requested - (r.capacity - r.used) }
          : { resourceName: '', quantity: 0n },
      );
      const chosen = getPodsToPreempt(pod, otherPods, requirements);
      if (typeof chosen === 'string') {
        return {
          admit: false,
          reason: AdmissionReason.UnexpectedAdmissionError,
          message: `Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: ${chosen}`,
        };
      }
      preempt = chosen;
      reasons = [];
    }
  }
  const first = reasons[0];
  if (!first) return { admit: true, preempt };
  if (first.kind === 'predicate') {
    return {
      admit: false,
      reason: first.predicateName,
      message: `Predicate ${first.predicateName} failed: ${first.desc}`,
    };
  }
  return {
    admit: false,
    reason: outOfReason(first.resourceName),
    message: `Node didn't have enough resource: ${first.resourceName}, requested: ${first.requested}, used: ${first.used}, capacity: ${first.capacity}`,
  };
}

/** The status of a pod preempted for a critical one (upstream: the CriticalPodAdmissionHandler's status function). */
export function preemptedPodStatus(current: PodStatus | undefined, nowIso: string): PodStatus {
  const status: PodStatus = structuredClone(current ?? {});
  status.phase = 'Failed';
  status.reason = PREEMPT_REASON;
  status.message = PREEMPT_MESSAGE;
  const conditions = (status.conditions ??= []);
  const condition = {
    type: 'DisruptionTarget',
    status: 'True' as const,
    reason: 'TerminationByKubelet',
    message: PREEMPT_CONDITION_MESSAGE,
    lastProbeTime: null,
    lastTransitionTime: nowIso,
  };
  const i = conditions.findIndex((c) => c.type === condition.type);
  if (i < 0) conditions.push(condition);
  else {
    // podutil.UpdatePodCondition: the transition time holds while the status does.
    const old = conditions[i]!;
    if (old.status === condition.status && old.lastTransitionTime)
      condition.lastTransitionTime = old.lastTransitionTime;
    conditions[i] = condition;
  }
  return status;
}

function outOfReason(resourceName: string): string {
  switch (resourceName) {
    case 'cpu':
      return AdmissionReason.OutOfCPU;
    case 'memory':
      return AdmissionReason.OutOfMemory;
    case 'ephemeral-storage':
      return AdmissionReason.OutOfEphemeralStorage;
    case 'pods':
      return AdmissionReason.OutOfPods;
    default:
      return `OutOf${resourceName}`;
  }
}

/**
 * Upstream reads the pod's own `kubernetes.io/os` label (not its nodeSelector) against the node's; a node
 * whose label is missing or wrong counts as the OS it runs.
 */
function rejectBasedOnOSSelector(pod: Pod, node: Node): boolean {
  const wanted = pod.metadata.labels?.[LABEL_OS];
  if (wanted === undefined) return false;
  let nodeOS = node.metadata.labels?.[LABEL_OS];
  if (nodeOS !== NODE_OS) nodeOS = NODE_OS;
  return wanted !== nodeOS;
}

/** Upstream's generalFilter: the scheduler's AdmissionCheck with every failure, then NoExecute taints. */
function generalFilter(
  pod: Pod,
  otherPods: readonly Pod[],
  node: Node,
  allocatable: ResourceAmounts,
): FailureReason[] {
  const reasons: FailureReason[] = [...fitsRequest(pod, otherPods, allocatable)];
  if (!requiredNodeAffinityMatches(pod, node)) {
    reasons.push({
      kind: 'predicate',
      predicateName: PredicateName.NodeAffinity,
      desc: NODE_AFFINITY_ERR_REASON,
    });
  }
  const nodeName = pod.spec.nodeName ?? '';
  if (nodeName !== '' && nodeName !== (node.metadata.name ?? '')) {
    reasons.push({ kind: 'predicate', predicateName: PredicateName.NodeName, desc: NODE_NAME_ERR_REASON });
  }
  if (!fitsPorts(pod, otherPods)) {
    reasons.push({ kind: 'predicate', predicateName: PredicateName.NodePorts, desc: NODE_PORTS_ERR_REASON });
  }
  // Static pods are the node's own: its taints do not keep them off it.
  if (
    !isStaticPod(pod) &&
    findUntoleratedNoExecuteTaint(node.spec?.taints ?? [], pod.spec.tolerations ?? [])
  ) {
    reasons.push({
      kind: 'predicate',
      predicateName: PredicateName.TaintToleration,
      desc: TAINT_TOLERATION_ERR_REASON,
    });
  }
  return reasons;
}

// ---- resources (upstream: noderesources.Fits) ------------------------------------------------------

/** Amounts as the scheduler's framework.Resource holds them: cpu in millicores, the rest in whole units. */
type ResourceAmounts = Map<string, bigint>;

/** Quantity.MilliValue() for cpu, Value() for everything else: both round away from zero. */
function amountOf(resourceName: string, q: ResourceQuantity): bigint {
  return resourceName === 'cpu' ? milliValueOf(q) : valueOf(q);
}

/** v1helper.IsExtendedResourceName: a qualified name outside kubernetes.io, not a quota name. */
function isExtendedResourceName(name: string): boolean {
  if (!name.includes('/')) return false;
  const domain = name.slice(0, name.indexOf('/'));
  if (domain === 'kubernetes.io' || domain.endsWith('.kubernetes.io')) return false;
  return !name.startsWith('requests.');
}

/** schedutil.IsScalarResourceName: extended, huge pages, prefixed native, attachable volumes. */
function isScalarResourceName(name: string): boolean {
  return (
    isExtendedResourceName(name) ||
    name.startsWith('hugepages-') ||
    name.includes('kubernetes.io/') ||
    name.startsWith('attachable-volumes-')
  );
}

const NAMED_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'] as const;

function countsForScheduling(name: string): boolean {
  return (NAMED_RESOURCES as readonly string[]).includes(name) || isScalarResourceName(name);
}

/** The node's allocatable as framework.NewResource reads it; unparsable quantities count as zero. */
function nodeAllocatable(node: Node): ResourceAmounts {
  const out: ResourceAmounts = new Map();
  for (const [name, text] of Object.entries(node.status?.allocatable ?? {})) {
    if (name !== 'pods' && !countsForScheduling(name)) continue;
    try {
      out.set(name, amountOf(name, parseQuantity(text)));
    } catch {
      out.set(name, 0n);
    }
  }
  return out;
}

/** What a pod requests, in scheduler units (upstream: resource.PodRequests, then framework.Resource). */
function podRequestAmounts(pod: Pod): ResourceAmounts {
  const out: ResourceAmounts = new Map();
  let sums;
  try {
    sums = podRequests(pod);
  } catch {
    // A quantity the API would have refused: the pod asks for nothing we can count.
    return out;
  }
  for (const [name, r] of sums) {
    if (!countsForScheduling(name)) continue;
    out.set(name, amountOf(name, r));
  }
  return out;
}

/**
 * removeMissingExtendedResources: extended resources the node does not list are cluster-level ones
 * (or a static pod's mistake) and are not checked here.
 */
function withoutMissingExtendedResources(pod: Pod, allocatable: ResourceAmounts): Pod {
  const filter = (containers: Container[] | undefined) =>
    containers?.map((c) => {
      const requests = c.resources?.requests;
      const limits = c.resources?.limits;
      if (!requests && !limits) return c;
      const keep = (list: Record<string, unknown> | undefined) =>
        list &&
        Object.fromEntries(
          Object.entries(list).filter(([name]) => !isExtendedResourceName(name) || allocatable.has(name)),
        );
      return {
        ...c,
        resources: { ...c.resources, requests: keep(requests), limits: keep(limits) },
      } as Container;
    });
  const spec = { ...pod.spec, containers: filter(pod.spec.containers) ?? [] };
  if (pod.spec.initContainers) spec.initContainers = filter(pod.spec.initContainers);
  return { ...pod, spec };
}

/** fitsRequest: pods first, then cpu, memory, ephemeral-storage, then the scalar resources by name. */
function fitsRequest(pod: Pod, otherPods: readonly Pod[], allocatable: ResourceAmounts): FailureReason[] {
  const out: FailureReason[] = [];
  const allowedPods = allocatable.get('pods') ?? 0n;
  const usedPods = BigInt(otherPods.length);
  if (usedPods + 1n > allowedPods) {
    out.push({
      kind: 'resource',
      resourceName: 'pods',
      requested: 1n,
      used: usedPods,
      capacity: allowedPods,
    });
  }
  const request = podRequestAmounts(withoutMissingExtendedResources(pod, allocatable));
  if ([...request.values()].every((v) => v === 0n)) return out;
  const used: ResourceAmounts = new Map();
  for (const p of otherPods) {
    for (const [name, v] of podRequestAmounts(p)) used.set(name, (used.get(name) ?? 0n) + v);
  }
  const scalars = [...request.keys()]
    .filter((n) => !(NAMED_RESOURCES as readonly string[]).includes(n))
    .sort();
  for (const name of [...NAMED_RESOURCES, ...scalars]) {
    const wanted = request.get(name) ?? 0n;
    if (wanted <= 0n) continue;
    const capacity = allocatable.get(name) ?? 0n;
    const inUse = used.get(name) ?? 0n;
    if (wanted > capacity - inUse) {
      out.push({ kind: 'resource', resourceName: name, requested: wanted, used: inUse, capacity });
    }
  }
  return out;
}

// ---- node affinity (upstream: component-helpers nodeaffinity.GetRequiredNodeAffinity) ----------------

interface PodAffinitySpec {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] };
  };
}

/** The pod's nodeSelector (every label equal) and its required node affinity (any term) both match. */
export function requiredNodeAffinityMatches(pod: Pod, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [key, value] of Object.entries(pod.spec.nodeSelector ?? {})) {
    if (labels[key] !== value) return false;
  }
  const required = (pod.spec.affinity as PodAffinitySpec | undefined)?.nodeAffinity
    ?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  const fields: Record<string, string> = {};
  if (node.metadata.name) fields['metadata.name'] = node.metadata.name;
  // An empty term selects nothing; a term that does not parse fails alone.
  return (required.nodeSelectorTerms ?? []).some((term) => {
    const expressions = term.matchExpressions ?? [];
    const matchFields = term.matchFields ?? [];
    if (expressions.length === 0 && matchFields.length === 0) return false;
    if (!expressions.every((r) => labelRequirementMatches(r, labels))) return false;
    if (matchFields.some((r) => !isValidFieldRequirement(r))) return false;
    if (Object.keys(fields).length === 0) return true;
    return matchFields.every((r) => labelRequirementMatches(r, fields));
  });
}

/** A matchFields requirement may only name metadata.name, with In or NotIn and one value. */
function isValidFieldRequirement(r: NodeSelectorRequirement): boolean {
  return (
    r.key === 'metadata.name' && (r.operator === 'In' || r.operator === 'NotIn') && r.values?.length === 1
  );
}

/** labels.Requirement.Matches, with upstream's parse rules: a malformed requirement matches nothing. */
function labelRequirementMatches(r: NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const key = r.key ?? '';
  const values = r.values ?? [];
  const has = Object.prototype.hasOwnProperty.call(labels, key);
  const value = labels[key];
  switch (r.operator) {
    case 'In':
      return values.length > 0 && has && values.includes(value!);
    case 'NotIn':
      return values.length > 0 && (!has || !values.includes(value!));
    case 'Exists':
      return values.length === 0 && has;
    case 'DoesNotExist':
      return values.length === 0 && !has;
    case 'Gt':
    case 'Lt': {
      const bound = values.length === 1 ? parseInt64(values[0]!) : undefined;
      if (bound === undefined || !has) return false;
      const actual = parseInt64(value!);
      if (actual === undefined) return false;
      return r.operator === 'Gt' ? actual > bound : actual < bound;
    }
    default:
      return false;
  }
}

/** strconv.ParseInt(s, 10, 64). */
function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const v = BigInt(s);
  return v >= -(2n ** 63n) && v < 2n ** 63n ? v : undefined;
}

// ---- host ports (upstream: nodeports.Fits over HostPortInfo) -----------------------------------------

interface HostPort {
  ip: string;
  protocol: string;
  port: number;
}

/** The host ports of the pods' app containers (upstream looks at spec.containers only). */
function hostPorts(pods: readonly Pod[]): HostPort[] {
  const out: HostPort[] = [];
  for (const pod of pods) {
    for (const c of pod.spec.containers) {
      for (const p of c.ports ?? []) {
        const port = p.hostPort ?? 0;
        if (port <= 0) continue;
        out.push({ ip: p.hostIP || '0.0.0.0', protocol: p.protocol || 'TCP', port });
      }
    }
  }
  return out;
}

/** HostPortInfo.CheckConflict: 0.0.0.0 conflicts with every address, any other with itself and 0.0.0.0. */
function fitsPorts(pod: Pod, otherPods: readonly Pod[]): boolean {
  const wanted = hostPorts([pod]);
  if (wanted.length === 0) return true;
  const used = hostPorts(otherPods);
  return !wanted.some((w) =>
    used.some(
      (u) =>
        u.port === w.port &&
        u.protocol === w.protocol &&
        (w.ip === '0.0.0.0' || u.ip === '0.0.0.0' || u.ip === w.ip),
    ),
  );
}

// ---- taints (upstream: corev1.FindMatchingUntoleratedTaint, v1.Toleration.ToleratesTaint) ------------

function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  switch (t.operator ?? '') {
    case '':
    case 'Equal':
      return (t.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/** The kubelet only cares for NoExecute: the other effects are the scheduler's business. */
function findUntoleratedNoExecuteTaint(
  taints: readonly Taint[],
  tolerations: readonly Toleration[],
): Taint | undefined {
  return taints.find(
    (taint) => taint.effect === 'NoExecute' && !tolerations.some((t) => toleratesTaint(t, taint)),
  );
}

// ---- critical pods and preemption (upstream: kubetypes.IsCriticalPod, pkg/kubelet/preemption) -----------

/** kubetypes.Preemptable: a critical pod may preempt one that is not; otherwise only a higher priority may. */
function preemptable(preemptor: Pod, preemptee: Pod): boolean {
  if (isCriticalPod(preemptor) && !isCriticalPod(preemptee)) return true;
  const a = preemptor.spec.priority;
  const b = preemptee.spec.priority;
  return a !== undefined && b !== undefined && a > b;
}

interface Requirement {
  resourceName: string;
  quantity: bigint;
}

/** resource.GetResourceRequest: a pod counts 1 against pods, its requests against the rest. */
function resourceRequest(pod: Pod, resourceName: string): bigint {
  if (resourceName === 'pods') return 1n;
  return podRequestAmounts(pod).get(resourceName) ?? 0n;
}

function subtract(requirements: readonly Requirement[], pods: readonly Pod[]): Requirement[] {
  const out: Requirement[] = [];
  for (const req of requirements) {
    let left = req.quantity;
    for (const pod of pods) {
      left -= resourceRequest(pod, req.resourceName);
      if (left <= 0n) break;
    }
    if (left > 0n) out.push({ resourceName: req.resourceName, quantity: left });
  }
  return out;
}

/** How far the pod leaves the requirements from met: each one's unmet fraction, squared and summed. */
function distance(requirements: readonly Requirement[], pod: Pod): number {
  let d = 0;
  for (const req of requirements) {
    const remaining = Number(req.quantity - resourceRequest(pod, req.resourceName));
    if (remaining > 0) d += (remaining / Number(req.quantity)) ** 2;
  }
  return d;
}

/** Memory first, then cpu; a tie counts as smaller, as upstream's smallerResourceRequest. */
function smallerResourceRequest(a: Pod, b: Pod): boolean {
  for (const name of ['memory', 'cpu']) {
    const x = resourceRequest(a, name);
    const y = resourceRequest(b, name);
    if (x < y) return true;
    if (x > y) return false;
  }
  return true;
}

function requirementsText(requirements: readonly Requirement[]): string {
  return `[${requirements.map((r) => `(res: ${r.resourceName}, q: ${r.quantity}), `).join('')}]`;
}

/** getPodsToPreemptByDistance: repeatedly the pod that meets most of what is left, the smaller on a tie. */
function preemptByDistance(candidates: readonly Pod[], requirements: Requirement[]): Pod[] | string {
  const pods = [...candidates];
  const chosen: Pod[] = [];
  while (requirements.length > 0) {
    if (pods.length === 0)
      return `no set of running pods found to reclaim resources: ${requirementsText(requirements)}`;
    let best = requirements.length + 1;
    let bestIndex = 0;
    pods.forEach((pod, i) => {
      const d = distance(requirements, pod);
      if (d < best || (d === best && smallerResourceRequest(pod, pods[bestIndex]!))) {
        best = d;
        bestIndex = i;
      }
    });
    const pick = pods[bestIndex]!;
    requirements = subtract(requirements, [pick]);
    chosen.push(pick);
    pods[bestIndex] = pods[pods.length - 1]!;
    pods.pop();
  }
  return chosen;
}

/** getPodsToPreempt: the fewest Guaranteed pods, then Burstable, then BestEffort; or why there are none. */
function getPodsToPreempt(pod: Pod, pods: readonly Pod[], requirements: Requirement[]): Pod[] | string {
  const bestEffort: Pod[] = [];
  const burstable: Pod[] = [];
  const guaranteed: Pod[] = [];
  for (const p of pods) {
    if (!preemptable(pod, p)) continue;
    const qos = getPodQOS(p);
    if (qos === 'BestEffort') bestEffort.push(p);
    else if (qos === 'Burstable') burstable.push(p);
    else guaranteed.push(p);
  }
  const unmeetable = subtract(requirements, [...bestEffort, ...burstable, ...guaranteed]);
  if (unmeetable.length > 0)
    return `no set of running pods found to reclaim resources: ${requirementsText(unmeetable)}`;
  const guaranteedToEvict = preemptByDistance(
    guaranteed,
    subtract(requirements, [...bestEffort, ...burstable]),
  );
  if (typeof guaranteedToEvict === 'string') return guaranteedToEvict;
  const burstableToEvict = preemptByDistance(
    burstable,
    subtract(requirements, [...bestEffort, ...guaranteedToEvict]),
  );
  if (typeof burstableToEvict === 'string') return burstableToEvict;
  const bestEffortToEvict = preemptByDistance(
    bestEffort,
    subtract(requirements, [...burstableToEvict, ...guaranteedToEvict]),
  );
  if (typeof bestEffortToEvict === 'string') return bestEffortToEvict;
  return [...bestEffortToEvict, ...burstableToEvict, ...guaranteedToEvict];
}

// ---- the node admission reads ----------------------------------------------------------------------

/**
 * Upstream's getNodeAnyWay: the API's copy of the node when the kubelet has one (cluster mode, once
 * the node informer has it), else the node this kubelet would register.
 */
export function nodeAnyWay(
  fromApi: (() => Node | undefined) | undefined,
  initialNode: Node | undefined,
): () => Node | undefined {
  return () => fromApi?.() ?? initialNode;
}

export type InitialNodeOptions = Omit<NodeStatusManagerOptions, 'client' | 'runtimeState' | 'recorder'>;

/**
 * The Node this kubelet would register (upstream: initialNode): labels from the machine and
 * --node-labels, taints, and a status whose allocatable is the machine's capacity less the
 * reservations. Read once at start, before any pod is admitted; it makes no API call.
 */
export async function readInitialNode(options: InitialNodeOptions, signal: AbortSignal): Promise<Node> {
  const manager = new NodeStatusManager({
    ...options,
    // Never called: initialNode only reads the machine and the runtime.
    client: {
      get: () => Promise.reject(new Error('no API client')),
      create: () => Promise.reject(new Error('no API client')),
      update: () => Promise.reject(new Error('no API client')),
      patch: () => Promise.reject(new Error('no API client')),
    },
    runtimeState: new RuntimeState(options.clock),
  });
  return manager.initialNode(signal);
}
