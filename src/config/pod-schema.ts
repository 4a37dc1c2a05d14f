/**
 * The field types of a core/v1 Pod, checked as Go's JSON decoder checks them before the API server
 * (or the upstream kubelet's file source) ever validates a pod: `command: 'sleep 3600'` cannot
 * become a []string, `hostNetwork: 'yes'` cannot become a bool, `periodSeconds: 0.5` cannot become
 * an int32. Everything downstream is typed code that trusts these types, so a manifest that breaks
 * them is refused here, naming the field.
 *
 * As Go decodes: `null` is the zero value (an absent field, or an empty element in a list), and
 * fields this table does not know are left as they are (the kubelet reads none of them).
 */
import type { Pod } from '../api/core-v1.js';
import { FieldErrors, type FieldError } from './field-errors.js';

type Scalar = 'string' | 'bool' | 'int32' | 'int64' | 'quantity' | 'intOrString' | 'time' | 'object';
interface ListOf {
  list: FieldType;
}
interface MapOf {
  map: FieldType;
}
interface Struct {
  fields: Record<string, FieldType>;
}
export type FieldType = Scalar | ListOf | MapOf | Struct;

const list = (t: FieldType): ListOf => ({ list: t });
const map = (t: FieldType): MapOf => ({ map: t });
const struct = (fields: Record<string, FieldType>): Struct => ({ fields });
const STRINGS = list('string');
const STRING_MAP = map('string');

const LOCAL_OBJECT_REFERENCE = struct({ name: 'string' });
const KEY_SELECTOR = struct({ name: 'string', key: 'string', optional: 'bool' });
const OBJECT_FIELD_SELECTOR = struct({ apiVersion: 'string', fieldPath: 'string' });
const RESOURCE_FIELD_SELECTOR = struct({ containerName: 'string', resource: 'string', divisor: 'quantity' });
const LABEL_SELECTOR = struct({
  matchLabels: STRING_MAP,
  matchExpressions: list(struct({ key: 'string', operator: 'string', values: STRINGS })),
});
const SE_LINUX_OPTIONS = struct({ user: 'string', role: 'string', type: 'string', level: 'string' });
const WINDOWS_OPTIONS = struct({
  gmsaCredentialSpecName: 'string',
  gmsaCredentialSpec: 'string',
  runAsUserName: 'string',
  hostProcess: 'bool',
});
const PROFILE = struct({ type: 'string', localhostProfile: 'string' });

const EXEC_ACTION = struct({ command: STRINGS });
const HTTP_GET_ACTION = struct({
  path: 'string',
  port: 'intOrString',
  host: 'string',
  scheme: 'string',
  httpHeaders: list(struct({ name: 'string', value: 'string' })),
});
const TCP_SOCKET_ACTION = struct({ port: 'intOrString', host: 'string' });
const GRPC_ACTION = struct({ port: 'int32', service: 'string' });
const PROBE = struct({
  exec: EXEC_ACTION,
  httpGet: HTTP_GET_ACTION,
  tcpSocket: TCP_SOCKET_ACTION,
  grpc: GRPC_ACTION,
  initialDelaySeconds: 'int32',
  timeoutSeconds: 'int32',
  periodSeconds: 'int32',
  successThreshold: 'int32',
  failureThreshold: 'int32',
  terminationGracePeriodSeconds: 'int64',
});
const LIFECYCLE_HANDLER = struct({
  exec: EXEC_ACTION,
  httpGet: HTTP_GET_ACTION,
  tcpSocket: TCP_SOCKET_ACTION,
  sleep: struct({ seconds: 'int64' }),
});

