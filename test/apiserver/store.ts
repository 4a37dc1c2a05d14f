/**
 * The objects of the test API server and the rules for changing them, after the real server's
 * generic registry (registry/generic/registry/store.go) over etcd: one global resourceVersion
 * counter, optimistic concurrency, graceful deletion with preconditions and finalizers, status
 * subresources that change only status, and a no-op update that writes nothing. Tests may call it
 * directly; the HTTP handlers call the same methods.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../src/lib/clock.js';
import {
  alreadyExists,
  badRequest,
  conflict,
  forbidden,
  internalError,
  invalid,
  notFound,
  OPTIMISTIC_LOCK_MESSAGE,
  resourceExpired,
  type FieldError,
} from './api-error.js';
import { defaultEphemeralContainers, prepareForCreate, randomSuffix } from './admission.js';
import type { Pod } from '../../src/api/core-v1.js';
import { validateEphemeralContainersUpdate } from '../../src/config/pod-validation.js';
import { applyPatch, deepEqual, type Json, type JsonObject, type PatchType } from './patch.js';
import { apiVersionOf, resourceByName, type KubeObject, type ResourceDef } from './resources.js';
import { parseFieldSelector, parseLabelSelector, type FieldSelector } from './selectors.js';
import { WatchHub, type StoreEvent } from './watch-hub.js';

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
}

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
}

export interface DeleteResult {
  /** True when the object is gone; false while it waits for its grace period or finalizers. */
  deleted: boolean;
  /** The object as it is now, or as it last was. */
  object: KubeObject;
}

export interface UpdateOptions {
  /** `approval`: only status.conditions change (CertificateSigningRequests). */
  subresource?: 'status' | 'approval' | 'ephemeralcontainers';
}

export interface StoreOptions {
  clock: Clock;
  bookmarkIntervalMs: number;
  historyLimit: number;
  /** The CA the kube-root-ca.crt config map of each namespace publishes. */
  rootCaPem: string;
  /**
   * A pods/status write without qosClass keeps the stored one (v1.29 and later: the podStatusStrategy
   * backfills what older kubelets dropped on rejection). A v1.28 server lets the write clear it.
   */
  backfillPodQosClass: boolean;
}

const INITIAL_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

