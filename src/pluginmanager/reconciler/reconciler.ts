/**
 * Makes the registered plugins match the sockets found (upstream: pluginmanager/reconciler): every
 * second, deregisters what is registered but gone (or re-created, then registered anew), then
 * registers what is found but not registered. The executor's back-off and one-operation-per-socket
 * rule keep a failing plugin from being retried each pass.
 */
import { logger } from '../../lib/log.js';
import type { ActualStateOfWorld } from '../cache/actual-state-of-world.js';
import type { DesiredStateOfWorld } from '../cache/desired-state-of-world.js';
import type { PluginHandler } from '../cache/types.js';
import type { OperationExecutor } from '../operationexecutor/operation-executor.js';

const log = logger('pluginmanager');

export class Reconciler {
  private readonly handlers = new Map<string, PluginHandler>();

  constructor(
    private readonly executor: OperationExecutor,
    private readonly desired: DesiredStateOfWorld,
    private readonly actual: ActualStateOfWorld,
  ) {}

  addHandler(pluginType: string, handler: PluginHandler): void {
    this.handlers.set(pluginType, handler);
  }

  reconcile(): void {
    // Deregistrations first, as upstream.
    for (const registered of this.actual.registeredPlugins()) {
      const wanted = this.desired.get(registered.socketPath);
      if (wanted && wanted.id === registered.id) continue;
      if (wanted) {
        log.v(
          5,
          'An updated version of plugin has been found, unregistering the plugin first before reregistering',
          {
            path: registered.socketPath,
          },
        );
      }
      if (this.executor.unregisterPlugin(registered, this.actual) === undefined) {
        log.v(1, 'operationExecutor.UnregisterPlugin started', {
          path: registered.socketPath,
          name: registered.name,
        });
      }
    }
    for (const plugin of this.desired.pluginsToRegister()) {
      if (this.actual.pluginExistsWithCorrectId(plugin)) continue;
      if (this.executor.registerPlugin(plugin, this.handlers, this.actual) === undefined) {
        log.v(1, 'operationExecutor.RegisterPlugin started', { path: plugin.socketPath });
      }
    }
  }
}
