/**
 * Registers and deregisters plugins, at most one operation per socket at a time, with exponential
 * back-off after a failure (upstream: operationexecutor over goroutinemap with
 * exponentialBackOffOnError: 500 ms doubling to 2 min 2 s). The register operation is upstream's
 * GenerateRegisterPluginFunc: dial, GetInfo, pick the handler by type, validate, record the plugin,
 * register it, and tell the plugin how it went.
 */
import { errorMessage } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import type { Clock } from '../../lib/clock.js';
import type { ActualStateOfWorld } from '../cache/actual-state-of-world.js';
import type { PluginHandler, PluginToRegister, RegisteredPlugin } from '../cache/types.js';
import { dialRegistration, type RegistrationClient } from './registration-client.js';

const log = logger('pluginmanager');

export const INITIAL_BACKOFF_MS = 500;
export const MAX_BACKOFF_MS = 122_000;

/** Why an operation was not started: one is running, or the last one failed too recently. */
export type NotStarted = 'AlreadyExists' | 'ExponentialBackoff';

export type Dialer = (socketPath: string) => Promise<RegistrationClient>;

interface BackoffState {
  lastErrorMs: number;
  delayMs: number;
  lastError: string;
}

export class OperationExecutor {
  private readonly running = new Map<string, Promise<void>>();
  private readonly backoff = new Map<string, BackoffState>();

  constructor(
    private readonly clock: Clock,
    private readonly dial: Dialer = (p) => dialRegistration(p),
  ) {}

  registerPlugin(
    plugin: PluginToRegister,
    handlers: ReadonlyMap<string, PluginHandler>,
    actual: ActualStateOfWorld,
  ): NotStarted | undefined {
    return this.run(plugin.socketPath, () => this.register(plugin, handlers, actual));
  }

  unregisterPlugin(plugin: RegisteredPlugin, actual: ActualStateOfWorld): NotStarted | undefined {
    return this.run(plugin.socketPath, async () => {
      // Out of the actual state first, so a socket re-created meanwhile is registered again.
      actual.removePlugin(plugin.socketPath);
      plugin.handler.deRegisterPlugin(plugin.name, plugin.endpoint);
      log.v(4, 'DeRegisterPlugin called', { pluginName: plugin.name });
    });
  }

  /** Until every operation under way has ended. */
  async wait(): Promise<void> {
    await Promise.allSettled([...this.running.values()]);
  }

  private run(key: string, op: () => Promise<void>): NotStarted | undefined {
    if (this.running.has(key)) return 'AlreadyExists';
    const b = this.backoff.get(key);
    if (b && this.clock.now() < b.lastErrorMs + b.delayMs) return 'ExponentialBackoff';
    const p = op().then(
      () => {
        this.backoff.delete(key);
      },
      (err: unknown) => {
        const prev = this.backoff.get(key);
        const delayMs = prev ? Math.min(prev.delayMs * 2, MAX_BACKOFF_MS) : INITIAL_BACKOFF_MS;
        this.backoff.set(key, { lastErrorMs: this.clock.now(), delayMs, lastError: errorMessage(err) });
        log.error('Operation for plugin failed', {
          path: key,
          err: errorMessage(err),
          retryAfterMs: delayMs,
        });
      },
    );
    this.running.set(
      key,
      p.finally(() => this.running.delete(key)),
    );
    return undefined;
  }

  private async register(
    plugin: PluginToRegister,
    handlers: ReadonlyMap<string, PluginHandler>,
    actual: ActualStateOfWorld,
  ): Promise<void> {
    const socketPath = plugin.socketPath;
    let client: RegistrationClient;
    try {
      client = await this.dial(socketPath);
    } catch (err) {
      throw new Error(
        `RegisterPlugin error -- dial failed at socket ${socketPath}, err: ${errorMessage(err)}`,
      );
    }
    try {
      let info;
      try {
        info = await client.getInfo();
      } catch (err) {
        throw new Error(
          `RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket ${socketPath}, err: ${errorMessage(err)}`,
        );
      }
      const notify = async (registered: boolean, error: string): Promise<void> => {
        try {
          await client.notifyRegistrationStatus(registered, error);
        } catch (err) {
          throw new Error(
            `RegisterPlugin error -- failed to send ${error === '' ? 'registration status' : 'error'} at socket ${socketPath}, err: ${error === '' ? '' : `${error}: `}${errorMessage(err)}`,
          );
        }
        if (error !== '') throw new Error(error);
      };
      const handler = handlers.get(info.type);
      if (!handler) {
        await notify(
          false,
          `RegisterPlugin error -- no handler registered for plugin type: ${info.type} at socket ${socketPath}`,
        );
        return;
      }
      const endpoint = info.endpoint === '' ? socketPath : info.endpoint;
      try {
        await handler.validatePlugin(info.name, endpoint, info.supportedVersions);
      } catch (err) {
        await notify(
          false,
          `RegisterPlugin error -- plugin validation failed with err: ${errorMessage(err)}`,
        );
        return;
      }
      // Recorded before the handler registers it, so a removal meanwhile becomes a deregistration.
      actual.addPlugin({ socketPath, id: plugin.id, handler, name: info.name, endpoint });
      try {
        await handler.registerPlugin(info.name, endpoint, info.supportedVersions);
      } catch (err) {
        await notify(
          false,
          `RegisterPlugin error -- plugin registration failed with err: ${errorMessage(err)}`,
        );
        return;
      }
      await notify(true, '');
      log.info('Registered plugin', { pluginType: info.type, pluginName: info.name, endpoint });
    } finally {
      client.close();
    }
  }
}
