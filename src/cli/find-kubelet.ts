/**
 * Where `tskubelet get/describe/logs/events/node-page-url` find the running kubelet, so that root
 * needs no flag: `--server` when given (`unix:PATH`, or an http address used with the page's token),
 * else the socket under `--root-dir` (default /var/lib/kubelet), else the socket the kubelet on the
 * default /healthz listener names at /node/access. A name got that way is used only when it is a
 * socket (or file) owned by root or by this user, in a folder nobody else may write: a process
 * that took the port while the kubelet was down cannot send root's command line elsewhere.
 */
import http from 'node:http';
import { lstat, readFile } from 'node:fs/promises';
import path from 'node:path';
import { KubeletError } from '../lib/errors.js';
import { nodePagePaths, tokenFromNodePageUrl } from '../lib/node-page-paths.js';
import { DEFAULT_SERVER, type NodeTarget } from './node-client.js';

export const DEFAULT_ROOT_DIR = '/var/lib/kubelet';
const ACCESS_TIMEOUT_MS = 3000;

export interface FindKubeletOptions {
  /** --server or TSKUBELET_SERVER. */
  server?: string;
  /** --root-dir: the kubelet's. */
  rootDir?: string;
}

export class FindKubeletError extends KubeletError {
  constructor(message: string) {
    super('KUBELET_NOT_FOUND', message);
  }
}

export async function findKubelet(opts: FindKubeletOptions): Promise<NodeTarget> {
  if (opts.server !== undefined) {
    if (opts.server.startsWith('unix:')) return { socketPath: opts.server.replace(/^unix:(\/\/)?/, '') };
    const token = await readToken(nodePagePaths(opts.rootDir ?? DEFAULT_ROOT_DIR).urlFile);
    return token ? { server: opts.server, token } : { server: opts.server };
  }
  if (opts.rootDir !== undefined) return { socketPath: nodePagePaths(opts.rootDir).socket };
  const byDefault = nodePagePaths(DEFAULT_ROOT_DIR).socket;
  if (await exists(byDefault)) return { socketPath: byDefault };
  const access = await askListener();
  await checkTrusted(access.socket, 'socket');
  return { socketPath: access.socket };
}

/** The node page's address (with its token), as the kubelet wrote it for root. */
export async function readNodePageUrl(opts: FindKubeletOptions): Promise<string> {
  let file: string;
  if (opts.rootDir !== undefined) file = nodePagePaths(opts.rootDir).urlFile;
  else if (await exists(nodePagePaths(DEFAULT_ROOT_DIR).urlFile))
    file = nodePagePaths(DEFAULT_ROOT_DIR).urlFile;
  else {
    file = (await askListener()).urlFile;
    await checkTrusted(file, 'file');
  }
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (err) {
    throw readError(file, err);
  }
}

function readError(file: string, err: unknown): FindKubeletError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EACCES')
    return new FindKubeletError(
      `permission denied on ${file}: only root (or the kubelet's --node-page-group) may read it`,
    );
  if (code === 'ENOENT')
    return new FindKubeletError(
      `${file} does not exist - is tskubelet running with this --root-dir, and its healthzPort on?`,
    );
  return new FindKubeletError(`unable to read ${file}: ${(err as Error).message}`);
}

async function readToken(urlFile: string): Promise<string | undefined> {
  const text = await readFile(urlFile, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : tokenFromNodePageUrl(text);
}

async function exists(p: string): Promise<boolean> {
  return lstat(p).then(
    () => true,
    (err: NodeJS.ErrnoException) => err.code !== 'ENOENT', // EACCES: it is there, and the error says so later
  );
}

/** Asks the kubelet on the default /healthz listener where its socket and address are. */
function askListener(): Promise<{ socket: string; urlFile: string }> {
  const url = new URL('/node/access', DEFAULT_SERVER);
  const notFound = (why: string) =>
    new FindKubeletError(
      `no kubelet found: ${nodePagePaths(DEFAULT_ROOT_DIR).socket} does not exist and ${url.origin} ${why}; ` +
        "give the kubelet's --root-dir",
    );
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: ACCESS_TIMEOUT_MS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        try {
          const a = JSON.parse(body) as { socket?: unknown; urlFile?: unknown };
          if (res.statusCode !== 200 || typeof a.socket !== 'string' || typeof a.urlFile !== 'string')
            throw new Error('bad answer');
          resolve({ socket: a.socket, urlFile: a.urlFile });
        } catch {
          reject(notFound(`does not say where the kubelet's socket is (HTTP ${res.statusCode})`));
        }
      });
    });
    req.on('timeout', () => req.destroy(notFound('does not answer')));
    req.on('error', (err) => reject(err instanceof FindKubeletError ? err : notFound('does not answer')));
  });
}

/** A name told by whatever listens on the port is used only if root (or this user) made it. */
async function checkTrusted(p: string, kind: 'socket' | 'file'): Promise<void> {
  const me = process.geteuid?.() ?? 0;
  const untrusted = (why: string) =>
    new FindKubeletError(`the kubelet at ${DEFAULT_SERVER} names ${p}, which is ${why}: not used`);
  if (!path.isAbsolute(p)) throw untrusted('not an absolute path');
  const st = await lstat(p).catch((err: unknown) => {
    throw readError(p, err);
  });
  if (kind === 'socket' ? !st.isSocket() : !st.isFile()) throw untrusted(`not a ${kind}`);
  const dir = await lstat(path.dirname(p));
  for (const s of [st, dir])
    if (s.uid !== 0 && s.uid !== me) throw untrusted(`owned by uid ${s.uid}, neither root nor you`);
  if (!dir.isDirectory() || (dir.mode & 0o022) !== 0) throw untrusted('in a folder others may write to');
}
