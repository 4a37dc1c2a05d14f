/**
 * The volume half of ValidatePodCreate (pod-validation.ts): each volume source, its files and
 * projections, and the checks both halves share. PodValidator extends it.
 */
import type { Pod, Quantity, Volume, VolumeSourceKey } from '../api/core-v1.js';
import { VOLUME_SOURCES } from '../api/core-v1.js';
import { parseQuantity } from '../api/quantity.js';
import { errorMessage } from '../lib/errors.js';
import {
  configMapKeyProblems,
  dns1123LabelProblems,
  dns1123SubdomainProblems,
  qualifiedNameProblems,
} from './name-validation.js';
import { FieldErrors } from './field-errors.js';

const MAX_QUANTITY_EXPONENT = 100;
export const FILE_MODE_MAX = 0o777;

export const FILE_MODE_MSG = 'must be a number between 0 and 0777 (octal), both inclusive';

export const NON_NEGATIVE_MSG = 'must be greater than or equal to 0';

export const MIN_TOKEN_EXPIRATION_SECONDS = 600;

export const MAX_TOKEN_EXPIRATION_SECONDS = 2 ** 32;

export const HOST_PATH_TYPES = [
  '',
  'BlockDevice',
  'CharDevice',
  'Directory',
  'DirectoryOrCreate',
  'File',
  'FileOrCreate',
  'Socket',
];

export const STORAGE_MEDIA = ['', 'HugePages', 'Memory'];

export const VOLUME_FIELD_PATHS = [
  'metadata.annotations',
  'metadata.labels',
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
];

export const CONTAINER_RESOURCE_FIELDS = [
  'limits.cpu',
  'limits.ephemeral-storage',
  'limits.memory',
  'requests.cpu',
  'requests.ephemeral-storage',
  'requests.memory',
];

/** The quantity's problem in upstream's words, or undefined when it parses. */
export function quantityProblem(q: Quantity): string | undefined {
  if (typeof q === 'string') {
    const exp = /[eE]([+-]?\d+)$/.exec(q);
    if (exp && Math.abs(Number(exp[1])) > MAX_QUANTITY_EXPONENT) return 'quantity exponent out of range';
  } else if (!Number.isFinite(q)) return 'quantity must be finite';
  try {
    parseQuantity(q);
    return undefined;
  } catch (err) {
    // The API server's words: the rule, not the parser's account of where it broke.
    const message = errorMessage(err);
    const rule = message.indexOf('quantities must match');
    return rule >= 0 ? message.slice(rule) : message;
  }
}

export function quantitySign(q: Quantity): number {
  const { nano } = parseQuantity(q);
  return nano === 0n ? 0 : nano > 0n ? 1 : -1;
}

export function hasSource(v: Volume, key: VolumeSourceKey): boolean {
  return v[key] !== undefined && v[key] !== null;
}

export interface KeyToPath {
  key?: string;
  path?: string;
  mode?: number;
}

export interface DownwardFile {
  path?: string;
  mode?: number;
  fieldRef?: { apiVersion?: string; fieldPath?: string };
  resourceFieldRef?: { containerName?: string; resource?: string; divisor?: Quantity };
}

export interface Projection {
  secret?: { name?: string; items?: KeyToPath[] };
  configMap?: { name?: string; items?: KeyToPath[] };
  downwardAPI?: { items?: DownwardFile[] };
  serviceAccountToken?: { audience?: string; expirationSeconds?: number; path?: string };
  clusterTrustBundle?: unknown;
}

export abstract class PodVolumeValidator {
  protected readonly errs = new FieldErrors();
  protected readonly volumeNames = new Set<string>();
  protected readonly volumes = new Map<string, Volume>();

  constructor(protected readonly pod: Pod) {}

  protected names(field: string, value: string, problems: string[]): boolean {
    for (const p of problems) this.errs.invalid(field, value, p);
    return problems.length === 0;
  }

  protected nonNegative(field: string, v: number | undefined): void {
    if (v !== undefined && v < 0) this.errs.invalid(field, v, NON_NEGATIVE_MSG);
  }

  /** Checks a quantity; true when it parses (and so may be compared). */
  protected quantity(field: string, q: Quantity, nonNegative = true): boolean {
    const problem = quantityProblem(q);
    if (problem) {
      this.errs.invalid(field, q, problem);
      return false;
    }
    if (nonNegative && quantitySign(q) < 0) {
      this.errs.invalid(field, q, NON_NEGATIVE_MSG);
      return false;
    }
    return true;
  }

  // ---- volumes ---------------------------------------------------------------------------------

