/**
 * projected volumes (upstream: pkg/volume/projected): secrets, configMaps, downward API items and
 * service account tokens in one folder, on a tmpfs since tokens are secrets. This is what every
 * pod's `kube-api-access-*` volume is: a token, the cluster's CA from `kube-root-ca.crt`, and the
 * namespace. Tokens come from the TokenManager, bound to the pod, and are renewed as they age.
 */
import type { Pod } from '../api/core-v1.js';
import { errorMessage } from '../lib/errors.js';
import type { Payload } from './atomic-writer.js';
import { getConfigMapOrEmpty, makeConfigMapPayload } from './configmap.js';
import { DataVolumePlugin, type CollectPayload } from './data-volume.js';
import { collectDownwardAPIData } from './downward-api.js';
import { getSecretOrEmpty, makeSecretPayload } from './secret.js';
import {
  aggregateErrors,
  DEFAULT_FILE_MODE,
  fileMode,
  type MounterArgs,
  type VolumeHost,
  type VolumeSpec,
  type VolumeUnmounter,
} from './volume-plugin.js';
import type { ProjectedVolumeSource } from './volume-types.js';

export const PROJECTED_PLUGIN_NAME = 'kubernetes.io/projected';
/** The API's default lifetime for a projected token. */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;

/** upstream: projectedVolumeMounter.collectData; every source is tried, and the errors reported together. */
export async function collectProjectedData(
  host: VolumeHost,
  source: ProjectedVolumeSource,
  pod: Pod,
  args: MounterArgs,
): Promise<Payload> {
  const defaultMode = fileMode(source.defaultMode, DEFAULT_FILE_MODE);
  const namespace = pod.metadata.namespace ?? '';
  const payload: Payload = new Map();
  const errors: string[] = [];
  const merge = (p: Payload) => {
    for (const [k, v] of p) payload.set(k, v);
  };
  for (const s of source.sources ?? []) {
    try {
      if (s.secret) {
        const optional = s.secret.optional === true;
        const secret = await getSecretOrEmpty(
          host,
          namespace,
          s.secret.name ?? '',
          optional,
          args.remount,
          args.signal,
        );
        merge(makeSecretPayload(s.secret.items, secret, defaultMode, optional));
      } else if (s.configMap) {
        const optional = s.configMap.optional === true;
        const cm = await getConfigMapOrEmpty(
          host,
          namespace,
          s.configMap.name ?? '',
          optional,
          args.remount,
          args.signal,
        );
        merge(makeConfigMapPayload(s.configMap.items, cm, defaultMode, optional));
      } else if (s.downwardAPI) {
        merge(collectDownwardAPIData(s.downwardAPI.items, pod, host.nodeAllocatable, defaultMode));
      } else if (s.serviceAccountToken) {
        const tp = s.serviceAccountToken;
        // With fsGroup set, ownership later opens 0600 to 0640 for the group.
        const mode = args.fsUser !== undefined || args.fsGroup !== undefined ? 0o600 : defaultMode;
        const tr = await host.tokens.getServiceAccountToken(
          namespace,
          pod.spec.serviceAccountName ?? pod.spec.serviceAccount ?? 'default',
          {
            spec: {
              audiences: tp.audience ? [tp.audience] : undefined,
              expirationSeconds: tp.expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS,
              boundObjectRef: {
                apiVersion: 'v1',
                kind: 'Pod',
                name: pod.metadata.name,
                uid: pod.metadata.uid,
              },
            },
          },
          args.signal,
        );
        payload.set(tp.path, {
          data: Buffer.from(tr.status?.token ?? '', 'utf8'),
          mode,
          fsUser: args.fsUser,
        });
      } else if (s.clusterTrustBundle !== undefined) {
        throw new Error('pod requested ClusterTrustBundle projection, which this kubelet does not support');
      }
    } catch (err) {
      errors.push(errorMessage(err));
    }
  }
  const err = aggregateErrors(errors);
  if (err) throw err;
  return payload;
}

export class ProjectedPlugin extends DataVolumePlugin {
  readonly name = PROJECTED_PLUGIN_NAME;
  protected readonly medium = 'memory' as const;

  constructor(host: VolumeHost) {
    super(host);
  }

  canSupport(spec: VolumeSpec): boolean {
    return spec.volume?.projected !== undefined;
  }

  protected collector(spec: VolumeSpec, pod: Pod): CollectPayload {
    const source = spec.volume?.projected ?? {};
    return (args) => collectProjectedData(this.host, source, pod, args);
  }

  override newUnmounter(volumeName: string, podUid: string): VolumeUnmounter {
    const inner = super.newUnmounter(volumeName, podUid);
    return {
      tearDown: async () => {
        await inner.tearDown();
        this.host.tokens.deleteServiceAccountToken(podUid);
      },
    };
  }
}
