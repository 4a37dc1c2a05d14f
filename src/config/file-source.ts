/**
 * The static pod folder (--pod-manifest-path, staticPodPath) as a pod source (upstream
 * pkg/kubelet/config/file.go and file_linux.go).
 *
 * The path is a folder of manifests or a single manifest file. Every regular file in the folder
 * whose name does not start with a dot is read as one Pod (YAML or JSON); subfolders are not
 * entered. The folder is watched (fs.watch) and also rescanned every fileCheckFrequency, because
 * watches miss things (a folder replaced, network filesystems). A rescan is cheap: a file whose
 * inode, size, mtime and ctime are unchanged is not read again, and one whose bytes are unchanged
 * is not parsed again. After every scan that changes the set, the whole set is sent as a SET.
 *
 * A manifest that cannot be used is logged once, naming the file and the problem, and logged again
 * only when the file changes. As upstream: in a folder, the broken file's pod leaves the set (the
 * pod is stopped) while every other pod runs on; when the path is a single file, the last good pod
 * is kept until the file is fixed or removed. A missing path is an empty set, so the source still
 * counts as seen.
 */
import { createHash } from 'node:crypto';
import { watch, type FSWatcher, type Stats } from 'node:fs';
import { lstat, readdir, stat } from 'node:fs/promises';
import * as path from 'node:path';

import { podFullName, type Pod } from '../api/core-v1.js';
import { nodeRef } from '../api/node.js';
import type { ObjectEventRecorder } from '../events/event-recorder.js';
import { realClock, type Clock, type TimerHandle } from '../lib/clock.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger, type Logger } from '../lib/log.js';
import { raceAbort, withDeadline } from '../lib/deadline.js';
import type { SourceChannel } from './pod-config.js';
import { formatPod } from '../kuberuntime/format.js';
import { decodeManifest } from './manifest-decoder.js';
import { MAX_MANIFEST_BYTES } from './static-pod-defaults.js';
import { loopPeriodMs } from '../lib/loop-period.js';
import { compareStrings } from '../lib/compare.js';
import { FileTooLargeError, readSmallFile } from '../lib/read-small-file.js';

export interface FileSourceOptions {
  /** A folder of manifests or one manifest file. */
  path: string;
  nodeName: string;
  /** fileCheckFrequency: the period of full rescans. */
  periodMs: number;
  send: SourceChannel;
  clock?: Clock;
  log?: Logger;
  /** Watch the folder for changes between rescans (default true). */
  watch?: boolean;
  /**
   * Quiet time after a watch event before rescanning, so a burst of writes is read once. Default 0:
   * at once, as upstream reads a file on its inotify event (a manifest written in place may then be
   * read half-written and refused until its next write, as upstream does); events that come during a
   * scan are folded into one more scan.
   */
  debounceMs?: number;
  /** Bound on one scan's file system calls (default 30 s). */
  scanTimeoutMs?: number;
  /** Cluster mode: a refused manifest is also a Warning event on the node. */
  recorder?: Pick<ObjectEventRecorder, 'event' | 'eventFor'>;
}

/** Upstream's events.FailedValidation, the reason of events about pods a source refuses. */
export const FAILED_VALIDATION_REASON = 'FailedValidation';

interface CachedFile {
  fingerprint: string;
  contentHash: string;
  result: { pod: Pod } | { error: string };
}

export class FileSource {
  private readonly root: string;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly debounceMs: number;
  private readonly scanTimeoutMs: number;
  private readonly cache = new Map<string, CachedFile>();
  // Each cached pod's file and content hash.
  private readonly podOrigins = new WeakMap<Pod, string>();
  // Problems with entries that are not manifests (subfolders, sockets, dangling symlinks, symlink
  // loops), each logged when it first appears or changes.
  private readonly reportedEntries = new Map<string, string>();
  // Pod full name → the files that declare it, for the duplicates last reported.
  private reportedDuplicates = '';
  private readonly stopController = new AbortController();
  private watcher: FSWatcher | undefined;
  private watchedIno: bigint | undefined;
  private periodTimer: TimerHandle | undefined;
  private debounceTimer: TimerHandle | undefined;
  /**
   * Names in the folder that watch events reported since the last scan. A scan asked for by events
   * alone reads only these (one stat each) instead of the whole folder, whose N stats per event made
   * writing N manifests cost N² calls; the start and the periodic rescan still read everything.
   */
  private changedNames = new Set<string>();
  private fullScanRequested = true;
  private scanning: Promise<void> | undefined;
  private rescanRequested = false;
  private lastSent: string | undefined;
  private lastPathProblem: string | undefined;
  private started = false;

