/**
 * The file --image-credential-provider-config names: a `CredentialProviderConfig` of
 * `kubelet.config.k8s.io` (v1, v1beta1 or v1alpha1), read and validated as upstream's
 * credentialprovider/plugin config.go does, with its messages.
 */
import { formatGoDuration, parseGoDurationMs } from '../lib/go-duration.js';
import { parseYaml11 } from '../lib/yaml11.js';
import { CREDENTIAL_PROVIDER_API_VERSIONS } from './plugin-api.js';
import { parseSchemelessUrl } from './url-match.js';

export const CREDENTIAL_PROVIDER_CONFIG_KIND = 'CredentialProviderConfig';
const CONFIG_API_VERSIONS = [
  'kubelet.config.k8s.io/v1',
  'kubelet.config.k8s.io/v1beta1',
  'kubelet.config.k8s.io/v1alpha1',
];

export interface ExecEnvVar {
  name: string;
  value: string;
}

/** One exec plugin, as the file declares it. */
export interface CredentialProvider {
  name: string;
  matchImages: string[];
  /** Undefined when the file leaves it out (validation then refuses the file). */
  defaultCacheDurationMs?: number;
  apiVersion: string;
  args: string[];
  env: ExecEnvVar[];
}

export interface CredentialProviderConfig {
  providers: CredentialProvider[];
}

export interface DecodedCredentialProviderConfig {
  config: CredentialProviderConfig;
  /** Fields upstream's decoder would drop without a word; named here so none goes unnoticed. */
  unknownFields: string[];
}

/** Decodes the file's text (YAML or JSON); throws on what upstream's decoder refuses. */
export function decodeCredentialProviderConfig(text: string): DecodedCredentialProviderConfig {
  const doc = parseYaml11(text);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new Error(
      "couldn't get version/kind; json parse error: expected a CredentialProviderConfig object",
    );
  const obj = doc as Record<string, unknown>;
  const apiVersion = typeof obj.apiVersion === 'string' ? obj.apiVersion : '';
  const kind = typeof obj.kind === 'string' ? obj.kind : '';
  if (kind === '') throw new Error("Object 'Kind' is missing");
  if (kind !== CREDENTIAL_PROVIDER_CONFIG_KIND || !CONFIG_API_VERSIONS.includes(apiVersion))
    throw new Error(
      `no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)}`,
    );

  const unknownFields: string[] = [];
  const noteUnknown = (o: Record<string, unknown>, known: readonly string[], at: string) => {
    for (const k of Object.keys(o)) if (!known.includes(k)) unknownFields.push(`${at}${k}`);
  };
  noteUnknown(obj, ['apiVersion', 'kind', 'providers'], '');
  const providers = optionalList(obj.providers, 'providers').map((p, i) => {
    const at = `providers[${i}]`;
    const o = object(p, at);
    noteUnknown(o, ['name', 'matchImages', 'defaultCacheDuration', 'apiVersion', 'args', 'env'], `${at}.`);
    const provider: CredentialProvider = {
      name: optionalString(o.name, `${at}.name`),
      matchImages: optionalList(o.matchImages, `${at}.matchImages`).map((m, j) =>
        optionalString(m, `${at}.matchImages[${j}]`),
      ),
      apiVersion: optionalString(o.apiVersion, `${at}.apiVersion`),
      args: optionalList(o.args, `${at}.args`).map((a, j) => optionalString(a, `${at}.args[${j}]`)),
      env: optionalList(o.env, `${at}.env`).map((e, j) => {
        const eo = object(e, `${at}.env[${j}]`);
        noteUnknown(eo, ['name', 'value'], `${at}.env[${j}].`);
        return {
          name: optionalString(eo.name, `${at}.env[${j}].name`),
          value: optionalString(eo.value, `${at}.env[${j}].value`),
        };
      }),
    };
    if (o.defaultCacheDuration !== undefined && o.defaultCacheDuration !== null)
      provider.defaultCacheDurationMs = parseGoDurationMs(
        optionalString(o.defaultCacheDuration, `${at}.defaultCacheDuration`),
      );
    return provider;
  });
  return { config: { providers }, unknownFields };
}

function object(v: unknown, at: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw typeError(v, at, 'an object');
  return v as Record<string, unknown>;
}

function optionalList(v: unknown, at: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw typeError(v, at, 'a list');
  return v;
}

function optionalString(v: unknown, at: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw typeError(v, at, 'a string');
  return v;
}

function typeError(v: unknown, at: string, want: string): Error {
  const got = Array.isArray(v) ? 'a list' : v === null ? 'null' : `a ${typeof v}`;
  return new Error(`${at}: expected ${want}, got ${got}`);
}

/**
 * upstream validateCredentialProviderConfig: every problem, each as `field: reason` in
 * apimachinery's field.Error words (paths without indexes, as upstream writes them).
 */
export function validateCredentialProviderConfig(config: CredentialProviderConfig): string[] {
  const errs: string[] = [];
  if (config.providers.length === 0)
    errs.push('providers: Required value: at least 1 item in plugins is required');
  for (const p of config.providers) {
    const invalid = (field: string, value: string, detail: string) =>
      errs.push(`providers.${field}: Invalid value: ${value}: ${detail}`);
    const name = JSON.stringify(p.name);
    if (p.name.includes('/')) invalid('name', name, "provider name cannot contain '/'");
    if (p.name.includes(' ')) invalid('name', name, 'provider name cannot contain spaces');
    if (p.name === '.') invalid('name', name, "provider name cannot be '.'");
    if (p.name === '..') invalid('name', name, "provider name cannot be '..'");
    if (p.apiVersion === '') errs.push('providers.apiVersion: Required value: apiVersion is required');
    else if (!CREDENTIAL_PROVIDER_API_VERSIONS.includes(p.apiVersion))
      errs.push(
        `providers.apiVersion: Unsupported value: ${JSON.stringify(p.apiVersion)}: supported values: ${CREDENTIAL_PROVIDER_API_VERSIONS.map((v) => JSON.stringify(v)).join(', ')}`,
      );
    if (p.matchImages.length === 0)
      errs.push('providers.matchImages: Required value: at least 1 item in matchImages is required');
    for (const m of p.matchImages) {
      try {
        parseSchemelessUrl(m);
      } catch (err) {
        invalid('matchImages', JSON.stringify(m), `match image is invalid: ${(err as Error).message}`);
      }
    }
    if (p.defaultCacheDurationMs === undefined)
      errs.push('providers.defaultCacheDuration: Required value: defaultCacheDuration is required');
    else if (p.defaultCacheDurationMs < 0)
      invalid(
        'defaultCacheDuration',
        formatGoDuration(p.defaultCacheDurationMs),
        'defaultCacheDuration must be greater than or equal to 0',
      );
  }
  return errs;
}
