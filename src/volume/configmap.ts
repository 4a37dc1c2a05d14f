/**
 * configMap volumes (upstream: pkg/volume/configmap): the configMap's keys as files, or only the
 * listed items at their paths, each with the item's mode or the volume's defaultMode. A missing
 * configMap (or key) fails the mount unless the volume is optional.
 */
import type { Pod } from '../api/core-v1.js';
import type { Payload } from './atomic-writer.js';
import { DataVolumePlugin, type CollectPayload } from './data-volume.js';
import { DEFAULT_FILE_MODE, fileMode, type VolumeHost, type VolumeSpec } from './volume-plugin.js';
import type { ConfigMap, KeyToPath } from './volume-types.js';

export const CONFIGMAP_PLUGIN_NAME = 'kubernetes.io/configmap';

/** upstream: configmap.MakePayload. */
export function makeConfigMapPayload(
  items: KeyToPath[] | undefined,
  configMap: ConfigMap,
  defaultMode: number | undefined,
  optional: boolean,
): Payload {
  const mode = fileMode(defaultMode, DEFAULT_FILE_MODE);
  const payload: Payload = new Map();
  const data = configMap.data ?? {};
  const binaryData = configMap.binaryData ?? {};
  if (!items || items.length === 0) {
    for (const [k, v] of Object.entries(data)) payload.set(k, { data: Buffer.from(v, 'utf8'), mode });
    for (const [k, v] of Object.entries(binaryData)) payload.set(k, { data: Buffer.from(v, 'base64'), mode });
    return payload;
  }
  for (const item of items) {
    let content: Buffer;
    if (Object.hasOwn(data, item.key)) content = Buffer.from(data[item.key] ?? '', 'utf8');
    else if (Object.hasOwn(binaryData, item.key)) content = Buffer.from(binaryData[item.key] ?? '', 'base64');
    else {
      if (optional) continue;
      throw new Error(`configmap references non-existent config key: ${item.key}`);
    }
    payload.set(item.path, { data: content, mode: fileMode(item.mode, mode) });
  }
  return payload;
}

/** The configMap, or an empty one for an optional volume whose configMap is missing. */
export async function getConfigMapOrEmpty(
  host: VolumeHost,
  namespace: string,
  name: string,
  optional: boolean,
  remount: boolean,
  signal: AbortSignal,
): Promise<ConfigMap> {
  const cm = await host.objects.getConfigMap(namespace, name, {
    signal,
    maxAgeMs: remount ? host.objectCacheTtlMs : 0,
  });
  if (cm) return cm;
  // The kubelet's configMap manager words it with the singular resource.
  if (!optional) throw new Error(`configmap "${name}" not found`);
  return { metadata: { namespace, name } };
}

export class ConfigMapPlugin extends DataVolumePlugin {
  readonly name = CONFIGMAP_PLUGIN_NAME;
  protected readonly medium = 'disk' as const;

  constructor(host: VolumeHost) {
    super(host);
  }

  canSupport(spec: VolumeSpec): boolean {
    return spec.volume?.configMap !== undefined;
  }

  protected collector(spec: VolumeSpec, pod: Pod): CollectPayload {
    const source = spec.volume?.configMap ?? {};
    return async (args) => {
      const optional = source.optional === true;
      const cm = await getConfigMapOrEmpty(
        this.host,
        pod.metadata.namespace ?? '',
        source.name ?? '',
        optional,
        args.remount,
        args.signal,
      );
      return makeConfigMapPayload(source.items, cm, source.defaultMode, optional);
    };
  }
}
