/**
 * Starts components in the order given and stops them in reverse under ONE deadline: each stop gets
 * what is left of it, and a part still busy when it passes is left behind, not waited for (pods
 * being terminated are left to the runtime and the next start, as upstream's kubelet leaves them).
 */
import { realClock, type Clock } from './clock.js';
import type { Component, ComponentStatus } from './component.js';
import { errorMessage } from './errors.js';
import { logger } from './log.js';

const log = logger('runner');

export interface StopReport {
  /** Components still stopping when the deadline passed, in stop order. */
  leftBehind: string[];
  /** Components whose stop failed. */
  failed: string[];
  elapsedMs: number;
}

export class ComponentRunner {
  /** Every component handed to start, in start order (the one starting included). */
  private readonly components: Component[] = [];
  private stopping: Promise<StopReport> | undefined;
  private readonly clock: Clock;

  constructor(opts: { clock?: Clock } = {}) {
    this.clock = opts.clock ?? realClock;
  }

  /** True once stop has been called: starts after that do nothing. */
  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /**
   * Starts each component in turn; resolves false if a stop began meanwhile (a start the stop cut
   * short is not an error), and rejects with the first failed start otherwise.
   */
  async startAll(components: readonly Component[]): Promise<boolean> {
    for (const c of components) {
      if (this.stopping) return false;
      this.components.push(c);
      log.v(2, 'Starting component', { component: c.name });
      try {
        await c.start();
      } catch (err) {
        if (this.stopping) return false;
        throw err;
      }
    }
    return !this.stopping;
  }

  statuses(): ComponentStatus[] {
    return this.components.map((c) => c.status());
  }

  /** Stops every started component, last started first, within timeoutMs in all. Idempotent. */
  stop(timeoutMs: number): Promise<StopReport> {
    this.stopping ??= this.stopInReverse(timeoutMs);
    return this.stopping;
  }

  private async stopInReverse(timeoutMs: number): Promise<StopReport> {
    const startMs = this.clock.now();
    const deadline = new AbortController();
    const timer = this.clock.setTimeout(
      () => deadline.abort(new Error(`shutdown deadline of ${timeoutMs} ms passed`)),
      timeoutMs,
    );
    const report: StopReport = { leftBehind: [], failed: [], elapsedMs: 0 };
    try {
      for (const c of [...this.components].reverse()) {
        log.v(2, 'Stopping component', { component: c.name });
        try {
          await c.stop(deadline.signal);
        } catch (err) {
          // The contract says stop never rejects; a part that breaks it must not stop the others.
          log.error('Component stop threw', { component: c.name, err: errorMessage(err) });
        }
        const s = c.status();
        if (s.state === 'STOPPING') report.leftBehind.push(c.name);
        else if (s.state === 'FAILED' && s.error !== undefined) report.failed.push(c.name);
      }
    } finally {
      this.clock.clearTimeout(timer);
    }
    report.elapsedMs = this.clock.now() - startMs;
    return report;
  }
}
