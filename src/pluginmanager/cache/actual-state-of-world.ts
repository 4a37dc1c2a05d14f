/** The plugins registered, by socket (upstream: cache.ActualStateOfWorld). */
import type { PluginToRegister, RegisteredPlugin } from './types.js';

export class ActualStateOfWorld {
  private readonly plugins = new Map<string, RegisteredPlugin>();

  addPlugin(plugin: RegisteredPlugin): void {
    this.plugins.set(plugin.socketPath, plugin);
  }

  removePlugin(socketPath: string): void {
    this.plugins.delete(socketPath);
  }

  registeredPlugins(): RegisteredPlugin[] {
    return [...this.plugins.values()];
  }

  pluginExistsWithCorrectId(p: PluginToRegister): boolean {
    return this.plugins.get(p.socketPath)?.id === p.id;
  }
}