const CONTAINER_FIELDS: Record<string, FieldType> = {
  name: 'string',
  image: 'string',
  command: STRINGS,
  args: STRINGS,
  workingDir: 'string',
  ports: list(
    struct({
      name: 'string',
      hostPort: 'int32',
      containerPort: 'int32',
      protocol: 'string',
      hostIP: 'string',
    }),
  ),
  envFrom: list(
    struct({
      prefix: 'string',
      configMapRef: struct({ name: 'string', optional: 'bool' }),
      secretRef: struct({ name: 'string', optional: 'bool' }),
    }),
  ),
  env: list(
    struct({
      name: 'string',
      value: 'string',
      valueFrom: struct({
        fieldRef: OBJECT_FIELD_SELECTOR,
        resourceFieldRef: RESOURCE_FIELD_SELECTOR,
        configMapKeyRef: KEY_SELECTOR,
        secretKeyRef: KEY_SELECTOR,
      }),
    }),
  ),
  resources: struct({
    limits: map('quantity'),
    requests: map('quantity'),
    claims: list(struct({ name: 'string' })),
  }),
  resizePolicy: list(struct({ resourceName: 'string', restartPolicy: 'string' })),
  restartPolicy: 'string',
  volumeMounts: list(
    struct({
      name: 'string',
      readOnly: 'bool',
      recursiveReadOnly: 'string',
      mountPath: 'string',
      subPath: 'string',
      mountPropagation: 'string',
      subPathExpr: 'string',
    }),
  ),
  volumeDevices: list(struct({ name: 'string', devicePath: 'string' })),
  livenessProbe: PROBE,
  readinessProbe: PROBE,
  startupProbe: PROBE,
  lifecycle: struct({ postStart: LIFECYCLE_HANDLER, preStop: LIFECYCLE_HANDLER }),
  terminationMessagePath: 'string',
  terminationMessagePolicy: 'string',
  imagePullPolicy: 'string',
  securityContext: struct({
    capabilities: struct({ add: STRINGS, drop: STRINGS }),
    privileged: 'bool',
    seLinuxOptions: SE_LINUX_OPTIONS,
    windowsOptions: WINDOWS_OPTIONS,
    runAsUser: 'int64',
    runAsGroup: 'int64',
    runAsNonRoot: 'bool',
    readOnlyRootFilesystem: 'bool',
    allowPrivilegeEscalation: 'bool',
    procMount: 'string',
    seccompProfile: PROFILE,
    appArmorProfile: PROFILE,
  }),
  stdin: 'bool',
  stdinOnce: 'bool',
  tty: 'bool',
};
const CONTAINER = struct(CONTAINER_FIELDS);

const KEY_TO_PATH = struct({ key: 'string', path: 'string', mode: 'int32' });
const DOWNWARD_API_FILE = struct({
  path: 'string',
  fieldRef: OBJECT_FIELD_SELECTOR,
  resourceFieldRef: RESOURCE_FIELD_SELECTOR,
  mode: 'int32',
});
const VOLUME = struct({
  name: 'string',
  hostPath: struct({ path: 'string', type: 'string' }),
  emptyDir: struct({ medium: 'string', sizeLimit: 'quantity' }),
  secret: struct({ secretName: 'string', items: list(KEY_TO_PATH), defaultMode: 'int32', optional: 'bool' }),
  configMap: struct({ name: 'string', items: list(KEY_TO_PATH), defaultMode: 'int32', optional: 'bool' }),
  downwardAPI: struct({ items: list(DOWNWARD_API_FILE), defaultMode: 'int32' }),
  projected: struct({
    sources: list(
      struct({
        secret: struct({ name: 'string', items: list(KEY_TO_PATH), optional: 'bool' }),
        configMap: struct({ name: 'string', items: list(KEY_TO_PATH), optional: 'bool' }),
        downwardAPI: struct({ items: list(DOWNWARD_API_FILE) }),
        serviceAccountToken: struct({ audience: 'string', expirationSeconds: 'int64', path: 'string' }),
        clusterTrustBundle: struct({
          name: 'string',
          signerName: 'string',
          labelSelector: LABEL_SELECTOR,
          optional: 'bool',
          path: 'string',
        }),
      }),
    ),
    defaultMode: 'int32',
  }),
  persistentVolumeClaim: struct({ claimName: 'string', readOnly: 'bool' }),
  nfs: struct({ server: 'string', path: 'string', readOnly: 'bool' }),
  csi: struct({
    driver: 'string',
    readOnly: 'bool',
    fsType: 'string',
    volumeAttributes: STRING_MAP,
    nodePublishSecretRef: LOCAL_OBJECT_REFERENCE,
  }),
  ephemeral: 'object',
  image: struct({ reference: 'string', pullPolicy: 'string' }),
  // The remaining (cloud and network) volume types are checked as objects only; none runs here.
  gcePersistentDisk: 'object',
  awsElasticBlockStore: 'object',
  gitRepo: 'object',
  iscsi: 'object',
  glusterfs: 'object',
  rbd: 'object',
  flexVolume: 'object',
  cinder: 'object',
  cephfs: 'object',
  flocker: 'object',
  fc: 'object',
  azureFile: 'object',
  vsphereVolume: 'object',
  quobyte: 'object',
  azureDisk: 'object',
  photonPersistentDisk: 'object',
  portworxVolume: 'object',
  scaleIO: 'object',
  storageos: 'object',
});

