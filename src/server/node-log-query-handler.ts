/**
 * Serving the node log query (upstream's logServer with NodeLogQuery and enableSystemLogQuery): a
 * file query is served by /logs/'s own file server (its link safety included); services go to
 * journalctl, or, for a service journald does not know, to /var/log/<name>, <name>.log or
 * <name>/<name>.log. Every query ends within its deadline (upstream: 30 s): journalctl is killed then,
 * or as soon as the client goes away; its output is streamed with backpressure, never buffered.
 */
import { execFile, spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as Zlib from 'node:zlib';
import { lazyBuiltin } from '../lib/lazy-builtin.js';
import type { ServerState } from './kubelet-server.js';
import { nodeLogRoots, openWithin, serveNodeLogs } from './node-logs.js';
import {
  aggregateFieldErrors,
  hasOptions,
  joinInside,
  journalctlArgs,
  parseNodeLogQuery,
  validateNodeLogQuery,
  type NodeLogQuery,
} from './node-log-query.js';
import { methodNotAllowed, sendText, type RequestContext } from './request-context.js';

// Only a gzip-accepting query needs zlib; loading it at import would weigh on every kubelet's start.
const zlib = lazyBuiltin<typeof Zlib>('node:zlib');

/** Upstream's deadline for one query, journalctl runs included. */
export const NODE_LOG_QUERY_TIMEOUT_MS = 30_000;
/** `journalctl --field _SYSTEMD_UNIT` lists unit names; more than this is not a unit list. */
const UNIT_LIST_MAX_BYTES = 16 * 1024 * 1024;

export interface NodeLogQuerySettings {
  journalctlPath: string;
  timeoutMs: number;
}

/** Go's http.Error: the text and a newline, as plain text. */
function httpError(ctx: RequestContext, status: number, text: string): void {
  sendText(ctx.res, status, `${text}\n`);
}

/**
 * Answers /logs/… when it carries a query; false when it does not (the plain /logs/ answers then).
 */
export async function serveNodeLogQuery(
  state: ServerState,
  settings: NodeLogQuerySettings,
  ctx: RequestContext,
): Promise<boolean> {
  const parsed = parseNodeLogQuery(ctx.query);
  if (parsed.errors.length > 0) {
    httpError(ctx, 400, aggregateFieldErrors(parsed.errors));
    return true;
  }
  const q = parsed.query;
  if (!q) return false;
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
    methodNotAllowed(ctx.res);
    return true;
  }
  const rest = ctx.segments.slice(1);
  if (!(rest.length === 0 || (rest.length === 1 && rest[0] === ''))) {
    httpError(ctx, 406, 'path not allowed in query mode');
    return true;
  }
  const errors = await validateNodeLogQuery(q, state.nodeLogsDir);
  if (errors.length > 0) {
    httpError(ctx, 406, aggregateFieldErrors(errors));
    return true;
  }
  if (q.services.length > 0) {
    await streamQuery(state, settings, ctx, q);
    return true;
  }
  // One file: served as if asked for by its path.
  const inside = joinInside('/', q.files[0]!);
  const segments = ['logs', ...inside.slice(1).split('/')];
  await serveNodeLogs(state, { ...ctx, path: `/logs${inside}`, segments, signal: ctx.signal });
  return true;
}

async function streamQuery(
  state: ServerState,
  settings: NodeLogQuerySettings,
  ctx: RequestContext,
  q: NodeLogQuery,
): Promise<void> {
  const { res } = ctx;
  const gzip = ctx.req.headers['accept-encoding'] === 'gzip';
  res.writeHead(200, {
    'Content-Type': 'text/plain;charset=UTF-8',
    ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
  });
  if (ctx.method === 'HEAD') {
    res.end();
    return;
  }
  const deadline = new AbortController();
  const timer = state.clock.setTimeout(
    () => deadline.abort(new Error('node log query deadline')),
    settings.timeoutMs,
  );
  const signal = AbortSignal.any([ctx.signal, deadline.signal]);
  const out: Writable = gzip ? zlib().createGzip({ level: zlib().constants.Z_BEST_SPEED }) : res;
  const sent = gzip ? pipeline(out as Readable & Writable, res).catch(() => undefined) : Promise.resolve();
  try {
    await copyQuery(settings, await nodeLogRoots(state), q, out, signal);
  } finally {
    state.clock.clearTimeout(timer);
    out.end();
    await sent;
  }
}

