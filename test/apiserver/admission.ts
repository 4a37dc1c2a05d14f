/**
 * What the real API server does to an object on create before storing it, for the resources here:
 * v1 defaulting (SetDefaults_*), the registry strategies' PrepareForCreate, and the admission plugins
 * every cluster runs (ServiceAccount, DefaultTolerationSeconds, Priority). Only the parts a kubelet
 * can observe are kept.
 */
import { randomBytes } from 'node:crypto';
import { forbidden } from './api-error.js';
import type { KubeObject } from './resources.js';

type Obj = Record<string, unknown>;

/** What admission may look up in the store. */
export interface AdmissionLookups {
  getServiceAccount(namespace: string, name: string): KubeObject | undefined;
  getRuntimeClass(name: string): KubeObject | undefined;
  nextClusterIp(): string;
}

export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
export const SERVICE_ACCOUNT_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The projected token lifetime the ServiceAccount admission plugin writes: one hour and 7 s. */
const PROJECTED_TOKEN_EXPIRATION_SECONDS = 3607;

function obj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

function list(v: unknown): Obj[] {
  return Array.isArray(v) ? (v.filter((x) => obj(x)) as Obj[]) : [];
}

/** names.SimpleNameGenerator's alphabet: no vowels, no look-alike digits. */
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

export function randomSuffix(length = 5): string {
  const bytes = randomBytes(length);
  return Array.from(bytes, (b) => NAME_ALPHABET[b % NAME_ALPHABET.length]).join('');
}

function defaultProbe(p: unknown): void {
  const probe = obj(p);
  if (!probe) return;
  probe.timeoutSeconds ??= 1;
  probe.periodSeconds ??= 10;
  probe.successThreshold ??= 1;
  probe.failureThreshold ??= 3;
  const http = obj(probe.httpGet);
  if (http) {
    http.path ??= '/';
    http.scheme ??= 'HTTP';
  }
}

