/**
 * From argv to the configuration the kubelet runs with, in upstream's order:
 * parse flags → read the --config file (or start from nothing) → apply the file's v1beta1 defaults
 * (plus the legacy flag defaults when there is no file) → apply the config-backed flags over it →
 * resolve durations and validate. Flags win over the file; the file wins over defaults.
 */
import { readdir, readFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { KubeletError, errorMessage } from '../lib/errors.js';
import { LOG_FORMATS, logger, type Logger } from '../lib/log.js';
import { parseYaml11 } from '../lib/yaml11.js';
import { flagForField, parseKubeletFlags, kubeletUsage, type KubeletFlags } from './flags.js';
import {
  KUBELET_CONFIG_API_VERSION,
  KUBELET_CONFIG_KIND,
  applyLegacyFlagDefaults,
  applyV1beta1Defaults,
  checkConfigurationShape,
  isDNS1123Subdomain,
  isLabelValue,
  isQualifiedName,
  resolveKubeletConfiguration,
  type KubeletConfiguration,
  type ResolvedKubeletConfig,
} from './kubelet-configuration.js';
import { applyStandaloneDefaults, openAccessWarning, unservedApiNotice } from './standalone-defaults.js';
import { apiContentTypeNotice } from './api-content-type.js';
import { unusedSettingsInEffect } from './unused-settings.js';
import {
  loadCredentialProviderPlugins,
  type CredentialProviderPlugins,
} from '../credentialprovider/register-plugins.js';
import { rawVersionText, versionText } from './version.js';

export interface LoadKubeletConfigOptions {
  /** The machine's hostname; os.hostname() by default (tests pass their own). */
  hostname?: () => string;
  /** Where relative --config paths start; process.cwd() by default. */
  cwd?: string;
  /** Bounds reading the config file. */
  signal?: AbortSignal;
  /** Receives warnings (unknown fields, deprecated flags); the `cmd` logger by default. */
  log?: Logger;
  /** Called with the validated logging settings before any warning is logged (main applies them there). */
  applyLogging?: (logging: ResolvedKubeletConfig['logging']) => void;
}

/** What main does next: run with this configuration, or print `text` and exit 0. */
export type LoadedKubeletConfig =
  | {
      action: 'run';
      config: ResolvedKubeletConfig;
      flags: KubeletFlags;
      /** The node's name: --hostname-override or the hostname, trimmed and lower-cased (upstream). */
      nodeName: string;
      /** The absolute path of the --config file, or '' when none was given. */
      configFile: string;
      /** Warnings already logged, for a caller that wants to show them again. */
      warnings: string[];
      /** The validated credential provider plugins, when --image-credential-provider-config is set. */
      credentialProviders?: CredentialProviderPlugins;
    }
  | { action: 'help' | 'version'; text: string };

/**
 * Loads the kubelet's configuration from argv (without node and script paths).
 * Throws KubeletError INVALID_CONFIG with a message naming the flag or the field at fault.
 */
export async function loadKubeletConfig(
  argv: readonly string[],
  options: LoadKubeletConfigOptions = {},
): Promise<LoadedKubeletConfig> {
  const log = options.log ?? logger('cmd');
  const parsed = parseKubeletFlags(argv);
  if (parsed.flags.help) return { action: 'help', text: kubeletUsage() };
  if (parsed.flags.version)
    return {
      action: 'version',
      text: (parsed.flags.version === 'raw' ? rawVersionText() : versionText()) + '\n',
    };

  const warnings = [...parsed.warnings];
  let file: KubeletConfiguration = {};
  let configFile = '';
  if (parsed.flags.kubeletConfigFile !== '') {
    configFile = path.resolve(options.cwd ?? process.cwd(), parsed.flags.kubeletConfigFile);
    const loaded = await readKubeletConfigFile(configFile, options.signal);
    file = loaded.config;
    warnings.push(...loaded.warnings);
  }
  if (parsed.flags.kubeletDropinConfigDirectory !== '') {
    const dropinDir = path.resolve(options.cwd ?? process.cwd(), parsed.flags.kubeletDropinConfigDirectory);
    for (const dropin of await readDropins(dropinDir, options.signal)) {
      file = mergePatch(file, dropin.config) as KubeletConfiguration;
      warnings.push(...dropin.warnings);
    }
  }

  const addressFromFileOrFlag =
    file.address !== undefined || parsed.configOverrides.some((o) => o.field === 'address');
  const config = applyV1beta1Defaults(file);
  const standalone = parsed.flags.kubeConfig === '' && parsed.flags.bootstrapKubeconfig === '';
  if (configFile === '') {
    applyLegacyFlagDefaults(config, file);
    // Safe by default: no API server stands in front of the legacy defaults (standalone-defaults.ts).
    if (standalone) applyStandaloneDefaults(config, { fromFiles: file, addressGiven: addressFromFileOrFlag });
  }
  for (const override of parsed.configOverrides) setField(config, override.field, override.value);

  validateNodeLabels(parsed.flags.nodeLabels);
  validateCloudProvider(parsed.flags.cloudProvider);
  validateMaxParallelPodStarts(parsed.flags.maxParallelPodStarts);
  if (parsed.flags.exitOnLockContention && parsed.flags.lockFilePath === '')
    throw new KubeletError('INVALID_CONFIG', 'cannot exit on lock file contention: no lock file specified');
  validateServerLimits(parsed.flags);
  validateAtLeastOne('--node-page-max-subscribers', parsed.flags.nodePageMaxSubscribers);
  validateAtLeastOne('--node-page-max-log-follows', parsed.flags.nodePageMaxLogFollows);
  const resolved = resolveKubeletConfiguration(config, flagForField);
  validateLogging(resolved.logging);
  options.applyLogging?.(resolved.logging);
  const nodeName = resolveNodeName(parsed.flags.hostnameOverride, options.hostname ?? os.hostname);

  const credentialProviders = await loadCredentialProviders(parsed.flags, options);
  if (credentialProviders && credentialProviders.unknownFields.length > 0)
    warnings.push(
      `Unknown fields in ${parsed.flags.imageCredentialProviderConfig}, not read: ${credentialProviders.unknownFields.join(', ')}`,
    );

  for (const notice of [
    openAccessWarning(resolved),
    unservedApiNotice(resolved, standalone && configFile === ''),
  ])
    if (notice) warnings.push(notice);
  const contentTypeNotice = apiContentTypeNotice(resolved.contentType, {
    standalone,
    // Empty means the default, in a file as in a flag.
    setByUser: [
      file.contentType,
      ...parsed.configOverrides.filter((o) => o.field === 'contentType').map((o) => o.value),
    ].some((v) => v !== undefined && v !== ''),
  });
  if (contentTypeNotice?.level === 'warn') warnings.push(contentTypeNotice.message);
  else if (contentTypeNotice) log.info(contentTypeNotice.message);
  const unused = unusedSettingsInEffect(resolved, parsed.flags);
  if (unused.length > 0)
    warnings.push(
      `These settings are parsed but not acted on by tskubelet (see docs/flags.md): ${unused.join(', ')}`,
    );
  for (const w of warnings) log.warn(w);
  return {
    action: 'run',
    config: resolved,
    flags: parsed.flags,
    nodeName,
    configFile,
    warnings,
    ...(credentialProviders ? { credentialProviders } : {}),
  };
}

/**
 * Upstream registers the plugins when either flag is set and does not start when that fails
 * ("Failed to register CRI auth plugins"): a bad file stops the kubelet here, before anything runs.
 */
async function loadCredentialProviders(
  flags: KubeletFlags,
  options: LoadKubeletConfigOptions,
): Promise<CredentialProviderPlugins | undefined> {
  const { imageCredentialProviderConfig: file, imageCredentialProviderBinDir: binDir } = flags;
  if (file === '' && binDir === '') return undefined;
  const cwd = options.cwd ?? process.cwd();
  const absolute = (p: string) => (p === '' ? '' : path.resolve(cwd, p));
  try {
    return await loadCredentialProviderPlugins(absolute(file), absolute(binDir), options.signal);
  } catch (err) {
    throw new KubeletError('INVALID_CONFIG', `Failed to register CRI auth plugins: ${errorMessage(err)}`, {
      cause: err,
    });
  }
}

function validateMaxParallelPodStarts(value: number | undefined): void {
  if (value === undefined || value >= 0) return;
  throw new KubeletError(
    'INVALID_CONFIG',
    `--max-parallel-pod-starts must be 0 (no bound) or more, got ${value}`,
  );
}

function validateServerLimits(flags: KubeletFlags): void {
  for (const [name, value] of [
    ['--max-connections-per-listener', flags.maxConnectionsPerListener],
    ['--max-streaming-sessions', flags.maxStreamingSessions],
  ] as const) {
    if (value !== undefined && value < 0)
      throw new KubeletError('INVALID_CONFIG', `${name} must be 0 (no bound) or more, got ${value}`);
  }
}

function validateAtLeastOne(flag: string, value: number): void {
  if (value >= 1) return;
  throw new KubeletError('INVALID_CONFIG', `${flag} must be 1 or more, got ${value}`);
}

/** Upstream 1.30 has no in-tree cloud providers: only '' and 'external' remain. */
function validateCloudProvider(cloudProvider: string): void {
  if (cloudProvider === '' || cloudProvider === 'external') return;
  throw new KubeletError(
    'INVALID_CONFIG',
    `cloud provider ${JSON.stringify(cloudProvider)} was specified, but built-in cloud providers are disabled. ` +
      'Please set --cloud-provider=external and migrate to an external cloud provider',
  );
}

/** component-base's logging validation, worded as the kubelet reports it ("initialize logging: ..."). */
function validateLogging(logging: ResolvedKubeletConfig['logging']): void {
  const errors: string[] = [];
  if (!(LOG_FORMATS as readonly string[]).includes(logging.format))
    errors.push(`logging.format: Invalid value: ${JSON.stringify(logging.format)}: Unsupported log format`);
  if (logging.vmodule.length > 0 && logging.format !== 'text')
    errors.push('logging.vmodule: Forbidden: Only supported for text log format');
  logging.vmodule.forEach((item, i) => {
    if (item.filePattern === '')
      errors.push(`logging.vmodule[${i}]: Required value: File pattern must not be empty`);
    else if (/[=,]/.test(item.filePattern))
      errors.push(
        `logging.vmodule[${i}]: Invalid value: ${JSON.stringify(item.filePattern)}: File pattern must not contain equal sign or comma`,
      );
  });
  if (errors.length === 0) return;
  const aggregate = errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`;
  throw new KubeletError('INVALID_CONFIG', `initialize logging: ${aggregate}`);
}

/**
 * Reads and checks a KubeletConfiguration file (YAML or JSON). Relative paths inside it are made
 * relative to the file's folder, as upstream does. Unknown fields are warnings, not errors.
 */
export async function readKubeletConfigFile(
  file: string,
  signal?: AbortSignal,
): Promise<{ config: KubeletConfiguration; warnings: string[] }> {
  let text: string;
  try {
    text = await readFile(file, { encoding: 'utf8', signal });
  } catch (err) {
    throw new KubeletError(
      'INVALID_CONFIG',
      `failed to load Kubelet config file ${file}: ${errorMessage(err)}`,
      { cause: err },
    );
  }
  return parseKubeletConfigText(text, file);
}

/** Parses the text of a config file; `file` is used for messages and for resolving relative paths. */
export function parseKubeletConfigText(
  text: string,
  file: string,
): { config: KubeletConfiguration; warnings: string[] } {
  const fail = (msg: string, cause?: unknown) =>
    new KubeletError('INVALID_CONFIG', `failed to load Kubelet config file ${file}: ${msg}`, { cause });
  let doc: unknown;
  try {
    // JSON is YAML; one parser reads both. Duplicate keys are errors, as in Go's strict decoder.
    // YAML 1.1, as upstream's decoder reads it (octal modes, yes/no booleans).
    doc = parseYaml11(text, { uniqueKeys: true, prettyErrors: true });
  } catch (err) {
    throw fail(errorMessage(err), err);
  }
  if (doc === null || doc === undefined) throw fail('the file is empty');
  if (typeof doc !== 'object' || Array.isArray(doc)) throw fail('expected a KubeletConfiguration object');
  const obj = doc as Record<string, unknown>;
  if (obj.kind !== KUBELET_CONFIG_KIND || obj.apiVersion !== KUBELET_CONFIG_API_VERSION) {
    throw fail(
      `expected kind ${JSON.stringify(KUBELET_CONFIG_KIND)} and apiVersion ${JSON.stringify(KUBELET_CONFIG_API_VERSION)}, ` +
        `got kind ${JSON.stringify(obj.kind ?? '')} and apiVersion ${JSON.stringify(obj.apiVersion ?? '')}`,
    );
  }
  const shape = checkConfigurationShape(obj);
  if (shape.errors.length > 0) throw fail(shape.errors.join('; '));
  const warnings = shape.unknownFields.map(
    (field) => `Kubelet config file ${file} has an unknown field ${JSON.stringify(field)}; it is ignored`,
  );
  const config = dropNulls(obj) as KubeletConfiguration;
  resolveRelativePaths(config, path.dirname(file));
  return { config, warnings };
}

/** The `*.conf` files of a drop-in folder, in lexical order (upstream's --config-dir). */
async function readDropins(
  dir: string,
  signal?: AbortSignal,
): Promise<{ config: KubeletConfiguration; warnings: string[] }[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    throw new KubeletError(
      'INVALID_CONFIG',
      `failed to read drop-in directory ${dir} (--config-dir): ${errorMessage(err)}`,
      { cause: err },
    );
  }
  const out = [];
  for (const name of names.filter((n) => n.endsWith('.conf') && !n.startsWith('.')).sort()) {
    out.push(await readKubeletConfigFile(path.join(dir, name), signal));
  }
  return out;
}

/** JSON merge patch (RFC 7386): objects merge key by key, anything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [k, v] of Object.entries(patch)) base[k] = mergePatch(base[k], v);
  return base;
}

function dropNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropNulls);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = dropNulls(x);
    return out;
  }
  return v;
}

function resolveRelativePaths(c: KubeletConfiguration, base: string): void {
  const abs = (p: string) => (p && !path.isAbsolute(p) ? path.join(base, p) : p);
  // Only the fields the file sets: a key added as undefined would wipe the main file's value when
  // a --config-dir drop-in is merged over it.
  for (const key of [
    'staticPodPath',
    'tlsCertFile',
    'tlsPrivateKeyFile',
    'resolvConf',
    'podLogsDir',
  ] as const) {
    const value = c[key];
    if (value !== undefined) c[key] = abs(value);
  }
  if (c.authentication?.x509?.clientCAFile)
    c.authentication.x509.clientCAFile = abs(c.authentication.x509.clientCAFile);
}

/** Sets a dotted path on the file's shape, creating the objects on the way. */
function setField(target: KubeletConfiguration, fieldPath: string, value: unknown): void {
  const parts = fieldPath.split('.');
  let obj = target as Record<string, unknown>;
  for (const part of parts.slice(0, -1)) {
    const next = obj[part];
    if (next === undefined || next === null || typeof next !== 'object') obj[part] = {};
    obj = obj[part] as Record<string, unknown>;
  }
  obj[parts[parts.length - 1]!] = value;
}

/** --hostname-override or the hostname, trimmed and lower-cased; must be a DNS subdomain. */
export function resolveNodeName(hostnameOverride: string, hostname: () => string): string {
  const name = (hostnameOverride.trim() || hostname().trim()).toLowerCase();
  if (name === '') throw new KubeletError('INVALID_CONFIG', 'empty hostname is invalid');
  if (!isDNS1123Subdomain(name)) {
    throw new KubeletError(
      'INVALID_CONFIG',
      `invalid node name ${JSON.stringify(name)}${hostnameOverride ? ' (from --hostname-override)' : ''}: must be a lowercase RFC 1123 subdomain`,
    );
  }
  return name;
}

// Upstream lets the kubelet set only these labels in the kubernetes.io and k8s.io namespaces.
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'kubernetes.io/os',
  'kubernetes.io/arch',
]);

function validateNodeLabels(labels: Record<string, string>): void {
  const problems: string[] = [];
  const restricted: string[] = [];
  for (const [key, value] of Object.entries(labels)) {
    if (!isQualifiedName(key)) problems.push(`'${key}' - must be a qualified name`);
    if (!isLabelValue(value)) problems.push(`'${value}' - must be a valid label value`);
    const slash = key.indexOf('/');
    const ns = slash === -1 ? '' : key.slice(0, slash);
    const isKubernetesNamespace = ['kubernetes.io', 'k8s.io'].some((d) => ns === d || ns.endsWith(`.${d}`));
    const allowed =
      KUBELET_LABELS.has(key) || KUBELET_LABEL_NAMESPACES.some((d) => ns === d || ns.endsWith(`.${d}`));
    if (isKubernetesNamespace && !allowed) restricted.push(key);
  }
  if (restricted.length > 0) {
    throw new KubeletError(
      'INVALID_CONFIG',
      `unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [${restricted.sort().join(' ')}]; ` +
        `they must begin with an allowed prefix (${KUBELET_LABEL_NAMESPACES.join(', ')}) or be in the allowed set (${[...KUBELET_LABELS].join(', ')})`,
    );
  }
  if (problems.length > 0)
    throw new KubeletError('INVALID_CONFIG', `invalid node labels (--node-labels): ${problems.join('; ')}`);
}
