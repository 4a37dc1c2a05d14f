/**
 * Registry credentials from a pod's image pull secrets, matched to an image as upstream's
 * credentialprovider does it (BasicDockerKeyring, URLsMatch, isDefaultRegistryMatch, and
 * credentialprovider/secrets.MakeDockerKeyring): `kubernetes.io/dockerconfigjson` secrets carry a
 * `.dockerconfigjson` with `auths`, legacy `kubernetes.io/dockercfg` ones a `.dockercfg` map.
 */
import type { DockerConfigProvider } from '../credentialprovider/plugin-provider.js';
import { parseSchemelessUrl, urlsMatch } from '../credentialprovider/url-match.js';
import type { AuthConfig } from '../cri/types.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('kuberuntime');

/** A secret as the keyring reads it: its type and its decoded data. */
export interface PullSecret {
  name: string;
  type?: string;
  data: Record<string, string>;
}

interface DockerConfigEntry {
  username?: string;
  password?: string;
  auth?: string;
  email?: string;
}

export const SECRET_TYPE_DOCKER_CONFIG_JSON = 'kubernetes.io/dockerconfigjson';
export const SECRET_TYPE_DOCKERCFG = 'kubernetes.io/dockercfg';
const DEFAULT_REGISTRY_HOST = 'index.docker.io';

/** Credentials keyed by `host[/path]`, most specific first. */
export class DockerKeyring {
  private readonly creds = new Map<string, AuthConfig[]>();
  private index: string[] = [];

