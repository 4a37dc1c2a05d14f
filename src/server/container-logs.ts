/**
 * Reading a container's log file as upstream's ReadLogs does (cri-client pkg/logs): start at the
 * last tailLines lines (found by reading the file backwards), skip lines older than since, prefix
 * timestamps when asked, stop after limitBytes, and in follow mode wait for more until the container
 * is no longer running and the file is drained. Rotation (kubelet renames `N.log` to
 * `N.log.<time>` and the runtime reopens a fresh `N.log`) is followed: the old file is read to its
 * end, then the new one from its start.
 */
import { watch, type FSWatcher } from 'node:fs';
import { open, realpath, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import {
  formatRfc3339NanoFixed,
  parserFor,
  type LogMessage,
  type LogParser,
  type LogStream,
} from './cri-log-format.js';

const log = logger('logs');

/** Upstream's logForceCheckPeriod: a follower looks again at least this often, event or not. */
const FORCE_CHECK_PERIOD_MS = 1000;
const READ_CHUNK_BYTES = 64 * 1024;
const TAIL_BLOCK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

export interface LogOptions {
  /** Lines from the end to start at; -1 for the whole file. */
  tail: number;
  /** Bytes to write at most (timestamps included); -1 for no limit. */
  bytes: number;
  /** Lines older than this (ns since the epoch) are skipped. */
  sinceNs?: bigint;
  follow: boolean;
  timestamps: boolean;
  /** Only this stream (PodLogOptions.stream); both when absent. */
  stream?: LogStream;
}

/** Where the lines go; resolves once the consumer can take more (backpressure). */
export type LogSink = (chunk: Buffer, stream: LogStream) => Promise<void>;

/**
 * The start of the last n lines of the file (0 for n < 0). A last line without its newline is not
 * counted, as upstream's FindTailLineStartIndex.
 */
export async function findTailLineStartIndex(fh: FileHandle, size: number, n: number): Promise<number> {
  if (n < 0) return 0;
  let count = 0;
  let end = size;
  const buf = Buffer.alloc(TAIL_BLOCK_BYTES);
  while (end > 0) {
    const start = Math.max(0, end - TAIL_BLOCK_BYTES);
    const { bytesRead } = await fh.read(buf, 0, end - start, start);
    for (let i = bytesRead - 1; i >= 0; i--) {
      if (buf[i] !== NEWLINE) continue;
      count++;
      if (count > n) return start + i + 1;
    }
    end = start;
  }
  return 0;
}

/** The limitBytes of a log request is reached: stops the copy, never reaches the client. */
class MaximumWrite extends KubeletError {
  constructor() {
    super('LOG_LIMIT_REACHED', 'log limit reached');
  }
}

/** Applies since, timestamps and limitBytes to each message, as upstream's logWriter. */
class LogWriter {
  private remaining: number;

  constructor(
    private readonly opts: LogOptions,
    private readonly sink: LogSink,
  ) {
    this.remaining = opts.bytes >= 0 ? opts.bytes : Number.POSITIVE_INFINITY;
  }

  /** Throws MaximumWrite once limitBytes is reached. */
  async write(msg: LogMessage, addPrefix: boolean): Promise<void> {
    if (this.opts.sinceNs !== undefined && msg.timestampNs < this.opts.sinceNs) return;
    if (this.opts.stream && msg.stream !== this.opts.stream) return;
    let line = msg.log;
    if (this.opts.timestamps && addPrefix)
      line = Buffer.concat([Buffer.from(formatRfc3339NanoFixed(msg.timestampNs) + ' '), line]);
    if (line.length > this.remaining) line = line.subarray(0, this.remaining);
    if (line.length > 0) await this.sink(line, msg.stream);
    this.remaining -= line.length;
    if (this.remaining <= 0) throw new MaximumWrite();
  }
}

export interface ReadLogsOptions {
  /** Asked before each wait while following: stop once the container no longer runs. */
  isContainerRunning(): Promise<boolean>;
  signal: AbortSignal;
}

/** A file being read line by line from a position, with what is left of an unfinished line. */
class LineReader {
  private buffer: Buffer = Buffer.alloc(0);
  private readonly chunk = Buffer.alloc(READ_CHUNK_BYTES);

  constructor(
    readonly fh: FileHandle,
    private position: number,
  ) {}

  /** The next complete line (with its newline), or undefined at the end of what is written. */
  async nextLine(): Promise<Buffer | undefined> {
    for (;;) {
      const nl = this.buffer.indexOf(NEWLINE);
      if (nl >= 0) {
        const line = this.buffer.subarray(0, nl + 1);
        this.buffer = this.buffer.subarray(nl + 1);
        return line;
      }
      const { bytesRead } = await this.fh.read(this.chunk, 0, this.chunk.length, this.position);
      if (bytesRead === 0) return undefined;
      this.position += bytesRead;
      this.buffer = Buffer.concat([this.buffer, this.chunk.subarray(0, bytesRead)]);
    }
  }

  /** What is left after the last newline: an incomplete last line. */
  takeRest(): Buffer {
    const rest = this.buffer;
    this.buffer = Buffer.alloc(0);
    return rest;
  }
}

/** Waits for the directory to change, the period to pass, or the signal; whichever comes first. */
class DirectoryWaiter {
  private watcher: FSWatcher | undefined;
  private wake: (() => void) | undefined;
  /** The log file was created anew (rotation): reopen it. */
  recreated = false;

  constructor(
    private readonly dir: string,
    private readonly baseName: string,
  ) {}

  start(): void {
    try {
      this.watcher = watch(this.dir, { persistent: false }, (event, file) => {
        if (event === 'rename' && file === this.baseName) this.recreated = true;
        this.wake?.();
      });
      this.watcher.on('error', () => undefined);
    } catch (err) {
      // Without a watcher the periodic check still finds new lines, only later.
      log.v(2, 'Cannot watch the log folder; polling', { dir: this.dir, err: String(err) });
    }
  }

  wait(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(t);
        signal.removeEventListener('abort', onAbort);
        this.wake = undefined;
        resolve();
      };
      const onAbort = () => {
        clearTimeout(t);
        this.wake = undefined;
        reject(signal.reason);
      };
      if (signal.aborted) return reject(signal.reason);
      const t = setTimeout(done, FORCE_CHECK_PERIOD_MS);
      this.wake = done;
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  close(): void {
    this.watcher?.close();
  }
}

/**
 * Writes the log at logPath to sink with opts. Resolves when done (end of file, limit reached, or the
 * container stopped while following); rejects on read errors or when signal aborts.
 */
export async function readLogs(
  logPath: string,
  opts: LogOptions,
  sink: LogSink,
  ro: ReadLogsOptions,
): Promise<void> {
  // Resolve symlinks first, so a rotation is seen in the folder the file really is in.
  let file: string;
  try {
    file = await realpath(logPath);
  } catch (err) {
    throw new Error(`failed to try resolving symlinks in path "${logPath}": ${String(err)}`);
  }
  let fh: FileHandle;
  try {
    fh = await open(file, 'r');
  } catch (err) {
    throw new Error(`failed to open log file "${file}": ${String(err)}`);
  }
  let waiter: DirectoryWaiter | undefined;
  try {
    const size = (await fh.stat()).size;
    let reader = new LineReader(fh, await findTailLineStartIndex(fh, size, opts.tail));
    const limitedMode = opts.tail >= 0 && !opts.follow;
    let limitedNum = opts.tail;
    const writer = new LogWriter(opts, sink);
    let parse: LogParser | undefined;
    let isNewLine = true;
    let found = true;
    let stop = false;
    for (;;) {
      ro.signal.throwIfAborted();
      if (stop || (limitedMode && limitedNum === 0)) return;
      let line = await reader.nextLine();
      if (line === undefined) {
        if (opts.follow) {
          // The container stopped and everything it wrote has been read.
          if (!found) return;
          if (!waiter) {
            waiter = new DirectoryWaiter(path.dirname(file), path.basename(file));
            waiter.start();
            continue; // read once more: a write may have come before the watch started
          }
          found = await ro.isContainerRunning();
          if (found) await waiter.wait(ro.signal);
          if (waiter.recreated) {
            waiter.recreated = false;
            const next = await openIfReplaced(file, fh);
            if (next) {
              // Drain what the old file still had, then go on with the new one from its start.
              try {
                isNewLine = await drain(reader, writer, parse, isNewLine);
              } catch (err) {
                await next.close().catch(() => undefined);
                if (err instanceof MaximumWrite) return;
                throw err;
              }
              await fh.close().catch(() => undefined);
              fh = next;
              reader = new LineReader(fh, 0);
            }
          }
          continue;
        }
        stop = true;
        line = reader.takeRest();
        if (line.length === 0) continue;
        log.info('Incomplete line in log file', { path: file });
      }
      parse ??= parserFor(line);
      if (!parse)
        throw new Error(
          `failed to get parse function: unsupported log format: ${JSON.stringify(line.toString('utf8', 0, 200))}`,
        );
      const msg = parse(line);
      if ('error' in msg) {
        log.v(2, 'Failed when parsing line in log file', { path: file, err: msg.error });
        continue;
      }
      try {
        await writer.write(msg, isNewLine);
      } catch (err) {
        if (err instanceof MaximumWrite) return;
        throw err;
      }
      if (limitedMode) limitedNum--;
      isNewLine = msg.log.length === 0 || msg.log[msg.log.length - 1] === NEWLINE;
    }
  } finally {
    waiter?.close();
    await fh.close().catch(() => undefined);
  }
}

/** A new file at the same path (rotation), opened; undefined while there is none or it is the same file. */
async function openIfReplaced(file: string, current: FileHandle): Promise<FileHandle | undefined> {
  try {
    const [atPath, opened] = await Promise.all([stat(file), current.stat()]);
    if (atPath.ino === opened.ino && atPath.dev === opened.dev) return undefined;
    return await open(file, 'r');
  } catch {
    return undefined;
  }
}

/** Writes the complete lines still unread in a rotated-away file; returns whether output ended a line. */
async function drain(
  reader: LineReader,
  writer: LogWriter,
  parse: LogParser | undefined,
  isNewLine: boolean,
): Promise<boolean> {
  for (let line = await reader.nextLine(); line !== undefined; line = await reader.nextLine()) {
    parse ??= parserFor(line);
    const msg = parse?.(line);
    if (!msg || 'error' in msg) continue;
    await writer.write(msg, isNewLine);
    isNewLine = msg.log.length === 0 || msg.log[msg.log.length - 1] === NEWLINE;
  }
  return isNewLine;
}
