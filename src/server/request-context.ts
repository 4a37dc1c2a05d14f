/**
 * What every kubelet API handler receives, and the small response helpers they share. Paths are
 * parsed from the raw request line segment by segment, never through URL normalisation: a segment
 * that is `.` or `..` once decoded (`..`, `%2e%2e`, `.%2E`) is refused, so no handler ever sees one.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { UserInfo } from './delegated-auth.js';

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  /** Decoded path, as Go's URL.Path: what routing and authorization look at. */
  path: string;
  /** The decoded segments after the leading slash; a trailing slash leaves a last empty segment. */
  segments: string[];
  query: URLSearchParams;
  /** Set for requests that asked to switch protocols (exec, attach, port-forward). */
  upgrade?: { socket: Duplex; head: Buffer };
  /** Aborted when the client goes away or the server closes. */
  signal: AbortSignal;
  user?: UserInfo;
}

export type ParsedPath = { path: string; segments: string[]; query: URLSearchParams } | { error: string };

/** Splits the request target into decoded segments; refuses dot segments, empty inner segments and bad escapes. */
export function parseRequestTarget(rawUrl: string): ParsedPath {
  const q = rawUrl.indexOf('?');
  const rawPath = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
  const rawQuery = q >= 0 ? rawUrl.slice(q + 1) : '';
  if (!rawPath.startsWith('/')) return { error: 'invalid URL path' };
  const rawSegments = rawPath.slice(1).split('/');
  const segments: string[] = [];
  for (let i = 0; i < rawSegments.length; i++) {
    let s: string;
    try {
      s = decodeURIComponent(rawSegments[i]!);
    } catch {
      return { error: 'invalid URL escape' };
    }
    if (s === '.' || s === '..' || s.includes('/') || s.includes('\\') || s.includes('\0'))
      return { error: 'invalid URL path' };
    if (s === '' && i !== rawSegments.length - 1 && !(i === 0 && rawSegments.length === 1))
      return { error: 'invalid URL path' };
    segments.push(s);
  }
  return { path: '/' + segments.join('/'), segments, query: new URLSearchParams(rawQuery) };
}

export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    // The status line is gone already (a stream had started): say it in the body, as Go's WriteError does.
    res.end(text);
    return;
  }
  const body = Buffer.from(text);
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': String(body.length),
    ...headers,
  });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendJsonBody(res, status, Buffer.from(JSON.stringify(body)));
}

/** A JSON answer already serialised. */
export function sendJsonBody(res: ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(body.length) });
  res.end(body);
}

/** go-restful's answers for paths and methods it has no route for. */
export function notFound(res: ServerResponse): void {
  sendText(res, 404, '404 page not found\n');
}

export function methodNotAllowed(res: ServerResponse): void {
  sendText(res, 405, '405: Method Not Allowed');
}
