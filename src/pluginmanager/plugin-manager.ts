/**
 * The plugin manager (upstream: pkg/kubelet/pluginmanager): plugins such as CSI drivers and device
 * plugins announce themselves by putting a unix socket in `<root-dir>/plugins_registry`; the watcher
 * finds it, and the reconciler registers it with the handler for its type (GetInfo, validate,
 * register, NotifyRegistrationStatus), and deregisters it once the socket is gone.
 *
 * Handlers are added before start (upstream: AddHandler in the kubelet's initializeRuntimeDependentModules).
 */
import path from 'node:path';
import { realClock, type Clock, type TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { ActualStateOfWorld } from './cache/actual-state-of-world.js';
import { DesiredStateOfWorld } from './cache/desired-state-of-world.js';
import type { PluginHandler, RegisteredPlugin } from './cache/types.js';
import { OperationExecutor, type Dialer } from './operationexecutor/operation-executor.js';
import { PluginWatcher } from './pluginwatcher/plugin-watcher.js';
import { Reconciler } from './reconciler/reconciler.js';

const log = logger('pluginmanager');

/** upstream: the kubelet's pluginsRegistryDir under --root-dir. */
export const PLUGINS_REGISTRY_DIR_NAME = 'plugins_registry';
/** upstream: the reconciler's loopSleepDuration. */
export const RECONCILER_LOOP_PERIOD_MS = 1_000;
const STOP_WAIT_MS = 1_000;

export interface PluginManagerOptions {
  /** The folder watched: `<root-dir>/plugins_registry`. */
  socketDir: string;
  clock?: Clock;
  /** Instead of dialling the socket (unit tests). */
  dial?: Dialer;
  loopPeriodMs?: number;
}

export function pluginsRegistryDir(rootDir: string): string {
  return path.join(rootDir, PLUGINS_REGISTRY_DIR_NAME);
}

export class PluginManager {
  private readonly clock: Clock;
  private readonly desired = new DesiredStateOfWorld();
  private readonly actual = new ActualStateOfWorld();
  private readonly executor: OperationExecutor;
  private readonly reconciler: Reconciler;
  private readonly watcher: PluginWatcher;
  private readonly loopPeriodMs: number;
  private timer: TimerHandle | undefined;
  private state: 'NEW' | 'RUNNING' | 'STOPPED' = 'NEW';

  constructor(opts: PluginManagerOptions) {
    this.clock = opts.clock ?? realClock;
    this.executor = new OperationExecutor(this.clock, opts.dial);
    this.reconciler = new Reconciler(this.executor, this.desired, this.actual);
    this.watcher = new PluginWatcher(opts.socketDir, this.desired);
    this.loopPeriodMs = Math.max(100, opts.loopPeriodMs ?? RECONCILER_LOOP_PERIOD_MS);
  }

  /** upstream: AddHandler; pluginType is PluginInfo.type (`CSIPlugin`, `DevicePlugin`). */
  addHandler(pluginType: string, handler: PluginHandler): void {
    this.reconciler.addHandler(pluginType, handler);
  }

  async start(): Promise<void> {
    await this.watcher.start();
    this.state = 'RUNNING';
    this.tick();
  }

  private tick(): void {
    if (this.state !== 'RUNNING') return;
    try {
      this.reconciler.reconcile();
    } catch (err) {
      log.error('Plugin reconciler failed', { err: errorMessage(err) });
    }
    this.timer = this.clock.setTimeout(() => this.tick(), this.loopPeriodMs);
  }

  /** One pass now, besides the periodic ones (tests). */
  reconcileNow(): void {
    this.reconciler.reconcile();
  }

  /**
   * Stops watching and reconciling. Plugins stay registered. An operation under way (a driver's
   * NodeGetInfo may take up to 2 min) is waited for at most STOP_WAIT_MS: the kubelet's one
   * shutdown deadline is shorter, and the process ending ends it anyway.
   */
  async stop(): Promise<void> {
    this.state = 'STOPPED';
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.watcher.stop();
    const ac = new AbortController();
    await Promise.race([
      this.executor.wait(),
      this.clock.sleep(STOP_WAIT_MS, ac.signal).catch(() => undefined),
    ]);
    ac.abort();
  }

  /** Waits for what the watcher has seen and the operations under way (tests). */
  async settled(): Promise<void> {
    await this.watcher.settled();
    await this.executor.wait();
  }

  registeredPlugins(): RegisteredPlugin[] {
    return this.actual.registeredPlugins();
  }

  status(): { registered: { name: string; socketPath: string }[]; sockets: number } {
    return {
      registered: this.actual.registeredPlugins().map((p) => ({ name: p.name, socketPath: p.socketPath })),
      sockets: this.desired.pluginsToRegister().length,
    };
  }
}