function keyOf(def: ResourceDef, namespace: string | undefined, name: string): string {
  return def.namespaced ? `${namespace ?? ''}/${name}` : name;
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

/** metav1.Time: RFC 3339 in UTC, whole seconds. */
export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

const METADATA_ORDER = [
  'name',
  'generateName',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
];

/** Puts keys in the order Go's encoder writes them (struct order), so responses read like the real ones. */
function canonical(o: KubeObject): KubeObject {
  const meta: Record<string, unknown> = {};
  for (const k of METADATA_ORDER) if (o.metadata[k] !== undefined) meta[k] = o.metadata[k];
  for (const [k, v] of Object.entries(o.metadata)) if (!(k in meta) && v !== undefined) meta[k] = v;
  const { kind, apiVersion, metadata: _metadata, spec, status, ...rest } = o;
  return {
    kind,
    apiVersion,
    metadata: meta as KubeObject['metadata'],
    ...rest,
    ...(spec !== undefined ? { spec } : {}),
    ...(status !== undefined ? { status } : {}),
  };
}

/** What survives of an object for a no-op comparison: everything but its resourceVersion. */
function withoutVersion(o: KubeObject): KubeObject {
  const c = clone(o);
  delete c.metadata.resourceVersion;
  return c;
}

export class ObjectStore {
  readonly hub: WatchHub;
  private revision = 0;
  private readonly objects = new Map<ResourceDef, Map<string, KubeObject>>();
  private clusterIpCounter = 10;

  constructor(private readonly opts: StoreOptions) {
    this.hub = new WatchHub(
      {
        currentResourceVersion: () => this.revision,
        objectsOf: (def, namespace) => this.snapshot(def, namespace),
      },
      { clock: opts.clock, bookmarkIntervalMs: opts.bookmarkIntervalMs, historyLimit: opts.historyLimit },
    );
    for (const name of INITIAL_NAMESPACES) this.create('namespaces', { metadata: { name } });
  }

  /** The newest resourceVersion handed out, as a string like the API's. */
  get resourceVersion(): string {
    return String(this.revision);
  }

  currentRevision(): number {
    return this.revision;
  }

  private table(def: ResourceDef): Map<string, KubeObject> {
    let t = this.objects.get(def);
    if (!t) {
      t = new Map();
      this.objects.set(def, t);
    }
    return t;
  }

  private snapshot(def: ResourceDef, namespace: string | undefined): KubeObject[] {
    const t = this.table(def);
    return [...t.keys()]
      .sort()
      .map((k) => t.get(k)!)
      .filter((o) => !def.namespaced || !namespace || o.metadata.namespace === namespace)
      .map(clone);
  }

  private now(): string {
    return formatTime(this.opts.clock.now());
  }

  private write(
    def: ResourceDef,
    type: StoreEvent['type'],
    object: KubeObject,
    prev?: KubeObject,
  ): KubeObject {
    const rv = ++this.revision;
    const t = this.table(def);
    const key = keyOf(def, object.metadata.namespace, object.metadata.name ?? '');
    object.metadata.resourceVersion = String(rv);
    object = canonical(object);
    if (type === 'DELETED') t.delete(key);
    else t.set(key, object);
    this.hub.publish({
      type,
      def,
      object: clone(object),
      ...(prev ? { prevObject: clone(prev) } : {}),
      resourceVersion: rv,
    });
    return clone(object);
  }

  // ---- read --------------------------------------------------------------------------------------

  tryGet(resource: string, name: string, namespace?: string): KubeObject | undefined {
    const def = resourceByName(resource);
    const o = this.table(def).get(keyOf(def, namespace, name));
    return o ? clone(o) : undefined;
  }

  get(resource: string, name: string, namespace?: string): KubeObject {
    const def = resourceByName(resource);
    const o = this.tryGet(resource, name, namespace);
    if (!o) throw notFound(def, name);
    return o;
  }

  /** Parses a field selector, refusing fields the resource cannot be selected by, as its GetAttrs does. */
  static fieldSelectorFor(def: ResourceDef, selector: string | undefined): FieldSelector {
    const fields = parseFieldSelector(selector);
    const known = def.fields({ metadata: {} });
    for (const r of fields.requirements) {
      if (!(r.field in known)) throw badRequest(`field label not supported: ${r.field}`);
    }
    return fields;
  }

  list(resource: string, opts: ListOptions = {}): ListResult {
    const def = resourceByName(resource);
    const labels = parseLabelSelector(opts.labelSelector);
    const fields = ObjectStore.fieldSelectorFor(def, opts.fieldSelector);
    const t = this.table(def);
    let keys = [...t.keys()].sort();
    let listRevision = this.revision;
    if (opts.continue) {
      const token = decodeContinue(opts.continue);
      if (token.rv < this.hub.compactedTo) {
        throw resourceExpired(
          'The provided continue parameter is too old to display a consistent list result. ' +
            'You can start a new list without the continue parameter.',
        );
      }
      listRevision = token.rv;
      keys = keys.filter((k) => k >= token.start);
    }
    const matching = keys
      .map((k) => t.get(k)!)
      .filter(
        (o) =>
          (!def.namespaced || !opts.namespace || o.metadata.namespace === opts.namespace) &&
          labels.matches(o.metadata.labels) &&
          fields.matches(def.fields(o)),
      );
    // A list served from the watch cache (resourceVersion=0) ignores limit, as upstream's does.
    const limit = opts.resourceVersion === '0' ? 0 : (opts.limit ?? 0);
    if (limit > 0 && matching.length > limit) {
      const page = matching.slice(0, limit);
      const last = page[page.length - 1]!;
      const selectsAll = labels.requirements.length === 0 && fields.requirements.length === 0;
      return {
        items: page.map(clone),
        resourceVersion: String(listRevision),
        continue: encodeContinue(
          listRevision,
          keyOf(def, last.metadata.namespace, last.metadata.name ?? '') + '\u0000',
        ),
        ...(selectsAll ? { remainingItemCount: matching.length - limit } : {}),
      };
    }
    return { items: matching.map(clone), resourceVersion: String(listRevision) };
  }

  // ---- create ------------------------------------------------------------------------------------

  create(resource: string, input: KubeObject | Record<string, unknown>, namespace?: string): KubeObject {
    const def = resourceByName(resource);
    if (def.virtual) throw new Error(`${resource} are not stored`);
    const o = clone(input) as KubeObject;
    o.metadata = o.metadata ?? {};
    const meta = o.metadata;
    if (def.namespaced) {
      if (namespace !== undefined && meta.namespace && meta.namespace !== namespace) {
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      meta.namespace = meta.namespace || namespace || 'default';
      this.checkNamespaceOpen(def, meta.namespace, meta.name ?? meta.generateName ?? '');
    } else {
      delete meta.namespace;
    }
    if (meta.resourceVersion)
      throw internalError(new Error('resourceVersion should not be set on objects to be created'));
    if (!meta.name && meta.generateName)
      meta.name = this.generateName(def, meta.namespace, meta.generateName);
    if (!meta.name) {
      throw invalid({ group: def.group, kind: def.kind }, '', [
        {
          type: 'FieldValueRequired',
          field: 'metadata.name',
          body: 'Required value: name or generateName is required',
        },
      ]);
    }
    o.apiVersion = apiVersionOf(def);
    o.kind = def.kind;
    meta.uid = randomUUID();
    meta.creationTimestamp = this.now();
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    delete meta.generation;
    prepareForCreate(def.resource, o, {
      getServiceAccount: (ns, name) => this.tryGet('serviceaccounts', name, ns),
      getRuntimeClass: (name) => this.tryGet('runtimeclasses', name),
      nextClusterIp: () => `10.96.0.${this.clusterIpCounter++}`,
    });
    if (this.table(def).has(keyOf(def, meta.namespace, meta.name))) throw alreadyExists(def, meta.name);
    const created = this.write(def, 'ADDED', o);
    if (def.resource === 'namespaces') this.populateNamespace(meta.name);
    return created;
  }

  private generateName(def: ResourceDef, namespace: string | undefined, prefix: string): string {
    // SimpleNameGenerator keeps the name within 63 characters; the server retries a clash.
    const base = prefix.length > 58 ? prefix.slice(0, 58) : prefix;
    for (;;) {
      const name = base + randomSuffix();
      if (!this.table(def).has(keyOf(def, namespace, name))) return name;
    }
  }

  private checkNamespaceOpen(def: ResourceDef, namespace: string, name: string): void {
    const ns = this.tryGet('namespaces', namespace);
    if (!ns) throw notFound({ group: '', resource: 'namespaces' }, namespace);
    if (ns.metadata.deletionTimestamp) {
      throw forbidden(
        def,
        name,
        `unable to create new content in namespace ${namespace} because it is being terminated`,
      );
    }
  }

  /** What the service account and root CA publisher controllers put in every new namespace. */
  private populateNamespace(namespace: string): void {
    this.create('serviceaccounts', { metadata: { name: 'default', namespace } });
    this.create('configmaps', {
      metadata: {
        name: 'kube-root-ca.crt',
        namespace,
        annotations: {
          'kubernetes.io/description':
            'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.',
        },
      },
      data: { 'ca.crt': this.opts.rootCaPem },
    });
  }

  // ---- update ------------------------------------------------------------------------------------

  /** PUT: replaces the object, or with subresource 'status' only its status. */
  update(resource: string, input: KubeObject, opts: UpdateOptions = {}): KubeObject {
    return this.updateInternal(resourceByName(resource), clone(input), opts, false);
  }

  updateStatus(resource: string, input: KubeObject): KubeObject {
    return this.update(resource, input, { subresource: 'status' });
  }

  private updateInternal(
    def: ResourceDef,
    o: KubeObject,
    opts: UpdateOptions,
    fromPatch: boolean,
  ): KubeObject {
    if (opts.subresource && !def.subresources.includes(opts.subresource))
      throw notFound(def, o.metadata?.name ?? '');
    const meta = o.metadata;
    const name = meta.name ?? '';
    if (!def.namespaced) delete meta.namespace;
    const key = keyOf(def, meta.namespace, name);
    const existing = this.table(def).get(key);
    if (!existing) {
      if (!def.allowCreateOnUpdate || opts.subresource) throw notFound(def, name);
      delete meta.resourceVersion;
      return this.create(def.resource, o);
    }
    const qualifiedKind = { group: def.group, kind: def.kind };
    if (!meta.resourceVersion) {
      if (!def.allowUnconditionalUpdate) {
        throw invalid(qualifiedKind, name, [
          {
            type: 'FieldValueInvalid',
            field: 'metadata.resourceVersion',
            body: 'Invalid value: 0x0: must be specified for an update',
          },
        ]);
      }
    } else if (meta.resourceVersion !== existing.metadata.resourceVersion) {
      throw conflict(def, name, OPTIMISTIC_LOCK_MESSAGE);
    }
    if (meta.uid && meta.uid !== existing.metadata.uid) {
      // A PUT carries its UID as a storage precondition; a patch meets the immutable-field check.
      if (!fromPatch) {
        throw conflict(
          def,
          name,
          `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${existing.metadata.uid ?? ''}`,
        );
      }
      throw invalid(qualifiedKind, name, [
        {
          type: 'FieldValueInvalid',
          field: 'metadata.uid',
          body: `Invalid value: "${meta.uid}": field is immutable`,
        },
      ]);
    }

    let next: KubeObject;
    if (opts.subresource === 'approval') {
      // The CSR approval strategy: everything but status.conditions comes from the stored object.
      next = { ...clone(existing), metadata: meta };
      const conditions = (o.status as { conditions?: unknown } | undefined)?.conditions;
      const status = { ...((existing.status as Record<string, unknown> | undefined) ?? {}) };
      if (conditions === undefined) delete status.conditions;
      else status.conditions = conditions;
      next.status = status;
    } else if (opts.subresource === 'ephemeralcontainers') {
      next = ephemeralContainersUpdate(existing, o);
    } else if (opts.subresource === 'status') {
      // Status strategies: everything but status and metadata comes from the stored object.
      next = { ...clone(existing), metadata: meta, status: o.status };
      if (o.status === undefined) delete next.status;
      if (def.resource === 'pods') {
        next.metadata.ownerReferences = existing.metadata.ownerReferences;
        if (next.metadata.ownerReferences === undefined) delete next.metadata.ownerReferences;
        const status = next.status as Record<string, unknown> | undefined;
        const oldStatus = existing.status as Record<string, unknown> | undefined;
        if (this.opts.backfillPodQosClass && status && !status.qosClass && oldStatus?.qosClass)
          status.qosClass = oldStatus.qosClass;
      }
    } else {
      next = o;
      if (def.subresources.includes('status')) {
        if (existing.status === undefined) delete next.status;
        else next.status = clone(existing.status);
      }
    }

    // rest.BeforeUpdate: what no update may change.
    const nm = next.metadata;
    nm.uid = existing.metadata.uid;
    nm.namespace = existing.metadata.namespace;
    if (nm.namespace === undefined) delete nm.namespace;
    nm.creationTimestamp = existing.metadata.creationTimestamp;
    if (existing.metadata.generation === undefined) delete nm.generation;
    else nm.generation = existing.metadata.generation;
    if (existing.metadata.deletionTimestamp) nm.deletionTimestamp = existing.metadata.deletionTimestamp;
    else delete nm.deletionTimestamp;
    if (
      existing.metadata.deletionGracePeriodSeconds !== undefined &&
      nm.deletionGracePeriodSeconds === undefined
    ) {
      nm.deletionGracePeriodSeconds = existing.metadata.deletionGracePeriodSeconds;
    }
    next.apiVersion = apiVersionOf(def);
    next.kind = def.kind;
    if (def.resource === 'pods' && nm.generation !== undefined && !deepEqual(next.spec, existing.spec)) {
      nm.generation++;
    }
    nm.resourceVersion = existing.metadata.resourceVersion;

    // etcd's GuaranteedUpdate writes nothing, and bumps no version, when nothing changed.
    if (deepEqual(withoutVersion(next), withoutVersion(existing))) return clone(existing);

    // An update that removes the last finalizer of an object being deleted completes the deletion.
    if (
      existing.metadata.deletionTimestamp &&
      existing.metadata.deletionGracePeriodSeconds === 0 &&
      (nm.finalizers ?? []).length === 0
    ) {
      const gone = this.write(def, 'DELETED', next, existing);
      this.reapNamespaces();
      return gone;
    }
    return this.write(def, 'MODIFIED', next, existing);
  }

  // ---- patch -------------------------------------------------------------------------------------

  patch(
    resource: string,
    name: string,
    namespace: string | undefined,
    type: PatchType,
    body: Json,
    opts: UpdateOptions = {},
  ): KubeObject {
    const def = resourceByName(resource);
    const existing = this.get(resource, name, namespace);
    const patched = applyPatch(
      type,
      existing as unknown as JsonObject,
      body,
      def.patchSchema,
    ) as unknown as KubeObject;
    const meta = (patched.metadata ??= {});
    if (meta.name !== name) {
      throw badRequest(
        `the name of the object (${String(meta.name)}) does not match the name on the URL (${name})`,
      );
    }
    if (def.namespaced && meta.namespace !== existing.metadata.namespace) {
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    // A patch applies to the current object; a resourceVersion it carries acts as a precondition.
    meta.resourceVersion ||= existing.metadata.resourceVersion;
    return this.updateInternal(def, patched, opts, true);
  }

  /** pods/binding: assigns an unbound pod to a node and marks it scheduled, as the scheduler's bind does. */
  bindPod(name: string, namespace: string, nodeName: string): KubeObject {
    const def = resourceByName('pods');
    const existing = this.get('pods', name, namespace);
    const spec = (existing.spec ?? {}) as Record<string, unknown>;
    // BindingREST wraps these refusals as a Conflict on the pods/binding resource.
    const refuse = (why: string) => conflict({ group: '', resource: 'pods/binding' }, name, why);
    if (existing.metadata.deletionTimestamp)
      throw refuse(`pod ${name} is being deleted, cannot be assigned to a host`);
    if (spec.nodeName) throw refuse(`pod ${name} is already assigned to node "${String(spec.nodeName)}"`);
    const next = clone(existing);
    (next.spec as Record<string, unknown>).nodeName = nodeName;
    const status = (next.status ?? {}) as { conditions?: Record<string, unknown>[] };
    const conditions = (status.conditions ?? []).filter((c) => c.type !== 'PodScheduled');
    conditions.push({
      type: 'PodScheduled',
      status: 'True',
      lastProbeTime: null,
      lastTransitionTime: this.now(),
    });
    status.conditions = conditions;
    next.status = status;
    return this.write(def, 'MODIFIED', next, existing);
  }

  // ---- delete ------------------------------------------------------------------------------------

  delete(resource: string, name: string, namespace?: string, options: DeleteOptions = {}): DeleteResult {
    const def = resourceByName(resource);
    const key = keyOf(def, namespace, name);
    const existing = this.table(def).get(key);
    if (!existing) throw notFound(def, name);
    const pre = options.preconditions;
    // rest.BeforeDelete names the Kind, not the resource, in these two conflicts.
    const byKind = { group: def.group, resource: def.kind };
    if (pre?.uid !== undefined && pre.uid !== existing.metadata.uid) {
      throw conflict(
        byKind,
        name,
        `the UID in the precondition (${pre.uid}) does not match the UID in record (${existing.metadata.uid ?? ''}). The object might have been deleted and then recreated`,
      );
    }
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== existing.metadata.resourceVersion) {
      throw conflict(
        byKind,
        name,
        `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${existing.metadata.resourceVersion ?? ''}). The object might have been modified`,
      );
    }
    if (def.resource === 'namespaces') return this.deleteNamespace(existing);

    const next = clone(existing);
    const meta = next.metadata;
    const nowMs = this.opts.clock.now();
    let graceful = false;
    let requested = options.gracePeriodSeconds;
    if (requested !== undefined && requested < 0) requested = 1;

    if (meta.deletionTimestamp) {
      const current = meta.deletionGracePeriodSeconds;
      if (current !== undefined && current !== 0) {
        // Only a shorter grace period may be asked for once deletion has begun.
        if (requested === undefined || requested >= current)
          return { deleted: false, object: clone(existing) };
        const start = Date.parse(meta.deletionTimestamp) - current * 1000;
        meta.deletionTimestamp = formatTime(start + requested * 1000);
        meta.deletionGracePeriodSeconds = requested;
        graceful = true;
      }
    } else if (def.resource === 'pods') {
      // podStrategy.CheckGracefulDelete.
      const spec = (next.spec ?? {}) as Record<string, unknown>;
      const phase = (next.status as Record<string, unknown> | undefined)?.phase;
      let period = requested ?? (spec.terminationGracePeriodSeconds as number | undefined) ?? 0;
      if (!spec.nodeName) period = 0;
      if (phase === 'Failed' || phase === 'Succeeded') period = 0;
      if (period < 0) period = 1;
      meta.deletionTimestamp = formatTime(nowMs + period * 1000);
      meta.deletionGracePeriodSeconds = period;
      if (meta.generation !== undefined && meta.generation > 0) meta.generation++;
      graceful = true;
    }

    const pendingFinalizers = (meta.finalizers ?? []).length > 0;
    if (graceful || pendingFinalizers) {
      if (!graceful && !meta.deletionTimestamp) {
        meta.deletionTimestamp = formatTime(nowMs);
        meta.deletionGracePeriodSeconds = 0;
      }
      const updated = deepEqual(next, existing)
        ? clone(existing)
        : this.write(def, 'MODIFIED', next, existing);
      if (pendingFinalizers || (meta.deletionGracePeriodSeconds ?? 0) > 0)
        return { deleted: false, object: updated };
      return this.remove(def, this.table(def).get(key)!);
    }
    return this.remove(def, existing);
  }

  private remove(def: ResourceDef, existing: KubeObject): DeleteResult {
    const gone = this.write(def, 'DELETED', clone(existing), existing);
    this.reapNamespaces();
    return { deleted: true, object: gone };
  }

  /** The namespace lifecycle: mark it terminating, delete what it holds, and drop it once empty. */
  private deleteNamespace(existing: KubeObject): DeleteResult {
    const name = existing.metadata.name ?? '';
    if (!existing.metadata.deletionTimestamp) {
      const next = clone(existing);
      next.metadata.deletionTimestamp = this.now();
      next.metadata.deletionGracePeriodSeconds = 0;
      next.status = { phase: 'Terminating' };
      this.write(resourceByName('namespaces'), 'MODIFIED', next, existing);
      for (const [def, t] of this.objects) {
        if (!def.namespaced) continue;
        for (const o of [...t.values()]) {
          if (o.metadata.namespace !== name || o.metadata.deletionTimestamp) continue;
          this.delete(def.resource, o.metadata.name ?? '', name);
        }
      }
      this.reapNamespaces();
    }
    const now = this.tryGet('namespaces', name);
    return now ? { deleted: false, object: now } : { deleted: true, object: existing };
  }

  private reapNamespaces(): void {
    const nsDef = resourceByName('namespaces');
    for (const ns of [...this.table(nsDef).values()]) {
      if (!ns.metadata.deletionTimestamp) continue;
      const name = ns.metadata.name;
      let empty = true;
      for (const [def, t] of this.objects) {
        if (def.namespaced && [...t.values()].some((o) => o.metadata.namespace === name)) empty = false;
      }
      if (empty) this.write(nsDef, 'DELETED', clone(ns), ns);
    }
  }

  /** DELETE on a collection: deletes each selected object and returns them as they were. */
  deleteCollection(resource: string, opts: ListOptions, options: DeleteOptions = {}): KubeObject[] {
    const listed = this.list(resource, { ...opts, limit: 0 });
    for (const o of listed.items) {
      try {
        this.delete(resource, o.metadata.name ?? '', o.metadata.namespace, options);
      } catch (err) {
        if (!(err instanceof Error && 'status' in err && (err as { code?: number }).code === 404)) throw err;
      }
    }
    return listed.items;
  }
}

function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64url');
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
      v?: string;
      rv?: number;
      start?: string;
    };
    if (v.v !== 'meta.k8s.io/v1' || typeof v.rv !== 'number' || typeof v.start !== 'string')
      throw new Error();
    return { rv: v.rv, start: v.start };
  } catch {
    throw badRequest(
      'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
    );
  }
}