  constructor(private readonly options: FileSourceOptions) {
    // Upstream trims the trailing separator so a folder and its "folder/" are the same path.
    this.root = path.resolve(options.path.replace(/\/+$/, '') || '/');
    this.clock = options.clock ?? realClock;
    this.log = options.log ?? logger('config');
    this.debounceMs = options.debounceMs ?? 0;
    this.scanTimeoutMs = options.scanTimeoutMs ?? 30_000;
  }

  /** Scans at once, then on every change and every periodMs. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.log.v(1, 'Watching path', { path: this.root });
    void this.rescan();
  }

  stop(): void {
    this.stopController.abort(new Error('file source stopped'));
    if (this.periodTimer) this.clock.clearTimeout(this.periodTimer);
    if (this.debounceTimer) this.clock.clearTimeout(this.debounceTimer);
    this.closeWatcher();
  }

  /** Scans now (or right after the scan in progress); resolves when that scan is done. */
  rescan(): Promise<void> {
    this.fullScanRequested = true;
    return this.scanSoon();
  }

  private scanSoon(): Promise<void> {
    if (this.stopController.signal.aborted) return Promise.resolve();
    if (this.scanning) {
      // The loop in progress scans once more before it settles.
      this.rescanRequested = true;
      return this.scanning;
    }
    this.scanning = this.scanLoop();
    return this.scanning;
  }

  private async scanLoop(): Promise<void> {
    try {
      do {
        this.rescanRequested = false;
        if (this.periodTimer) this.clock.clearTimeout(this.periodTimer);
        await this.scanOnce();
      } while (this.rescanRequested && !this.stopController.signal.aborted);
    } finally {
      this.scanning = undefined;
      if (!this.stopController.signal.aborted) {
        this.periodTimer = this.clock.setTimeout(
          () => void this.rescan(),
          loopPeriodMs('file source', this.options.periodMs),
        );
      }
    }
  }

  private async scanOnce(): Promise<void> {
    const changed = this.fullScanRequested ? undefined : this.changedNames;
    this.fullScanRequested = false;
    this.changedNames = new Set();
    try {
      const pods = await this.readPods(changed);
      if (pods === undefined || this.stopController.signal.aborted) return;
      // A pod follows from its file's path and bytes, so those say whether the set changed, even
      // for a manifest that sets its own UID (whose config.hash then never changes), and without
      // serializing a large pod on every scan.
      const signature = pods.map((p) => this.podOrigins.get(p) ?? JSON.stringify(p)).join('\n');
      if (signature === this.lastSent) return;
      this.lastSent = signature;
      this.options.send({ op: 'SET', pods });
    } catch (err) {
      if (this.stopController.signal.aborted) return;
      // The whole scan failed (folder unreadable, deadline): keep the last set, try next period.
      this.reportPathProblem(`Unable to read config path: ${errorMessage(err)}`);
    }
  }

  /** The pods the path holds now; undefined when nothing should be sent. */
  private async readPods(changed: ReadonlySet<string> | undefined): Promise<Pod[] | undefined> {
    const deadline = this.fsDeadline();
    try {
      return await this.readPodsWithin(deadline.signal, changed);
    } finally {
      deadline.dispose();
    }
  }

  /**
   * A bound on file system calls, which may hang (a dead network filesystem). Decoding is bounded
   * on its own (DECODE_TIMEOUT_MS), so a large manifest does not make the scan give up on the rest.
   */
  private fsDeadline(): { signal: AbortSignal; dispose: () => void } {
    return withDeadline(this.clock, this.scanTimeoutMs, this.stopController.signal);
  }

