/**
 * Cluster mode's answers to the runtime manager's questions about API objects: configMaps and
 * secrets for a container's environment and a pod's image pull secrets, and the services whose
 * variables a container gets. Read from the API server when a container starts (upstream's
 * configMapAndSecretChangeDetectionStrategy "Get"; its default watches them instead).
 */
import type { EnvSources, ServiceLister } from '../kuberuntime/container-env.js';
import type { PullSecretSource } from '../kuberuntime/runtime-manager.js';
import type { KubeObject, RestClient } from '../k8s/rest-client.js';

interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}

interface SecretObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/** A secret's base64 data, decoded as text (environment variables and docker configs are text). */
function decodeSecretData(data: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  return out;
}

export function apiEnvSources(client: RestClient, services: ServiceLister): EnvSources & PullSecretSource {
  const getSecret = async (namespace: string, name: string, signal?: AbortSignal) => {
    const r = await client.get<SecretObject>({ resource: 'secrets', namespace, name }, { signal });
    if (!r.ok) {
      if (r.reason === 'NotFound') return undefined;
      throw new Error(r.status.message ?? r.reason);
    }
    return { type: r.object.type, data: decodeSecretData(r.object.data) };
  };
  return {
    getImagePullSecret: getSecret,
    async getSecret(namespace, name, signal) {
      return (await getSecret(namespace, name, signal))?.data;
    },
    async getConfigMap(namespace, name, signal) {
      const r = await client.get<ConfigMapObject>({ resource: 'configmaps', namespace, name }, { signal });
      if (!r.ok) {
        if (r.reason === 'NotFound') return undefined;
        throw new Error(r.status.message ?? r.reason);
      }
      return { ...(r.object.data ?? {}) };
    },
    services,
  };
}
