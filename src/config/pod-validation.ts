/**
 * The checks the API server makes on creating a Pod (upstream ValidatePodCreate in
 * pkg/apis/core/validation/validation.go), for pods that never pass through one: static pods from
 * files and URLs. It runs on a pod whose field types decodePod has checked and whose defaults are
 * applied, as upstream validates after decoding and defaulting. Messages use upstream's field-error
 * form (`spec.containers[0].image: Required value`).
 *
 * Beyond upstream: `metadata.uid` must be one plain path element, because the kubelet makes folders
 * named after it (upstream trusts it; a static pod's UID could climb out of --root-dir).
 */
import type { Container, Pod, Probe, Quantity } from '../api/core-v1.js';
import { POD_UID_RULE, isSafePodUid } from '../api/pod-uid.js';
import { compareQuantity, parseQuantity } from '../api/quantity.js';
import { isDeepStrictEqual } from 'node:util';
import { FieldErrors, fieldErrorText, type FieldError } from './field-errors.js';
import { PodVolumeValidator } from './pod-volume-validation.js';

export { quantityProblem } from './pod-volume-validation.js';
import {
  configMapKeyProblems,
  dns1123LabelProblems,
  dns1123SubdomainProblems,
  envVarNameProblems,
  httpHeaderNameProblems,
  ianaSvcNameProblems,
  ipProblems,
  isValidPortNum,
  labelValueProblems,
  qualifiedNameProblems,
  sysctlNameProblems,
} from './name-validation.js';

export { isDNS1123Label, isDNS1123Subdomain } from './name-validation.js';

/** Upstream TotalAnnotationSizeLimitB: the keys and values of all annotations together. */
export const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES = 256 * 1024;
const PORT_RANGE_MSG = 'must be between 1 and 65535, inclusive';
const INT32_MAX = 2 ** 31 - 1;
const MAX_DNS_NAMESERVERS = 3;
const MAX_DNS_SEARCH_PATHS = 32;
// Upstream refuses a token that expires within 10 minutes or after 2^32 seconds.
// A quantity's exponent beyond this is no real amount, and computing it would take unbounded time.

const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
const DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const MOUNT_PROPAGATIONS = ['Bidirectional', 'HostToContainer', 'None'];
const SECCOMP_TYPES = ['Localhost', 'RuntimeDefault', 'Unconfined'];
const STANDARD_CONTAINER_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'];
const ENV_FIELD_PATHS = [
  'metadata.annotations',
  'metadata.labels',
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.serviceAccountName',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
];
/** Field errors of a decoded and defaulted pod; empty when it is valid. */
export function validatePodFields(pod: Pod): FieldError[] {
  return new PodValidator(pod).run();
}

/** validatePodFields, as `field: detail` lines. */
export function validatePod(pod: Pod): string[] {
  return validatePodFields(pod).map(fieldErrorText);
}

function compareQuantities(a: Quantity, b: Quantity): number {
  return compareQuantity(parseQuantity(a), parseQuantity(b));
}

/**
 * The `ephemeralcontainers` subresource's checks (upstream ValidatePodEphemeralContainersUpdate):
 * the new list is valid beside the pod's other containers, and the ones already there are neither
 * changed nor removed.
 */
export function validateEphemeralContainersUpdate(newPod: Pod, oldPod: Pod): FieldError[] {
  const v = new PodValidator(newPod);
  const errs = new FieldErrors();
  const added = newPod.spec.ephemeralContainers ?? [];
  for (const old of oldPod.spec.ephemeralContainers ?? []) {
    const now = added.find((c) => c.name === old.name);
    if (!now)
      errs.forbidden(
        'spec.ephemeralContainers',
        `existing ephemeral containers "${old.name}" may not be removed`,
      );
    else if (!isDeepStrictEqual(now, old))
      errs.forbidden(
        'spec.ephemeralContainers',
        `existing ephemeral containers "${old.name}" may not be changed`,
      );
  }
  return [...v.ephemeralContainerErrors(), ...errs.list];
}

/** What an ephemeral container may not have: it joins a running pod and is never restarted. */
const EPHEMERAL_FORBIDDEN_FIELDS = [
  'ports',
  'resources',
  'resizePolicy',
  'restartPolicy',
  'livenessProbe',
  'readinessProbe',
  'startupProbe',
  'lifecycle',
] as const;

