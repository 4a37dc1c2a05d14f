/**
 * secret volumes (upstream: pkg/volume/secret): like configMap volumes, but the files live on a
 * tmpfs of their own, so a secret never reaches the node's disk.
 */
import type { Pod } from '../api/core-v1.js';
import type { Payload } from './atomic-writer.js';
import { DataVolumePlugin, type CollectPayload } from './data-volume.js';
import { DEFAULT_FILE_MODE, fileMode, type VolumeHost, type VolumeSpec } from './volume-plugin.js';
import type { KeyToPath, Secret } from './volume-types.js';

export const SECRET_PLUGIN_NAME = 'kubernetes.io/secret';

/** upstream: secret.MakePayload. */
export function makeSecretPayload(
  items: KeyToPath[] | undefined,
  secret: Secret,
  defaultMode: number | undefined,
  optional: boolean,
): Payload {
  const mode = fileMode(defaultMode, DEFAULT_FILE_MODE);
  const payload: Payload = new Map();
  const data = secret.data ?? {};
  if (!items || items.length === 0) {
    for (const [k, v] of Object.entries(data)) payload.set(k, { data: Buffer.from(v, 'base64'), mode });
    return payload;
  }
  for (const item of items) {
    if (!Object.hasOwn(data, item.key)) {
      if (optional) continue;
      throw new Error(`secret references non-existent secret key: ${item.key}`);
    }
    payload.set(item.path, {
      data: Buffer.from(data[item.key] ?? '', 'base64'),
      mode: fileMode(item.mode, mode),
    });
  }
  return payload;
}

/** The secret, or an empty one for an optional volume whose secret is missing. */
export async function getSecretOrEmpty(
  host: VolumeHost,
  namespace: string,
  name: string,
  optional: boolean,
  remount: boolean,
  signal: AbortSignal,
): Promise<Secret> {
  const secret = await host.objects.getSecret(namespace, name, {
    signal,
    maxAgeMs: remount ? host.objectCacheTtlMs : 0,
  });
  if (secret) return secret;
  if (!optional) throw new Error(`secret "${name}" not found`);
  return { metadata: { namespace, name } };
}

export class SecretPlugin extends DataVolumePlugin {
  readonly name = SECRET_PLUGIN_NAME;
  protected readonly medium = 'memory' as const;

  constructor(host: VolumeHost) {
    super(host);
  }

  canSupport(spec: VolumeSpec): boolean {
    return spec.volume?.secret !== undefined;
  }

  protected collector(spec: VolumeSpec, pod: Pod): CollectPayload {
    const source = spec.volume?.secret ?? {};
    return async (args) => {
      const optional = source.optional === true;
      const secret = await getSecretOrEmpty(
        this.host,
        pod.metadata.namespace ?? '',
        source.secretName ?? '',
        optional,
        args.remount,
        args.signal,
      );
      return makeSecretPayload(source.items, secret, source.defaultMode, optional);
    };
  }
}
