/**
 * sd_notify for Type=notify units: READY=1 once the kubelet serves, WATCHDOG=1 while /healthz passes.
 *
 * Why a subprocess: the protocol is one datagram on the AF_UNIX socket named by NOTIFY_SOCKET, and
 * Node has no unix datagram sockets. The npm modules that add them (unix-dgram, sd-notify) are native
 * addons that must be compiled where they are installed; systemd's own `systemd-notify` is present
 * wherever systemd sets NOTIFY_SOCKET. It runs without a shell, with --no-block (no reply barrier)
 * and --pid naming this process, under a deadline; the unit sets NotifyAccess=all so the message
 * from the helper process is accepted.
 */
import { execFile } from 'node:child_process';
import type { Clock, TimerHandle } from './clock.js';

const NOTIFY_TIMEOUT_MS = 5_000;

export type RunFile = (
  file: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; timeout: number },
) => Promise<void>;

const runFile: RunFile = (file, args, options) =>
  new Promise((resolve, reject) => {
    execFile(file, args, options, (err) => (err ? reject(err) : resolve()));
  });

export class SdNotifier {
  constructor(
    private readonly socket: string,
    private readonly run: RunFile = runFile,
    private readonly pid = process.pid,
  ) {}

  /** Sends one state line (READY=1, WATCHDOG=1, STATUS=...). Never throws: a supervisor problem is not the kubelet's. */
  async notify(state: string): Promise<string | undefined> {
    try {
      await this.run('systemd-notify', ['--no-block', `--pid=${this.pid}`, state], {
        env: { ...process.env, NOTIFY_SOCKET: this.socket },
        timeout: NOTIFY_TIMEOUT_MS,
      });
      return undefined;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  }
}

/** The notifier systemd asked for, or undefined when NOTIFY_SOCKET is unset (not under Type=notify). */
export function sdNotifierFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  run?: RunFile,
): SdNotifier | undefined {
  const socket = env.NOTIFY_SOCKET;
  return socket ? new SdNotifier(socket, run) : undefined;
}

/**
 * Half of WATCHDOG_USEC in milliseconds (sd_watchdog_enabled's advice), or undefined when no watchdog
 * is asked for this process.
 */
export function watchdogIntervalMs(
  env: NodeJS.ProcessEnv = process.env,
  pid = process.pid,
): number | undefined {
  const usec = Number(env.WATCHDOG_USEC ?? '');
  if (!Number.isFinite(usec) || usec <= 0) return undefined;
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return undefined;
  return Math.max(Math.floor(usec / 2000), 100);
}

/** Sends WATCHDOG=1 every intervalMs while healthy() says so; a failing check withholds it, so systemd restarts us. */
export function startWatchdog(
  notifier: SdNotifier,
  intervalMs: number,
  healthy: () => Promise<string | undefined>,
  clock: Clock,
  onUnhealthy: (reason: string) => void,
): () => void {
  let stopped = false;
  let timer: TimerHandle | undefined;
  const tick = async () => {
    const reason = await healthy().catch((err: unknown) => String(err));
    if (stopped) return;
    if (reason === undefined) await notifier.notify('WATCHDOG=1');
    else onUnhealthy(reason);
    if (!stopped) timer = clock.setTimeout(() => void tick(), intervalMs);
  };
  void tick();
  return () => {
    stopped = true;
    if (timer) clock.clearTimeout(timer);
  };
}