class PodValidator extends PodVolumeValidator {
  /** Upstream validateEphemeralContainers, on a pod the API already holds. */
  ephemeralContainerErrors(): FieldError[] {
    const spec = this.pod.spec;
    (spec.volumes ?? []).forEach((v) => {
      this.volumeNames.add(v.name);
      this.volumes.set(v.name, v);
    });
    const names = new Set<string>();
    for (const c of [...(spec.initContainers ?? []), ...spec.containers]) names.add(c.name);
    const others = new Set(names);
    const e = this.errs;
    (spec.ephemeralContainers ?? []).forEach((c, i) => {
      const at = `spec.ephemeralContainers[${i}]`;
      const raw = c as unknown as Record<string, unknown>;
      for (const f of EPHEMERAL_FORBIDDEN_FIELDS) {
        if (raw[f] !== undefined) e.forbidden(`${at}.${f}`, 'cannot be set for an Ephemeral Container');
      }
      (c.volumeMounts ?? []).forEach((m, j) => {
        if (m.subPath)
          e.forbidden(`${at}.volumeMounts[${j}].subPath`, 'cannot be set for an Ephemeral Container');
        if (m.subPathExpr)
          e.forbidden(`${at}.volumeMounts[${j}].subPathExpr`, 'cannot be set for an Ephemeral Container');
      });
      // Its own checks with the forbidden fields left out, so each is reported once.
      const common: Record<string, unknown> = { ...raw };
      for (const f of [...EPHEMERAL_FORBIDDEN_FIELDS, 'targetContainerName']) delete common[f];
      this.validateContainer(common as unknown as Container, at, false, names, new Set());
      if (c.targetContainerName && !others.has(c.targetContainerName))
        e.notFound(`${at}.targetContainerName`, c.targetContainerName);
    });
    return this.errs.list;
  }

  run(): FieldError[] {
    this.validateMeta();
    this.validateSpec();
    return this.errs.list;
  }

