/**
 * The labels and annotations the kubelet puts on sandboxes and containers, and their readers.
 * The keys and value formats are upstream's (pkg/kubelet/kuberuntime/labels.go and
 * pkg/kubelet/types/labels.go): the runtime's state must read back the same after a restart of
 * this kubelet, of an upstream kubelet, or a switch between the two.
 */
import type { ContainerPort, LifecycleHandler, Pod, Container as V1Container } from '../api/core-v1.js';
import { logger } from '../lib/log.js';

const log = logger('kuberuntime');

export const KUBERNETES_POD_NAME_LABEL = 'io.kubernetes.pod.name';
export const KUBERNETES_POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
export const KUBERNETES_POD_UID_LABEL = 'io.kubernetes.pod.uid';
export const KUBERNETES_CONTAINER_NAME_LABEL = 'io.kubernetes.container.name';

export const POD_DELETION_GRACE_PERIOD_ANNOTATION = 'io.kubernetes.pod.deletionGracePeriod';
export const POD_TERMINATION_GRACE_PERIOD_ANNOTATION = 'io.kubernetes.pod.terminationGracePeriod';
export const CONTAINER_HASH_ANNOTATION = 'io.kubernetes.container.hash';
export const CONTAINER_RESTART_COUNT_ANNOTATION = 'io.kubernetes.container.restartCount';
export const CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION = 'io.kubernetes.container.terminationMessagePath';
export const CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION =
  'io.kubernetes.container.terminationMessagePolicy';
export const CONTAINER_PRE_STOP_HANDLER_ANNOTATION = 'io.kubernetes.container.preStopHandler';
export const CONTAINER_PORTS_ANNOTATION = 'io.kubernetes.container.ports';
export const CONTAINER_TYPE_ANNOTATION = 'io.kubernetes.container.type';

/** Values of `io.kubernetes.container.type`. */
export type ContainerType = 'init' | 'container' | 'ephemeral';

/** Sandbox labels: the pod's own labels, then the three pod identity labels (which win on a clash). */
export function newPodLabels(pod: Pod): Record<string, string> {
  return {
    ...(pod.metadata.labels ?? {}),
    [KUBERNETES_POD_NAME_LABEL]: pod.metadata.name ?? '',
    [KUBERNETES_POD_NAMESPACE_LABEL]: pod.metadata.namespace ?? '',
    [KUBERNETES_POD_UID_LABEL]: pod.metadata.uid ?? '',
  };
}

/** Sandbox annotations are the pod's annotations, as they are. */
export function newPodAnnotations(pod: Pod): Record<string, string> {
  return { ...(pod.metadata.annotations ?? {}) };
}

export function newContainerLabels(container: V1Container, pod: Pod): Record<string, string> {
  return {
    [KUBERNETES_POD_NAME_LABEL]: pod.metadata.name ?? '',
    [KUBERNETES_POD_NAMESPACE_LABEL]: pod.metadata.namespace ?? '',
    [KUBERNETES_POD_UID_LABEL]: pod.metadata.uid ?? '',
    [KUBERNETES_CONTAINER_NAME_LABEL]: container.name,
  };
}

export interface NewContainerAnnotationsOptions {
  /** The container spec hash (hex), from hashContainer. */
  hash: string;
  restartCount: number;
  /** Annotations from device plugins and the like; the kubelet's own keys override them. */
  extra?: Record<string, string>;
}

export function newContainerAnnotations(
  container: V1Container,
  pod: Pod,
  opts: NewContainerAnnotationsOptions,
): Record<string, string> {
  const annotations: Record<string, string> = { ...(opts.extra ?? {}) };
  annotations[CONTAINER_HASH_ANNOTATION] = opts.hash;
  annotations[CONTAINER_RESTART_COUNT_ANNOTATION] = String(opts.restartCount);
  annotations[CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION] = container.terminationMessagePath ?? '';
  annotations[CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION] = container.terminationMessagePolicy ?? '';
  if (pod.metadata.deletionGracePeriodSeconds !== undefined) {
    annotations[POD_DELETION_GRACE_PERIOD_ANNOTATION] = String(pod.metadata.deletionGracePeriodSeconds);
  }
  if (pod.spec.terminationGracePeriodSeconds !== undefined) {
    annotations[POD_TERMINATION_GRACE_PERIOD_ANNOTATION] = String(pod.spec.terminationGracePeriodSeconds);
  }
  // JSON so that a kubelet without the pod (after a restart) can still run the hook when killing.
  if (container.lifecycle?.preStop) {
    annotations[CONTAINER_PRE_STOP_HANDLER_ANNOTATION] = JSON.stringify(container.lifecycle.preStop);
  }
  if (container.ports && container.ports.length > 0) {
    annotations[CONTAINER_PORTS_ANNOTATION] = JSON.stringify(container.ports);
  }
  const type = containerTypeOf(pod, container.name);
  if (type) annotations[CONTAINER_TYPE_ANNOTATION] = type;
  return annotations;
}