/**
 * The ephemeralcontainers strategy: the stored pod with only spec.ephemeralContainers (defaulted)
 * taken from the request, checked as ValidatePodEphemeralContainersUpdate does.
 */
function ephemeralContainersUpdate(existing: KubeObject, o: KubeObject): KubeObject {
  const next = clone(existing);
  next.metadata.resourceVersion = o.metadata.resourceVersion;
  const spec = next.spec as Record<string, unknown>;
  const requested = (o.spec as { ephemeralContainers?: unknown } | undefined)?.ephemeralContainers;
  if (requested === undefined) delete spec.ephemeralContainers;
  else spec.ephemeralContainers = requested;
  defaultEphemeralContainers(next);
  const errs = validateEphemeralContainersUpdate(next as unknown as Pod, existing as unknown as Pod);
  if (errs.length > 0) {
    throw invalid(
      { group: '', kind: 'Pod' },
      existing.metadata.name ?? '',
      errs.map((e) => ({ type: fieldErrorType(e.detail), field: e.field, body: e.detail })),
    );
  }
  return next;
}

/** The StatusReason cause type of a field error, from the words its detail starts with. */
function fieldErrorType(detail: string): FieldError['type'] {
  if (detail.startsWith('Forbidden')) return 'FieldValueForbidden';
  if (detail.startsWith('Not found')) return 'FieldValueNotFound';
  if (detail.startsWith('Duplicate')) return 'FieldValueDuplicate';
  if (detail.startsWith('Required')) return 'FieldValueRequired';
  if (detail.startsWith('Unsupported')) return 'FieldValueNotSupported';
  return 'FieldValueInvalid';
}