const NODE_SELECTOR_TERM = struct({
  matchExpressions: list(struct({ key: 'string', operator: 'string', values: STRINGS })),
  matchFields: list(struct({ key: 'string', operator: 'string', values: STRINGS })),
});
const POD_AFFINITY_TERM = struct({
  labelSelector: LABEL_SELECTOR,
  namespaces: STRINGS,
  topologyKey: 'string',
  namespaceSelector: LABEL_SELECTOR,
  matchLabelKeys: STRINGS,
  mismatchLabelKeys: STRINGS,
});
const POD_AFFINITY = struct({
  requiredDuringSchedulingIgnoredDuringExecution: list(POD_AFFINITY_TERM),
  preferredDuringSchedulingIgnoredDuringExecution: list(
    struct({ weight: 'int32', podAffinityTerm: POD_AFFINITY_TERM }),
  ),
});

const POD_SPEC = struct({
  volumes: list(VOLUME),
  initContainers: list(CONTAINER),
  containers: list(CONTAINER),
  ephemeralContainers: list(struct({ ...CONTAINER_FIELDS, targetContainerName: 'string' })),
  restartPolicy: 'string',
  terminationGracePeriodSeconds: 'int64',
  activeDeadlineSeconds: 'int64',
  dnsPolicy: 'string',
  nodeSelector: STRING_MAP,
  serviceAccountName: 'string',
  serviceAccount: 'string',
  automountServiceAccountToken: 'bool',
  nodeName: 'string',
  hostNetwork: 'bool',
  hostPID: 'bool',
  hostIPC: 'bool',
  shareProcessNamespace: 'bool',
  securityContext: struct({
    seLinuxOptions: SE_LINUX_OPTIONS,
    windowsOptions: WINDOWS_OPTIONS,
    runAsUser: 'int64',
    runAsGroup: 'int64',
    runAsNonRoot: 'bool',
    supplementalGroups: list('int64'),
    fsGroup: 'int64',
    sysctls: list(struct({ name: 'string', value: 'string' })),
    fsGroupChangePolicy: 'string',
    seccompProfile: PROFILE,
    appArmorProfile: PROFILE,
  }),
  imagePullSecrets: list(LOCAL_OBJECT_REFERENCE),
  hostname: 'string',
  subdomain: 'string',
  affinity: struct({
    nodeAffinity: struct({
      requiredDuringSchedulingIgnoredDuringExecution: struct({ nodeSelectorTerms: list(NODE_SELECTOR_TERM) }),
      preferredDuringSchedulingIgnoredDuringExecution: list(
        struct({ weight: 'int32', preference: NODE_SELECTOR_TERM }),
      ),
    }),
    podAffinity: POD_AFFINITY,
    podAntiAffinity: POD_AFFINITY,
  }),
  schedulerName: 'string',
  tolerations: list(
    struct({
      key: 'string',
      operator: 'string',
      value: 'string',
      effect: 'string',
      tolerationSeconds: 'int64',
    }),
  ),
  hostAliases: list(struct({ ip: 'string', hostnames: STRINGS })),
  priorityClassName: 'string',
  priority: 'int32',
  dnsConfig: struct({
    nameservers: STRINGS,
    searches: STRINGS,
    options: list(struct({ name: 'string', value: 'string' })),
  }),
  readinessGates: list(struct({ conditionType: 'string' })),
  runtimeClassName: 'string',
  enableServiceLinks: 'bool',
  preemptionPolicy: 'string',
  overhead: map('quantity'),
  topologySpreadConstraints: list(
    struct({
      maxSkew: 'int32',
      topologyKey: 'string',
      whenUnsatisfiable: 'string',
      labelSelector: LABEL_SELECTOR,
      minDomains: 'int32',
      nodeAffinityPolicy: 'string',
      nodeTaintsPolicy: 'string',
      matchLabelKeys: STRINGS,
    }),
  ),
  setHostnameAsFQDN: 'bool',
  os: struct({ name: 'string' }),
  hostUsers: 'bool',
  schedulingGates: list(struct({ name: 'string' })),
  resourceClaims: list(
    struct({
      name: 'string',
      source: struct({ resourceClaimName: 'string', resourceClaimTemplateName: 'string' }),
    }),
  ),
});

const OBJECT_META = struct({
  name: 'string',
  generateName: 'string',
  namespace: 'string',
  selfLink: 'string',
  uid: 'string',
  resourceVersion: 'string',
  generation: 'int64',
  creationTimestamp: 'time',
  deletionTimestamp: 'time',
  deletionGracePeriodSeconds: 'int64',
  labels: STRING_MAP,
  annotations: STRING_MAP,
  ownerReferences: list(
    struct({
      apiVersion: 'string',
      kind: 'string',
      name: 'string',
      uid: 'string',
      controller: 'bool',
      blockOwnerDeletion: 'bool',
    }),
  ),
  finalizers: STRINGS,
  managedFields: list('object'),
});

