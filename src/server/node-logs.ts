/**
 * /logs/: the node's log folder (upstream: http.FileServer over /var/log, behind StripPrefix).
 * Directories are listed as Go lists them (a <pre> of links, sorted, folders with a trailing slash),
 * files are served with Last-Modified and single byte ranges. Nothing outside the folder is reachable:
 * dot segments never get here (the path parser refuses them), and every path is resolved with
 * realpath and must stay under the folder, or under one of the allowed symlink targets.
 *
 * Upstream's FileServer follows any link, so whoever can write to /var/log can link `index.html` to
 * the node's keys for anyone with nodes/log to read. Here a file or folder is opened first and its
 * containment checked on the open descriptor (/proc/self/fd), so a link planted, or swapped in
 * between the check and the read, leads nowhere outside.
 */
import { constants, createReadStream, type Stats } from 'node:fs';
import { open, readdir, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ServerState } from './kubelet-server.js';
import { methodNotAllowed, notFound, sendText, type RequestContext } from './request-context.js';
import { compareStrings } from '../lib/compare.js';

const TEXT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.json': 'application/json',
  '.xml': 'text/xml; charset=utf-8',
  '.gz': 'application/gzip',
};

function within(child: string, root: string): boolean {
  return child === root || child.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' })[c]!,
  );
}