  /** Adds the entries of one docker config (upstream BasicDockerKeyring.Add). */
  add(config: Record<string, DockerConfigEntry>): void {
    for (const [location, entry] of Object.entries(config)) {
      const auth = authFromEntry(entry);
      if (!auth) continue;
      // Go's url.Parse, as upstream: a scheme is dropped, an entry that does not parse is skipped.
      const schemeless = location.replace(/^https?:\/\//, '');
      let parsed: { host: string; path: string };
      try {
        parsed = parseSchemelessUrl(schemeless);
      } catch (err) {
        log.error(`Entry ${JSON.stringify(location)} in dockercfg invalid (${errorMessage(err)}), ignoring`);
        continue;
      }
      // Docker treats /v1/ and /v2/ as the registry itself.
      let effectivePath = parsed.path;
      if (effectivePath.startsWith('/v2/') || effectivePath.startsWith('/v1/'))
        effectivePath = effectivePath.slice(3);
      const key = effectivePath !== '' && effectivePath !== '/' ? parsed.host + effectivePath : parsed.host;
      const list = this.creds.get(key) ?? [];
      list.push(auth);
      this.creds.set(key, list);
    }
    // Reverse-sorted, so `quay.io/coreos` is tried before `quay.io`.
    this.index = [...this.creds.keys()].sort().reverse();
  }

  /** The credentials for an image repository (`127.0.0.1:5000/team/app`, `docker.io/library/busybox`). */
  lookup(repository: string): AuthConfig[] {
    const out: AuthConfig[] = [];
    for (const key of this.index) if (urlsMatch(key, repository)) out.push(...(this.creds.get(key) ?? []));
    if (out.length > 0) return out;
    if (isDefaultRegistryMatch(repository)) return [...(this.creds.get(DEFAULT_REGISTRY_HOST) ?? [])];
    return [];
  }
}

/**
 * The keyring of a pod's pull secrets; secrets of other types, or with an empty config, add nothing.
 * A config that does not parse (bad JSON, an entry that is not an object, an `auth` that is not
 * base64 of user:password) throws INVALID_PULL_SECRET naming the secret: upstream's MakeDockerKeyring
 * fails the pull then, rather than pulling without the credentials the pod asked for.
 */
export function makeDockerKeyring(secrets: readonly PullSecret[]): DockerKeyring {
  const keyring = new DockerKeyring();
  for (const s of secrets) {
    const json = s.data['.dockerconfigjson'];
    const cfg = s.data['.dockercfg'];
    const invalid = (what: string) =>
      new KubeletError('INVALID_PULL_SECRET', `pull secret "${s.name}" (${s.type ?? ''}): ${what}`);
    if (s.type === SECRET_TYPE_DOCKER_CONFIG_JSON && json) {
      const parsed = parseJson(json, '.dockerconfigjson', invalid);
      if (!isObject(parsed)) throw invalid('.dockerconfigjson is not a JSON object');
      const auths = parsed.auths ?? {};
      if (!isObject(auths)) throw invalid('"auths" is not an object');
      keyring.add(checkedEntries(auths, invalid));
    } else if (s.type === SECRET_TYPE_DOCKERCFG && cfg) {
      const parsed = parseJson(cfg, '.dockercfg', invalid);
      if (!isObject(parsed)) throw invalid('.dockercfg is not a JSON object');
      keyring.add(checkedEntries(parsed, invalid));
    }
  }
  return keyring;
}

function parseJson(text: string, key: string, invalid: (what: string) => Error): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw invalid(`${key} is not valid JSON: ${errorMessage(err)}`);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Go's DockerConfigEntry.UnmarshalJSON: each entry an object whose `auth`, when set, decodes. */
function checkedEntries(
  entries: Record<string, unknown>,
  invalid: (what: string) => Error,
): Record<string, DockerConfigEntry> {
  const out: Record<string, DockerConfigEntry> = {};
  for (const [location, entry] of Object.entries(entries)) {
    if (entry === null) continue;
    if (!isObject(entry)) throw invalid(`entry ${JSON.stringify(location)}: not an object`);
    for (const field of ['username', 'password', 'auth', 'email'] as const)
      if (entry[field] !== undefined && entry[field] !== null && typeof entry[field] !== 'string')
        throw invalid(`entry ${JSON.stringify(location)}: "${field}" is not a string`);
    const e = entry as DockerConfigEntry;
    if (e.auth) {
      const problem = authFieldProblem(e.auth);
      if (problem) throw invalid(`entry ${JSON.stringify(location)}: ${problem}`);
    }
    out[location] = e;
  }
  return out;
}

/**
 * Why an `auth` field is not base64(username:password), in upstream's words, or undefined. Go decodes
 * strictly (padded when it ends in "=", unpadded otherwise); Buffer.from would accept anything.
 */
function authFieldProblem(field: string): string | undefined {
  const b64 = field.replace(/[\r\n]/g, '');
  const padded = field.trim().endsWith('=');
  const ok = padded
    ? /^[A-Za-z0-9+/]*={1,2}$/.test(b64) && b64.length % 4 === 0
    : /^[A-Za-z0-9+/]*$/.test(b64) && b64.length % 4 !== 1;
  if (!ok) return 'illegal base64 data in the auth field';
  if (!Buffer.from(b64, 'base64').toString('utf8').includes(':'))
    return 'unable to parse auth field, must be formatted as base64(username:password)';
  return undefined;
}

/**
 * What the node's own providers (the credential provider plugins) have for an image, as upstream's
 * providersDockerKeyring looks it up: each provider's answer added to one keyring, in the
 * providers' order, and that keyring asked. A provider that fails answers nothing.
 */
export async function lookupProviders(
  providers: readonly DockerConfigProvider[],
  repository: string,
): Promise<AuthConfig[]> {
  if (providers.length === 0) return [];
  const configs = await Promise.all(providers.map((p) => p.provide(repository)));
  const keyring = new DockerKeyring();
  for (const config of configs) keyring.add(config);
  return keyring.lookup(repository);
}

/** `auth` (base64 of user:password) wins over username and password, as in docker's config. */
function authFromEntry(entry: DockerConfigEntry): AuthConfig | undefined {
  if (typeof entry !== 'object' || entry === null) return undefined;
  let username = entry.username ?? '';
  let password = entry.password ?? '';
  if (entry.auth) {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return undefined;
    username = decoded.slice(0, colon);
    password = decoded.slice(colon + 1).replace(/\0+$/, '');
  }
  return { username, password };
}

/** Whether the image is pulled from Docker Hub, judging from its name (docker's own rule). */
function isDefaultRegistryMatch(image: string): boolean {
  const slash = image.indexOf('/');
  const first = slash < 0 ? image : image.slice(0, slash);
  if (first === '') return false;
  if (slash < 0) return true;
  if (first === 'docker.io' || first === 'index.docker.io') return true;
  return !/[.:]/.test(first);
}

/** The repository to look credentials up for: `busybox` is `docker.io/library/busybox` (the docker reference's normalization). */
export function repositoryToPull(image: string): string {
  let name = image;
  const at = name.indexOf('@');
  if (at >= 0) name = name.slice(0, at);
  const lastSlash = name.lastIndexOf('/');
  const colon = name.indexOf(':', lastSlash + 1);
  if (colon >= 0) name = name.slice(0, colon);
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  const hasDomain =
    slash >= 0 && (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase());
  if (!hasDomain) name = `docker.io/${name}`;
  if (/^(docker\.io|index\.docker\.io)\/[^/]+$/.test(name)) name = name.replace(/\/([^/]+)$/, '/library/$1');
  return name.replace(/^index\.docker\.io\//, 'docker.io/');
}
