/**
 * The resources the test API server serves, with the per-resource behaviour of their upstream
 * registry strategies (pkg/registry/...): which have a status subresource, which may be created by a
 * PUT, which need a resourceVersion on update, which delete gracefully, which field selectors they
 * take, and the patch tags of their Go types.
 */
import type { PatchSchema } from './patch.js';

export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    generateName?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    deletionGracePeriodSeconds?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: unknown[];
    [key: string]: unknown;
  };
  [key: string]: unknown;
};

export interface ResourceDef {
  group: string;
  version: string;
  /** The plural, lower-case name used in URLs and RBAC. */
  resource: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  verbs: string[];
  /** Subresources served, besides the resource itself: `status`, `binding`, `token`. */
  subresources: string[];
  /** True for review resources: create only, never stored. */
  virtual?: boolean;
  allowCreateOnUpdate: boolean;
  allowUnconditionalUpdate: boolean;
  returnDeletedObject: boolean;
  /** Field selectors the resource takes besides metadata.name and metadata.namespace. */
  fields: (obj: KubeObject) => Record<string, string>;
  patchSchema: PatchSchema;
}

const CRUD = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function str(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : String(v);
}

function at(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const p of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

/** A selectable field: its name, or its name with the path it reads and the value Go's zero value prints as. */
type FieldSpec = string | [field: string, path: string, zero: string];

function fieldsAt(specs: FieldSpec[]): (obj: KubeObject) => Record<string, string> {
  return (obj) =>
    Object.fromEntries(
      specs.map((f) => {
        if (typeof f === 'string') return [f, str(at(obj, f))];
        const v = at(obj, f[1]);
        return [f[0], v === undefined || v === null ? f[2] : str(v)];
      }),
    );
}

const objectMeta: PatchSchema = {
  finalizers: { mergeScalars: true },
  ownerReferences: { mergeKey: 'uid' },
};

const container: PatchSchema = {
  ports: { mergeKey: 'containerPort' },
  env: { mergeKey: 'name' },
  volumeMounts: { mergeKey: 'mountPath' },
  volumeDevices: { mergeKey: 'devicePath' },
};

const podSpec: PatchSchema = {
  volumes: { mergeKey: 'name' },
  initContainers: { mergeKey: 'name', fields: container },
  containers: { mergeKey: 'name', fields: container },
  ephemeralContainers: { mergeKey: 'name', fields: container },
  imagePullSecrets: { mergeKey: 'name' },
  hostAliases: { mergeKey: 'ip' },
  topologySpreadConstraints: { mergeKey: 'topologyKey' },
  schedulingGates: { mergeKey: 'name' },
  resourceClaims: { mergeKey: 'name' },
};

// containerStatuses carry no patch tags upstream: a status patch replaces the whole list.
const podStatus: PatchSchema = {
  conditions: { mergeKey: 'type' },
  podIPs: { mergeKey: 'ip' },
  hostIPs: { mergeKey: 'ip' },
  resourceClaimStatuses: { mergeKey: 'name' },
};

const conditionsOnly: PatchSchema = { conditions: { mergeKey: 'type' } };

function schema(rest: PatchSchema = {}): PatchSchema {
  return { metadata: { fields: objectMeta }, ...rest };
}

interface Spec {
  group?: string;
  version?: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  subresources?: string[];
  allowCreateOnUpdate?: boolean;
  allowUnconditionalUpdate?: boolean;
  returnDeletedObject?: boolean;
  fields?: FieldSpec[];
  patchSchema?: PatchSchema;
  virtual?: boolean;
}

function def(s: Spec): ResourceDef {
  const extra = fieldsAt(s.fields ?? []);
  return {
    group: s.group ?? '',
    version: s.version ?? 'v1',
    resource: s.resource,
    singular: s.kind.toLowerCase(),
    kind: s.kind,
    namespaced: s.namespaced,
    ...(s.shortNames ? { shortNames: s.shortNames } : {}),
    verbs: s.virtual ? ['create'] : CRUD,
    subresources: s.subresources ?? [],
    ...(s.virtual ? { virtual: true } : {}),
    allowCreateOnUpdate: s.allowCreateOnUpdate ?? false,
    allowUnconditionalUpdate: s.allowUnconditionalUpdate ?? true,
    returnDeletedObject: s.returnDeletedObject ?? false,
    fields: (obj) => ({
      'metadata.name': str(obj.metadata.name),
      ...(s.namespaced ? { 'metadata.namespace': str(obj.metadata.namespace) } : {}),
      ...extra(obj),
    }),
    patchSchema: s.patchSchema ?? schema(),
  };
}

export const RESOURCES: readonly ResourceDef[] = [
  def({
    resource: 'pods',
    kind: 'Pod',
    namespaced: true,
    shortNames: ['po'],
    subresources: ['status', 'binding', 'ephemeralcontainers'],
    returnDeletedObject: true,
    fields: [
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      ['spec.hostNetwork', 'spec.hostNetwork', 'false'],
      'status.phase',
      'status.podIP',
      'status.nominatedNodeName',
    ],
    patchSchema: schema({ spec: { fields: podSpec }, status: { fields: podStatus } }),
  }),
  def({
    resource: 'nodes',
    kind: 'Node',
    namespaced: false,
    shortNames: ['no'],
    subresources: ['status'],
    fields: [['spec.unschedulable', 'spec.unschedulable', 'false']],
    patchSchema: schema({
      spec: { fields: { podCIDRs: { mergeScalars: true } } },
      // addresses really is tagged merge-by-type upstream; the kubelet works around it with $patch: replace.
      status: { fields: { conditions: { mergeKey: 'type' }, addresses: { mergeKey: 'type' } } },
    }),
  }),
  def({
    resource: 'events',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    allowCreateOnUpdate: true,
    fields: [
      'involvedObject.kind',
      'involvedObject.namespace',
      'involvedObject.name',
      'involvedObject.uid',
      'involvedObject.apiVersion',
      'involvedObject.resourceVersion',
      'involvedObject.fieldPath',
      'reason',
      'reportingComponent',
      ['source', 'source.component', ''],
      'type',
    ],
  }),
  def({ resource: 'configmaps', kind: 'ConfigMap', namespaced: true, shortNames: ['cm'] }),
  def({ resource: 'secrets', kind: 'Secret', namespaced: true, fields: ['type'] }),
  def({
    resource: 'serviceaccounts',
    kind: 'ServiceAccount',
    namespaced: true,
    shortNames: ['sa'],
    subresources: ['token'],
    patchSchema: schema({ secrets: { mergeKey: 'name' } }),
  }),
  def({
    resource: 'services',
    kind: 'Service',
    namespaced: true,
    shortNames: ['svc'],
    subresources: ['status'],
    allowCreateOnUpdate: true,
    returnDeletedObject: true,
    patchSchema: schema({
      spec: { fields: { ports: { mergeKey: 'port' } } },
      status: { fields: conditionsOnly },
    }),
  }),
  def({
    resource: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    subresources: ['status'],
    returnDeletedObject: true,
    fields: ['status.phase'],
    patchSchema: schema({ status: { fields: conditionsOnly } }),
  }),
  def({
    resource: 'persistentvolumes',
    kind: 'PersistentVolume',
    namespaced: false,
    shortNames: ['pv'],
    subresources: ['status'],
  }),
  def({
    resource: 'persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    namespaced: true,
    shortNames: ['pvc'],
    subresources: ['status'],
    patchSchema: schema({ status: { fields: conditionsOnly } }),
  }),
  // What the kubelet's CSI plugin reads (CSIDriver, VolumeAttachment) and writes (CSINode).
  def({ group: 'storage.k8s.io', resource: 'csidrivers', kind: 'CSIDriver', namespaced: false }),
  def({ group: 'storage.k8s.io', resource: 'csinodes', kind: 'CSINode', namespaced: false }),
  def({
    group: 'storage.k8s.io',
    resource: 'volumeattachments',
    kind: 'VolumeAttachment',
    namespaced: false,
    subresources: ['status'],
  }),
  def({
    group: 'node.k8s.io',
    resource: 'runtimeclasses',
    kind: 'RuntimeClass',
    namespaced: false,
  }),
  def({
    group: 'coordination.k8s.io',
    resource: 'leases',
    kind: 'Lease',
    namespaced: true,
    allowCreateOnUpdate: true,
    allowUnconditionalUpdate: false,
  }),
  def({
    group: 'certificates.k8s.io',
    resource: 'certificatesigningrequests',
    kind: 'CertificateSigningRequest',
    namespaced: false,
    shortNames: ['csr'],
    subresources: ['status', 'approval'],
    fields: ['spec.signerName'],
  }),
  def({
    group: 'authentication.k8s.io',
    resource: 'tokenreviews',
    kind: 'TokenReview',
    namespaced: false,
    virtual: true,
  }),
  def({
    group: 'authorization.k8s.io',
    resource: 'subjectaccessreviews',
    kind: 'SubjectAccessReview',
    namespaced: false,
    virtual: true,
  }),
];

export function apiVersionOf(d: ResourceDef): string {
  return d.group ? `${d.group}/${d.version}` : d.version;
}

/** The resource served at group/version/resource, if any. */
export function findResource(group: string, version: string, resource: string): ResourceDef | undefined {
  return RESOURCES.find((d) => d.group === group && d.version === version && d.resource === resource);
}

/** The resource with this plural name: resource names are unique across the groups served here. */
export function resourceByName(resource: string): ResourceDef {
  const d = RESOURCES.find((r) => r.resource === resource);
  if (!d) throw new Error(`the test API server does not serve "${resource}"`);
  return d;
}
