/**
 * Upstream's OOM watcher (pkg/kubelet/oom/oom_watcher_linux.go over cAdvisor's oomparser and
 * go-kmsg-parser): reads the kernel's log from /dev/kmsg and records a Warning `SystemOOM` event on
 * the node for every OOM kill the kernel made outside any memory cgroup limit (a global OOM), with
 * the message `System OOM encountered, victim process: <name>, pid: <pid>`. Kills inside a cgroup
 * (a container over its limit) are the runtime's to report, as OOMKilled.
 *
 * Like v1.30, it reads the ring buffer from its start, so an OOM still in the buffer when the
 * kubelet starts is reported again. /dev/kmsg is opened non-blocking and read until it has nothing
 * more, then again after pollMs: a blocking read would hold one of libuv's few threads for good.
 * Those reads are synchronous: a non-blocking read of the kernel's ring buffer never waits for a
 * disk, and it returns one record, so the two thousand records of a start cost 60-100 ms of CPU
 * through libuv's pool against 5-10 ms in place (bench/kmsg-read.ts).
 */
import { constants, readSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import path from 'node:path';
import type { ObjectReference } from '../api/core-v1.js';
import type { EventType } from '../api/core-v1.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('oom');

export const KMSG_PATH = '/dev/kmsg';
export const DEFAULT_KMSG_POLL_MS = 2000;
/** One read of /dev/kmsg returns one record; a buffer smaller than the record fails with EINVAL. */
const KMSG_READ_BUFFER_BYTES = 8192;
/** Records read in one turn of the event loop (a few hundred microseconds), so a long backlog does not hold it. */
export const KMSG_RECORDS_PER_TURN = 256;

export const SYSTEM_OOM_EVENT = 'SystemOOM';
/** The cgroup of an OOM the kernel made for the whole machine (upstream: recordEventContainerName). */
const SYSTEM_CONTAINER_NAME = '/';

// cAdvisor's oomparser patterns: the first line of an OOM report, the container-aware summary of
// 5.0+ kernels, the older "Task in" line, and the line naming the killed process.
const FIRST_LINE = /invoked oom-killer:/;
const CONTAINER_LINE =
  /oom-kill:constraint=(.*),nodemask=(.*),cpuset=(.*),mems_allowed=(.*),oom_memcg=(.*),task_memcg=(.*),task=(.*),pid=(.*),uid=(.*)/;
const LEGACY_CONTAINER_LINE = /Task in (.*) killed as a result of limit of (.*)/;
const LAST_LINE = /Killed process ([0-9]+) \((.+)\)/;

export interface OomInstance {
  pid: number;
  processName: string;
  /** The cgroup of the killed task. */
  containerName: string;
  /** The cgroup whose limit was hit; '/' for a global OOM. */
  victimContainerName: string;
  constraint: string;
}

/** One /dev/kmsg record's text, `PRIORITY,SEQ,USEC,FLAGS;MESSAGE` with continuation lines after; undefined when malformed. */
export function kmsgMessage(record: string): string | undefined {
  const semi = record.indexOf(';');
  if (semi < 0) return undefined;
  const header = record.slice(0, semi).split(',');
  if (header.length < 3) return undefined;
  const text = record.slice(semi + 1);
  const nl = text.indexOf('\n');
  return nl < 0 ? text : text.slice(0, nl);
}

/** cAdvisor's StreamOoms as a state machine: feed it kernel messages, it returns each OOM once complete. */
export class OomParser {
  private current: OomInstance | undefined;

  feed(message: string): OomInstance | undefined {
    if (!this.current) {
      if (FIRST_LINE.test(message)) {
        this.current = {
          pid: 0,
          processName: '',
          containerName: SYSTEM_CONTAINER_NAME,
          victimContainerName: SYSTEM_CONTAINER_NAME,
          constraint: '',
        };
      }
      return undefined;
    }
    const c = this.current;
    const m = CONTAINER_LINE.exec(message);
    if (m) {
      c.constraint = m[1]!;
      c.victimContainerName = m[5]!;
      c.containerName = m[6]!;
      c.processName = m[7]!;
      c.pid = Number.parseInt(m[8]!, 10) || 0;
      return this.finish();
    }
    const legacy = LEGACY_CONTAINER_LINE.exec(message);
    if (legacy) {
      c.containerName = path.posix.join('/', legacy[1]!);
      c.victimContainerName = path.posix.join('/', legacy[2]!);
      return undefined;
    }
    const last = LAST_LINE.exec(message);
    if (last) {
      c.pid = Number.parseInt(last[1]!, 10) || 0;
      c.processName = last[2]!;
      return this.finish();
    }
    return undefined;
  }

  private finish(): OomInstance {
    const done = this.current!;
    this.current = undefined;
    return done;
  }
}

/** The event upstream's watcher records for an OOM, or undefined when it records none. */
export function systemOomEvent(
  oom: OomInstance,
): { type: EventType; reason: string; message: string } | undefined {
  if (oom.victimContainerName !== SYSTEM_CONTAINER_NAME) return undefined;
  let message = 'System OOM encountered';
  if (oom.processName !== '' && oom.pid !== 0) {
    message = `${message}, victim process: ${oom.processName}, pid: ${oom.pid}`;
  }
  return { type: 'Warning', reason: SYSTEM_OOM_EVENT, message };
}

export interface OomWatcherOptions {
  /** The node's reference (the node name stands in for its UID). */
  nodeRef: ObjectReference;
  recordEvent: (ref: ObjectReference, type: EventType, reason: string, message: string) => void;
  clock: Clock;
  kmsgPath?: string;
  pollMs?: number;
}

/** Reads /dev/kmsg until the signal aborts; resolves then (or at once when the log cannot be read). */
export async function runOomWatcher(opts: OomWatcherOptions, signal: AbortSignal): Promise<void> {
  const kmsgPath = opts.kmsgPath ?? KMSG_PATH;
  let file: FileHandle;
  try {
    file = await open(kmsgPath, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    // Upstream fails to start without it; a node agent that cannot read the kernel log still runs pods.
    log.warn('Cannot read the kernel log: system OOMs will not be reported', {
      path: kmsgPath,
      err: errorMessage(err),
    });
    return;
  }
  const parser = new OomParser();
  const onMessage = (message: string) => {
    const oom = parser.feed(message);
    if (!oom) return;
    const event = systemOomEvent(oom);
    if (!event) return;
    log.v(1, 'Got sys oom event', { pid: oom.pid, processName: oom.processName, constraint: oom.constraint });
    opts.recordEvent(opts.nodeRef, event.type, event.reason, event.message);
  };
  const buffer = Buffer.alloc(KMSG_READ_BUFFER_BYTES);
  const read = (into: Buffer) => readSync(file.fd, into, 0, into.length, null);
  try {
    while (!signal.aborted) {
      let left: KmsgDrain;
      try {
        left = drainKmsg(read, buffer, onMessage, KMSG_RECORDS_PER_TURN);
      } catch (err) {
        log.error('Error reading the kernel log: system OOMs will not be reported', {
          path: kmsgPath,
          err: errorMessage(err),
        });
        return;
      }
      if (left === 'more') await nextTurn();
      else await opts.clock.sleep(opts.pollMs ?? DEFAULT_KMSG_POLL_MS, signal).catch(() => undefined);
    }
  } finally {
    await file.close().catch(() => undefined);
  }
}

/** Whether the log had more records than one turn reads ('more') or was read to its end ('empty'). */
export type KmsgDrain = 'more' | 'empty';

/**
 * Reads up to maxRecords records with read (one record a call, as /dev/kmsg gives them) and hands
 * each record's message to onMessage. Records overwritten before they were read (EPIPE) are passed
 * over; EAGAIN or a 0-byte read is the end of the log; any other error is thrown.
 */
export function drainKmsg(
  read: (into: Buffer) => number,
  buffer: Buffer,
  onMessage: (message: string) => void,
  maxRecords: number,
): KmsgDrain {
  for (let records = 0; records < maxRecords; records++) {
    let bytesRead: number;
    try {
      bytesRead = read(buffer);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') continue;
      if (code === 'EAGAIN') return 'empty';
      throw err;
    }
    if (bytesRead === 0) return 'empty';
    const message = kmsgMessage(buffer.toString('utf8', 0, bytesRead));
    if (message !== undefined) onMessage(message);
  }
  return 'more';
}
