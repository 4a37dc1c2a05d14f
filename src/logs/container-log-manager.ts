/**
 * Upstream's containerLogManager (pkg/kubelet/logs/container_log_manager.go): every
 * containerLogMonitorInterval each running container's log file is looked at; once it reaches
 * containerLogMaxSize it is renamed `<log>.<YYYYMMDD-hhmmss>` and the runtime is told to reopen
 * it (CRI ReopenContainerLog). Older rotated files are gzipped (`.gz`), and only
 * containerLogMaxFiles − 2 of them are kept beside the new and the just-rotated file, oldest
 * removed first so a reader of the newer ones is not cut off. containerLogMaxWorkers containers
 * are handled at once.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type * as Zlib from 'node:zlib';
import type { RuntimeService } from '../cri/types.js';
import type { Clock, TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { lazyBuiltin } from '../lib/lazy-builtin.js';
import { logger } from '../lib/log.js';

const log = logger('logs');
// Loaded by the first rotation that compresses.
const zlib = lazyBuiltin<typeof Zlib>('node:zlib');

const COMPRESS_SUFFIX = '.gz';
const TMP_SUFFIX = '.tmp';
/** The loop never runs more often than upstream's validation allows. */
const MIN_MONITOR_INTERVAL_MS = 3000;

export interface LogRotatePolicy {
  maxSizeBytes: number;
  maxFiles: number;
}

export interface ContainerLogManagerOptions {
  runtimeService: Pick<
    RuntimeService,
    'listContainers' | 'containerStatus' | 'reopenContainerLog' | 'createdContainerLogPath'
  >;
  clock: Clock;
  policy: LogRotatePolicy;
  maxWorkers: number;
  monitorIntervalMs: number;
  runtimeRequestTimeoutMs: number;
}

/** Go's "20060102-150405" in local time: the suffix of a rotated log. */
export function rotationTimestamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

function isNotExist(err: unknown): boolean {
  return typeof err === 'object' && err !== null && 'code' in err && err.code === 'ENOENT';
}

export class ContainerLogManager {
  private timer: TimerHandle | undefined;
  private stopped = true;
  private readonly stopController = new AbortController();
  /**
   * Each running container's log path, which CRI fixes when the container is made: upstream asks
   * ContainerStatus for it at every pass, 100 calls every 10 s with 100 pods. Only the containers of
   * the last listing are kept.
   */
  private readonly logPaths = new Map<string, string>();

  constructor(private readonly opts: ContainerLogManagerOptions) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    this.stopController.abort(new Error('container log manager stopped'));
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(
      () => {
        void this.rotateLogs()
          .catch((err: unknown) => log.error('Failed to rotate container logs', { err: errorMessage(err) }))
          .finally(() => this.schedule());
      },
      Math.max(MIN_MONITOR_INTERVAL_MS, this.opts.monitorIntervalMs),
    );
  }

  private call() {
    return { timeoutMs: this.opts.runtimeRequestTimeoutMs, signal: this.stopController.signal };
  }

  /** One pass over the running containers, maxWorkers at a time. */
  async rotateLogs(): Promise<void> {
    const containers = await this.opts.runtimeService.listContainers({}, this.call());
    // Only running containers: a stopped one writes nothing, and an empty latest log is no use.
    const queue = containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => c.id);
    const running = new Set(queue);
    for (const id of this.logPaths.keys()) if (!running.has(id)) this.logPaths.delete(id);
    const worker = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        try {
          await this.processContainer(id);
        } catch (err) {
          log.error('Failed to rotate log for container', { containerID: id, err: errorMessage(err) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.opts.maxWorkers) }, worker));
  }

  private async processContainer(id: string): Promise<void> {
    // The kubelet's own containers' paths are known without a call (see CreatedLogPaths).
    let logPath = this.logPaths.get(id) ?? this.opts.runtimeService.createdContainerLogPath?.(id);
    if (logPath === undefined) {
      const status = await this.opts.runtimeService.containerStatus(id, false, this.call());
      logPath = status.status.logPath;
    }
    this.logPaths.set(id, logPath);
    if (!logPath) return;
    let size: number;
    try {
      size = (await stat(logPath)).size;
    } catch (err) {
      if (!isNotExist(err)) throw err;
      // A rotation whose reopen failed may have lost the file: asking the runtime to reopen recovers it.
      await this.opts.runtimeService.reopenContainerLog(id, this.call());
      size = (await stat(logPath)).size;
    }
    if (size < this.opts.policy.maxSizeBytes) return;
    await this.rotateLog(id, logPath);
  }

  private async rotateLog(id: string, logPath: string): Promise<void> {
    const dir = path.dirname(logPath);
    const prefix = `${path.basename(logPath)}.`;
    let logs = (await readdir(dir)).filter((n) => n.startsWith(prefix)).map((n) => path.join(dir, n));
    logs = await this.cleanupUnusedLogs(logs);
    logs = await this.removeExcessLogs(logs);
    for (const l of logs) {
      if (l.endsWith(COMPRESS_SUFFIX)) continue;
      try {
        await compressLog(l);
      } catch (err) {
        log.error('Failed to compress log', { path: l, err: errorMessage(err) });
      }
    }
    await this.rotateLatestLog(id, logPath);
  }

  /** Temporary files of an interrupted compression, and originals already compressed, go first. */
  private async cleanupUnusedLogs(logs: string[]): Promise<string[]> {
    const names = new Set(logs);
    const keep: string[] = [];
    for (const l of logs) {
      const unused =
        l.endsWith(TMP_SUFFIX) || (!l.endsWith(COMPRESS_SUFFIX) && names.has(l + COMPRESS_SUFFIX));
      if (!unused) {
        keep.push(l);
        continue;
      }
      await unlink(l).catch((err: unknown) => {
        if (!isNotExist(err)) throw err;
      });
    }
    return keep;
  }

  /** Keeps maxFiles − 2 rotated files (the current one and the one about to rotate make up the rest). */
  private async removeExcessLogs(logs: string[]): Promise<string[]> {
    const sorted = [...logs].sort();
    const maxRotated = Math.max(0, this.opts.policy.maxFiles - 2);
    const excess = Math.max(0, sorted.length - maxRotated);
    for (const l of sorted.slice(0, excess)) {
      await unlink(l).catch((err: unknown) => {
        if (!isNotExist(err)) throw err;
      });
    }
    return sorted.slice(excess);
  }

  private async rotateLatestLog(id: string, logPath: string): Promise<void> {
    const rotated = `${logPath}.${rotationTimestamp(this.opts.clock.now())}`;
    await rename(logPath, rotated);
    try {
      await this.opts.runtimeService.reopenContainerLog(id, this.call());
    } catch (err) {
      // Renamed back, so the next round tries again; the runtime still writes to the old file.
      await rename(rotated, logPath).catch((renameErr: unknown) =>
        log.error('Failed to rename rotated log back', { path: rotated, err: errorMessage(renameErr) }),
      );
      throw new Error(`failed to reopen container log ${JSON.stringify(id)}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  }
}

/** `<log>` → `<log>.gz` through `<log>.gz.tmp`, then the original removed. */
async function compressLog(file: string): Promise<void> {
  const tmp = `${file}${COMPRESS_SUFFIX}${TMP_SUFFIX}`;
  try {
    await pipeline(createReadStream(file), zlib().createGzip(), createWriteStream(tmp));
    await rename(tmp, file + COMPRESS_SUFFIX);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await unlink(file);
}