/** The Pod: the kubelet owns status, so only its being an object matters. */
export const POD_TYPE = struct({
  apiVersion: 'string',
  kind: 'string',
  metadata: OBJECT_META,
  spec: POD_SPEC,
  status: 'object',
});

const INT32_MAX = 2 ** 31 - 1;
const INT32_MIN = -(2 ** 31);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Go's zero value of a type, which a `null` list element decodes to. */
function zeroValue(t: FieldType): unknown {
  switch (t) {
    case 'string':
    case 'time':
      return '';
    case 'bool':
      return false;
    case 'int32':
    case 'int64':
    case 'intOrString':
      return 0;
    case 'quantity':
      return '0';
    case 'object':
      return {};
    default:
      return 'list' in t ? [] : {};
  }
}

// RFC 3339, as metav1.Time's decoder reads it.
const RFC3339_RE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Checks value against t. Returns the value as Go would decode it (nulls dropped or zeroed, fresh
 * objects along the typed paths), or undefined when it is absent; type errors go to errs.
 */
function decodeValue(value: unknown, t: FieldType, field: string, errs: FieldErrors): unknown {
  if (value === null || value === undefined) return undefined;
  switch (t) {
    case 'string':
      if (typeof value === 'string') return value;
      errs.wrongType(field, value, 'string');
      return undefined;
    case 'bool':
      if (typeof value === 'boolean') return value;
      errs.wrongType(field, value, 'boolean');
      return undefined;
    case 'int32':
    case 'int64': {
      if (typeof value !== 'number' || !Number.isInteger(value)) {
        errs.wrongType(field, value, 'integer');
        return undefined;
      }
      const inRange = t === 'int32' ? value >= INT32_MIN && value <= INT32_MAX : Number.isSafeInteger(value);
      if (!inRange) {
        errs.invalid(field, value, `must fit in an ${t}`);
        return undefined;
      }
      return value;
    }
    case 'intOrString':
      if (typeof value === 'string') return value;
      if (typeof value === 'number' && Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX)
        return value;
      errs.wrongType(field, value, 'integer or string');
      return undefined;
    case 'quantity':
      // resource.Quantity decodes from a JSON string or number; its syntax is checked by validation.
      if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) return value;
      errs.wrongType(field, value, 'quantity (string or number)');
      return undefined;
    case 'time':
      if (typeof value === 'string' && (value === '' || RFC3339_RE.test(value))) return value;
      if (typeof value === 'string') errs.invalid(field, value, 'must be an RFC 3339 time');
      else errs.wrongType(field, value, 'RFC 3339 time string');
      return undefined;
    case 'object':
      if (isPlainObject(value)) return value;
      errs.wrongType(field, value, 'object');
      return undefined;
  }
  if ('list' in t) {
    if (!Array.isArray(value)) {
      errs.wrongType(field, value, 'list');
      return undefined;
    }
    return value.map((item, i) => {
      const decoded = decodeValue(item, t.list, `${field}[${i}]`, errs);
      return decoded === undefined ? zeroValue(t.list) : decoded;
    });
  }
  if (!isPlainObject(value)) {
    errs.wrongType(field, value, 'object');
    return undefined;
  }
  const out: Record<string, unknown> = {};
  if ('map' in t) {
    for (const [k, v] of Object.entries(value)) {
      const decoded = decodeValue(v, t.map, `${field}[${k}]`, errs);
      out[k] = decoded === undefined ? zeroValue(t.map) : decoded;
    }
    return out;
  }
  for (const [k, v] of Object.entries(value)) {
    const ft = t.fields[k];
    if (ft === undefined) {
      out[k] = v; // not a field the kubelet reads: kept as written
      continue;
    }
    const decoded = decodeValue(v, ft, field ? `${field}.${k}` : k, errs);
    if (decoded !== undefined) out[k] = decoded;
  }
  return out;
}

/**
 * The manifest object as a typed Pod, or the fields whose JSON types Go's decoder would refuse.
 * The returned pod shares no typed object with the input.
 */
export function decodePod(obj: unknown): { pod: Pod; errors: [] } | { pod: undefined; errors: FieldError[] } {
  const errs = new FieldErrors();
  const decoded = decodeValue(obj, POD_TYPE, '', errs);
  if (errs.list.length > 0) return { pod: undefined, errors: errs.list };
  const pod = (decoded ?? {}) as Pod;
  pod.metadata ??= {};
  pod.spec ??= { containers: [] };
  pod.spec.containers ??= [];
  return { pod, errors: [] };
}
