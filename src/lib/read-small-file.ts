/**
 * Reads a whole file that is usually small: a cgroup or /proc file, a pod manifest.
 *
 * Why not `fs.promises.readFile`: for a file whose size stat does not know (every cgroupfs and procfs
 * file says 0) it reads into a fresh 64 KiB buffer outside Buffer's pool, every time. With 100 pods
 * the stats passes and the cgroup code read thousands of such files a minute; those buffers, and the
 * file source's 1 MiB buffer per manifest, were nearly all of a 100-pod start's ArrayBuffer
 * allocations (430 MiB in 3 minutes), and they grew the malloc heap. This reads into a buffer from
 * Buffer's pool, sized from a hint, and grows it only for a file that fills it.
 */
import { close, closeSync, open, openSync, read, readSync } from 'node:fs';
import { constants as bufferConstants } from 'node:buffer';
import { KubeletError } from './errors.js';

export interface ReadSmallFileOptions {
  /** The size the file is expected to have (a regular file's stat size); unknown when not given. */
  sizeHint?: number;
  /** A file longer than this is refused with FileTooLargeError, read no further than one byte past. */
  maxBytes?: number;
  /** Checked before each read: an abort ends the read with the signal's reason. */
  signal?: AbortSignal;
}

export class FileTooLargeError extends KubeletError {
  constructor(
    readonly file: string,
    readonly maxBytes: number,
  ) {
    super('FILE_TOO_LARGE', `${file} is larger than ${maxBytes} bytes`);
    this.name = 'FileTooLargeError';
  }
}

/** Buffer.allocUnsafe takes a slice of its shared pool below half the pool's size. */
const POOLED_MAX_BYTES = (Buffer.poolSize >>> 1) - 1;

function openForReading(file: string): Promise<number> {
  return new Promise((resolve, reject) => open(file, 'r', (err, fd) => (err ? reject(err) : resolve(fd))));
}

function readInto(fd: number, buf: Buffer, offset: number): Promise<number> {
  return new Promise((resolve, reject) =>
    read(fd, buf, offset, buf.length - offset, null, (err, bytesRead) =>
      err ? reject(err) : resolve(bytesRead),
    ),
  );
}

function closeQuietly(fd: number): Promise<void> {
  // A close error on a file only read from loses nothing.
  return new Promise((resolve) => close(fd, () => resolve()));
}

function limitOf(opts: ReadSmallFileOptions): number {
  return Math.min(opts.maxBytes ?? bufferConstants.MAX_LENGTH - 1, bufferConstants.MAX_LENGTH - 1);
}

function firstBuffer(opts: ReadSmallFileOptions, maxBytes: number): Buffer {
  // One byte past the hint, so that the read that finds the end of the file needs no bigger buffer.
  const first = opts.sizeHint !== undefined && opts.sizeHint > 0 ? opts.sizeHint + 1 : POOLED_MAX_BYTES;
  return Buffer.allocUnsafe(Math.min(first, maxBytes + 1));
}

/** buf, or a copy twice its size when the file has filled it. */
function roomFor(buf: Buffer, length: number, maxBytes: number, file: string): Buffer {
  if (length < buf.length) return buf;
  if (length > maxBytes) throw new FileTooLargeError(file, maxBytes);
  const bigger = Buffer.allocUnsafe(Math.min(buf.length * 2, maxBytes + 1));
  buf.copy(bigger, 0, 0, length);
  return bigger;
}

/** The file's bytes, read until end of file. */
export async function readSmallFile(file: string, opts: ReadSmallFileOptions = {}): Promise<Buffer> {
  const maxBytes = limitOf(opts);
  opts.signal?.throwIfAborted();
  const fd = await openForReading(file);
  try {
    let length = 0;
    // After the open: a missing file (a cgroup gone, an optional /proc file) takes no buffer.
    let buf = firstBuffer(opts, maxBytes);
    for (;;) {
      opts.signal?.throwIfAborted();
      buf = roomFor(buf, length, maxBytes, file);
      const bytesRead = await readInto(fd, buf, length);
      if (bytesRead === 0) return buf.subarray(0, length);
      length += bytesRead;
    }
  } finally {
    await closeQuietly(fd);
  }
}

/**
 * readSmallFile on the calling thread: only for files of memory-backed file systems (cgroupfs,
 * procfs, sysfs, tmpfs), where a read never waits on a disk (see memory-fs.ts).
 */
export function readSmallFileSync(file: string, opts: Omit<ReadSmallFileOptions, 'signal'> = {}): Buffer {
  const maxBytes = limitOf(opts);
  const fd = openSync(file, 'r');
  try {
    let length = 0;
    let buf = firstBuffer(opts, maxBytes);
    for (;;) {
      buf = roomFor(buf, length, maxBytes, file);
      const bytesRead = readSync(fd, buf, length, buf.length - length, null);
      if (bytesRead === 0) return buf.subarray(0, length);
      length += bytesRead;
    }
  } finally {
    try {
      closeSync(fd);
    } catch {
      // A close error on a file only read from loses nothing.
    }
  }
}

/** The file's text (UTF-8), as `readFile(file, 'utf8')` gives it. */
export async function readSmallTextFile(file: string, opts: ReadSmallFileOptions = {}): Promise<string> {
  return (await readSmallFile(file, opts)).toString('utf8');
}