  /** With `changed`, only those names of the folder are read again; the rest are as last read. */
  private async readPodsWithin(
    signal: AbortSignal,
    changed: ReadonlySet<string> | undefined,
  ): Promise<Pod[] | undefined> {
    let rootStat: Stats;
    try {
      rootStat = await raceAbort(stat(this.root), signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      this.closeWatcher();
      this.cache.clear();
      this.reportPathProblem('Path does not exist, ignoring', 'warn');
      return [];
    }

    if (rootStat.isDirectory()) {
      // The same folder, watched since the last full scan: only what the events named can differ.
      if (changed && this.watcher && BigInt(rootStat.ino) === this.watchedIno) {
        this.clearPathProblem();
        return this.rereadChanged(changed);
      }
      this.ensureWatch(this.root, undefined, rootStat);
      const names = (await raceAbort(readdir(this.root), signal)).filter((n) => !n.startsWith('.')).sort();
      this.clearPathProblem();
      const found: { file: string; pod: Pod }[] = [];
      const present = new Set<string>();
      for (const name of names) {
        const file = path.join(this.root, name);
        present.add(file);
        const pod = await this.readManifest(file);
        if (pod) found.push({ file, pod });
      }
      for (const file of this.cache.keys()) if (!present.has(file)) this.cache.delete(file);
      for (const entry of this.reportedEntries.keys())
        if (!present.has(entry)) this.reportedEntries.delete(entry);
      return this.withoutDuplicateNames(found);
    }

    if (rootStat.isFile()) {
      this.ensureWatch(path.dirname(this.root), path.basename(this.root), undefined);
      this.clearPathProblem();
      const pod = await this.readManifest(this.root);
      if (pod) return [pod];
      // A single broken file keeps its last good pod, as upstream's store is left as it was.
      return this.lastSent === undefined ? [] : undefined;
    }

    this.reportPathProblem('Path is not a directory or file');
    return undefined;
  }

  private async rereadChanged(changed: ReadonlySet<string>): Promise<Pod[]> {
    for (const name of [...changed].sort()) {
      const file = path.join(this.root, name);
      // A file that is gone leaves the cache in readManifestBytes; so does one that is no longer a file.
      await this.readManifest(file);
    }
    const found: { file: string; pod: Pod }[] = [];
    for (const [file, entry] of this.cache)
      if ('pod' in entry.result) found.push({ file, pod: entry.result.pod });
    // As the full scan has them: in the order of their names.
    found.sort((a, b) => compareStrings(a.file, b.file));
    return this.withoutDuplicateNames(found);
  }

  /** The file's pod, or undefined when it is not a usable manifest (logged once per change). */
  private async readManifest(file: string): Promise<Pod | undefined> {
    const deadline = this.fsDeadline();
    let read: { data: Buffer; fingerprint: string; cached: CachedFile | undefined } | Pod | undefined;
    try {
      read = await this.readManifestBytes(file, deadline.signal);
    } finally {
      deadline.dispose();
    }
    if (read === undefined || !('data' in read)) return read;
    const { data, fingerprint, cached } = read;
    const contentHash = createHash('sha256').update(data).digest('hex');
    if (cached && cached.contentHash === contentHash) {
      // Touched, not changed: same outcome, and no second log line.
      cached.fingerprint = fingerprint;
      return 'pod' in cached.result ? cached.result.pod : undefined;
    }
    const result = await this.decode(file, data);
    if (this.stopController.signal.aborted) throw this.stopController.signal.reason as Error;
    return this.recordResult(file, { fingerprint, contentHash, result }, cached);
  }

  /** The file's bytes when it changed since last read; its pod (or undefined) when it did not. */
  private async readManifestBytes(
    file: string,
    signal: AbortSignal,
  ): Promise<{ data: Buffer; fingerprint: string; cached: CachedFile | undefined } | Pod | undefined> {
    let st: Stats;
    try {
      st = await raceAbort(stat(file, { bigint: false }), signal);
    } catch (err) {
      if (signal.aborted) throw err;
      this.cache.delete(file);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') this.reportEntry(file, 'Manifest path is a symlink loop, ignoring');
      else if (code === 'ENOENT' && (await this.isSymlink(file, signal)))
        this.reportEntry(file, 'Manifest path is a dangling symlink, ignoring');
      else if (code !== 'ENOENT')
        this.reportEntry(file, `Unable to read manifest path: ${errorMessage(err)}`);
      // else: gone (or vanished between readdir and stat): a problem it had is no longer one
      else this.clearEntry(file);
      return undefined;
    }
    if (st.isDirectory()) {
      this.cache.delete(file);
      this.reportEntry(file, 'Not recursing into manifest path');
      return undefined;
    }
    if (!st.isFile()) {
      this.cache.delete(file);
      this.reportEntry(file, 'Manifest path is not a directory or file');
      return undefined;
    }
    this.clearEntry(file);

    const fingerprint = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    const cached = this.cache.get(file);
    if (cached && cached.fingerprint === fingerprint)
      return 'pod' in cached.result ? cached.result.pod : undefined;

    let data: Buffer;
    try {
      data = await readAtMost(file, MAX_MANIFEST_BYTES, signal, st.size);
    } catch (err) {
      if (signal.aborted) throw err;
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        this.cache.delete(file);
        return undefined;
      }
      return this.recordResult(
        file,
        { fingerprint, contentHash: '', result: { error: errorMessage(err) } },
        cached,
      );
    }
    return { data, fingerprint, cached };
  }

