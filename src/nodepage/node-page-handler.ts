/**
 * The node page's HTTP side, under /node/: the page itself (one HTML, one script, one style sheet,
 * read from assets/ once), its JSON (snapshot, pods, one pod, events), the live feed as server-sent
 * events, and container log tails. The same answers serve `tskubelet get/describe/events/logs`.
 *
 * Who may ask is decided by the listener that mounts it (src/server): on the /healthz listener only
 * loopback clients naming a loopback host (lib/loopback.ts); on the kubelet API, whoever its
 * authentication and authorization let through (nodes/proxy).
 * Every answer carries a Content-Security-Policy of 'self' only: the page has no inline script.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PodList } from '../api/core-v1.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { PodLogReader } from '../server/pod-log-reader.js';
import type { NodePageFeed } from './node-page-feed.js';
import type { NodePageSource } from './node-page-model.js';

const log = logger('nodepage');

export const NODE_PAGE_PREFIX = '/node';
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/** A page that reads no faster than this is cut off; it reconnects and starts from a snapshot. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

const ASSETS: Record<string, { file: string; type: string }> = {
  '/node/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/node/node-page.js': { file: 'node-page.js', type: 'text/javascript; charset=utf-8' },
  '/node/node-page.css': { file: 'node-page.css', type: 'text/css; charset=utf-8' },
};

const assetCache = new Map<string, Buffer>();
function asset(file: string): Buffer {
  let b = assetCache.get(file);
  if (!b) {
    // Copied next to the compiled module by the build (npm run build), and beside the source for tsx.
    b = readFileSync(new URL(`./assets/${file}`, import.meta.url));
    assetCache.set(file, b);
  }
  return b;
}

export interface NodePageHandlerOptions {
  source: NodePageSource;
  feed: NodePageFeed;
  logs?: PodLogReader;
  /** Live feeds open at once, over every listener; one more is a 429 (--node-page-max-subscribers). */
  maxSubscribers: number;
  /** Container logs followed at once, over every listener; one more is a 429 (--node-page-max-log-follows). */
  maxLogFollows: number;
}

export interface NodePageRequest {
  req: IncomingMessage;
  res: ServerResponse;
  /** The path, decoded, and the query. */
  path: string;
  query: URLSearchParams;
  /** Aborted when the client goes or the server closes. */
  signal: AbortSignal;
  /**
   * The listener has not found that this client may read the node's data (the loopback listener
   * without the page's token): only the page's own files are served, the rest is a 401.
   */
  locked?: boolean;
}

/** Serves one request under /node; the caller has decided the client may ask. */
export type NodePageHandler = (r: NodePageRequest) => Promise<void>;

function baseHeaders(type: string): Record<string, string> {
  return {
    'Content-Type': type,
    'Content-Security-Policy': CONTENT_SECURITY_POLICY,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
  };
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, head = false): void {
  res.writeHead(status, { ...baseHeaders(type), 'Content-Length': Buffer.byteLength(body) });
  res.end(head ? undefined : body);
}

function sendJson(res: ServerResponse, body: unknown, head = false): void {
  send(res, 200, 'application/json', JSON.stringify(body), head);
}

function sendError(res: ServerResponse, status: number, message: string): void {
  send(res, status, 'text/plain; charset=utf-8', `${message}\n`);
}

/** The realm a browser without the page's token is told about. */
export const NODE_PAGE_REALM = 'tskubelet node page';

function sendLocked(res: ServerResponse): void {
  res.writeHead(401, {
    ...baseHeaders('text/plain; charset=utf-8'),
    'WWW-Authenticate': `Bearer realm="${NODE_PAGE_REALM}"`,
  });
  res.end(
    "Unauthorized: the node page's data needs its token; as root, `tskubelet node-page-url` prints the page's address with it\n",
  );
}

function sendTooMany(res: ServerResponse, message: string): void {
  res.writeHead(429, { ...baseHeaders('text/plain; charset=utf-8'), 'Retry-After': '5' });
  res.end(`Too many requests: ${message}\n`);
}

