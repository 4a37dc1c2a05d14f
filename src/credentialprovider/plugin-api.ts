/**
 * The exec plugin protocol, `credentialprovider.kubelet.k8s.io` (v1, v1beta1, v1alpha1): the
 * CredentialProviderRequest the kubelet writes on the plugin's stdin and the
 * CredentialProviderResponse it reads from its stdout (k8s.io/kubelet/pkg/apis/credentialprovider).
 */
import { parseGoDurationMs } from '../lib/go-duration.js';

export const CREDENTIAL_PROVIDER_GROUP = 'credentialprovider.kubelet.k8s.io';

/** The versions a provider's `apiVersion` may name, as upstream's plugin knows them. */
export const CREDENTIAL_PROVIDER_API_VERSIONS: readonly string[] = [
  `${CREDENTIAL_PROVIDER_GROUP}/v1`,
  `${CREDENTIAL_PROVIDER_GROUP}/v1alpha1`,
  `${CREDENTIAL_PROVIDER_GROUP}/v1beta1`,
];

/** What the plugin says its credentials are cached by: the image, its registry, or everything. */
export type PluginCacheKeyType = 'Image' | 'Registry' | 'Global';

export interface PluginAuthConfig {
  username: string;
  password: string;
}

/** Credentials keyed by the registry pattern they are for (a docker config's `auths`). */
export type DockerConfig = Record<string, PluginAuthConfig>;

export interface CredentialProviderResponse {
  /** As the plugin wrote it; Provide refuses anything but the three types. */
  cacheKeyType: string;
  /** Undefined: the provider's defaultCacheDuration. */
  cacheDurationMs?: number;
  auth: DockerConfig;
}

/** The request, byte for byte as upstream's JSON encoder writes it (field order, trailing newline). */
export function encodeRequest(apiVersion: string, image: string): string {
  return `${JSON.stringify({ kind: 'CredentialProviderRequest', apiVersion, image })}\n`;
}

/**
 * Reads the plugin's stdout. The wording of each refusal is upstream's; a body that does not decode
 * is not quoted back, since it may hold credentials.
 */
export function decodeResponse(stdout: string, expectedApiVersion: string): CredentialProviderResponse {
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch {
    // JSON.parse quotes the text it could not read, and that text may hold credentials.
    throw new Error('error reading GVK from response: the output is not JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new Error('error reading GVK from response: not a JSON object');
  const obj = doc as Record<string, unknown>;
  const apiVersion = typeof obj.apiVersion === 'string' ? obj.apiVersion : '';
  if (apiVersion !== expectedApiVersion)
    throw new Error(
      `apiVersion from credential plugin response did not match expected apiVersion:${expectedApiVersion}, actual apiVersion:${apiVersion}`,
    );
  const response = readResponse(obj);
  if (!response) throw new Error('error decoding credential provider plugin response from stdout');
  return response;
}

function readResponse(obj: Record<string, unknown>): CredentialProviderResponse | undefined {
  if (obj.kind !== 'CredentialProviderResponse') return undefined;
  const cacheKeyType = obj.cacheKeyType ?? '';
  if (typeof cacheKeyType !== 'string') return undefined;
  let cacheDurationMs: number | undefined;
  if (obj.cacheDuration !== undefined && obj.cacheDuration !== null) {
    if (typeof obj.cacheDuration !== 'string') return undefined;
    try {
      cacheDurationMs = parseGoDurationMs(obj.cacheDuration);
    } catch {
      return undefined;
    }
  }
  const auth: DockerConfig = {};
  const rawAuth = obj.auth ?? {};
  if (typeof rawAuth !== 'object' || rawAuth === null || Array.isArray(rawAuth)) return undefined;
  for (const [pattern, entry] of Object.entries(rawAuth as Record<string, unknown>)) {
    if (entry === null) {
      auth[pattern] = { username: '', password: '' };
      continue;
    }
    if (typeof entry !== 'object' || Array.isArray(entry)) return undefined;
    const { username = '', password = '' } = entry as Record<string, unknown>;
    if (typeof username !== 'string' || typeof password !== 'string') return undefined;
    auth[pattern] = { username, password };
  }
  return { cacheKeyType, cacheDurationMs, auth };
}
