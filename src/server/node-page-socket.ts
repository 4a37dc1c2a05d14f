/**
 * The node page's API on a unix socket, `<root-dir>/node-page/kubelet.sock`, for
 * `tskubelet get/describe/logs/events`: the socket's folder and mode (node-page-access.ts) decide
 * who may connect, so nothing else is asked of the client. Serves /node/ and the health checks.
 */
import http from 'node:http';
import { chmod, chown, lstat, rm } from 'node:fs/promises';
import { KubeletError, errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { ComponentStatus } from '../lib/component.js';
import type { NodePageHandler } from '../nodepage/node-page-handler.js';
import { serveHealthz, type HealthChecker } from './healthz.js';
import { nodePageModes, nodePagePaths } from './node-page-access.js';

const log = logger('server');

// Linux's sun_path holds 108 bytes with the terminating NUL.
const MAX_SOCKET_PATH_BYTES = 107;
const REQUEST_TIMEOUT_MS = 60_000;

export interface NodePageSocketHost {
  nodePage: NodePageHandler;
  healthChecks(): readonly HealthChecker[];
  componentStatuses?(): readonly ComponentStatus[];
}

export interface NodePageSocket {
  readonly path: string;
  close(): Promise<void>;
}

function isNodePagePath(pathname: string): boolean {
  return pathname === '/node' || pathname.startsWith('/node/');
}

/** Removes a socket left by an earlier start; anything else at that path is an error. */
async function removeStaleSocket(socketPath: string): Promise<void> {
  const st = await lstat(socketPath).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!st) return;
  if (!st.isSocket())
    throw new KubeletError('INVALID_CONFIG', `${socketPath} exists and is not a socket: remove it`);
  await rm(socketPath, { force: true });
}

/** Listens on the socket in the prepared private folder (prepareNodePageDir) and gives it its mode. */
export async function startNodePageSocket(
  host: NodePageSocketHost,
  rootDir: string,
  gid: number | undefined,
): Promise<NodePageSocket> {
  const { socket: socketPath } = nodePagePaths(rootDir);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES)
    throw new KubeletError(
      'INVALID_CONFIG',
      `the node page's socket path is too long for a unix socket: ${socketPath}`,
    );
  await removeStaleSocket(socketPath);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const served = (async () => {
      if (await serveHealthz(host.healthChecks(), req, res, url, () => host.componentStatuses?.() ?? []))
        return;
      if (!isNodePagePath(url.pathname)) {
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end('404 page not found\n');
        return;
      }
      const closed = new AbortController();
      res.once('close', () => closed.abort(new Error('client went away')));
      await host.nodePage({ req, res, path: url.pathname, query: url.searchParams, signal: closed.signal });
    })();
    served.catch((err: unknown) => {
      log.error('request failed', { path: req.url, err: errorMessage(err) });
      if (!res.headersSent) {
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end('internal server error\n');
      } else res.destroy();
    });
  });
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = REQUEST_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const modes = nodePageModes(gid);
  try {
    if (gid !== undefined) await chown(socketPath, process.geteuid?.() ?? 0, gid);
    await chmod(socketPath, modes.socket);
  } catch (err) {
    server.close();
    throw err;
  }
  log.info('Serving the node page on a unix socket', {
    path: socketPath,
    mode: `0${modes.socket.toString(8)}`,
    ...(gid !== undefined ? { gid } : {}),
  });
  return {
    path: socketPath,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}