  /** Caches the outcome of reading a file, and reports a new problem once (a log line and an event). */
  private recordResult(file: string, entry: CachedFile, previous: CachedFile | undefined): Pod | undefined {
    this.cache.set(file, entry);
    const result = entry.result;
    if ('error' in result) {
      this.log.error('Could not process manifest file', { path: file, err: result.error });
      this.options.recorder?.eventFor(
        nodeRef(this.options.nodeName),
        'Warning',
        FAILED_VALIDATION_REASON,
        `Could not process manifest file ${file}: ${result.error}`,
      );
      return undefined;
    }
    if (previous && 'error' in previous.result) this.log.info('Manifest file is valid again', { path: file });
    this.podOrigins.set(result.pod, `${file}\0${entry.contentHash}`);
    return result.pod;
  }

  private async isSymlink(file: string, signal: AbortSignal): Promise<boolean> {
    try {
      return (await raceAbort(lstat(file), signal)).isSymbolicLink();
    } catch {
      return false;
    }
  }

  private async decode(file: string, data: Buffer): Promise<CachedFile['result']> {
    const result = await decodeManifest({
      text: data.toString('utf8'),
      origin: { source: 'file', location: file, nodeName: this.options.nodeName },
      what: file,
      shape: 'pod',
    });
    if ('error' in result) {
      // The message starts with the file's name, which the log line gives already.
      return { error: result.error.replace(`${file}: `, '') };
    }
    const pod = result.pods[0];
    return pod ? { pod } : { error: 'the manifest holds no pod' };
  }

  /**
   * Two files with one pod name and namespace: the first file (in name order) wins, as upstream's
   * PodConfig keeps the first. Reported when the set of duplicates changes, naming the files.
   */
  private withoutDuplicateNames(found: { file: string; pod: Pod }[]): Pod[] {
    const firstFile = new Map<string, string>();
    const pods: Pod[] = [];
    const duplicates: { pod: string; kept: string; ignored: string; ignoredPod: Pod }[] = [];
    for (const { file, pod } of found) {
      const name = podFullName(pod);
      const kept = firstFile.get(name);
      if (kept !== undefined) {
        duplicates.push({ pod: name, kept, ignored: file, ignoredPod: pod });
        continue;
      }
      firstFile.set(name, file);
      pods.push(pod);
    }
    const signature = JSON.stringify(duplicates.map(({ ignoredPod: _, ...d }) => d));
    if (signature !== this.reportedDuplicates) {
      this.reportedDuplicates = signature;
      for (const d of duplicates) {
        const message = `Pod failed validation due to duplicate pod name ${d.pod}: file ${d.ignored} is ignored, file ${d.kept} declares it first`;
        this.log.error(message, { pod: d.pod, path: d.ignored, firstPath: d.kept });
        // Upstream's PodConfig (filterInvalidPods) tells it on the ignored pod, in these words.
        const pod = d.ignoredPod;
        this.options.recorder?.event(
          pod,
          '',
          'Warning',
          FAILED_VALIDATION_REASON,
          `Error validating pod ${formatPod(pod)} from file due to duplicate pod name ${JSON.stringify(pod.metadata.name ?? '')}, ignoring`,
        );
      }
    }
    return pods;
  }