  protected validateVolume(v: Volume, at: string): void {
    const e = this.errs;
    if (!v.name) e.required(`${at}.name`);
    else if (this.names(`${at}.name`, v.name, dns1123LabelProblems(v.name))) {
      if (this.volumeNames.has(v.name)) e.duplicate(`${at}.name`, v.name);
      else {
        this.volumeNames.add(v.name);
        this.volumes.set(v.name, v);
      }
    }
    const sources = VOLUME_SOURCES.filter((k) => hasSource(v, k));
    if (sources.length === 0) e.required(at, 'must specify a volume type');
    else if (sources.length > 1)
      e.forbidden(`${at}.${sources[1]}`, 'may not specify more than 1 volume type');
    const src = v as unknown as {
      hostPath?: { path?: string; type?: string };
      emptyDir?: { medium?: string; sizeLimit?: Quantity };
      secret?: { secretName?: string; defaultMode?: number; items?: KeyToPath[] };
      configMap?: { name?: string; defaultMode?: number; items?: KeyToPath[] };
      downwardAPI?: { defaultMode?: number; items?: DownwardFile[] };
      projected?: { defaultMode?: number; sources?: Projection[] };
      persistentVolumeClaim?: { claimName?: string };
      csi?: { driver?: string; nodePublishSecretRef?: { name?: string } };
    };
    if (src.hostPath) {
      const p = src.hostPath.path;
      if (!p) e.required(`${at}.hostPath.path`);
      else if (p.split('/').includes('..')) e.invalid(`${at}.hostPath.path`, p, "must not contain '..'");
      if (src.hostPath.type !== undefined && !HOST_PATH_TYPES.includes(src.hostPath.type))
        e.notSupported(`${at}.hostPath.type`, src.hostPath.type, HOST_PATH_TYPES);
    }
    if (src.emptyDir) {
      const m = src.emptyDir.medium;
      if (m !== undefined && !STORAGE_MEDIA.includes(m) && !m.startsWith('HugePages-'))
        e.notSupported(`${at}.emptyDir.medium`, m, STORAGE_MEDIA);
      if (src.emptyDir.sizeLimit !== undefined)
        this.quantity(`${at}.emptyDir.sizeLimit`, src.emptyDir.sizeLimit);
    }
    if (src.secret) {
      const s = src.secret;
      if (!s.secretName) e.required(`${at}.secret.secretName`);
      else this.names(`${at}.secret.secretName`, s.secretName, dns1123SubdomainProblems(s.secretName));
      this.fileMode(`${at}.secret.defaultMode`, s.defaultMode);
      this.keyToPaths(`${at}.secret.items`, s.items);
    }
    if (src.configMap) {
      const c = src.configMap;
      if (!c.name) e.required(`${at}.configMap.name`);
      else this.names(`${at}.configMap.name`, c.name, dns1123SubdomainProblems(c.name));
      this.fileMode(`${at}.configMap.defaultMode`, c.defaultMode);
      this.keyToPaths(`${at}.configMap.items`, c.items);
    }
    if (src.downwardAPI) {
      this.fileMode(`${at}.downwardAPI.defaultMode`, src.downwardAPI.defaultMode);
      this.downwardFiles(`${at}.downwardAPI.items`, src.downwardAPI.items);
    }
    if (src.projected) this.validateProjected(`${at}.projected`, src.projected);
    if (src.persistentVolumeClaim && !src.persistentVolumeClaim.claimName)
      e.required(`${at}.persistentVolumeClaim.claimName`);
    if (src.csi) this.validateCSIVolumeSource(`${at}.csi`, src.csi);
  }

  /** upstream: validateCSIVolumeSource and ValidateCSIDriverName. */
  protected validateCSIVolumeSource(
    at: string,
    csi: { driver?: string; nodePublishSecretRef?: { name?: string } },
  ): void {
    const e = this.errs;
    const driver = csi.driver;
    if (!driver) e.required(`${at}.driver`);
    else {
      if (driver.length > 63) e.tooLong(`${at}.driver`, 63);
      for (const problem of dns1123SubdomainProblems(driver.toLowerCase()))
        e.invalid(`${at}.driver`, driver, problem);
    }
    if (csi.nodePublishSecretRef && !csi.nodePublishSecretRef.name)
      e.required(`${at}.nodePublishSecretRef.name`);
  }

  protected fileMode(field: string, mode: number | undefined): void {
    if (mode !== undefined && (mode < 0 || mode > FILE_MODE_MAX))
      this.errs.invalid(field, mode, FILE_MODE_MSG);
  }

  /** A path inside a volume: relative, no '..' element, not starting with '..' (validateLocalNonReservedPath). */
  protected localPath(field: string, p: string | undefined): void {
    if (!p) {
      this.errs.required(field);
      return;
    }
    if (p.startsWith('/')) this.errs.invalid(field, p, 'must be a relative path');
    if (p.split('/').includes('..')) this.errs.invalid(field, p, "must not contain '..'");
    else if (p.startsWith('..')) this.errs.invalid(field, p, "must not start with '..'");
  }

  protected keyToPaths(at: string, items: KeyToPath[] | undefined): void {
    (items ?? []).forEach((item, i) => {
      const field = `${at}[${i}]`;
      if (!item.key) this.errs.required(`${field}.key`);
      else this.names(`${field}.key`, item.key, configMapKeyProblems(item.key));
      this.localPath(`${field}.path`, item.path);
      this.fileMode(`${field}.mode`, item.mode);
    });
  }

