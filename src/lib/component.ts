/**
 * One lifecycle for every long-running part of the kubelet (loops, servers, sources, clients), in
 * the spirit of Temporal's worker: an explicit state, a snapshot that can be served, and a stop
 * bounded by a deadline. The runner (component-runner.ts) starts them in order and stops them in
 * reverse under one shutdown deadline.
 */
import { realClock, type Clock } from './clock.js';
import { errorMessage } from './errors.js';
import { logger } from './log.js';

const log = logger('component');

export type ComponentState = 'NEW' | 'STARTING' | 'RUNNING' | 'STOPPING' | 'STOPPED' | 'FAILED';

/** What a component says about itself: small enough to serve on /healthz?verbose. */
export interface ComponentStatus {
  readonly name: string;
  readonly state: ComponentState;
  /** When it entered this state, ms since the epoch. */
  readonly sinceMs: number;
  /** Why it failed (FAILED) or why its last stop went wrong. */
  readonly error?: string;
  /** Facts of its own (counters, sync state), for a reader of the snapshot. */
  readonly detail?: Readonly<Record<string, unknown>>;
}

export interface Component {
  /** Upstream's name for the part where it has one (syncloop, pleg, statusmanager, …). */
  readonly name: string;
  /** Resolves once running; rejects (state FAILED) when it cannot start. Starting twice is a no-op. */
  start(): Promise<void>;
  /**
   * Resolves once stopped, or once `deadline` aborts, whichever comes first: work that outlives the
   * deadline is left behind (the state stays STOPPING). Never rejects; a failed stop reads FAILED.
   */
  stop(deadline: AbortSignal): Promise<void>;
  status(): ComponentStatus;
}

/** What an existing class offers; asComponent gives it the contract around it. */
export interface ComponentParts {
  start?(): void | Promise<void>;
  /** May use the deadline to cut long work short; it is not awaited past the deadline anyway. */
  stop?(deadline: AbortSignal): void | Promise<void>;
  detail?(): Record<string, unknown> | undefined;
}

export interface ComponentOptions {
  clock?: Clock;
  /** A failed start is logged and the kubelet runs on without this part (state FAILED). */
  optional?: boolean;
}

/** Resolves true when work settles, false when signal aborts first. Never rejects. */
export function settledBefore(work: Promise<unknown>, signal: AbortSignal): Promise<boolean> {
  const settled = work.then(
    () => true,
    () => true,
  );
  if (signal.aborted) return Promise.race([settled, Promise.resolve(false)]);
  return new Promise((resolve) => {
    const onAbort = () => resolve(false);
    signal.addEventListener('abort', onAbort, { once: true });
    void settled.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    });
  });
}

class PartsComponent implements Component {
  private state: ComponentState = 'NEW';
  private sinceMs: number;
  private error: string | undefined;
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private readonly clock: Clock;

  constructor(
    readonly name: string,
    private readonly parts: ComponentParts,
    private readonly opts: ComponentOptions,
  ) {
    this.clock = opts.clock ?? realClock;
    this.sinceMs = this.clock.now();
  }

  start(): Promise<void> {
    if (this.starting) return this.starting;
    if (this.state !== 'NEW')
      return Promise.reject(new Error(`${this.name} cannot start from state ${this.state}`));
    this.enter('STARTING');
    this.starting = (async () => {
      try {
        await this.parts.start?.();
        if (this.state === 'STARTING') this.enter('RUNNING');
      } catch (err) {
        // Stopped while starting: the start gave up because it was asked to.
        if (this.state === 'STOPPING' || this.state === 'STOPPED') throw err;
        this.enter('FAILED', errorMessage(err));
        if (!this.opts.optional) throw err;
        log.error('Component failed to start; running on without it', {
          component: this.name,
          err: this.error,
        });
      }
    })();
    return this.starting;
  }

  async stop(deadline: AbortSignal): Promise<void> {
    if (!this.stopping) {
      if (this.state === 'NEW') {
        this.enter('STOPPED');
        return;
      }
      // A part that never started has nothing to stop.
      if (this.state === 'FAILED') return;
      this.enter('STOPPING');
      this.stopping = (async () => {
        try {
          await this.parts.stop?.(deadline);
          this.enter('STOPPED');
        } catch (err) {
          this.enter('FAILED', errorMessage(err));
        }
      })();
    }
    await settledBefore(this.stopping, deadline);
  }

  status(): ComponentStatus {
    const detail = this.parts.detail?.();
    return {
      name: this.name,
      state: this.state,
      sinceMs: this.sinceMs,
      ...(this.error !== undefined ? { error: this.error } : {}),
      ...(detail ? { detail } : {}),
    };
  }

  private enter(state: ComponentState, error?: string): void {
    this.state = state;
    this.sinceMs = this.clock.now();
    if (error !== undefined) this.error = error;
  }
}

/** Gives a part with its own start/stop (sync or async) the Component contract. */
export function asComponent(name: string, parts: ComponentParts, opts: ComponentOptions = {}): Component {
  return new PartsComponent(name, parts, opts);
}

/**
 * A loop written as `run(signal)` (resolves once the signal aborts), such as a Reflector: start
 * launches it, stop aborts it and awaits it, so no loop is left running unseen.
 */
export function loopComponent(
  name: string,
  run: (signal: AbortSignal) => Promise<void>,
  opts: ComponentOptions & { detail?: () => Record<string, unknown> | undefined } = {},
): Component {
  let controller: AbortController | undefined;
  let done: Promise<void> | undefined;
  return new PartsComponent(
    name,
    {
      start() {
        controller = new AbortController();
        done = run(controller.signal).catch((err: unknown) =>
          log.error('Loop ended with an error', { component: name, err: errorMessage(err) }),
        );
      },
      async stop() {
        controller?.abort(new Error(`${name} stopping`));
        await done;
      },
      ...(opts.detail ? { detail: opts.detail } : {}),
    },
    opts,
  );
}
