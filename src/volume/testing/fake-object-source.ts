/**
 * An in-memory VolumeObjectSource for tests: objects by namespace and name, tokens numbered in
 * order on the test's clock, and a count of reads so caching can be checked.
 */
import type { Clock } from '../../lib/clock.js';
import type { ObjectGetOptions, VolumeObjectSource } from '../volume-object-source.js';
import type {
  ConfigMap,
  PersistentVolume,
  PersistentVolumeClaim,
  Secret,
  TokenRequest,
} from '../volume-types.js';

export class FakeObjectSource implements VolumeObjectSource {
  readonly configMaps = new Map<string, ConfigMap>();
  readonly secrets = new Map<string, Secret>();
  readonly claims = new Map<string, PersistentVolumeClaim>();
  readonly volumes = new Map<string, PersistentVolume>();
  readonly tokenRequests: { namespace: string; serviceAccountName: string; request: TokenRequest }[] = [];
  readonly reads: string[] = [];
  /** Makes every call fail with this error, as an unreachable API server would. */
  failWith: Error | undefined;
  private tokens = 0;

  constructor(private readonly clock: Clock) {}

  setConfigMap(
    namespace: string,
    name: string,
    data: Record<string, string>,
    binaryData?: Record<string, string>,
  ): void {
    this.configMaps.set(`${namespace}/${name}`, { metadata: { namespace, name }, data, binaryData });
  }

  /** data as plain text; stored base64, as the API serves it. */
  setSecret(namespace: string, name: string, data: Record<string, string>): void {
    const encoded = Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    );
    this.secrets.set(`${namespace}/${name}`, { metadata: { namespace, name }, data: encoded });
  }

  getConfigMap(namespace: string, name: string, _opts?: ObjectGetOptions): Promise<ConfigMap | undefined> {
    return this.read(`configmaps/${namespace}/${name}`, () => this.configMaps.get(`${namespace}/${name}`));
  }

  getSecret(namespace: string, name: string, _opts?: ObjectGetOptions): Promise<Secret | undefined> {
    return this.read(`secrets/${namespace}/${name}`, () => this.secrets.get(`${namespace}/${name}`));
  }

  getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined> {
    return this.read(`persistentvolumeclaims/${namespace}/${name}`, () =>
      this.claims.get(`${namespace}/${name}`),
    );
  }

  getPersistentVolume(name: string): Promise<PersistentVolume | undefined> {
    return this.read(`persistentvolumes/${name}`, () => this.volumes.get(name));
  }

  createToken(namespace: string, serviceAccountName: string, request: TokenRequest): Promise<TokenRequest> {
    if (this.failWith) return Promise.reject(this.failWith);
    this.tokenRequests.push({ namespace, serviceAccountName, request });
    const seconds = request.spec.expirationSeconds ?? 3600;
    return Promise.resolve({
      spec: { ...request.spec, expirationSeconds: seconds },
      status: {
        token: `token-${++this.tokens}`,
        expirationTimestamp: new Date(this.clock.now() + seconds * 1000).toISOString(),
      },
    });
  }

  private read<T>(what: string, get: () => T | undefined): Promise<T | undefined> {
    this.reads.push(what);
    if (this.failWith) return Promise.reject(this.failWith);
    const o = get();
    return Promise.resolve(o === undefined ? undefined : structuredClone(o));
  }
}