  private ensureWatch(dir: string, onlyName: string | undefined, dirStat: Stats | undefined): void {
    if (this.options.watch === false || this.stopController.signal.aborted) return;
    const ino = dirStat ? BigInt(dirStat.ino) : undefined;
    // A folder deleted and made again is a new inode: the old watch sees nothing of it.
    if (this.watcher && (ino === undefined || ino === this.watchedIno)) return;
    this.closeWatcher();
    try {
      const w = watch(dir, { persistent: false }, (_event, filename) => {
        const name = filename?.toString();
        if (name && name.startsWith('.')) return;
        if (onlyName && name && name !== onlyName) return;
        this.onWatchEvent(onlyName === undefined ? name : undefined);
      });
      w.on('error', (err) => {
        this.log.v(2, 'Watch of manifest path failed; relying on rescans until it is back', {
          path: dir,
          err,
        });
        this.closeWatcher();
      });
      this.watcher = w;
      this.watchedIno = ino;
    } catch (err) {
      this.log.v(2, 'Unable to watch manifest path; relying on rescans', { path: dir, err });
    }
  }

  /** An event for `name` in the watched folder, or for the watched file or folder itself (no name). */
  private onWatchEvent(name: string | undefined): void {
    if (this.stopController.signal.aborted) return;
    if (name === undefined || name.includes('/')) this.fullScanRequested = true;
    else this.changedNames.add(name);
    if (this.debounceMs <= 0) {
      void this.scanSoon();
      return;
    }
    if (this.debounceTimer) this.clock.clearTimeout(this.debounceTimer);
    this.debounceTimer = this.clock.setTimeout(() => {
      this.debounceTimer = undefined;
      void this.scanSoon();
    }, this.debounceMs);
  }

  private closeWatcher(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.watchedIno = undefined;
  }

  private reportPathProblem(message: string, level: 'warn' | 'error' = 'error'): void {
    if (this.lastPathProblem === message) return;
    this.lastPathProblem = message;
    this.log[level](message, { path: this.root });
  }

  private clearPathProblem(): void {
    if (this.lastPathProblem !== undefined)
      this.log.info('Manifest path is readable again', { path: this.root });
    this.lastPathProblem = undefined;
  }

  private reportEntry(file: string, message: string): void {
    if (this.reportedEntries.get(file) === message) return;
    this.reportedEntries.set(file, message);
    this.log.error(message, { path: file });
  }

  private clearEntry(file: string): void {
    this.reportedEntries.delete(file);
  }
}

/**
 * The file's bytes, refusing one larger than maxBytes without reading past the limit (a file may
 * grow between stat and read, and a FIFO or /dev/zero has no size at all). sizeHint is stat's size:
 * a manifest of a few KiB is read into a buffer of its size.
 */
export async function readAtMost(
  file: string,
  maxBytes: number,
  signal: AbortSignal,
  sizeHint?: number,
): Promise<Buffer> {
  try {
    return await readSmallFile(file, { maxBytes, signal, sizeHint });
  } catch (err) {
    if (err instanceof FileTooLargeError) {
      throw new KubeletError(
        'FILE_TOO_LARGE',
        `the file is larger than the ${maxBytes} bytes a manifest may have; refused`,
        { cause: err },
      );
    }
    throw err;
  }
}