  private validateMeta(): void {
    const meta = this.pod.metadata;
    const e = this.errs;
    if (!meta.name) e.required('metadata.name', 'name or generateName is required');
    else this.names('metadata.name', meta.name, dns1123SubdomainProblems(meta.name));
    if (!meta.namespace) e.required('metadata.namespace');
    else this.names('metadata.namespace', meta.namespace, dns1123LabelProblems(meta.namespace));
    if (meta.uid !== undefined && !isSafePodUid(meta.uid)) e.invalid('metadata.uid', meta.uid, POD_UID_RULE);
    this.validateLabels(meta.labels, 'metadata.labels');
    let total = 0;
    for (const [k, v] of Object.entries(meta.annotations ?? {})) {
      this.names('metadata.annotations', k, qualifiedNameProblems(k.toLowerCase()));
      total += Buffer.byteLength(k) + Buffer.byteLength(v);
    }
    if (total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES)
      e.tooLong('metadata.annotations', TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
    const cost = meta.annotations?.['controller.kubernetes.io/pod-deletion-cost'];
    if (cost !== undefined && !(/^[-+]?\d+$/.test(cost) && Math.abs(Number(cost)) <= INT32_MAX + 1)) {
      e.invalid(
        'metadata.annotations[controller.kubernetes.io/pod-deletion-cost]',
        cost,
        'must be a 32bit integer',
      );
    }
    (meta.finalizers ?? []).forEach((f, i) =>
      this.names(`metadata.finalizers[${i}]`, f, qualifiedNameProblems(f)),
    );
    this.nonNegative('metadata.deletionGracePeriodSeconds', meta.deletionGracePeriodSeconds);
  }

  private validateLabels(labels: Record<string, string> | undefined, field: string): void {
    for (const [k, v] of Object.entries(labels ?? {})) {
      this.names(field, k, qualifiedNameProblems(k));
      this.names(field, v, labelValueProblems(v));
    }
  }

  private validateSpec(): void {
    const spec = this.pod.spec;
    const e = this.errs;
    (spec.volumes ?? []).forEach((v, i) => this.validateVolume(v, `spec.volumes[${i}]`));

    if (spec.containers.length === 0) e.required('spec.containers');
    const containerNames = new Set<string>();
    const hostPorts = new Set<string>();
    (spec.initContainers ?? []).forEach((c, i) =>
      this.validateContainer(c, `spec.initContainers[${i}]`, true, containerNames, hostPorts),
    );
    spec.containers.forEach((c, i) =>
      this.validateContainer(c, `spec.containers[${i}]`, false, containerNames, hostPorts),
    );
    if ((spec.ephemeralContainers ?? []).length > 0)
      e.forbidden('spec.ephemeralContainers', 'cannot be set on create');

    if (spec.restartPolicy !== undefined && !RESTART_POLICIES.includes(spec.restartPolicy))
      e.notSupported('spec.restartPolicy', spec.restartPolicy, RESTART_POLICIES);
    if (spec.dnsPolicy !== undefined && !DNS_POLICIES.includes(spec.dnsPolicy))
      e.notSupported('spec.dnsPolicy', spec.dnsPolicy, DNS_POLICIES);
    this.validateDnsConfig();
    this.nonNegative('spec.terminationGracePeriodSeconds', spec.terminationGracePeriodSeconds);
    const deadline = spec.activeDeadlineSeconds;
    if (deadline !== undefined && (deadline < 1 || deadline > INT32_MAX))
      e.invalid('spec.activeDeadlineSeconds', deadline, `must be between 1 and ${INT32_MAX}, inclusive`);
    for (const key of ['hostname', 'subdomain'] as const) {
      const v = spec[key];
      if (v) this.names(`spec.${key}`, v, dns1123LabelProblems(v));
    }
    for (const key of ['serviceAccountName', 'nodeName', 'priorityClassName', 'runtimeClassName'] as const) {
      const v = spec[key];
      if (v) this.names(`spec.${key}`, v, dns1123SubdomainProblems(v));
    }
    this.validateLabels(spec.nodeSelector, 'spec.nodeSelector');
    (spec.imagePullSecrets ?? []).forEach((s, i) => {
      if (!s.name) e.required(`spec.imagePullSecrets[${i}].name`);
    });
    (spec.hostAliases ?? []).forEach((a, i) => {
      this.names(`spec.hostAliases[${i}].ip`, a.ip ?? '', ipProblems(a.ip ?? ''));
      (a.hostnames ?? []).forEach((h, j) =>
        this.names(`spec.hostAliases[${i}].hostnames[${j}]`, h, dns1123SubdomainProblems(h)),
      );
    });
    if (spec.os?.name !== undefined && !['linux', 'windows'].includes(spec.os.name))
      e.notSupported('spec.os.name', spec.os.name, ['linux', 'windows']);
    if (
      spec.preemptionPolicy !== undefined &&
      !['Never', 'PreemptLowerPriority'].includes(spec.preemptionPolicy)
    )
      e.notSupported('spec.preemptionPolicy', spec.preemptionPolicy, ['Never', 'PreemptLowerPriority']);
    this.validatePodSecurityContext();
    this.validateTolerations();
    this.validateOverheadAndGates();
  }

  private validateDnsConfig(): void {
    const spec = this.pod.spec;
    const e = this.errs;
    const dns = spec.dnsConfig;
    if (spec.dnsPolicy === 'None' && (dns?.nameservers ?? []).length === 0) {
      e.required(
        'spec.dnsConfig.nameservers',
        'must provide at least one DNS nameserver when `dnsPolicy` is None',
      );
    }
    if (!dns) return;
    const ns = dns.nameservers ?? [];
    if (ns.length > MAX_DNS_NAMESERVERS)
      e.invalid(
        'spec.dnsConfig.nameservers',
        ns,
        `must not have more than ${MAX_DNS_NAMESERVERS} nameservers`,
      );
    ns.forEach((n, i) => this.names(`spec.dnsConfig.nameservers[${i}]`, n, ipProblems(n)));
    const searches = dns.searches ?? [];
    if (searches.length > MAX_DNS_SEARCH_PATHS)
      e.invalid(
        'spec.dnsConfig.searches',
        searches,
        `must not have more than ${MAX_DNS_SEARCH_PATHS} search paths`,
      );
    searches.forEach((s, i) =>
      this.names(`spec.dnsConfig.searches[${i}]`, s, dns1123SubdomainProblems(s.replace(/\.$/, ''))),
    );
    (dns.options ?? []).forEach((o, i) => {
      if (!o.name) e.required(`spec.dnsConfig.options[${i}]`, 'Option.Name must not be empty');
    });
  }

  private validatePodSecurityContext(): void {
    const spec = this.pod.spec;
    const sc = spec.securityContext;
    if (!sc) return;
    const at = 'spec.securityContext';
    this.idRange(`${at}.runAsUser`, sc.runAsUser);
    this.idRange(`${at}.runAsGroup`, sc.runAsGroup);
    this.idRange(`${at}.fsGroup`, sc.fsGroup);
    (sc.supplementalGroups ?? []).forEach((g, i) => this.idRange(`${at}.supplementalGroups[${i}]`, g));
    if (
      sc.fsGroupChangePolicy !== undefined &&
      !['Always', 'OnRootMismatch'].includes(sc.fsGroupChangePolicy)
    )
      this.errs.notSupported(`${at}.fsGroupChangePolicy`, sc.fsGroupChangePolicy, [
        'Always',
        'OnRootMismatch',
      ]);
    this.validateSeccomp(`${at}.seccompProfile`, sc.seccompProfile);
    const seen = new Set<string>();
    (sc.sysctls ?? []).forEach((s, i) => {
      const field = `${at}.sysctls[${i}].name`;
      if (!s.name) this.errs.required(field);
      else if (!this.names(field, s.name, sysctlNameProblems(s.name))) return;
      else if (seen.has(s.name)) this.errs.duplicate(field, s.name);
      else {
        seen.add(s.name);
        if (spec.hostNetwork && s.name.startsWith('net.'))
          this.errs.invalid(field, s.name, "may not be specified when 'hostNetwork' is true");
        if (
          spec.hostIPC &&
          (s.name.startsWith('kernel.shm') ||
            s.name.startsWith('kernel.msg') ||
            s.name === 'kernel.sem' ||
            s.name.startsWith('fs.mqueue.'))
        )
          this.errs.invalid(field, s.name, "may not be specified when 'hostIPC' is true");
      }
    });
  }

  private idRange(field: string, v: number | undefined): void {
    if (v !== undefined && (v < 0 || v > INT32_MAX))
      this.errs.invalid(field, v, `must be between 0 and ${INT32_MAX}, inclusive`);
  }

  private validateSeccomp(field: string, p: { type: string; localhostProfile?: string } | undefined): void {
    if (!p) return;
    if (!SECCOMP_TYPES.includes(p.type)) this.errs.notSupported(`${field}.type`, p.type, SECCOMP_TYPES);
    if (p.type === 'Localhost' && !p.localhostProfile)
      this.errs.required(`${field}.localhostProfile`, 'must be set when seccomp type is Localhost');
    if (p.type !== 'Localhost' && p.localhostProfile)
      this.errs.invalid(
        `${field}.localhostProfile`,
        p.localhostProfile,
        'can only be set when seccomp type is Localhost',
      );
    if (
      p.localhostProfile &&
      (p.localhostProfile.startsWith('/') || p.localhostProfile.split('/').includes('..'))
    )
      this.errs.invalid(
        `${field}.localhostProfile`,
        p.localhostProfile,
        "must be a relative path without '..'",
      );
  }

  private validateTolerations(): void {
    const e = this.errs;
    (this.pod.spec.tolerations ?? []).forEach((t, i) => {
      const at = `spec.tolerations[${i}]`;
      if (t.key) this.names(`${at}.key`, t.key, qualifiedNameProblems(t.key));
      if (!t.key && t.operator !== 'Exists')
        e.invalid(
          `${at}.operator`,
          t.operator ?? '',
          'operator must be Exists when `key` is empty, which means "match all values and all keys"',
        );
      if (t.tolerationSeconds !== undefined && t.effect !== 'NoExecute')
        e.invalid(
          `${at}.effect`,
          t.effect ?? '',
          "effect must be 'NoExecute' when `tolerationSeconds` is set",
        );
      if (t.operator === undefined || t.operator === 'Equal') {
        if (t.value) this.names(`${at}.operator`, t.value, labelValueProblems(t.value));
      } else if (t.operator === 'Exists') {
        if (t.value) e.invalid(`${at}.operator`, t, "value must be empty when `operator` is 'Exists'");
      } else e.notSupported(`${at}.operator`, t.operator, ['Equal', 'Exists']);
      if (
        t.effect !== undefined &&
        t.effect !== ('' as string) &&
        !['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(t.effect)
      )
        e.notSupported(`${at}.effect`, t.effect, ['NoExecute', 'NoSchedule', 'PreferNoSchedule']);
    });
  }

  private validateOverheadAndGates(): void {
    const spec = this.pod.spec as Pod['spec'] & {
      overhead?: Record<string, Quantity>;
      readinessGates?: { conditionType?: string }[];
      topologySpreadConstraints?: { maxSkew?: number; topologyKey?: string; whenUnsatisfiable?: string }[];
    };
    for (const [name, q] of Object.entries(spec.overhead ?? {})) this.quantity(`spec.overhead[${name}]`, q);
    (spec.readinessGates ?? []).forEach((g, i) =>
      this.names(
        `spec.readinessGates[${i}].conditionType`,
        g.conditionType ?? '',
        qualifiedNameProblems(g.conditionType ?? ''),
      ),
    );
    (spec.topologySpreadConstraints ?? []).forEach((c, i) => {
      const at = `spec.topologySpreadConstraints[${i}]`;
      if (!(c.maxSkew !== undefined && c.maxSkew > 0))
        this.errs.invalid(`${at}.maxSkew`, c.maxSkew ?? 0, 'must be greater than zero');
      if (!c.topologyKey) this.errs.required(`${at}.topologyKey`, 'can not be empty');
      if (!['DoNotSchedule', 'ScheduleAnyway'].includes(c.whenUnsatisfiable ?? ''))
        this.errs.notSupported(`${at}.whenUnsatisfiable`, c.whenUnsatisfiable ?? '', [
          'DoNotSchedule',
          'ScheduleAnyway',
        ]);
    });
  }

  private validateContainer(
    c: Container,
    at: string,
    init: boolean,
    names: Set<string>,
    hostPorts: Set<string>,
  ): void {
    const e = this.errs;
    const sidecar = init && c.restartPolicy === 'Always';
    if (!c.name) e.required(`${at}.name`);
    else if (this.names(`${at}.name`, c.name, dns1123LabelProblems(c.name))) {
      if (names.has(c.name)) e.duplicate(`${at}.name`, c.name);
      else names.add(c.name);
    }
    if (!c.image || c.image.trim() === '') e.required(`${at}.image`);
    else if (c.image !== c.image.trim())
      e.invalid(`${at}.image`, c.image, 'must not have leading or trailing whitespace');
    if (c.imagePullPolicy !== undefined && !PULL_POLICIES.includes(c.imagePullPolicy))
      e.notSupported(`${at}.imagePullPolicy`, c.imagePullPolicy, PULL_POLICIES);
    if (
      c.terminationMessagePolicy !== undefined &&
      !['File', 'FallbackToLogsOnError'].includes(c.terminationMessagePolicy)
    )
      e.notSupported(`${at}.terminationMessagePolicy`, c.terminationMessagePolicy, [
        'File',
        'FallbackToLogsOnError',
      ]);
    if (c.terminationMessagePath !== undefined && c.terminationMessagePath.length > 4096)
      e.tooLong(`${at}.terminationMessagePath`, 4096);
    if (!init && c.restartPolicy !== undefined)
      e.forbidden(`${at}.restartPolicy`, 'may not be set for non-init containers');
    if (init && c.restartPolicy !== undefined && c.restartPolicy !== 'Always')
      e.notSupported(`${at}.restartPolicy`, c.restartPolicy, ['Always']);

    this.validatePorts(c, at, hostPorts);
    this.validateEnv(c, at);
    this.validateMounts(c, at);
    this.validateResources(c, at);
    this.validateSecurityContext(c, at);

    const probes = [
      ['livenessProbe', c.livenessProbe],
      ['readinessProbe', c.readinessProbe],
      ['startupProbe', c.startupProbe],
    ] as const;
    for (const [name, probe] of probes) {
      if (!probe) continue;
      if (init && !sidecar) {
        e.forbidden(`${at}.${name}`, 'may not be set for init containers without restartPolicy=Always');
        continue;
      }
      this.validateProbe(probe, `${at}.${name}`);
      if (name !== 'readinessProbe' && probe.successThreshold !== undefined && probe.successThreshold !== 1)
        e.invalid(`${at}.${name}.successThreshold`, probe.successThreshold, 'must be 1');
      if (name === 'readinessProbe' && probe.terminationGracePeriodSeconds !== undefined)
        e.invalid(
          `${at}.readinessProbe.terminationGracePeriodSeconds`,
          probe.terminationGracePeriodSeconds,
          'must not be set for readinessProbes',
        );
    }
    if (c.lifecycle) {
      if (init && !sidecar)
        e.forbidden(`${at}.lifecycle`, 'may not be set for init containers without restartPolicy=Always');
      else {
        if (c.lifecycle.postStart)
          this.validateHandler(c.lifecycle.postStart, `${at}.lifecycle.postStart`, true);
        if (c.lifecycle.preStop) this.validateHandler(c.lifecycle.preStop, `${at}.lifecycle.preStop`, true);
      }
    }
  }

  private validatePorts(c: Container, at: string, hostPorts: Set<string>): void {
    const e = this.errs;
    const portNames = new Set<string>();
    (c.ports ?? []).forEach((p, j) => {
      const pat = `${at}.ports[${j}]`;
      if (p.containerPort === undefined) e.required(`${pat}.containerPort`);
      else if (!isValidPortNum(p.containerPort))
        e.invalid(`${pat}.containerPort`, p.containerPort, PORT_RANGE_MSG);
      if (p.hostPort !== undefined && p.hostPort !== 0 && !isValidPortNum(p.hostPort))
        e.invalid(`${pat}.hostPort`, p.hostPort, PORT_RANGE_MSG);
      if (p.protocol === undefined || !PROTOCOLS.includes(p.protocol)) {
        if (p.protocol === undefined) e.required(`${pat}.protocol`);
        else e.notSupported(`${pat}.protocol`, p.protocol, PROTOCOLS);
      }
      if (p.hostIP) this.names(`${pat}.hostIP`, p.hostIP, ipProblems(p.hostIP));
      if (p.name !== undefined && p.name !== '') {
        if (this.names(`${pat}.name`, p.name, ianaSvcNameProblems(p.name))) {
          if (portNames.has(p.name)) e.duplicate(`${pat}.name`, p.name);
          else portNames.add(p.name);
        }
      }
      if (this.pod.spec.hostNetwork && p.hostPort && p.hostPort !== p.containerPort)
        e.invalid(`${pat}.hostPort`, p.hostPort, 'must match `containerPort` when `hostNetwork` is true');
      if (p.hostPort) {
        const key = `${p.protocol ?? 'TCP'}/${p.hostIP ?? ''}/${p.hostPort}`;
        if (hostPorts.has(key)) e.duplicate(`${pat}.hostPort`, `${p.hostPort}/${p.protocol ?? 'TCP'}`);
        hostPorts.add(key);
      }
    });
  }

  private validateEnv(c: Container, at: string): void {
    const e = this.errs;
    (c.env ?? []).forEach((v, j) => {
      const field = `${at}.env[${j}]`;
      if (!v.name) e.required(`${field}.name`);
      else this.names(`${field}.name`, v.name, envVarNameProblems(v.name));
      const from = v.valueFrom;
      if (!from) return;
      const kinds = (['fieldRef', 'resourceFieldRef', 'configMapKeyRef', 'secretKeyRef'] as const).filter(
        (k) => from[k],
      );
      if (v.value) e.invalid(`${field}.valueFrom`, '', 'may not be specified when `value` is not empty');
      if (kinds.length === 0)
        e.invalid(
          `${field}.valueFrom`,
          '',
          'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`',
        );
      else if (kinds.length > 1)
        e.invalid(`${field}.valueFrom`, '', 'may not have more than one field specified at a time');
      if (from.fieldRef) this.fieldRef(`${field}.valueFrom.fieldRef`, from.fieldRef, ENV_FIELD_PATHS);
      if (from.resourceFieldRef) {
        this.resourceFieldRef(`${field}.valueFrom.resourceFieldRef`, from.resourceFieldRef, false);
        const target = from.resourceFieldRef.containerName;
        const all = [...(this.pod.spec.initContainers ?? []), ...this.pod.spec.containers];
        if (target && !all.some((o) => o.name === target))
          e.notFound(`${field}.valueFrom.resourceFieldRef.containerName`, target);
      }
      for (const key of ['configMapKeyRef', 'secretKeyRef'] as const) {
        const ref = from[key];
        if (!ref) continue;
        if (!ref.name) e.required(`${field}.valueFrom.${key}.name`);
        if (!ref.key) e.required(`${field}.valueFrom.${key}.key`);
        else this.names(`${field}.valueFrom.${key}.key`, ref.key, configMapKeyProblems(ref.key));
      }
    });
    (c.envFrom ?? []).forEach((src, j) => {
      const field = `${at}.envFrom[${j}]`;
      if (src.prefix) this.names(`${field}.prefix`, src.prefix, envVarNameProblems(src.prefix));
      const kinds = [src.configMapRef, src.secretRef].filter((r) => r !== undefined);
      if (kinds.length !== 1) e.invalid(field, '', 'must specify one of: `configMapRef` or `secretRef`');
      for (const [key, ref] of [
        ['configMapRef', src.configMapRef],
        ['secretRef', src.secretRef],
      ] as const) {
        if (ref && !ref.name) e.required(`${field}.${key}.name`);
        else if (ref?.name) this.names(`${field}.${key}.name`, ref.name, dns1123SubdomainProblems(ref.name));
      }
    });
  }

  private validateMounts(c: Container, at: string): void {
    const e = this.errs;
    const mountPaths = new Set<string>();
    (c.volumeMounts ?? []).forEach((m, j) => {
      const field = `${at}.volumeMounts[${j}]`;
      if (!m.name) e.required(`${field}.name`);
      else if (!this.volumeNames.has(m.name)) e.notFound(`${field}.name`, m.name);
      if (!m.mountPath) e.required(`${field}.mountPath`);
      else if (mountPaths.has(m.mountPath)) e.invalid(`${field}.mountPath`, m.mountPath, 'must be unique');
      else mountPaths.add(m.mountPath);
      if (m.subPath && m.subPathExpr)
        e.invalid(`${field}.subPathExpr`, m.subPathExpr, 'subPathExpr and subPath are mutually exclusive');
      for (const key of ['subPath', 'subPathExpr'] as const) {
        const p = m[key];
        if (!p) continue;
        if (p.startsWith('/')) e.invalid(`${field}.${key}`, p, 'must be a relative path');
        if (p.split('/').includes('..')) e.invalid(`${field}.${key}`, p, "must not contain '..'");
      }
      if (m.mountPropagation !== undefined) {
        if (!MOUNT_PROPAGATIONS.includes(m.mountPropagation))
          e.notSupported(`${field}.mountPropagation`, m.mountPropagation, MOUNT_PROPAGATIONS);
        else if (m.mountPropagation === 'Bidirectional' && c.securityContext?.privileged !== true)
          e.forbidden(
            `${field}.mountPropagation`,
            'Bidirectional mount propagation is available only to privileged containers',
          );
      }
    });
  }

  private validateResources(c: Container, at: string): void {
    const e = this.errs;
    const limits = c.resources?.limits ?? {};
    const requests = c.resources?.requests ?? {};
    const parsed = new Set<string>();
    for (const [kind, list] of [
      ['limits', limits],
      ['requests', requests],
    ] as const) {
      for (const [name, q] of Object.entries(list)) {
        const field = `${at}.resources.${kind}[${name}]`;
        const standard = STANDARD_CONTAINER_RESOURCES.includes(name) || name.startsWith('hugepages-');
        if (!standard) {
          const problems = qualifiedNameProblems(name);
          if (problems.length > 0) this.names(`${at}.resources.${kind}`, name, problems);
          else if (!name.includes('/') || /(^|\.)kubernetes\.io\//.test(name) || name.startsWith('requests.'))
            e.invalid(`${at}.resources.${kind}`, name, 'must be a standard resource for containers');
        }
        // A request the defaults copied from a refused limit is not reported twice.
        const copiedFromLimit = kind === 'requests' && limits[name] === q && !parsed.has(`limits/${name}`);
        if (copiedFromLimit) continue;
        if (this.quantity(field, q)) parsed.add(`${kind}/${name}`);
        if (
          !standard &&
          name.includes('/') &&
          parsed.has(`${kind}/${name}`) &&
          !/^[+]?\d+$/.test(String(q).trim())
        )
          e.invalid(field, q, 'must be an integer');
      }
    }
    for (const [name, req] of Object.entries(requests)) {
      const lim = limits[name];
      if (lim === undefined || !parsed.has(`limits/${name}`) || !parsed.has(`requests/${name}`)) continue;
      if (compareQuantities(req, lim) > 0)
        e.invalid(
          `${at}.resources.requests`,
          req,
          `must be less than or equal to ${name} limit of ${String(lim)}`,
        );
      const standard = STANDARD_CONTAINER_RESOURCES.includes(name) || name.startsWith('hugepages-');
      if (!standard && compareQuantities(req, lim) !== 0)
        e.invalid(`${at}.resources.requests`, req, `must be equal to ${name} limit of ${String(lim)}`);
    }
  }

  private validateSecurityContext(c: Container, at: string): void {
    const sc = c.securityContext;
    if (!sc) return;
    const field = `${at}.securityContext`;
    this.idRange(`${field}.runAsUser`, sc.runAsUser);
    this.idRange(`${field}.runAsGroup`, sc.runAsGroup);
    if (sc.procMount !== undefined && !['Default', 'Unmasked'].includes(sc.procMount))
      this.errs.notSupported(`${field}.procMount`, sc.procMount, ['Default', 'Unmasked']);
    if (sc.allowPrivilegeEscalation === false && sc.privileged === true)
      this.errs.invalid(field, sc, 'cannot set `allowPrivilegeEscalation` to false and `privileged` to true');
    if (sc.allowPrivilegeEscalation === false && (sc.capabilities?.add ?? []).includes('CAP_SYS_ADMIN'))
      this.errs.invalid(
        field,
        sc,
        'cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN',
      );
    this.validateSeccomp(`${field}.seccompProfile`, sc.seccompProfile);
  }

  // ---- probes and hooks ------------------------------------------------------------------------

  private validateProbe(p: Probe, at: string): void {
    this.validateHandler(p, at, false);
    this.nonNegative(`${at}.initialDelaySeconds`, p.initialDelaySeconds);
    this.nonNegative(`${at}.timeoutSeconds`, p.timeoutSeconds);
    this.nonNegative(`${at}.periodSeconds`, p.periodSeconds);
    this.nonNegative(`${at}.successThreshold`, p.successThreshold);
    this.nonNegative(`${at}.failureThreshold`, p.failureThreshold);
    if (p.terminationGracePeriodSeconds !== undefined && p.terminationGracePeriodSeconds <= 0)
      this.errs.invalid(
        `${at}.terminationGracePeriodSeconds`,
        p.terminationGracePeriodSeconds,
        'must be greater than 0',
      );
  }

  /** Exactly one handler (upstream validateHandler and validateLifecycleHandler). */
  private validateHandler(
    h: {
      exec?: { command?: string[] };
      httpGet?: HttpGet;
      tcpSocket?: { port: number | string };
      grpc?: { port: number };
      sleep?: { seconds: number };
    },
    at: string,
    lifecycle: boolean,
  ): void {
    const e = this.errs;
    const kinds = lifecycle
      ? (['exec', 'httpGet', 'tcpSocket', 'sleep'] as const)
      : (['exec', 'httpGet', 'tcpSocket', 'grpc'] as const);
    const set = kinds.filter((k) => (h as Record<string, unknown>)[k] !== undefined);
    if (set.length === 0) {
      e.required(at, 'must specify a handler type');
      return;
    }
    if (set.length > 1) e.forbidden(`${at}.${set[1]}`, 'may not specify more than 1 handler type');
    if (h.exec && (h.exec.command ?? []).length === 0) e.required(`${at}.exec.command`);
    if (h.httpGet) {
      const g = h.httpGet;
      if (!g.path) e.required(`${at}.httpGet.path`);
      this.portNumOrName(`${at}.httpGet.port`, g.port);
      if (g.scheme !== undefined && !['HTTP', 'HTTPS'].includes(g.scheme))
        e.notSupported(`${at}.httpGet.scheme`, g.scheme, ['HTTP', 'HTTPS']);
      for (const header of g.httpHeaders ?? [])
        this.names(`${at}.httpGet.httpHeaders`, header.name ?? '', httpHeaderNameProblems(header.name ?? ''));
    }
    if (h.tcpSocket) this.portNumOrName(`${at}.tcpSocket.port`, h.tcpSocket.port);
    if (h.grpc && !isValidPortNum(h.grpc.port)) e.invalid(`${at}.grpc.port`, h.grpc.port, PORT_RANGE_MSG);
    if (h.sleep) {
      const grace = this.pod.spec.terminationGracePeriodSeconds ?? 30;
      if (h.sleep.seconds <= 0 || h.sleep.seconds > grace) {
        e.invalid(
          `${at}.sleep.seconds`,
          h.sleep.seconds,
          `must be greater than 0 and less than terminationGracePeriodSeconds (${grace})`,
        );
      }
    }
  }

  private portNumOrName(field: string, port: number | string | undefined): void {
    if (port === undefined) this.errs.required(field);
    else if (typeof port === 'number') {
      if (!isValidPortNum(port)) this.errs.invalid(field, port, PORT_RANGE_MSG);
    } else if (port === '') this.errs.required(field);
    else this.names(field, port, ianaSvcNameProblems(port));
  }
}

interface HttpGet {
  path?: string;
  port: number | string;
  scheme?: string;
  httpHeaders?: { name?: string; value?: string }[];
}
