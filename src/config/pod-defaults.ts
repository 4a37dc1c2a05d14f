/**
 * The defaults the API server's scheme gives a core/v1 Pod (pkg/apis/core/v1 SetDefaults_*), for
 * pods that never pass through an API server: static pods from files and URLs. Only fields the
 * kubelet reads are defaulted; everything else is left as written.
 */
import type {
  Container,
  HTTPGetAction,
  Pod,
  Probe,
  PullPolicy,
  Volume,
  VolumeSourceKey,
} from '../api/core-v1.js';
import { VOLUME_SOURCES } from '../api/core-v1.js';

/** 0644, the mode secret, configMap, downwardAPI and projected volumes default to. */
const DEFAULT_VOLUME_MODE = 0o644;

/** Applies the API server's defaults to pod in place and returns it. */
export function applyPodApiDefaults(pod: Pod): Pod {
  const spec = pod.spec;
  spec.dnsPolicy ||= 'ClusterFirst';
  spec.restartPolicy ||= 'Always';
  spec.securityContext ??= {};
  spec.terminationGracePeriodSeconds ??= 30;
  spec.schedulerName ||= 'default-scheduler';
  spec.enableServiceLinks ??= true;

  for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
    defaultContainer(c, spec.hostNetwork === true);
  }
  for (const v of spec.volumes ?? []) defaultVolume(v);
  return pod;
}

function defaultContainer(c: Container, hostNetwork: boolean): void {
  c.terminationMessagePath ||= '/dev/termination-log';
  c.terminationMessagePolicy ||= 'File';
  c.imagePullPolicy ||= defaultPullPolicy(c.image ?? '');
  for (const p of c.ports ?? []) {
    p.protocol ||= 'TCP';
    // A host-network pod's ports are the host's ports.
    if (hostNetwork && !p.hostPort) p.hostPort = p.containerPort;
  }
  for (const e of c.env ?? []) {
    if (e.valueFrom?.fieldRef) e.valueFrom.fieldRef.apiVersion ??= 'v1';
  }
  // A limit without a request means the request equals the limit (this decides the QoS class).
  const limits = c.resources?.limits;
  if (limits && Object.keys(limits).length > 0) {
    const requests = (c.resources!.requests ??= {});
    for (const [name, value] of Object.entries(limits)) if (!(name in requests)) requests[name] = value;
  }
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) if (probe) defaultProbe(probe);
  for (const handler of [c.lifecycle?.postStart, c.lifecycle?.preStop])
    if (handler?.httpGet) defaultHttpGet(handler.httpGet);
}

function defaultProbe(p: Probe): void {
  p.timeoutSeconds ||= 1;
  p.periodSeconds ||= 10;
  p.successThreshold ||= 1;
  p.failureThreshold ||= 3;
  if (p.httpGet) defaultHttpGet(p.httpGet);
}

function defaultHttpGet(h: HTTPGetAction): void {
  h.path ||= '/';
  h.scheme ||= 'HTTP';
}

function defaultVolume(v: Volume): void {
  if (!VOLUME_SOURCES.some((k) => v[k] !== undefined && v[k] !== null)) v.emptyDir = {};
  const withMode = (key: VolumeSourceKey) => {
    const source = v[key];
    if (source && typeof source === 'object')
      (source as { defaultMode?: number }).defaultMode ??= DEFAULT_VOLUME_MODE;
  };
  withMode('secret');
  withMode('configMap');
  withMode('downwardAPI');
  withMode('projected');
  const hostPath = v.hostPath;
  if (hostPath && typeof hostPath === 'object') (hostPath as { type?: string }).type ??= '';
  const downward = v.downwardAPI as { items?: { fieldRef?: { apiVersion?: string } }[] } | undefined;
  for (const item of downward?.items ?? []) if (item.fieldRef) item.fieldRef.apiVersion ??= 'v1';
}

/** `Always` for an image tagged `latest` or with neither tag nor digest, else `IfNotPresent`. */
export function defaultPullPolicy(image: string): PullPolicy {
  if (image.includes('@')) return 'IfNotPresent';
  // A colon after the last slash is a tag; one before it belongs to a registry's host:port.
  const lastPart = image.slice(image.lastIndexOf('/') + 1);
  const colon = lastPart.lastIndexOf(':');
  const tag = colon === -1 ? '' : lastPart.slice(colon + 1);
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}
