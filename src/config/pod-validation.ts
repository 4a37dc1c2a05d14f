/**
 * The checks the API server would make on creating a Pod (ValidatePodCreate), the parts that matter
 * to a kubelet running the pod: names, containers, images, ports, volumes and mounts, policies.
 * Messages use upstream's field-error form (`spec.containers[0].image: Required value`) so they
 * read the same as `kubectl apply` would print them.
 */
import type { Container, Pod } from '../api/core-v1.js';

const DNS1123_LABEL_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME_PART_RE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const IANA_SVC_NAME_RE = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

const DNS1123_LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

export function isDNS1123Label(v: string): boolean {
  return v.length <= 63 && DNS1123_LABEL_RE.test(v);
}

export function isDNS1123Subdomain(v: string): boolean {
  return v.length > 0 && v.length <= 253 && v.split('.').every((p) => DNS1123_LABEL_RE.test(p));
}

function qualifiedNameProblem(key: string): string | undefined {
  const parts = key.split('/');
  if (parts.length > 2)
    return 'a qualified name must consist of an optional DNS subdomain prefix and a name, separated by "/"';
  const name = parts[parts.length - 1]!;
  if (parts.length === 2 && !isDNS1123Subdomain(parts[0]!)) return `prefix part ${DNS1123_SUBDOMAIN_MSG}`;
  if (name.length === 0) return 'name part must be non-empty';
  if (name.length > 63) return 'name part must be no more than 63 characters';
  if (!QUALIFIED_NAME_PART_RE.test(name)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

function labelValueProblem(v: string): string | undefined {
  if (v === '') return undefined;
  if (v.length > 63) return 'must be no more than 63 characters';
  if (!QUALIFIED_NAME_PART_RE.test(v)) {
    return "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

/** Field errors of a (defaulted) pod; empty when it is valid. */
export function validatePod(pod: Pod): string[] {
  const errs: string[] = [];
  const required = (path: string) => errs.push(`${path}: Required value`);
  const invalid = (path: string, value: unknown, why: string) =>
    errs.push(`${path}: Invalid value: ${JSON.stringify(value)}: ${why}`);
  const unsupported = (path: string, value: unknown, allowed: readonly string[]) =>
    errs.push(
      `${path}: Unsupported value: ${JSON.stringify(value)}: supported values: ${allowed.map((a) => `"${a}"`).join(', ')}`,
    );
  const duplicate = (path: string, value: unknown) =>
    errs.push(`${path}: Duplicate value: ${JSON.stringify(value)}`);

  const meta = pod.metadata;
  if (!meta.name) required('metadata.name');
  else if (!isDNS1123Subdomain(meta.name)) invalid('metadata.name', meta.name, DNS1123_SUBDOMAIN_MSG);
  if (!meta.namespace) required('metadata.namespace');
  else if (!isDNS1123Label(meta.namespace)) invalid('metadata.namespace', meta.namespace, DNS1123_LABEL_MSG);
  for (const [k, v] of Object.entries(meta.labels ?? {})) {
    const keyProblem = qualifiedNameProblem(k);
    if (keyProblem) invalid('metadata.labels', k, keyProblem);
    if (typeof v !== 'string') invalid(`metadata.labels[${k}]`, v, 'must be a string');
    else {
      const valueProblem = labelValueProblem(v);
      if (valueProblem) invalid('metadata.labels', v, valueProblem);
    }
  }
  for (const [k, v] of Object.entries(meta.annotations ?? {})) {
    const keyProblem = qualifiedNameProblem(k.toLowerCase());
    if (keyProblem) invalid('metadata.annotations', k, keyProblem);
    if (typeof v !== 'string') invalid(`metadata.annotations[${k}]`, v, 'must be a string');
  }

  const spec = pod.spec;
  const volumeNames = new Set<string>();
  (spec.volumes ?? []).forEach((v, i) => {
    const path = `spec.volumes[${i}].name`;
    if (!v.name) required(path);
    else if (!isDNS1123Label(v.name)) invalid(path, v.name, DNS1123_LABEL_MSG);
    else if (volumeNames.has(v.name)) duplicate(path, v.name);
    else volumeNames.add(v.name);
    const hostPath = v.hostPath as { path?: unknown } | undefined;
    if (hostPath && (typeof hostPath.path !== 'string' || hostPath.path === ''))
      required(`spec.volumes[${i}].hostPath.path`);
  });

  if (spec.containers.length === 0) required('spec.containers');
  const containerNames = new Set<string>();
  const hostPorts = new Set<string>();
  const checkContainers = (list: Container[], field: 'containers' | 'initContainers') => {
    list.forEach((c, i) => {
      const at = `spec.${field}[${i}]`;
      if (!c.name) required(`${at}.name`);
      else if (!isDNS1123Label(c.name)) invalid(`${at}.name`, c.name, DNS1123_LABEL_MSG);
      else if (containerNames.has(c.name)) duplicate(`${at}.name`, c.name);
      else containerNames.add(c.name);
      if (!c.image || c.image.trim() === '') required(`${at}.image`);
      else if (c.image !== c.image.trim())
        invalid(`${at}.image`, c.image, 'must not have leading or trailing whitespace');
      if (
        c.imagePullPolicy !== undefined &&
        !['Always', 'IfNotPresent', 'Never'].includes(c.imagePullPolicy)
      ) {
        unsupported(`${at}.imagePullPolicy`, c.imagePullPolicy, ['Always', 'IfNotPresent', 'Never']);
      }
      if (
        c.terminationMessagePolicy !== undefined &&
        !['File', 'FallbackToLogsOnError'].includes(c.terminationMessagePolicy)
      ) {
        unsupported(`${at}.terminationMessagePolicy`, c.terminationMessagePolicy, [
          'File',
          'FallbackToLogsOnError',
        ]);
      }
      if (field === 'containers' && c.restartPolicy !== undefined) {
        errs.push(`${at}.restartPolicy: Forbidden: may not be set for non-init containers`);
      }
      if (field === 'initContainers' && c.restartPolicy !== undefined && c.restartPolicy !== 'Always') {
        unsupported(`${at}.restartPolicy`, c.restartPolicy, ['Always']);
      }
      const portNames = new Set<string>();
      (c.ports ?? []).forEach((p, j) => {
        const pat = `${at}.ports[${j}]`;
        if (!Number.isInteger(p.containerPort) || p.containerPort < 1 || p.containerPort > 65535) {
          invalid(`${pat}.containerPort`, p.containerPort, 'must be between 1 and 65535, inclusive');
        }
        if (
          p.hostPort !== undefined &&
          (!Number.isInteger(p.hostPort) || p.hostPort < 0 || p.hostPort > 65535)
        ) {
          invalid(`${pat}.hostPort`, p.hostPort, 'must be between 1 and 65535, inclusive');
        }
        if (p.protocol !== undefined && !['TCP', 'UDP', 'SCTP'].includes(p.protocol))
          unsupported(`${pat}.protocol`, p.protocol, ['SCTP', 'TCP', 'UDP']);
        if (p.name !== undefined) {
          if (
            p.name.length > 15 ||
            !IANA_SVC_NAME_RE.test(p.name) ||
            !/[a-z]/.test(p.name) ||
            p.name.includes('--')
          ) {
            invalid(
              `${pat}.name`,
              p.name,
              'must be an IANA_SVC_NAME (at most 15 characters, lowercase alphanumerics and "-", at least one letter)',
            );
          } else if (portNames.has(p.name)) duplicate(`${pat}.name`, p.name);
          else portNames.add(p.name);
        }
        if (p.hostPort) {
          const key = `${p.protocol ?? 'TCP'}/${p.hostIP ?? ''}/${p.hostPort}`;
          if (hostPorts.has(key)) duplicate(`${pat}.hostPort`, `${p.hostPort}/${p.protocol ?? 'TCP'}`);
          hostPorts.add(key);
        }
      });
      const mountPaths = new Set<string>();
      (c.volumeMounts ?? []).forEach((m, j) => {
        const mat = `${at}.volumeMounts[${j}]`;
        if (!m.name) required(`${mat}.name`);
        else if (!volumeNames.has(m.name)) errs.push(`${mat}.name: Not found: ${JSON.stringify(m.name)}`);
        if (!m.mountPath) required(`${mat}.mountPath`);
        else if (mountPaths.has(m.mountPath)) invalid(`${mat}.mountPath`, m.mountPath, 'must be unique');
        else mountPaths.add(m.mountPath);
        if (m.subPath && (m.subPath.startsWith('/') || m.subPath.split('/').includes('..'))) {
          invalid(`${mat}.subPath`, m.subPath, "must be a relative path without '..'");
        }
      });
      (c.env ?? []).forEach((e, j) => {
        if (!e.name) required(`${at}.env[${j}].name`);
        else if (e.name.includes('=') || !/^[\x20-\x7e]+$/.test(e.name)) {
          invalid(
            `${at}.env[${j}].name`,
            e.name,
            "a valid environment variable name must consist only of printable ASCII characters other than '='",
          );
        }
      });
    });
  };
  checkContainers(spec.initContainers ?? [], 'initContainers');
  checkContainers(spec.containers, 'containers');

  if (spec.restartPolicy !== undefined && !['Always', 'OnFailure', 'Never'].includes(spec.restartPolicy)) {
    unsupported('spec.restartPolicy', spec.restartPolicy, ['Always', 'OnFailure', 'Never']);
  }
  if (
    spec.dnsPolicy !== undefined &&
    !['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'].includes(spec.dnsPolicy)
  ) {
    unsupported('spec.dnsPolicy', spec.dnsPolicy, [
      'ClusterFirstWithHostNet',
      'ClusterFirst',
      'Default',
      'None',
    ]);
  }
  if (spec.dnsPolicy === 'None' && !spec.dnsConfig) required('spec.dnsConfig');
  if (
    spec.terminationGracePeriodSeconds !== undefined &&
    !(Number.isInteger(spec.terminationGracePeriodSeconds) && spec.terminationGracePeriodSeconds >= 0)
  ) {
    invalid(
      'spec.terminationGracePeriodSeconds',
      spec.terminationGracePeriodSeconds,
      'must be greater than or equal to 0',
    );
  }
  if (
    spec.activeDeadlineSeconds !== undefined &&
    !(Number.isInteger(spec.activeDeadlineSeconds) && spec.activeDeadlineSeconds > 0)
  ) {
    invalid(
      'spec.activeDeadlineSeconds',
      spec.activeDeadlineSeconds,
      'must be between 1 and 2147483647, inclusive',
    );
  }
  if (spec.hostname !== undefined && !isDNS1123Label(spec.hostname))
    invalid('spec.hostname', spec.hostname, DNS1123_LABEL_MSG);
  if (spec.subdomain !== undefined && !isDNS1123Label(spec.subdomain))
    invalid('spec.subdomain', spec.subdomain, DNS1123_LABEL_MSG);
  if (spec.hostNetwork) {
    for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
      for (const p of c.ports ?? []) {
        if (p.hostPort && p.hostPort !== p.containerPort) {
          invalid(
            'spec.containers[*].ports.hostPort',
            p.hostPort,
            'must match `containerPort` when `hostNetwork` is true',
          );
        }
      }
    }
  }
  (spec.tolerations ?? []).forEach((t, i) => {
    if (t.operator !== undefined && !['Exists', 'Equal'].includes(t.operator))
      unsupported(`spec.tolerations[${i}].operator`, t.operator, ['Equal', 'Exists']);
    if (t.operator === 'Exists' && t.value)
      invalid(`spec.tolerations[${i}].operator`, t.value, "value must be empty when `operator` is 'Exists'");
    if (t.effect !== undefined && !['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(t.effect)) {
      unsupported(`spec.tolerations[${i}].effect`, t.effect, ['NoExecute', 'NoSchedule', 'PreferNoSchedule']);
    }
  });
  return errs;
}
