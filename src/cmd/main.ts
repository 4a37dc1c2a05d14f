/**
 * The entry point: configuration, then the kubelet's components (build-kubelet.ts) started in order
 * by a ComponentRunner, and the signals that stop them.
 *
 * SIGTERM/SIGINT stop the components in reverse start order under one deadline of
 * SHUTDOWN_DEADLINE_MS: what is still busy then (a pod being terminated with a long grace period)
 * is left to the runtime and the next start, as upstream's kubelet leaves it. Pods keep running: a
 * restarted kubelet adopts them. A second signal exits at once. A running part that cannot go on
 * (BuildOptions.fatal: the client certificate has run out) stops them the same way, then exits 1.
 */
import { CLI_COMMANDS, runCli } from '../cli/cli.js';
import { realClock, type Clock } from '../lib/clock.js';
import { ComponentRunner } from '../lib/component-runner.js';
import type { CodeCacheOutcome } from '../lib/code-cached-script.js';
import { errorMessage } from '../lib/errors.js';
import { logger, setLogFormat, setVModule, setVerbosity, type LogFormat } from '../lib/log.js';
import { sdNotifierFromEnv, startWatchdog, watchdogIntervalMs } from '../lib/sd-notify.js';
import type { ServerHost } from '../server/local-server.js';
import { buildBootstrap, buildKubelet, type RunConfig } from './build-kubelet.js';
import { applyProcessLimits } from './process-limits.js';
import { loadKubeletConfig, type LoadedKubeletConfig } from './load-kubelet-config.js';
import { acquireLockFile, watchForLockContention, type HeldLock } from './lock-file.js';
import { KUBELET_VERSION } from './version.js';

const log = logger('kubelet');

/** How long a stop may take in all; a few seconds, so a supervisor's restart is never held up. */
export const SHUTDOWN_DEADLINE_MS = 5000;

/**
 * Runs the kubelet until a signal stops it; exits the process with the right code. `codeCache`:
 * what the built kubelet's start made of its V8 code cache (src/cmd/bundle-entry.ts), logged at --v=2.
 */
export async function main(argv: string[], codeCache?: CodeCacheOutcome): Promise<void> {
  // `tskubelet get pods`, `describe`, `logs`, `events`: a client of the running kubelet (src/cli).
  if ((CLI_COMMANDS as readonly string[]).includes(argv[0] ?? '')) {
    process.exitCode = await runCli(argv);
    return;
  }
  let loaded: LoadedKubeletConfig;
  try {
    loaded = await loadKubeletConfig(argv, {
      applyLogging: (logging) => {
        setLogFormat(logging.format as LogFormat);
        setVerbosity(logging.verbosity);
        setVModule(logging.vmodule);
      },
    });
  } catch (err) {
    process.stderr.write(`tskubelet: ${errorMessage(err)}\nRun 'tskubelet --help' for the flags.\n`);
    process.exit(1);
  }
  if (loaded.action !== 'run') {
    process.stdout.write(loaded.text);
    process.exit(0);
  }
  if (codeCache) log.v(2, 'V8 code cache', { ...codeCache });
  try {
    await run(loaded);
  } catch (err) {
    log.error('Kubelet failed', { err: errorMessage(err) });
    process.exit(1);
  }
}

