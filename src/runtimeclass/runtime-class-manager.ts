/**
 * RuntimeClasses as the kubelet resolves them (upstream: pkg/kubelet/runtimeclass Manager): a watched
 * copy of the cluster's `node.k8s.io/v1` RuntimeClasses, read when a pod's sandbox is made. Only a
 * kubelet with an API client has one; without it, runtimeClassName is not looked up at all.
 */
import type { ObjectMeta } from '../api/core-v1.js';
import type { RuntimeClassLookup } from '../kuberuntime/runtime-manager.js';
import type { Clock } from '../lib/clock.js';
import { Reflector, type ListerWatcher, type ReflectorStatus } from '../k8s/reflector.js';

export interface RuntimeClass {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  handler: string;
  overhead?: { podFixed?: Record<string, string> };
  scheduling?: unknown;
}

export class RuntimeClassManager implements RuntimeClassLookup {
  private readonly reflector: Reflector<RuntimeClass>;

  constructor(client: ListerWatcher, clock?: Clock) {
    this.reflector = new Reflector<RuntimeClass>({
      client,
      ref: { apiVersion: 'node.k8s.io/v1', resource: 'runtimeclasses' },
      name: 'runtimeclasses',
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

  /**
   * The handler for the pod's runtimeClassName: '' (the runtime's default) for none; an error in the
   * lister's words when the class is not known (upstream LookupRuntimeHandler).
   */
  lookupRuntimeHandler(runtimeClassName: string | undefined): string {
    if (!runtimeClassName) return '';
    const rc = this.reflector.get(undefined, runtimeClassName);
    if (!rc) {
      if (!this.reflector.hasSynced()) {
        throw new Error(`failed to lookup RuntimeClass ${runtimeClassName}: RuntimeClasses not yet synced`);
      }
      throw new Error(`runtimeclass.node.k8s.io "${runtimeClassName}" not found`);
    }
    return rc.handler;
  }
}
