/** A direct CRI client for integration tests: look at what the kubelet made, and clean it up afterwards. */
import { connectRuntime, type RuntimeConnection } from '../../src/cri/connect-runtime.js';
import type { Container, PodSandbox } from '../../src/cri/types.js';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { runtimeEndpoint } from './kubelet-process.js';

const LEGACY_LOGS_DIR = '/var/log/containers';

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

  /**
   * Stops and removes every sandbox (with its containers) of the namespace, and the kubelet's
   * `/var/log/containers/<pod>_<namespace>_<container>-<id>.log` links to their logs.
   */
  async removeNamespace(namespace: string): Promise<void> {
    for (const sb of await this.sandboxes(namespace)) {
      await this.conn.runtime.stopPodSandbox(sb.id).catch(() => undefined);
      await this.conn.runtime.removePodSandbox(sb.id).catch(() => undefined);
    }
    const links = await readdir(LEGACY_LOGS_DIR).catch(() => [] as string[]);
    for (const name of links) {
      if (name.includes(`_${namespace}_`)) await rm(path.join(LEGACY_LOGS_DIR, name), { force: true });
    }
  }

  close(): void {
    this.conn.close();
  }
}