/** Upstream's copyForBoot: services journald knows through journalctl, the others from files. */
async function copyQuery(
  settings: NodeLogQuerySettings,
  logRoots: readonly string[],
  q: NodeLogQuery,
  out: Writable,
  signal: AbortSignal,
): Promise<void> {
  const units = await journalUnits(settings.journalctlPath, signal);
  // Upstream's test is a substring one: `let` counts as known when kubelet.service is listed.
  const native = q.services.filter((s) => units.includes(`${s}.service`));
  const fromFiles = q.services.filter((s) => !native.includes(s));
  if (native.length > 0) await copyJournal(settings.journalctlPath, q, native, out, signal);
  if (fromFiles.length > 0 && hasOptions(q)) {
    out.write(
      `\noptions present and query resolved to log files for [${fromFiles.join(' ')}]\ntry without specifying options\n`,
    );
    return;
  }
  for (const service of fromFiles) {
    if (signal.aborted) return;
    await copyServiceFile(logRoots, service, out, signal);
  }
}

/** What `journalctl --field _SYSTEMD_UNIT` lists (upstream's checkForNativeLogger); none when it fails. */
function journalUnits(journalctl: string, signal: AbortSignal): Promise<string> {
  return new Promise((resolve) => {
    execFile(
      journalctl,
      ['--field', '_SYSTEMD_UNIT'],
      { signal, maxBuffer: UNIT_LIST_MAX_BYTES, killSignal: 'SIGKILL', encoding: 'utf8' },
      (err, stdout) => resolve(err ? '' : stdout),
    );
  });
}

/** Runs journalctl with stdout and stderr into out, killed when signal aborts. */
function copyJournal(
  journalctl: string,
  q: NodeLogQuery,
  services: readonly string[],
  out: Writable,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve) => {
    // TZ=UTC: --since and --until are written in UTC, and journalctl reads them in its local zone.
    const child = spawn(journalctl, journalctlArgs(q, services), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TZ: 'UTC' },
      signal,
      killSignal: 'SIGKILL',
    });
    let started = false;
    child.once('spawn', () => (started = true));
    for (const stream of [child.stdout, child.stderr]) {
      stream.on('data', (chunk: Buffer) => {
        if (!out.write(chunk)) {
          stream.pause();
          out.once('drain', () => stream.resume());
        }
      });
    }
    child.once('error', () => {
      if (!started && !signal.aborted && (q.boot ?? 0) === 0)
        out.write('\nerror: journal output not available\n');
    });
    // 'close' waits for both pipes to end, and a pipe paused for a client that left never does.
    const dropOutput = (): void => {
      child.stdout.destroy();
      child.stderr.destroy();
    };
    if (signal.aborted) dropOutput();
    else signal.addEventListener('abort', dropOutput, { once: true });
    child.once('close', () => {
      signal.removeEventListener('abort', dropOutput);
      resolve();
    });
  });
}

/** Upstream's heuristicsCopyFileLogs: the first of <s>, <s>.log, <s>/<s>.log that is a file. */
async function copyServiceFile(
  logRoots: readonly string[],
  service: string,
  out: Writable,
  signal: AbortSignal,
): Promise<void> {
  const root = logRoots[0];
  for (const name of root ? [service, `${service}.log`, path.join(service, `${service}.log`)] : []) {
    const opened = await openWithin(path.join(root!, name), logRoots);
    if (!opened) continue;
    if (!opened.info.isFile()) {
      await opened.fh.close().catch(() => undefined);
      continue;
    }
    const read = createReadStream('', { fd: opened.fh });
    try {
      await pipeline(read, out, { signal, end: false });
    } catch (err) {
      if (!signal.aborted) out.write(`\nerror getting log for ${service}: ${(err as Error).message}\n`);
    }
    return;
  }
  out.write(`\nlog not found for ${service}\n`);
}