/** SetDefaults_Container's pull policy: Always for `:latest` or an untagged image, else IfNotPresent. */
function defaultPullPolicy(image: unknown): string {
  if (typeof image !== 'string') return 'IfNotPresent';
  if (image.includes('@')) return 'IfNotPresent';
  const lastPart = image.slice(image.lastIndexOf('/') + 1);
  const colon = lastPart.lastIndexOf(':');
  const tag = colon >= 0 ? lastPart.slice(colon + 1) : '';
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultContainer(c: Obj, hostNetwork: boolean): void {
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  c.imagePullPolicy ??= defaultPullPolicy(c.image);
  const resources = (obj(c.resources) ?? {}) as Obj;
  c.resources = resources;
  // SetDefaults_Pod: a container with limits and no requests is given requests equal to its limits.
  const limits = obj(resources.limits);
  if (limits) {
    const requests = (obj(resources.requests) ?? {}) as Obj;
    for (const [k, v] of Object.entries(limits)) if (!(k in requests)) requests[k] = v;
    resources.requests = requests;
  }
  for (const port of list(c.ports)) {
    port.protocol ??= 'TCP';
    if (hostNetwork && port.hostPort === undefined) port.hostPort = port.containerPort;
  }
  for (const env of list(c.env)) {
    const ref = obj(obj(env.valueFrom)?.fieldRef);
    if (ref) ref.apiVersion ??= 'v1';
  }
  defaultProbe(c.livenessProbe);
  defaultProbe(c.readinessProbe);
  defaultProbe(c.startupProbe);
}

function defaultVolumes(spec: Obj): void {
  for (const v of list(spec.volumes)) {
    const sources = Object.keys(v).filter((k) => k !== 'name');
    if (sources.length === 0) v.emptyDir = {};
    for (const key of ['secret', 'configMap', 'projected', 'downwardAPI']) {
      const src = obj(v[key]);
      if (src) src.defaultMode ??= 420;
    }
  }
}

/** qos.GetPodQOS, reduced to cpu and memory given as equal strings or numbers. */
function qosClass(spec: Obj): string {
  const containers = [...list(spec.containers), ...list(spec.initContainers)];
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const r = obj(c.resources) ?? {};
    const requests = obj(r.requests) ?? {};
    const limits = obj(r.limits) ?? {};
    if (Object.keys(requests).length || Object.keys(limits).length) any = true;
    for (const res of ['cpu', 'memory']) {
      if (limits[res] === undefined) guaranteed = false;
      else if (requests[res] !== undefined && String(requests[res]) !== String(limits[res]))
        guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

function admitServiceAccount(pod: KubeObject, spec: Obj, lookups: AdmissionLookups): void {
  const name = pod.metadata.name ?? '';
  const namespace = pod.metadata.namespace ?? '';
  if (pod.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) {
    if (spec.serviceAccountName) {
      throw forbidden(
        { group: '', resource: 'pods' },
        name,
        'a mirror pod may not reference service accounts',
      );
    }
    return;
  }
  spec.serviceAccountName ||= 'default';
  const saName = spec.serviceAccountName as string;
  const sa = lookups.getServiceAccount(namespace, saName);
  if (!sa) {
    throw forbidden(
      { group: '', resource: 'pods' },
      name,
      `error looking up service account ${namespace}/${saName}: serviceaccount "${saName}" not found`,
    );
  }
  if (spec.automountServiceAccountToken === false) return;
  if (spec.automountServiceAccountToken === undefined && sa.automountServiceAccountToken === false) return;
  const containers = [...list(spec.initContainers), ...list(spec.containers)];
  const alreadyMounted = containers.some((c) =>
    list(c.volumeMounts).some((m) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH),
  );
  if (alreadyMounted) return;
  const volumeName = `kube-api-access-${randomSuffix()}`;
  const volumes = list(spec.volumes);
  volumes.push({
    name: volumeName,
    projected: {
      sources: [
        { serviceAccountToken: { expirationSeconds: PROJECTED_TOKEN_EXPIRATION_SECONDS, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          downwardAPI: {
            items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
          },
        },
      ],
      defaultMode: 420,
    },
  });
  spec.volumes = volumes;
  for (const c of containers) {
    const mounts = list(c.volumeMounts);
    mounts.push({ name: volumeName, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT_PATH });
    c.volumeMounts = mounts;
  }
}

/** DefaultTolerationSeconds: five minutes' tolerance of a not-ready or unreachable node. */
function addDefaultTolerations(spec: Obj): void {
  const tolerations = list(spec.tolerations);
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    const covered = tolerations.some(
      (t) => (t.key === key || t.key === undefined) && (t.effect === 'NoExecute' || t.effect === undefined),
    );
    if (!covered) tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
  }
  spec.tolerations = tolerations;
}

const SYSTEM_PRIORITY_CLASSES: Readonly<Record<string, number>> = {
  'system-node-critical': 2_000_001_000,
  'system-cluster-critical': 2_000_000_000,
};

function preparePod(pod: KubeObject, lookups: AdmissionLookups): void {
  const spec = (obj(pod.spec) ?? {}) as Obj;
  pod.spec = spec;
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.securityContext ??= {};
  spec.schedulerName ??= 'default-scheduler';
  spec.enableServiceLinks ??= true;
  const hostNetwork = spec.hostNetwork === true;
  for (const c of [...list(spec.initContainers), ...list(spec.containers)]) defaultContainer(c, hostNetwork);
  defaultVolumes(spec);
  admitServiceAccount(pod, spec, lookups);
  admitRuntimeClass(pod.metadata.name ?? '', spec, lookups);
  // The v1 API still serves the deprecated serviceAccount field as a copy of serviceAccountName.
  if (spec.serviceAccountName) spec.serviceAccount = spec.serviceAccountName;
  addDefaultTolerations(spec);
  if (spec.priority === undefined && !spec.priorityClassName) {
    spec.priority = 0;
    spec.preemptionPolicy ??= 'PreemptLowerPriority';
  }
  // The Priority plugin resolves the two built-in classes (other PriorityClasses are not served).
  const systemPriority = SYSTEM_PRIORITY_CLASSES[String(spec.priorityClassName ?? '')];
  if (systemPriority !== undefined && spec.priority === undefined) {
    spec.priority = systemPriority;
    spec.preemptionPolicy ??= 'PreemptLowerPriority';
  }
  pod.metadata.generation = 1;
  // podStrategy.PrepareForCreate: whatever status the client sent is dropped.
  pod.status = { phase: 'Pending', qosClass: qosClass(spec) };
}

/**
 * The RuntimeClass admission plugin: a pod naming a class that does not exist is refused, and the
 * class's overhead.podFixed becomes the pod's spec.overhead (a different one sent is refused).
 */
function admitRuntimeClass(podName: string, spec: Obj, lookups: AdmissionLookups): void {
  const name = spec.runtimeClassName;
  if (typeof name !== 'string' || name === '') return;
  const rc = lookups.getRuntimeClass(name);
  if (!rc)
    throw forbidden(
      { group: '', resource: 'pods' },
      podName,
      `pod rejected: RuntimeClass ${JSON.stringify(name)} not found`,
    );
  const podFixed = obj(obj(rc.overhead)?.podFixed);
  if (!podFixed) return;
  if (spec.overhead !== undefined && JSON.stringify(spec.overhead) !== JSON.stringify(podFixed))
    throw forbidden(
      { group: '', resource: 'pods' },
      podName,
      "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
    );
  spec.overhead = structuredClone(podFixed);
}

/** The defaults the ephemeralcontainers update gives each ephemeral container (SetDefaults_Container). */
export function defaultEphemeralContainers(pod: KubeObject): void {
  const spec = (obj(pod.spec) ?? {}) as Obj;
  for (const c of list(spec.ephemeralContainers)) {
    c.terminationMessagePath ??= '/dev/termination-log';
    c.terminationMessagePolicy ??= 'File';
    c.imagePullPolicy ??= defaultPullPolicy(c.image);
  }
}

function prepareService(svc: KubeObject, lookups: AdmissionLookups): void {
  const spec = (obj(svc.spec) ?? {}) as Obj;
  svc.spec = spec;
  spec.type ??= 'ClusterIP';
  spec.sessionAffinity ??= 'None';
  for (const p of list(spec.ports)) {
    p.protocol ??= 'TCP';
    p.targetPort ??= p.port;
  }
  if (spec.type !== 'ExternalName') {
    if (spec.clusterIP === undefined || spec.clusterIP === '') spec.clusterIP = lookups.nextClusterIp();
    spec.clusterIPs ??= [spec.clusterIP];
    spec.ipFamilies ??= ['IPv4'];
    spec.ipFamilyPolicy ??= 'SingleStack';
    spec.internalTrafficPolicy ??= 'Cluster';
  }
  svc.status = { loadBalancer: {} };
}

/** Applies create-time defaults and admission to obj, in place. Throws an ApiError to reject it. */
export function prepareForCreate(resource: string, o: KubeObject, lookups: AdmissionLookups): void {
  switch (resource) {
    case 'pods':
      preparePod(o, lookups);
      break;
    case 'services':
      prepareService(o, lookups);
      break;
    case 'namespaces': {
      o.metadata.labels = { ...o.metadata.labels, 'kubernetes.io/metadata.name': o.metadata.name ?? '' };
      o.spec = { finalizers: ['kubernetes'] };
      o.status = { phase: 'Active' };
      break;
    }
    case 'secrets':
      o.type ??= 'Opaque';
      break;
    case 'persistentvolumes':
    case 'persistentvolumeclaims':
      o.status = { phase: 'Pending' };
      break;
    case 'nodes': {
      const status = obj(o.status);
      if (status && status.allocatable === undefined && status.capacity !== undefined) {
        status.allocatable = structuredClone(status.capacity);
      }
      break;
    }
  }
}