  protected downwardFiles(at: string, items: DownwardFile[] | undefined): void {
    (items ?? []).forEach((item, i) => {
      const field = `${at}[${i}]`;
      this.localPath(`${field}.path`, item.path);
      this.fileMode(`${field}.mode`, item.mode);
      if (item.fieldRef && item.resourceFieldRef) {
        this.errs.invalid(
          field,
          'resource',
          'fieldRef and resourceFieldRef can not be specified simultaneously',
        );
      } else if (item.fieldRef) {
        this.fieldRef(`${field}.fieldRef`, item.fieldRef, VOLUME_FIELD_PATHS);
      } else if (item.resourceFieldRef) {
        this.resourceFieldRef(`${field}.resourceFieldRef`, item.resourceFieldRef, true);
      } else {
        this.errs.required(field, 'one of fieldRef and resourceFieldRef is required');
      }
    });
  }

  protected validateProjected(at: string, p: { defaultMode?: number; sources?: Projection[] }): void {
    this.fileMode(`${at}.defaultMode`, p.defaultMode);
    const paths = new Set<string>();
    const claim = (field: string, path: string | undefined) => {
      if (!path) return;
      if (paths.has(path)) this.errs.invalid(field, path, 'conflicting duplicate paths');
      paths.add(path);
    };
    (p.sources ?? []).forEach((s, i) => {
      const field = `${at}.sources[${i}]`;
      const kinds = (
        ['secret', 'configMap', 'downwardAPI', 'serviceAccountToken', 'clusterTrustBundle'] as const
      ).filter((k) => s[k] !== undefined);
      if (kinds.length === 0) this.errs.required(field, 'must specify exactly one projection type');
      if (kinds.length > 1)
        this.errs.forbidden(`${field}.${kinds[1]}`, 'may not specify more than 1 volume type per source');
      if (s.secret || s.configMap) {
        const kind = s.secret ? 'secret' : 'configMap';
        const src = (s.secret ?? s.configMap)!;
        if (!src.name) this.errs.required(`${field}.${kind}.name`);
        this.keyToPaths(`${field}.${kind}.items`, src.items);
        (src.items ?? []).forEach((it, j) => claim(`${field}.${kind}.items[${j}].path`, it.path));
      }
      if (s.downwardAPI) {
        this.downwardFiles(`${field}.downwardAPI.items`, s.downwardAPI.items);
        (s.downwardAPI.items ?? []).forEach((it, j) =>
          claim(`${field}.downwardAPI.items[${j}].path`, it.path),
        );
      }
      if (s.serviceAccountToken) {
        const t = s.serviceAccountToken;
        const sat = `${field}.serviceAccountToken`;
        if (t.expirationSeconds !== undefined) {
          if (t.expirationSeconds < MIN_TOKEN_EXPIRATION_SECONDS)
            this.errs.invalid(
              `${sat}.expirationSeconds`,
              t.expirationSeconds,
              'may not specify a duration less than 10 minutes',
            );
          else if (t.expirationSeconds > MAX_TOKEN_EXPIRATION_SECONDS)
            this.errs.invalid(
              `${sat}.expirationSeconds`,
              t.expirationSeconds,
              'may not specify a duration larger than 2^32 seconds',
            );
        }
        this.localPath(`${sat}.path`, t.path);
        claim(`${sat}.path`, t.path);
      }
    });
  }

  protected fieldRef(
    field: string,
    ref: { apiVersion?: string; fieldPath?: string },
    allowed: string[],
  ): void {
    if (!ref.fieldPath) {
      this.errs.required(`${field}.fieldPath`);
      return;
    }
    if (ref.apiVersion !== undefined && ref.apiVersion !== 'v1' && ref.apiVersion !== '')
      this.errs.invalid(`${field}.apiVersion`, ref.apiVersion, 'only "v1" is supported');
    const m = /^(metadata\.(?:labels|annotations))\['(.*)'\]$/.exec(ref.fieldPath);
    if (m) {
      const problems = qualifiedNameProblems(m[1] === 'metadata.annotations' ? m[2]!.toLowerCase() : m[2]!);
      this.names(`${field}.fieldPath`, ref.fieldPath, problems);
      return;
    }
    if (!allowed.includes(ref.fieldPath))
      this.errs.notSupported(`${field}.fieldPath`, ref.fieldPath, allowed);
  }

  protected resourceFieldRef(
    field: string,
    ref: { containerName?: string; resource?: string; divisor?: Quantity },
    needsContainer: boolean,
  ): void {
    if (needsContainer && !ref.containerName) this.errs.required(`${field}.containerName`);
    if (!ref.resource) this.errs.required(`${field}.resource`);
    else if (
      !CONTAINER_RESOURCE_FIELDS.includes(ref.resource) &&
      !/^(limits|requests)\.hugepages-/.test(ref.resource)
    )
      this.errs.notSupported(`${field}.resource`, ref.resource, CONTAINER_RESOURCE_FIELDS);
    if (
      ref.divisor !== undefined &&
      this.quantity(`${field}.divisor`, ref.divisor) &&
      quantitySign(ref.divisor) === 0
    )
      this.errs.invalid(`${field}.divisor`, ref.divisor, 'must be greater than zero');
  }

  // ---- containers ------------------------------------------------------------------------------
}
