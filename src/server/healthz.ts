/**
 * /healthz as upstream serves it: named checks, each also at /healthz/<name>; `?verbose` lists them.
 * A failing check answers 500 with the failing names, never the reasons (upstream withholds them
 * from unauthenticated callers; they go to the log instead).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ComponentStatus } from '../lib/component.js';
import { logger } from '../lib/log.js';

const log = logger('healthz');

export interface HealthChecker {
  name: string;
  /** Resolves to undefined when healthy, or to the reason it is not. */
  check(): string | undefined | Promise<string | undefined>;
}

export const pingCheck: HealthChecker = { name: 'ping', check: () => undefined };

/** Upstream's "log" check: the logger is not blocked. Our logger writes synchronously, so it cannot be. */
export const logCheck: HealthChecker = { name: 'log', check: () => undefined };

async function runCheck(c: HealthChecker): Promise<string | undefined> {
  try {
    return await c.check();
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * `?verbose` also lists each component's state after the checks (`component pleg: RUNNING`). States
 * are informational: only the checks decide the answer's code, as upstream's checks alone do.
 */
function componentLines(components: readonly ComponentStatus[] | undefined): string[] {
  return (components ?? []).map((c) => `component ${c.name}: ${c.state}`);
}

/** Serves /healthz and /healthz/<name>; returns false when the path is not a healthz path. */
export async function serveHealthz(
  checks: readonly HealthChecker[],
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  components?: () => readonly ComponentStatus[],
): Promise<boolean> {
  if (url.pathname !== '/healthz' && !url.pathname.startsWith('/healthz/')) return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8', Allow: 'GET, HEAD' });
    res.end('method not allowed\n');
    return true;
  }
  const name = url.pathname.slice('/healthz/'.length);
  if (url.pathname.startsWith('/healthz/')) {
    const c = checks.find((x) => x.name === name);
    if (!c) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(`healthz check "${name}" not found\n`);
      return true;
    }
    const reason = await runCheck(c);
    if (reason !== undefined) log.warn('healthz check failed', { check: c.name, reason });
    res.writeHead(reason === undefined ? 200 : 500, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(reason === undefined ? 'ok' : `internal server error: ${name} failed\n`);
    return true;
  }
  const results = await Promise.all(checks.map(async (c) => ({ name: c.name, reason: await runCheck(c) })));
  const failed = results.filter((r) => r.reason !== undefined);
  for (const f of failed) log.warn('healthz check failed', { check: f.name, reason: f.reason });
  const verbose = url.searchParams.has('verbose');
  const lines = results.map((r) =>
    r.reason === undefined ? `[+]${r.name} ok` : `[-]${r.name} failed: reason withheld`,
  );
  if (verbose) lines.push(...componentLines(components?.()));
  res.writeHead(failed.length === 0 ? 200 : 500, { 'Content-Type': 'text/plain; charset=utf-8' });
  if (failed.length === 0) {
    res.end(verbose ? `${lines.join('\n')}\nhealthz check passed\n` : 'ok');
  } else {
    res.end(`${lines.join('\n')}\nhealthz check failed\n`);
  }
  return true;
}
