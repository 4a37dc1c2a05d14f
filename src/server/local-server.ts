/**
 * The kubelet's small local HTTP servers: /healthz on healthzBindAddress:healthzPort, and the
 * unauthenticated read-only port (/pods, /runningpods/, /healthz) when readOnlyPort is set.
 * The authenticated HTTPS API on port 10250 is a separate server.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pod, PodList } from '../api/core-v1.js';
import { logger } from '../lib/log.js';
import { loopbackRefusal } from '../lib/loopback.js';
import type { ComponentStatus } from '../lib/component.js';
import type { NodePageHandler } from '../nodepage/node-page-handler.js';
import { hasNodePageToken } from './node-page-access.js';
import { serveHealthz, type HealthChecker } from './healthz.js';
import { PodListBody } from './pod-list-body.js';
import { sendJson, sendJsonBody } from './request-context.js';

const log = logger('server');

/** What the servers read from the kubelet. */
export interface ServerHost {
  /** The pods this kubelet manages, with their latest status (upstream: Kubelet.GetPods). */
  getPods(): Pod[];
  /** The pods found in the runtime, as bare pods (upstream: /runningpods/). */
  getRunningPods(): Promise<Pod[]>;
  healthChecks(): readonly HealthChecker[];
  /** Every component's state, listed by /healthz?verbose. */
  componentStatuses?(): readonly ComponentStatus[];
  /**
   * The node page and its JSON under /node/ (src/nodepage). Served on the /healthz listener to
   * clients on this machine only, whatever address it binds, and its data only to those that carry
   * the page's token (node-page-access.ts).
   */
  nodePage?: NodePageHandler;
}

export interface LocalServerOptions {
  address: string;
  port: number;
  /** Serve /pods and /runningpods/ (the read-only port) besides /healthz. */
  readOnly: boolean;
  /** The token the node page's data asks for; without one, no data is served here. */
  nodePageToken?: string;
  /**
   * Where root's command line finds the node page (its socket and the file with the page's
   * address), told at /node/access: paths, not data.
   */
  nodePageAccess?: { socket: string; urlFile: string };
}

export interface LocalServer {
  /** The port actually bound (useful with port 0). */
  readonly port: number;
  close(): Promise<void>;
}

// A request whose client has stalled must not hold a socket for ever.
const REQUEST_TIMEOUT_MS = 60_000;

function sendText(res: http.ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(text);
}

function podList(items: Pod[]): PodList {
  return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items };
}

async function handle(
  host: ServerHost,
  opts: LocalServerOptions,
  podListBody: PodListBody,
  req: http.IncomingMessage,
  res: http.ServerResponse,
) {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (await serveHealthz(host.healthChecks(), req, res, url, () => host.componentStatuses?.() ?? [])) return;
  if (host.nodePage && !opts.readOnly && (url.pathname === '/node' || url.pathname.startsWith('/node/'))) {
    const refused = loopbackRefusal(req);
    if (refused) {
      log.v(2, 'Node page request refused', { remote: req.socket.remoteAddress, reason: refused });
      return sendText(
        res,
        403,
        `Forbidden: ${refused}; from elsewhere, use the kubelet API (authenticated)\n`,
      );
    }
    if (url.pathname === '/node/access' && opts.nodePageAccess)
      return sendJson(res, 200, opts.nodePageAccess);
    const closed = new AbortController();
    res.once('close', () => closed.abort(new Error('client went away')));
    const locked = !(opts.nodePageToken && hasNodePageToken(req, opts.nodePageToken));
    if (locked) log.v(4, 'Node page request without its token', { path: url.pathname });
    return host.nodePage({
      req,
      res,
      path: url.pathname,
      query: url.searchParams,
      signal: closed.signal,
      locked,
    });
  }
  if (!opts.readOnly) return sendText(res, 404, '404 page not found\n');
  if (req.method !== 'GET' && req.method !== 'HEAD') return sendText(res, 405, 'method not allowed\n');
  switch (url.pathname) {
    case '/pods':
    case '/pods/':
      return sendJsonBody(res, 200, podListBody.for(host.getPods()));
    case '/runningpods':
    case '/runningpods/':
      return sendJson(res, 200, podList(await host.getRunningPods()));
    default:
      return sendText(res, 404, '404 page not found\n');
  }
}

export function startLocalServer(host: ServerHost, opts: LocalServerOptions): Promise<LocalServer> {
  const podListBody = new PodListBody();
  const server = http.createServer((req, res) => {
    handle(host, opts, podListBody, req, res).catch((err: unknown) => {
      log.error('request failed', { path: req.url, err });
      if (!res.headersSent) sendText(res, 500, 'internal server error\n');
      else res.destroy();
    });
  });
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = REQUEST_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.address, () => {
      server.off('error', reject);
      const port = (server.address() as AddressInfo).port;
      log.info('serving', { address: opts.address, port, readOnly: opts.readOnly });
      resolve({
        port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
