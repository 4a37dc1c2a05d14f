/**
 * downwardAPI volumes (upstream: pkg/volume/downwardapi): the pod's own metadata (name, namespace,
 * uid, labels, annotations) and its containers' requests and limits, one file per item. A label
 * or annotation change reaches the files on the pod's next sync.
 */
import path from 'node:path';
import type { Pod } from '../api/core-v1.js';
import { containerResourceRuntimeValue, podFieldSelectorRuntimeValue } from '../kuberuntime/container-env.js';
import { errorMessage } from '../lib/errors.js';
import type { Payload } from './atomic-writer.js';
import { DataVolumePlugin, type CollectPayload } from './data-volume.js';
import {
  aggregateErrors,
  DEFAULT_FILE_MODE,
  fileMode,
  type VolumeHost,
  type VolumeSpec,
} from './volume-plugin.js';
import type { NodeAllocatable } from '../api/node.js';
import type { DownwardAPIVolumeFile } from './volume-types.js';

export const DOWNWARD_API_PLUGIN_NAME = 'kubernetes.io/downward-api';

/**
 * A fieldRef's value. Volumes carry only metadata: spec and status fields (a pod's IP, its node)
 * are for environment variables (upstream: fieldpath.ExtractFieldPathAsString).
 */
function metadataFieldValue(pod: Pod, fieldPath: string): string {
  if (!fieldPath.startsWith('metadata.')) throw new Error(`unsupported fieldPath: ${fieldPath}`);
  return podFieldSelectorRuntimeValue(pod, fieldPath, { podIP: '', podIPs: [], hostIPs: [], nodeName: '' });
}

/** upstream: downwardapi.CollectData; every item is tried, and the errors are reported together. */
export function collectDownwardAPIData(
  items: DownwardAPIVolumeFile[] | undefined,
  pod: Pod,
  nodeAllocatable: NodeAllocatable,
  defaultMode: number | undefined,
): Payload {
  const mode = fileMode(defaultMode, DEFAULT_FILE_MODE);
  const payload: Payload = new Map();
  const errors: string[] = [];
  for (const item of items ?? []) {
    const p = path.posix.normalize(item.path);
    let data = '';
    try {
      if (item.fieldRef) {
        data = metadataFieldValue(pod, item.fieldRef.fieldPath);
      } else if (item.resourceFieldRef) {
        const ref = item.resourceFieldRef;
        const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
        const container = containers.find((c) => c.name === ref.containerName);
        if (!container) throw new Error(`container ${ref.containerName ?? ''} not found`);
        data = containerResourceRuntimeValue(container, ref.resource, ref.divisor, { nodeAllocatable });
      }
    } catch (err) {
      errors.push(errorMessage(err));
    }
    payload.set(p, { data: Buffer.from(data, 'utf8'), mode: fileMode(item.mode, mode) });
  }
  const err = aggregateErrors(errors);
  if (err) throw err;
  return payload;
}

export class DownwardAPIPlugin extends DataVolumePlugin {
  readonly name = DOWNWARD_API_PLUGIN_NAME;
  protected readonly medium = 'disk' as const;

  constructor(host: VolumeHost) {
    super(host);
  }

  canSupport(spec: VolumeSpec): boolean {
    return spec.volume?.downwardAPI !== undefined;
  }

  protected collector(spec: VolumeSpec, pod: Pod): CollectPayload {
    const source = spec.volume?.downwardAPI ?? {};
    return () =>
      Promise.resolve(
        collectDownwardAPIData(source.items, pod, this.host.nodeAllocatable, source.defaultMode),
      );
  }
}