export function nodePageHandler(opts: NodePageHandlerOptions): NodePageHandler {
  const { source, feed } = opts;
  let follows = 0;
  return async ({ req, res, path, query, signal, locked }) => {
    // The page's own files are the same for everyone, with no data in them.
    if (locked && path !== NODE_PAGE_PREFIX && !Object.hasOwn(ASSETS, path)) return sendLocked(res);
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') return sendError(res, 405, 'method not allowed');
    const head = method === 'HEAD';
    if (path === NODE_PAGE_PREFIX) {
      res.writeHead(301, { ...baseHeaders('text/plain'), Location: `${NODE_PAGE_PREFIX}/` });
      res.end();
      return;
    }
    const a = ASSETS[path];
    if (a) return send(res, 200, a.type, asset(a.file), head);
    const parts = path.slice(`${NODE_PAGE_PREFIX}/api/`.length).split('/');
    if (!path.startsWith(`${NODE_PAGE_PREFIX}/api/`)) return sendError(res, 404, '404 page not found');
    switch (parts[0]) {
      case 'snapshot':
        return sendJson(res, feed.snapshot(), head);
      case 'stream':
        if (feed.subscribers >= opts.maxSubscribers) {
          log.v(2, 'Node page live feed refused: too many open', { open: feed.subscribers });
          return sendTooMany(
            res,
            `${feed.subscribers} live feeds of the node page are open, the most --node-page-max-subscribers allows`,
          );
        }
        return serveStream(feed, res, signal);
      case 'events':
        return sendJson(
          res,
          {
            kind: 'EventList',
            apiVersion: 'v1',
            metadata: {},
            items: source.events.list({
              ...(query.get('namespace') !== null ? { namespace: query.get('namespace')! } : {}),
              ...(query.get('name') !== null ? { name: query.get('name')! } : {}),
              ...(query.get('kind') !== null ? { kind: query.get('kind')! } : {}),
            }),
          },
          head,
        );
      case 'pods': {
        if (parts.length === 1) {
          const list: PodList = { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: source.pods() };
          return sendJson(res, list, head);
        }
        const [, namespace, name] = parts;
        if (parts.length !== 3 || !namespace || !name) return sendError(res, 404, '404 page not found');
        const pod = source.pods().find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
        if (!pod) return sendError(res, 404, `pod "${name}" not found in namespace "${namespace}"`);
        const events = source.events
          .list({ namespace, name, kind: 'Pod' })
          .filter(
            (e) => !pod.metadata.uid || !e.involvedObject.uid || e.involvedObject.uid === pod.metadata.uid,
          );
        return sendJson(res, { pod, events }, head);
      }
      case 'logs': {
        const [, namespace, name, container] = parts;
        if (parts.length !== 4 || !namespace || !name || !container)
          return sendError(res, 404, '404 page not found');
        if (!opts.logs) return sendError(res, 404, 'container logs are not served here');
        if (!opts.logs.follows(query))
          return serveLogs(opts.logs, res, namespace, name, container, query, signal);
        if (follows >= opts.maxLogFollows) {
          log.v(2, 'Node page log follow refused: too many open', { open: follows });
          return sendTooMany(
            res,
            `${follows} container logs are followed through the node page, the most --node-page-max-log-follows allows`,
          );
        }
        follows++;
        try {
          return await serveLogs(opts.logs, res, namespace, name, container, query, signal);
        } finally {
          follows--;
        }
      }
      default:
        return sendError(res, 404, '404 page not found');
    }
  };
}

function serveStream(feed: NodePageFeed, res: ServerResponse, signal: AbortSignal): Promise<void> {
  res.writeHead(200, {
    ...baseHeaders('text/event-stream'),
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  res.flushHeaders();
  // The page waits this long before reconnecting after the stream ends.
  res.write('retry: 2000\n\n');
  return new Promise((resolve) => {
    const stop = feed.subscribe((event, data) => {
      if (res.writableLength > MAX_BUFFERED_BYTES) {
        finish();
        res.destroy();
        return;
      }
      res.write(`event: ${event}\ndata: ${data}\n\n`);
    });
    const finish = () => {
      stop();
      signal.removeEventListener('abort', finish);
      res.off('close', finish);
      resolve();
    };
    if (signal.aborted) return finish();
    signal.addEventListener('abort', finish, { once: true });
    res.once('close', finish);
  });
}

async function serveLogs(
  logs: PodLogReader,
  res: ServerResponse,
  namespace: string,
  name: string,
  container: string,
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<void> {
  const write = (chunk: Buffer): Promise<void> =>
    res.write(chunk)
      ? Promise.resolve()
      : new Promise((resolve, reject) => {
          const onDrain = () => {
            signal.removeEventListener('abort', onAbort);
            resolve();
          };
          const onAbort = () => {
            res.off('drain', onDrain);
            reject(signal.reason);
          };
          res.once('drain', onDrain);
          signal.addEventListener('abort', onAbort, { once: true });
        });
  try {
    const refused = await logs.read(
      namespace,
      name,
      container,
      query,
      () => {
        res.writeHead(200, baseHeaders('text/plain; charset=utf-8'));
        res.flushHeaders();
      },
      write,
      signal,
    );
    if (refused) return sendError(res, refused.status, refused.message);
    res.end();
  } catch (err) {
    if (signal.aborted) {
      res.destroy();
      return;
    }
    log.v(2, 'Reading a container log for the node page failed', { pod: name, err: errorMessage(err) });
    if (!res.headersSent) sendError(res, 500, errorMessage(err));
    else res.end(errorMessage(err));
  }
}
