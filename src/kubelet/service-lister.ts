/**
 * The cluster's services as the kubelet reads them for containers' service variables (upstream: the
 * kubelet's serviceLister over a services informer, kubelet.go NewMainKubelet): one list+watch of
 * all namespaces' services, indexed by namespace, so a container start reads memory instead of
 * listing its namespace's services on the API server.
 */
import type { ServiceForEnv, ServiceLister } from '../kuberuntime/container-env.js';
import type { Clock } from '../lib/clock.js';
import { Reflector, type ListerWatcher, type ReflectorStatus } from '../k8s/reflector.js';
import type { KubeObject } from '../k8s/rest-client.js';

type Service = KubeObject & ServiceForEnv;

export class ApiServiceLister implements ServiceLister {
  private readonly reflector: Reflector<Service>;
  /** namespace → name → service; the reflector's own objects, never changed here. */
  private readonly byNamespace = new Map<string, Map<string, Service>>();

  constructor(client: ListerWatcher, clock?: Clock) {
    this.reflector = new Reflector<Service>({
      client,
      ref: { resource: 'services' },
      name: 'services',
      handlers: {
        onAdd: (s) => this.put(s),
        onUpdate: (_old, s) => this.put(s),
        onDelete: (s) => this.remove(s),
      },
      ...(clock ? { clock } : {}),
    });
  }

  /** Lists, then watches, until signal aborts. */
  run(signal: AbortSignal): Promise<void> {
    return this.reflector.run(signal);
  }

  status(): ReflectorStatus {
    return this.reflector.status();
  }

  hasSynced(): boolean {
    return this.reflector.hasSynced();
  }

  list(namespace: string): readonly ServiceForEnv[] {
    const services = this.byNamespace.get(namespace);
    return services ? [...services.values()] : [];
  }

  private put(s: Service): void {
    const ns = s.metadata.namespace ?? '';
    let services = this.byNamespace.get(ns);
    if (!services) this.byNamespace.set(ns, (services = new Map()));
    services.set(s.metadata.name ?? '', s);
  }

  private remove(s: Service): void {
    const ns = s.metadata.namespace ?? '';
    const services = this.byNamespace.get(ns);
    services?.delete(s.metadata.name ?? '');
    if (services?.size === 0) this.byNamespace.delete(ns);
  }
}
