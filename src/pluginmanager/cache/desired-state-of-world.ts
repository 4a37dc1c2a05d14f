/**
 * The sockets in the registry folder (upstream: cache.DesiredStateOfWorld): the watcher adds and
 * removes them; the reconciler registers what is here and deregisters what is not.
 */
import type { PluginToRegister } from './types.js';

export class DesiredStateOfWorld {
  private readonly plugins = new Map<string, PluginToRegister>();
  private nextId = 1;

  /** A socket seen (again): a new id even when known, since it may have been re-created in between. */
  addOrUpdatePlugin(socketPath: string): void {
    if (socketPath === '') throw new Error('socket path is empty');
    this.plugins.set(socketPath, { socketPath, id: this.nextId++ });
  }

  removePlugin(socketPath: string): void {
    this.plugins.delete(socketPath);
  }

  get(socketPath: string): PluginToRegister | undefined {
    return this.plugins.get(socketPath);
  }

  pluginsToRegister(): PluginToRegister[] {
    return [...this.plugins.values()];
  }
}
