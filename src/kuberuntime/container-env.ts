/**
 * A container's environment and the `$(VAR)` expansion of its env values, command and args
 * (upstream: Kubelet.makeEnvironmentVariables, podFieldSelectorRuntimeValue,
 * containerResourceRuntimeValue, and third_party/forked/golang/expansion).
 */
import type { Container, EnvVar, Pod, Quantity } from '../api/core-v1.js';
import { isStaticPod } from '../api/pod-source.js';
import { KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { EventRecorder } from './event-recorder.js';
import { quantityMilliValue, quantityValue } from '../api/quantity.js';

const log = logger('kuberuntime');

/**
 * Expands `$(NAME)` references through mapping: `$$` is a literal `$`, a reference mapping does not
 * know stays as written, and a `$(` without its `)` is kept as is.
 */
export function expand(input: string, mapping: (name: string) => string): string {
  let out = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const next = input[cursor + 1];
    let advance = 1;
    if (next === '$') {
      out += '$';
    } else if (next === '(') {
      const close = input.indexOf(')', cursor + 2);
      if (close === -1) {
        out += '$(';
      } else {
        out += mapping(input.slice(cursor + 2, close));
        advance = close - cursor;
      }
    } else {
      out += `$${next}`;
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

/** A mapping over the given maps, first match wins; unknown names expand to themselves. */
export function mappingFuncFor(...contexts: ReadonlyMap<string, string>[]): (name: string) => string {
  return (name) => {
    for (const ctx of contexts) {
      const v = ctx.get(name);
      if (v !== undefined) return v;
    }
    return `$(${name})`;
  };
}

export function expandContainerCommandAndArgs(
  container: Container,
  envs: { name: string; value: string }[],
): { command: string[]; args: string[] } {
  const mapping = mappingFuncFor(new Map(envs.map((e) => [e.name, e.value])));
  return {
    command: (container.command ?? []).map((c) => expand(c, mapping)),
    args: (container.args ?? []).map((a) => expand(a, mapping)),
  };
}

/** A service as far as its environment variables go (upstream envvars.FromServices reads these fields). */
export interface ServiceForEnv {
  metadata: { name?: string; namespace?: string };
  spec?: {
    clusterIP?: string;
    ports?: { name?: string; port: number; protocol?: string }[];
  };
}

/**
 * Where configMap, secret and service references are resolved from (cluster mode's API client).
 * Standalone mode has none: a configMap or secret reference then fails unless optional, and pods
 * get no service variables, as upstream without a kubeClient.
 */
export interface EnvSources {
  /** The configMap's data (upstream reads only data, never binaryData), or undefined when it does not exist. */
  getConfigMap?(
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<Record<string, string> | undefined>;
  /** The secret's data, decoded, or undefined when it does not exist. */
  getSecret?(
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<Record<string, string> | undefined>;
  /** The cluster's services, from a list+watch (upstream's serviceLister); none in standalone mode. */
  services?: ServiceLister;
}

/** A watched copy of the cluster's services (upstream: the kubelet's serviceLister and serviceHasSynced). */
export interface ServiceLister {
  /** True once the services have been listed at least once. */
  hasSynced(): boolean;
  /** The services of one namespace, as last seen. */
  list(namespace: string): readonly ServiceForEnv[];
}

export interface EnvContext {
  podIP: string;
  podIPs: string[];
  hostIPs: string[];
  /** For spec.nodeName when the pod does not carry it (static pods before their source sets it). */
  nodeName: string;
  /** What resource limits default to when a container has none (the node's allocatable). */
  nodeAllocatable: { cpu: Quantity; memory: Quantity; 'ephemeral-storage'?: Quantity };
  sources: EnvSources;
  /** For upstream's InvalidEnvironmentVariableNames warning about skipped envFrom keys. */
  recorder?: EventRecorder;
  signal?: AbortSignal;
}

const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
/** The namespace of the master services every pod gets variables for (upstream masterServiceNamespace). */
const MASTER_SERVICE_NAMESPACE = 'default';
/** Upstream's masterServices: the API server's own service. */
const MASTER_SERVICES: ReadonlySet<string> = new Set(['kubernetes']);

function configError(message: string): KubeletError {
  return new KubeletError('CREATE_CONTAINER_CONFIG', message);
}

/** ClusterIP "None" (headless) or unset: no variables (upstream IsServiceIPSet). */
function isServiceIPSet(service: ServiceForEnv): boolean {
  const ip = service.spec?.clusterIP ?? '';
  return ip !== '' && ip !== 'None';
}

/** `my-svc` → `MY_SVC` (upstream makeEnvVariableName). */
function envVariableName(name: string): string {
  return name.replaceAll('-', '_').toUpperCase();
}

function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The variables that tell a container where its services are (upstream envvars.FromServices): the
 * `_SERVICE_HOST`/`_SERVICE_PORT` pair, one per named port, and docker-link style `_PORT_…` ones.
 */
export function serviceEnvVars(services: readonly ServiceForEnv[]): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const svc of services) {
    const ports = svc.spec?.ports ?? [];
    const first = ports[0];
    // Validation gives every service with a cluster IP at least one port.
    if (!isServiceIPSet(svc) || !first) continue;
    const ip = svc.spec?.clusterIP ?? '';
    const prefix = envVariableName(svc.metadata.name ?? '');
    out.push({ name: `${prefix}_SERVICE_HOST`, value: ip });
    out.push({ name: `${prefix}_SERVICE_PORT`, value: String(first.port) });
    for (const p of ports) {
      if (p.name)
        out.push({ name: `${prefix}_SERVICE_PORT_${envVariableName(p.name)}`, value: String(p.port) });
    }
    ports.forEach((p, i) => {
      const protocol = (p.protocol || 'TCP').toLowerCase();
      const url = `${protocol}://${joinHostPort(ip, p.port)}`;
      // Docker's links special-case the first port.
      if (i === 0) out.push({ name: `${prefix}_PORT`, value: url });
      const portPrefix = `${prefix}_PORT_${p.port}_${protocol.toUpperCase()}`;
      out.push({ name: portPrefix, value: url });
      out.push({ name: `${portPrefix}_PROTO`, value: protocol });
      out.push({ name: `${portPrefix}_PORT`, value: String(p.port) });
      out.push({ name: `${portPrefix}_ADDR`, value: ip });
    });
  }
  return out;
}

/**
 * The service variables of a pod in namespace (upstream getServiceEnvVarMap): the master service
 * `kubernetes` of `default` always, the namespace's own services only with enableServiceLinks.
 */
export function getServiceEnvVarMap(
  namespace: string,
  enableServiceLinks: boolean,
  services: ServiceLister | undefined,
): Map<string, string> {
  const env = new Map<string, string>();
  // Without an API client there are no services to tell the pod about.
  if (!services) return env;
  const byName = new Map<string, ServiceForEnv>();
  const namespaces =
    enableServiceLinks && namespace !== MASTER_SERVICE_NAMESPACE
      ? [MASTER_SERVICE_NAMESPACE, namespace]
      : [MASTER_SERVICE_NAMESPACE];
  for (const ns of namespaces) {
    for (const svc of services.list(ns)) {
      if (!isServiceIPSet(svc)) continue;
      const name = svc.metadata.name ?? '';
      const svcNs = svc.metadata.namespace ?? ns;
      // Master services first, so that with enableServiceLinks a same-named service of the pod's own
      // namespace replaces one (upstream's test "master service in pod ns, service env vars").
      if (svcNs === MASTER_SERVICE_NAMESPACE && MASTER_SERVICES.has(name)) {
        if (!byName.has(name)) byName.set(name, svc);
      } else if (svcNs === namespace && enableServiceLinks) {
        byName.set(name, svc);
      }
    }
  }
  for (const e of serviceEnvVars([...byName.values()])) env.set(e.name, e.value);
  return env;
}

/**
 * The container's environment (upstream makeEnvironmentVariables): envFrom sources first (values as
 * they are), then env in declaration order, each value expanded against what was defined before it
 * and the service variables, then the service variables the container did not define itself.
 * Errors are CreateContainerConfigError material.
 */
export async function makeEnvironmentVariables(
  pod: Pod,
  container: Container,
  ctx: EnvContext,
): Promise<{ name: string; value: string }[]> {
  const ns = pod.metadata.namespace ?? '';
  const services = ctx.sources.services;
  // Without one list of services an API pod would miss KUBERNETES_SERVICE_HOST, which in-cluster
  // clients read; a static pod may start before the API server is there at all.
  if (services && !services.hasSynced() && !isStaticPod(pod)) {
    throw configError('services have not yet been read at least once, cannot construct envvars');
  }
  const serviceEnv = getServiceEnvVarMap(ns, pod.spec.enableServiceLinks !== false, services);
  const env = new Map<string, string>();
  const mapping = mappingFuncFor(env, serviceEnv);

  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    let data: Record<string, string> | undefined;
    let kind: 'configMap' | 'secret';
    let name: string;
    if (from.configMapRef) {
      kind = 'configMap';
      name = from.configMapRef.name ?? '';
      data = await fetchSource(ctx, kind, ns, name, from.configMapRef.optional === true);
    } else if (from.secretRef) {
      kind = 'secret';
      name = from.secretRef.name ?? '';
      data = await fetchSource(ctx, kind, ns, name, from.secretRef.optional === true);
    } else {
      continue;
    }
    if (data === undefined) continue;
    const invalid: string[] = [];
    for (const [k, v] of Object.entries(data)) {
      const key = prefix + k;
      if (!ENV_VAR_NAME.test(key)) {
        invalid.push(key);
        continue;
      }
      env.set(key, v);
    }
    if (invalid.length > 0) {
      invalid.sort();
      const message = `Keys [${invalid.join(', ')}] from the EnvFrom ${kind} ${ns}/${name} were skipped since they are considered invalid environment variable names.`;
      log.warn(message, { pod: `${ns}/${pod.metadata.name ?? ''}` });
      ctx.recorder?.event(pod, '', 'Warning', 'InvalidEnvironmentVariableNames', message);
    }
  }

  for (const v of container.env ?? []) {
    const value = await envVarValue(pod, container, v, ctx, mapping);
    if (value !== undefined) env.set(v.name, value);
  }
  const out = [...env].map(([name, value]) => ({ name, value }));
  for (const [name, value] of serviceEnv) if (!env.has(name)) out.push({ name, value });
  return out;
}

async function envVarValue(
  pod: Pod,
  container: Container,
  v: EnvVar,
  ctx: EnvContext,
  mapping: (name: string) => string,
): Promise<string | undefined> {
  if (v.value !== undefined && v.value !== '') return expand(v.value, mapping);
  const from = v.valueFrom;
  if (!from) return '';
  const ns = pod.metadata.namespace ?? '';
  if (from.fieldRef) return podFieldSelectorRuntimeValue(pod, from.fieldRef.fieldPath, ctx);
  if (from.resourceFieldRef) {
    const target = from.resourceFieldRef.containerName
      ? [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find(
          (c) => c.name === from.resourceFieldRef?.containerName,
        )
      : container;
    if (!target) throw configError(`container ${from.resourceFieldRef.containerName} not found in pod`);
    return containerResourceRuntimeValue(
      target,
      from.resourceFieldRef.resource,
      from.resourceFieldRef.divisor,
      ctx,
    );
  }
  if (from.configMapKeyRef) {
    const ref = from.configMapKeyRef;
    const optional = ref.optional === true;
    const data = await fetchSource(ctx, 'configMap', ns, ref.name ?? '', optional);
    if (data === undefined) return undefined;
    const value = data[ref.key];
    if (value === undefined) {
      if (optional) return undefined;
      throw configError(`couldn't find key ${ref.key} in ConfigMap ${ns}/${ref.name ?? ''}`);
    }
    return value;
  }
  if (from.secretKeyRef) {
    const ref = from.secretKeyRef;
    const optional = ref.optional === true;
    const data = await fetchSource(ctx, 'secret', ns, ref.name ?? '', optional);
    if (data === undefined) return undefined;
    const value = data[ref.key];
    if (value === undefined) {
      if (optional) return undefined;
      throw configError(`couldn't find key ${ref.key} in Secret ${ns}/${ref.name ?? ''}`);
    }
    return value;
  }
  return '';
}

/** undefined when the object is absent and optional; absent and required is an error, as is no API client. */
async function fetchSource(
  ctx: EnvContext,
  kind: 'configMap' | 'secret',
  namespace: string,
  name: string,
  optional: boolean,
): Promise<Record<string, string> | undefined> {
  const getter = kind === 'configMap' ? ctx.sources.getConfigMap : ctx.sources.getSecret;
  if (!getter) throw configError(`couldn't get ${kind} ${namespace}/${name}, no kubeClient defined`);
  let data: Record<string, string> | undefined;
  try {
    data = await getter.call(ctx.sources, namespace, name, ctx.signal);
  } catch (err) {
    throw new KubeletError(
      'CREATE_CONTAINER_CONFIG',
      `couldn't get ${kind} ${namespace}/${name}: ${String((err as Error).message ?? err)}`,
      {
        cause: err,
      },
    );
  }
  if (data === undefined && !optional) throw configError(`${kind.toLowerCase()} "${name}" not found`);
  return data;
}

/** The downward API's fieldRef values. */
export function podFieldSelectorRuntimeValue(
  pod: Pod,
  fieldPath: string,
  ctx: Pick<EnvContext, 'podIP' | 'podIPs' | 'hostIPs' | 'nodeName'>,
): string {
  switch (fieldPath) {
    case 'spec.nodeName':
      return pod.spec.nodeName ?? ctx.nodeName;
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? '';
    case 'status.hostIP':
      return ctx.hostIPs[0] ?? '';
    case 'status.hostIPs':
      return ctx.hostIPs.join(',');
    case 'status.podIP':
      return ctx.podIP;
    case 'status.podIPs':
      return ctx.podIPs.join(',');
    case 'metadata.name':
      return pod.metadata.name ?? '';
    case 'metadata.namespace':
      return pod.metadata.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata.uid ?? '';
    case 'metadata.labels':
      return formatMap(pod.metadata.labels ?? {});
    case 'metadata.annotations':
      return formatMap(pod.metadata.annotations ?? {});
  }
  const subscript = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(fieldPath);
  if (subscript) {
    const map = subscript[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[subscript[2] ?? ''] ?? '';
  }
  throw configError(`unsupported fieldPath: ${fieldPath}`);
}

/** `key="value"` lines in key order, as the downward API renders a map. */
function formatMap(m: Record<string, string>): string {
  return Object.keys(m)
    .sort()
    .map((k) => `${k}=${JSON.stringify(m[k])}`)
    .join('\n');
}

/** The downward API's resourceFieldRef values; a missing limit reads as the node's allocatable. */
export function containerResourceRuntimeValue(
  container: Container,
  resource: string,
  divisor: Quantity | undefined,
  ctx: Pick<EnvContext, 'nodeAllocatable'>,
): string {
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  const alloc = ctx.nodeAllocatable as Record<string, Quantity | undefined>;
  const div = divisor === undefined || quantityMilliValue(divisor) === 0 ? '1' : divisor;
  const cpu = (q: Quantity | undefined): string =>
    String(Math.ceil(quantityMilliValue(q) / quantityMilliValue(div)));
  const bytes = (q: Quantity | undefined): string => String(Math.ceil(quantityValue(q) / quantityValue(div)));
  switch (resource) {
    case 'limits.cpu':
      return cpu(limits.cpu ?? alloc.cpu);
    case 'limits.memory':
      return bytes(limits.memory ?? alloc.memory);
    case 'limits.ephemeral-storage':
      return bytes(limits['ephemeral-storage'] ?? alloc['ephemeral-storage']);
    case 'requests.cpu':
      return cpu(requests.cpu ?? limits.cpu);
    case 'requests.memory':
      return bytes(requests.memory ?? limits.memory);
    case 'requests.ephemeral-storage':
      return bytes(requests['ephemeral-storage'] ?? limits['ephemeral-storage']);
  }
  throw configError(`unsupported container resource : ${resource}`);
}
