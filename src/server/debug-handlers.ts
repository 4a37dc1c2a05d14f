/**
 * The kubelet API's /debug/ paths (upstream: InstallProfilingHandler and InstallDebugFlagsHandler in
 * pkg/kubelet/server/server.go), reached only on the secure port, after authentication and
 * authorization (nodes/proxy), and only with enableDebuggingHandlers.
 *
 * Upstream serves Go's pprof. A Node.js process has no pprof; what V8 offers instead is served:
 * - /debug/pprof/profile?seconds=N: a CPU profile of the kubelet process in V8's .cpuprofile JSON
 *   (open it in Chrome DevTools' Performance panel), not Go's pprof protobuf.
 * - /debug/pprof/heap: a V8 heap snapshot (.heapsnapshot JSON, DevTools' Memory panel).
 * Profiles are one at a time in the whole process: V8's profilers are process-wide and a heap
 * snapshot pauses everything while it is taken, so a second request is a 429.
 *
 * PUT /debug/flags/v sets the log verbosity (--v) of the running kubelet, as upstream's GlogSetter.
 */
import type * as InspectorPromises from 'node:inspector/promises';
import { lazyBuiltin } from '../lib/lazy-builtin.js';
import type { ServerResponse } from 'node:http';
import { errorMessage } from '../lib/errors.js';
import { logger, setVerbosity } from '../lib/log.js';
import { methodNotAllowed, notFound, sendText, type RequestContext } from './request-context.js';

// Loaded on the first profile: node:inspector pulls node:worker_threads in with it, which an idle
// kubelet does not hold (test/integration/bundle-imports.test.ts).
const inspector = lazyBuiltin<typeof InspectorPromises>('node:inspector/promises');

const log = logger('debug');

/** Go's pprof default when seconds is absent. */
export const DEFAULT_PROFILE_SECONDS = 30;
/** tskubelet's own bound: a forgotten curl must not keep the profiler on for hours. */
export const MAX_PROFILE_SECONDS = 300;

export interface DebugHandlerSettings {
  /** enableProfilingHandler (upstream default true). */
  profiling: boolean;
  /** enableDebugFlagsHandler (upstream default true). */
  flags: boolean;
}

/** A verbosity is a few digits; anything longer is refused before it is read whole. */
const MAX_FLAG_BODY_BYTES = 64;

/** Process-wide: V8 has one CPU profiler and one heap per isolate. */
let profileInProgress = false;

/** Serves /debug/…; false when the path is not one of these (the caller answers 404). */
export async function serveDebug(settings: DebugHandlerSettings, ctx: RequestContext): Promise<boolean> {
  const { segments } = ctx;
  if (segments[1] === 'pprof') {
    await servePprof(settings, ctx);
    return true;
  }
  if (ctx.path === '/debug/flags/v') {
    await serveVerbosity(settings, ctx);
    return true;
  }
  return false;
}

/** Upstream's StringFlagPutHandler with GlogSetter: the body is the level, klog's Level.Set parses it. */
async function serveVerbosity(settings: DebugHandlerSettings, ctx: RequestContext): Promise<void> {
  const { res } = ctx;
  if (!settings.flags) return sendText(res, 405, 'flags endpoint is disabled.\n');
  if (ctx.method !== 'PUT') return sendText(res, 406, 'unsupported http method');
  const body = await readSmallBody(ctx);
  if (body === undefined)
    return sendText(res, 400, `error reading request body: longer than ${MAX_FLAG_BODY_BYTES} bytes`);
  // klog parses with ParseUint(value, 10, 32): digits only, no sign, no spaces, below 2^32.
  const level = /^\d{1,10}$/.test(body) ? Number(body) : NaN;
  if (!(level <= 0xffff_ffff))
    return sendText(res, 400, `failed set klog.logging.verbosity ${body}: not an unsigned 32-bit number`);
  setVerbosity(level);
  log.info('Log verbosity changed through /debug/flags/v', { verbosity: level, user: ctx.user?.username });
  sendText(res, 200, `successfully set klog.logging.verbosity to ${body}`);
}