async function run(loaded: RunConfig): Promise<void> {
  const { config, nodeName } = loaded;
  log.info('Starting tskubelet', {
    version: KUBELET_VERSION,
    nodeName,
    configFile: loaded.configFile || undefined,
  });

  // Not awaited: a failure is only logged (as upstream), and the start need not wait for prlimit.
  void applyProcessLimits(config);

  const runner = new ComponentRunner();
  // Aborted by the first signal: it cuts short a build waiting on the runtime.
  const stopController = new AbortController();
  let stopping = false;
  // The systemd watchdog, once the kubelet has started.
  const watchdog: { stop?: () => void } = {};
  const shutdown = (signal: string, exitCode = 0) => {
    if (stopping) {
      log.warn('Second signal: exiting now', { signal });
      process.exit(1);
    }
    stopping = true;
    log.info('Shutting down', { signal, deadlineMs: SHUTDOWN_DEADLINE_MS });
    stopController.abort(new Error(`received ${signal}`));
    watchdog.stop?.();
    runner.stop(SHUTDOWN_DEADLINE_MS).then(
      (report) => {
        if (report.leftBehind.length > 0)
          log.warn('Shutdown deadline passed; leaving the rest to the runtime and the next start', {
            components: report.leftBehind,
            elapsedMs: report.elapsedMs,
          });
        log.info('Kubelet stopped', { elapsedMs: report.elapsedMs });
        process.exit(exitCode);
      },
      (err: unknown) => {
        log.error('Shutdown failed', { err: errorMessage(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // Without a listener Node answers SIGUSR1 by opening its inspector on 127.0.0.1:9229, where any local
  // user could attach a debugger to this root process. The node shutdown manager adds its own listener
  // (SIGUSR1 starts a graceful shutdown); without it the signal is only logged.
  process.on('SIGUSR1', () => {
    if (process.listenerCount('SIGUSR1') === 1) log.info('Ignored SIGUSR1: graceful node shutdown is off');
  });

  // A running part that cannot go on (the client certificate has run out): stopped as by a signal,
  // pods left running, exit 1 so that the supervisor restarts the kubelet.
  const fatal = (err: Error) => {
    log.error('Kubelet failed', { err: errorMessage(err) });
    if (!stopping) shutdown('fatal error', 1);
  };
  const opts = { componentStatuses: () => runner.statuses(), signal: stopController.signal, fatal };
  let host: ServerHost;
  try {
    // Before anything else, as upstream: a second kubelet on the node waits here.
    if (!(await holdLockFile(loaded.flags, stopController.signal, shutdown))) return;
    const boot = await buildBootstrap(loaded, opts);
    host = boot.host;
    if (!(await runner.startAll(boot.components))) return;
    const graph = await buildKubelet(loaded, boot, stopController.signal, opts);
    if (!(await runner.startAll(graph.components))) return;
  } catch (err) {
    if (stopping) return;
    // What did start is stopped before the process exits with the error.
    await runner.stop(SHUTDOWN_DEADLINE_MS);
    throw err;
  }
  log.info('Kubelet started', { nodeName, pods: config.staticPodPath || undefined });
  watchdog.stop = notifySystemd(host, realClock);
}

/**
 * --lock-file: held from here until the process exits; with --exit-on-lock-contention a contender
 * stops this kubelet as a signal would. False when a stop came while waiting for the lock.
 */
async function holdLockFile(
  flags: RunConfig['flags'],
  signal: AbortSignal,
  shutdown: (reason: string) => void,
): Promise<boolean> {
  const file = flags.lockFilePath;
  if (file === '') return true;
  log.info('Acquiring file lock', { path: file });
  let lock: HeldLock;
  try {
    lock = await acquireLockFile(file, {
      signal,
      onWait: () =>
        log.error(
          'The lock file is held by another process (another kubelet?); waiting until it is released',
          {
            path: file,
          },
        ),
    });
  } catch (err) {
    if (signal.aborted) return false;
    throw new Error(`unable to acquire file lock on ${JSON.stringify(file)}: ${errorMessage(err)}`);
  }
  log.info('Acquired file lock', { path: file });
  if (flags.exitOnLockContention) {
    log.info('Watching for lock file contention', { path: file });
    watchForLockContention(lock, realClock, (reason) => {
      log.info('Lock file contention: exiting', { path: file, reason });
      shutdown('lock file contention');
    });
  }
  return true;
}

/** Type=notify: READY=1 now that the kubelet serves; WATCHDOG=1 while every /healthz check passes. */
function notifySystemd(host: ServerHost, clock: Clock): (() => void) | undefined {
  const notifier = sdNotifierFromEnv();
  if (!notifier) return undefined;
  void notifier.notify('READY=1').then((err) => {
    if (err) log.warn('Unable to notify systemd', { err });
  });
  const intervalMs = watchdogIntervalMs();
  if (intervalMs === undefined) return undefined;
  return startWatchdog(
    notifier,
    intervalMs,
    async () => {
      for (const c of host.healthChecks()) {
        const reason = await c.check();
        if (reason !== undefined) return `${c.name}: ${reason}`;
      }
      return undefined;
    },
    clock,
    (reason) => log.warn('Health check failed: withholding the systemd watchdog', { reason }),
  );
}