function containerTypeOf(pod: Pod, name: string): ContainerType | undefined {
  if (pod.spec.initContainers?.some((c) => c.name === name)) return 'init';
  if (pod.spec.containers.some((c) => c.name === name)) return 'container';
  if (pod.spec.ephemeralContainers?.some((c) => (c as { name?: string }).name === name)) return 'ephemeral';
  return undefined;
}

export interface LabeledPodSandboxInfo {
  /** The pod's own labels, without the kubelet's. */
  labels: Record<string, string>;
  podName: string;
  podNamespace: string;
  podUid: string;
}

export function getPodSandboxInfoFromLabels(labels: Record<string, string>): LabeledPodSandboxInfo {
  const own: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) {
    if (
      k !== KUBERNETES_POD_NAME_LABEL &&
      k !== KUBERNETES_POD_NAMESPACE_LABEL &&
      k !== KUBERNETES_POD_UID_LABEL
    ) {
      own[k] = v;
    }
  }
  return {
    labels: own,
    podName: labels[KUBERNETES_POD_NAME_LABEL] ?? '',
    podNamespace: labels[KUBERNETES_POD_NAMESPACE_LABEL] ?? '',
    podUid: labels[KUBERNETES_POD_UID_LABEL] ?? '',
  };
}

export interface LabeledContainerInfo {
  containerName: string;
  podName: string;
  podNamespace: string;
  podUid: string;
}

export function getContainerInfoFromLabels(labels: Record<string, string>): LabeledContainerInfo {
  return {
    containerName: labels[KUBERNETES_CONTAINER_NAME_LABEL] ?? '',
    podName: labels[KUBERNETES_POD_NAME_LABEL] ?? '',
    podNamespace: labels[KUBERNETES_POD_NAMESPACE_LABEL] ?? '',
    podUid: labels[KUBERNETES_POD_UID_LABEL] ?? '',
  };
}

export interface AnnotatedContainerInfo {
  /** Hex, as stored; '' when absent or malformed. */
  hash: string;
  restartCount: number;
  podDeletionGracePeriodSeconds?: number;
  podTerminationGracePeriodSeconds?: number;
  terminationMessagePath: string;
  terminationMessagePolicy: string;
  preStopHandler?: LifecycleHandler;
  containerPorts?: ContainerPort[];
  containerType: string;
}

/**
 * Reads back what newContainerAnnotations wrote. Like upstream, a missing or malformed value reads
 * as its zero value (containers made by other tools or older kubelets lack some keys) and is logged.
 */
export function getContainerInfoFromAnnotations(annotations: Record<string, string>): AnnotatedContainerInfo {
  const info: AnnotatedContainerInfo = {
    hash: '',
    restartCount: 0,
    terminationMessagePath: annotations[CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION] ?? '',
    terminationMessagePolicy: annotations[CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION] ?? '',
    containerType: annotations[CONTAINER_TYPE_ANNOTATION] ?? '',
  };
  const hash = annotations[CONTAINER_HASH_ANNOTATION];
  if (hash !== undefined) {
    if (/^[0-9a-fA-F]{1,16}$/.test(hash)) info.hash = hash.toLowerCase().replace(/^0+(?=.)/, '');
    else
      log.error('Unable to get label value from annotations', {
        label: CONTAINER_HASH_ANNOTATION,
        value: hash,
      });
  }
  info.restartCount = readInt(annotations, CONTAINER_RESTART_COUNT_ANNOTATION) ?? 0;
  info.podDeletionGracePeriodSeconds = readInt(annotations, POD_DELETION_GRACE_PERIOD_ANNOTATION);
  info.podTerminationGracePeriodSeconds = readInt(annotations, POD_TERMINATION_GRACE_PERIOD_ANNOTATION);
  info.preStopHandler = readJson<LifecycleHandler>(annotations, CONTAINER_PRE_STOP_HANDLER_ANNOTATION);
  info.containerPorts = readJson<ContainerPort[]>(annotations, CONTAINER_PORTS_ANNOTATION);
  return info;
}

function readInt(annotations: Record<string, string>, key: string): number | undefined {
  const raw = annotations[key];
  if (raw === undefined) return undefined;
  if (!/^[+-]?\d+$/.test(raw)) {
    log.error('Unable to get label value from annotations', { label: key, value: raw });
    return undefined;
  }
  return Number.parseInt(raw, 10);
}

function readJson<T>(annotations: Record<string, string>, key: string): T | undefined {
  const raw = annotations[key];
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw) as T;
  } catch (err) {
    log.error('Unable to get label value from annotations', { label: key, err });
    return undefined;
  }
}