/** The request body as text, or undefined when it is longer than MAX_FLAG_BODY_BYTES. */
function readSmallBody(ctx: RequestContext): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    ctx.req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_FLAG_BODY_BYTES) {
        ctx.req.pause();
        resolve(undefined);
        return;
      }
      parts.push(chunk);
    });
    ctx.req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    ctx.req.on('error', reject);
  });
}

async function servePprof(settings: DebugHandlerSettings, ctx: RequestContext): Promise<void> {
  const { res } = ctx;
  // Upstream answers every /debug/pprof/ path so when the handler is off, before looking at the method.
  if (!settings.profiling) return sendText(res, 405, 'profiling endpoint is disabled.\n');
  if (ctx.method !== 'GET') return methodNotAllowed(res);
  const name = ctx.segments.slice(2).join('/');
  switch (name) {
    case '':
      return sendText(res, 200, INDEX);
    case 'profile': {
      const seconds = profileSeconds(ctx.query.get('seconds'));
      if (typeof seconds === 'string') return sendText(res, 400, seconds);
      return exclusively(res, () => cpuProfile(res, seconds, ctx.signal));
    }
    case 'heap':
      return exclusively(res, () => heapSnapshot(res));
    default:
      return notFound(res);
  }
}

const INDEX = `/debug/pprof/: V8 profiles of the kubelet process (not Go's pprof format)

profile?seconds=N  a CPU profile over N seconds (default ${DEFAULT_PROFILE_SECONDS}, at most ${MAX_PROFILE_SECONDS}), .cpuprofile JSON for Chrome DevTools
heap               a heap snapshot, .heapsnapshot JSON for Chrome DevTools (pauses the kubelet while taken)
`;

/** The profile's length, or why the value is refused. */
export function profileSeconds(raw: string | null): number | string {
  if (raw === null || raw === '') return DEFAULT_PROFILE_SECONDS;
  if (!/^\d+$/.test(raw)) return `seconds must be a whole number of seconds, not ${JSON.stringify(raw)}\n`;
  const n = Number(raw);
  if (n < 1 || n > MAX_PROFILE_SECONDS)
    return `seconds must be between 1 and ${MAX_PROFILE_SECONDS}, not ${n}\n`;
  return n;
}

async function exclusively(res: ServerResponse, take: () => Promise<void>): Promise<void> {
  if (profileInProgress) return sendText(res, 429, 'another profile is being taken; try again later\n');
  profileInProgress = true;
  try {
    await take();
  } finally {
    profileInProgress = false;
  }
}

async function cpuProfile(res: ServerResponse, seconds: number, signal: AbortSignal): Promise<void> {
  const session = new (inspector().Session)();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
    log.info('CPU profile started', { seconds });
    const completed = await waitOrAbort(seconds * 1000, signal);
    const { profile } = await session.post('Profiler.stop');
    if (!completed) {
      log.info('CPU profile abandoned: the client went away');
      return;
    }
    const body = JSON.stringify(profile);
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Content-Disposition': 'attachment; filename="kubelet.cpuprofile"',
      'Content-Length': Buffer.byteLength(body),
    });
    res.end(body);
  } finally {
    session.disconnect();
  }
}

/** true after ms, false as soon as the signal aborts. */
function waitOrAbort(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Streamed as V8 hands it out in chunks: the whole snapshot is never one string in memory. */
async function heapSnapshot(res: ServerResponse): Promise<void> {
  const session = new (inspector().Session)();
  session.connect();
  let started = false;
  session.on('HeapProfiler.addHeapSnapshotChunk', (m) => {
    if (!started) {
      res.writeHead(200, {
        'Content-Type': 'application/json',
        'Content-Disposition': 'attachment; filename="kubelet.heapsnapshot"',
      });
      started = true;
    }
    res.write(m.params.chunk);
  });
  try {
    log.info('Heap snapshot started');
    await session.post('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
    if (!started) return sendText(res, 500, 'the heap snapshot was empty\n');
    res.end();
  } catch (err) {
    log.error('Heap snapshot failed', { err: errorMessage(err) });
    if (!started) return sendText(res, 500, `heap snapshot failed: ${errorMessage(err)}\n`);
    res.destroy();
  } finally {
    session.disconnect();
  }
}