/** A link target that stays a path: '?', '#' and '%' would otherwise change what it means. */
function escapeHref(name: string): string {
  return encodeURI(name).replace(/[?#]/g, (c) => encodeURIComponent(c));
}

/** Go's DetectContentType, as far as logs go: text unless the first bytes look binary. */
function sniff(head: Buffer): string {
  for (const b of head)
    if (b === 0 || (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d && b !== 0x1b))
      return 'application/octet-stream';
  return 'text/plain; charset=utf-8';
}

export async function serveNodeLogs(state: ServerState, ctx: RequestContext): Promise<void> {
  const { res } = ctx;
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return methodNotAllowed(res);
  const rel = ctx.segments.slice(1);
  const allowed = await nodeLogRoots(state);
  const root = allowed[0];
  if (!root) return notFound(res);
  const opened = await openWithin(path.join(root, ...rel), allowed);
  if (!opened) return notFound(res);
  const urlPath = ctx.path;
  const last = rel[rel.length - 1] ?? '';
  if (opened.info.isDirectory()) {
    try {
      // Go redirects a folder asked for without its trailing slash, relative to where the client is.
      if (!urlPath.endsWith('/')) return redirect(res, `${last}/`);
      const index = await openWithin(path.join(fdPath(opened.fh), 'index.html'), allowed);
      if (index?.info.isFile()) return await serveFile(ctx, 'index.html', index.fh, index.info);
      await index?.fh.close();
      return await listDirectory(ctx, fdPath(opened.fh));
    } finally {
      await opened.fh.close().catch(() => undefined);
    }
  }
  if (urlPath.endsWith('/') || !opened.info.isFile()) {
    await opened.fh.close();
    if (urlPath.endsWith('/')) return redirect(res, `../${rel[rel.length - 2] ?? ''}`);
    return notFound(res);
  }
  return serveFile(ctx, opened.path, opened.fh, opened.info);
}

/** The log folder, then the folders links in it may lead into, each resolved; none without the folder. */
export async function nodeLogRoots(state: ServerState): Promise<string[]> {
  const root = await realpath(state.nodeLogsDir).catch(() => undefined);
  if (!root) return [];
  const allowed = [root];
  for (const r of state.nodeLogsSymlinkRoots) {
    const real = await realpath(r).catch(() => undefined);
    if (real) allowed.push(real);
  }
  return allowed;
}

function fdPath(fh: FileHandle): string {
  return `/proc/self/fd/${fh.fd}`;
}

/**
 * Opens what p names (links resolved) when it is a file or folder within one of the allowed roots,
 * judged by where the open descriptor really points; undefined for anything else. O_NONBLOCK keeps a
 * planted FIFO from holding the request; the caller closes the handle.
 */
export async function openWithin(
  p: string,
  allowed: readonly string[],
): Promise<{ fh: FileHandle; info: Stats; path: string } | undefined> {
  const resolved = await realpath(p).catch(() => undefined);
  if (!resolved || !allowed.some((a) => within(resolved, a))) return undefined;
  const fh = await open(resolved, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    () => undefined,
  );
  if (!fh) return undefined;
  try {
    const actual = await readlink(fdPath(fh));
    const info = await fh.stat();
    if (allowed.some((a) => within(actual, a)) && (info.isFile() || info.isDirectory()))
      return { fh, info, path: actual };
  } catch {
    // Gone or unreadable in the meantime: as if it never was.
  }
  await fh.close().catch(() => undefined);
  return undefined;
}

function redirect(res: RequestContext['res'], location: string): void {
  res.writeHead(301, { Location: location, 'Content-Type': 'text/html; charset=utf-8' });
  res.end(`<a href="${escapeHtml(location)}">Moved Permanently</a>.\n\n`);
}

async function listDirectory(ctx: RequestContext, dir: string): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return sendText(ctx.res, 500, 'Error reading directory\n');
  }
  const names = await Promise.all(
    entries.map(async (e) => {
      // A symlink to a folder lists as a folder, as Go's os.Stat-based listing does.
      const isDir =
        e.isDirectory() ||
        (e.isSymbolicLink() && (await stat(path.join(dir, e.name)).catch(() => undefined))?.isDirectory());
      return isDir ? `${e.name}/` : e.name;
    }),
  );
  names.sort(compareStrings);
  const body =
    '<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n' +
    names.map((n) => `<a href="${escapeHref(n)}">${escapeHtml(n)}</a>\n`).join('') +
    '</pre>\n';
  ctx.res.writeHead(200, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  ctx.res.end(ctx.method === 'HEAD' ? undefined : body);
}

/** Serves the open file (named only for its type) and closes it. */
async function serveFile(ctx: RequestContext, name: string, fh: FileHandle, info: Stats): Promise<void> {
  let streaming = false;
  try {
    streaming = await sendFile(ctx, name, fh, info.size, info.mtime);
  } finally {
    if (!streaming) await fh.close().catch(() => undefined);
  }
}

/** True when the body is being streamed from fh (which then closes it). */
async function sendFile(
  ctx: RequestContext,
  name: string,
  fh: FileHandle,
  size: number,
  mtime: Date,
): Promise<boolean> {
  const { res } = ctx;
  let type = TEXT_TYPES[path.extname(name).toLowerCase()];
  if (!type) {
    const head = Buffer.alloc(Math.min(512, size));
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    type = sniff(head.subarray(0, bytesRead));
  }
  let start = 0;
  let end = size - 1;
  let status = 200;
  const headers: Record<string, string> = {
    'Content-Type': type,
    'Last-Modified': mtime.toUTCString(),
    'Accept-Ranges': 'bytes',
  };
  const range = ctx.req.headers.range;
  if (range !== undefined) {
    const m = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
    const a = m?.[1] ?? '';
    const b = m?.[2] ?? '';
    if (!m || (a === '' && b === '')) {
      sendText(res, 416, 'invalid range\n', { 'Content-Range': `bytes */${size}` });
      return false;
    }
    if (a === '') {
      start = Math.max(0, size - Number(b));
    } else {
      start = Number(a);
      if (b !== '') end = Math.min(Number(b), size - 1);
    }
    if (start >= size || start > end) {
      sendText(res, 416, 'invalid range: failed to overlap\n', { 'Content-Range': `bytes */${size}` });
      return false;
    }
    status = 206;
    headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
  }
  headers['Content-Length'] = String(size === 0 ? 0 : end - start + 1);
  if (ctx.method === 'HEAD' || size === 0) {
    res.writeHead(status, headers);
    res.end();
    return false;
  }
  res.writeHead(status, headers);
  // pipeline gives backpressure and closes the file when the client goes away.
  await pipeline(createReadStream('', { fd: fh, start, end }), res, { signal: ctx.signal }).catch(() =>
    res.destroy(),
  );
  return true;
}
