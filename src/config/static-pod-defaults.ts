/**
 * How a manifest from a file or URL becomes a pod this node runs (upstream pkg/kubelet/config/
 * common.go): decode, check it is a v1 Pod, give it a stable UID, suffix its name with the node's,
 * default and validate it as the API server would.
 *
 * The UID is an md5 (hex) of the manifest's decoded content (keys sorted, so formatting and key
 * order do not matter), then `host:<nodeName>` and `file:<path>` for files, or `url:<url>` for the
 * URL source. It is therefore stable across restarts, different on each node, and changes when
 * the manifest's content changes — which is how an edited static pod is replaced. Upstream hashes
 * Go's in-memory object instead, so the same manifest gets a different UID under the Go kubelet.
 */
import { createHash } from 'node:crypto';

import type { Pod, PodList } from '../api/core-v1.js';
import { KubeletError } from '../lib/errors.js';
import { CONFIG_HASH_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../api/pod-source.js';
import { parseAllYaml11Documents } from '../lib/yaml11.js';
import type { PodSource } from './types.js';
import { applyPodApiDefaults } from './pod-defaults.js';
import { fieldErrorText, type FieldError } from './field-errors.js';
import { validatePodFields } from './pod-validation.js';
import { decodePod } from './pod-schema.js';

/** Upstream refuses manifests larger than this. */
export const MAX_MANIFEST_BYTES = 10 * 1024 * 1024;

export interface StaticPodOrigin {
  source: Extract<PodSource, 'file' | 'http'>;
  /** The manifest's file path or URL; part of the UID. */
  location: string;
  nodeName: string;
}

function invalidManifest(message: string, cause?: unknown): KubeletError {
  return new KubeletError('INVALID_MANIFEST', message, { cause });
}

/** The most field errors one message lists; a pod with thousands of bad fields stays one short line. */
const MAX_LISTED_FIELD_ERRORS = 10;

function invalidPod(what: string, errs: FieldError[]): KubeletError {
  const listed = errs.slice(0, MAX_LISTED_FIELD_ERRORS).map(fieldErrorText);
  if (errs.length > listed.length) listed.push(`and ${errs.length - listed.length} more`);
  return invalidManifest(`${what}: invalid pod: ${listed.join('; ')}`);
}

/** Parses YAML or JSON holding exactly one document; `what` names it in messages. */
export function parseManifestDocument(text: string, what: string): unknown {
  // JSON is read as JSON, as upstream's YAMLOrJSONDecoder does for a document that starts with '{':
  // many times faster than the YAML parser. What JSON.parse refuses gets the YAML parser's message.
  if (/^\s*\{/.test(text)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // not JSON after all (a YAML flow mapping, or broken): the YAML parser reads or explains it
    }
  }
  let docs;
  try {
    // YAML 1.1, as upstream's decoder reads it: `defaultMode: 0400` is 256.
    docs = parseAllYaml11Documents(text, { uniqueKeys: true, prettyErrors: true });
  } catch (err) {
    throw invalidManifest(`${what}: ${(err as Error).message}`, err);
  }
  const nonEmpty = docs.filter((d) => d.contents !== null || d.errors.length > 0);
  for (const d of nonEmpty) {
    const first = d.errors[0];
    if (first) throw invalidManifest(`${what}: ${first.message}`, first);
  }
  if (nonEmpty.length === 0) throw invalidManifest(`${what}: the manifest is empty`);
  if (nonEmpty.length > 1)
    throw invalidManifest(`${what}: holds ${nonEmpty.length} YAML documents; put one pod per file`);
  return nonEmpty[0]!.toJS({ maxAliasCount: 100 }) as unknown;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Turns a decoded single-Pod manifest into the pod the node runs. Throws INVALID_MANIFEST. */
export function staticPodFromObject(obj: unknown, origin: StaticPodOrigin, what: string): Pod {
  if (!isObject(obj)) throw invalidManifest(`${what}: expected a Pod object`);
  const kind = obj.kind;
  const apiVersion = obj.apiVersion;
  if (kind === undefined || kind === '') throw invalidManifest(`${what}: Object 'Kind' is missing`);
  if (kind !== 'Pod' || apiVersion !== 'v1') {
    throw invalidManifest(
      `${what}: expected apiVersion "v1" and kind "Pod", got apiVersion ${JSON.stringify(apiVersion ?? '')} and kind ${JSON.stringify(kind)}`,
    );
  }
  return defaultAndValidate(obj, origin, what);
}

/** The URL source accepts a single Pod or a PodList (whose items may omit kind and apiVersion). */
export function staticPodsFromObject(obj: unknown, origin: StaticPodOrigin, what: string): Pod[] {
  if (isObject(obj) && obj.kind === 'PodList') {
    if (obj.apiVersion !== 'v1')
      throw invalidManifest(
        `${what}: expected apiVersion "v1" for PodList, got ${JSON.stringify(obj.apiVersion ?? '')}`,
      );
    const items = (obj as unknown as PodList).items ?? [];
    if (!Array.isArray(items)) throw invalidManifest(`${what}: PodList items must be a list`);
    return items.map((item, i) => {
      if (!isObject(item)) throw invalidManifest(`${what}: items[${i}]: expected a Pod object`);
      if (
        (item.kind !== undefined && item.kind !== 'Pod') ||
        (item.apiVersion !== undefined && item.apiVersion !== 'v1')
      ) {
        throw invalidManifest(`${what}: items[${i}]: expected a v1 Pod`);
      }
      return defaultAndValidate({ ...item, apiVersion: 'v1', kind: 'Pod' }, origin, `${what}: items[${i}]`);
    });
  }
  return [staticPodFromObject(obj, origin, what)];
}

function defaultAndValidate(obj: Record<string, unknown>, origin: StaticPodOrigin, what: string): Pod {
  // Go's decoder refuses wrong JSON types before anything else looks at the pod.
  const decoded = decodePod(obj);
  if (decoded.errors.length > 0) throw invalidPod(what, decoded.errors);
  const pod = decoded.pod!;
  if (!pod.metadata.name) throw invalidManifest(`${what}: invalid pod: name is needed for the pod`);
  applyStaticPodDefaults(pod, obj, origin);
  const errs = validatePodFields(pod);
  if (errs.length > 0) throw invalidPod(what, errs);
  return pod;
}

/**
 * Upstream's applyDefaults for file and http pods plus the API server's defaults, in place.
 * `decoded` is the manifest as decoded, whose content the UID is derived from.
 */
export function applyStaticPodDefaults(pod: Pod, decoded: unknown, origin: StaticPodOrigin): Pod {
  const meta = pod.metadata;
  if (!meta.uid) meta.uid = staticPodUid(decoded, origin);
  meta.name = `${meta.name ?? ''}-${origin.nodeName.toLowerCase()}`;
  if (!meta.namespace) meta.namespace = 'default';
  pod.spec.nodeName = origin.nodeName;
  meta.annotations = {
    ...meta.annotations,
    [CONFIG_HASH_ANNOTATION]: meta.uid,
    [CONFIG_SOURCE_ANNOTATION]: origin.source,
  };
  if (origin.source === 'file') {
    // Static pods tolerate every NoExecute taint, so node problems never evict them.
    const tolerations = (pod.spec.tolerations ??= []);
    const existing = tolerations.find(
      (t) => (t.key ?? '') === '' && t.operator === 'Exists' && t.effect === 'NoExecute',
    );
    if (!existing) tolerations.push({ operator: 'Exists', effect: 'NoExecute' });
  }
  applyPodApiDefaults(pod);
  pod.status = { ...pod.status, phase: 'Pending' };
  return pod;
}

/** The UID of a manifest without one: see the file comment. */
export function staticPodUid(decoded: unknown, origin: StaticPodOrigin): string {
  const h = createHash('md5');
  h.update(canonicalJson(decoded));
  if (origin.source === 'file') {
    h.update(`host:${origin.nodeName}`);
    h.update(`file:${origin.location}`);
  } else {
    h.update(`url:${origin.location}`);
  }
  return h.digest('hex');
}

/** JSON with object keys sorted at every level, so equal content hashes equally. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}
