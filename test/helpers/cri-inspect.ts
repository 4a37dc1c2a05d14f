/** A direct CRI client for integration tests: look at what the kubelet made, and clean it up afterwards. */
import { connectRuntime, type RuntimeConnection } from '../../src/cri/connect-runtime.js';
import type { Container, PodSandbox } from '../../src/cri/types.js';
import { runtimeEndpoint } from './kubelet-process.js';

export class CriInspector {
  private constructor(readonly conn: RuntimeConnection) {}

  static async connect(): Promise<CriInspector> {
    const conn = await connectRuntime(runtimeEndpoint, {
      runtimeRequestTimeoutMs: 30_000,
      signal: AbortSignal.timeout(30_000),
    });
    return new CriInspector(conn);
  }

  async sandboxes(namespace: string): Promise<PodSandbox[]> {
    return this.conn.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.namespace': namespace } });
  }

  async containers(namespace: string): Promise<Container[]> {
    return this.conn.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': namespace } });
  }

  /** The containers of one pod (by its name as the kubelet named it), newest first. */
  async podContainers(namespace: string, podName: string): Promise<Container[]> {
    const all = await this.conn.runtime.listContainers({
      labelSelector: { 'io.kubernetes.pod.namespace': namespace, 'io.kubernetes.pod.name': podName },
    });
    return all.sort((a, b) => b.createdAt - a.createdAt);
  }

  /** Stops and removes every sandbox (with its containers) of the namespace. */
  async removeNamespace(namespace: string): Promise<void> {
    for (const sb of await this.sandboxes(namespace)) {
      await this.conn.runtime.stopPodSandbox(sb.id).catch(() => undefined);
      await this.conn.runtime.removePodSandbox(sb.id).catch(() => undefined);
    }
  }

  close(): void {
    this.conn.close();
  }
}
