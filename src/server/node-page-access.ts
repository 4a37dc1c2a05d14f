/**
 * Who may read the node page's API (every pod's spec with its env values, the events, the logs) on
 * this machine: root, or the group the admin names (--node-page-group). Loopback is not
 * authorization: every local user, hostNetwork pod and local SSRF reaches 127.0.0.1. So:
 * - `tskubelet get/describe/logs/events` talk to a unix socket in `<root-dir>/node-page/`, a folder
 *   of 0700 (0750 with the group) holding a socket of 0600 (0660): the kernel checks who connects;
 * - a browser reaches the loopback /healthz listener with a random token made at each start, kept
 *   in `<root-dir>/node-page/url` (0600, 0640 with the group) as the page's address, the way
 *   Jupyter hands out its token; `tskubelet node-page-url` prints it.
 */
import { randomBytes, createHash, timingSafeEqual } from 'node:crypto';
import { chmod, chown, lstat, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { KubeletError } from '../lib/errors.js';
import { NODE_PAGE_URL_FILE_NAME, nodePagePaths } from '../lib/node-page-paths.js';

export { nodePagePaths, tokenFromNodePageUrl } from '../lib/node-page-paths.js';

/** Modes for a folder, a socket and a file that only root (and the named group) may use. */
export function nodePageModes(gid: number | undefined): { dir: number; socket: number; file: number } {
  return gid === undefined
    ? { dir: 0o700, socket: 0o600, file: 0o600 }
    : { dir: 0o750, socket: 0o660, file: 0o640 };
}

/** A fresh token: 256 random bits, URL-safe. */
export function newNodePageToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Whether the request carries `Authorization: Bearer <token>`; compared in constant time. */
export function hasNodePageToken(req: IncomingMessage, token: string): boolean {
  const header = req.headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) return false;
  // Digests have one length, so timingSafeEqual never throws and the length leaks nothing.
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(match[1]!), digest(token));
}

/** The page's address for a browser on this machine, the token in the fragment (never sent to a server). */
export function nodePageUrl(bindAddress: string, port: number, token: string): string {
  const unspecified = bindAddress === '' || bindAddress === '0.0.0.0' || bindAddress === '::';
  const host = unspecified ? '127.0.0.1' : bindAddress.includes(':') ? `[${bindAddress}]` : bindAddress;
  return `http://${host}:${port}/node/#token=${token}`;
}

/**
 * A group by name or number, from /etc/group (Node has no getgrnam). Throws INVALID_CONFIG naming
 * the flag when there is no such group.
 */
export async function resolveGroup(group: string, groupFile = '/etc/group'): Promise<number> {
  if (/^\d+$/.test(group)) return Number(group);
  const text = await readFile(groupFile, 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    const [name, , gid] = line.split(':');
    if (name === group && gid !== undefined && /^\d+$/.test(gid)) return Number(gid);
  }
  throw new KubeletError('INVALID_CONFIG', `--node-page-group: no group named ${JSON.stringify(group)}`);
}

/**
 * Makes `<root-dir>/node-page` this process's own private folder: created with the mode, or, when
 * it exists, checked to be a real folder (not a link) owned by this process's user, then given the
 * mode and group again (a previous start may have had another group).
 */
export async function prepareNodePageDir(rootDir: string, gid: number | undefined): Promise<string> {
  const { dir } = nodePagePaths(rootDir);
  const modes = nodePageModes(gid);
  await mkdir(rootDir, { recursive: true, mode: 0o750 });
  await mkdir(dir, { mode: modes.dir }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  const st = await lstat(dir);
  const uid = process.geteuid?.() ?? st.uid;
  if (!st.isDirectory() || st.uid !== uid)
    throw new KubeletError(
      'INVALID_CONFIG',
      `${dir} is not a folder owned by the kubelet's user (uid ${uid}): remove it so that the kubelet can make its own`,
    );
  await chown(dir, uid, gid ?? st.gid);
  await chmod(dir, modes.dir);
  return dir;
}

/** Writes the page's address for root (and the group) only: a new file, then renamed over the old. */
export async function writeNodePageUrl(rootDir: string, url: string, gid: number | undefined): Promise<void> {
  const { dir, urlFile } = nodePagePaths(rootDir);
  const mode = nodePageModes(gid).file;
  const tmp = path.join(dir, `.${NODE_PAGE_URL_FILE_NAME}.${process.pid}`);
  await rm(tmp, { force: true });
  await writeFile(tmp, `${url}\n`, { mode, flag: 'wx' });
  if (gid !== undefined) await chown(tmp, process.geteuid?.() ?? 0, gid);
  await chmod(tmp, mode);
  await rename(tmp, urlFile);
}

/** Removes the page's address at stop: its token means nothing once this kubelet is gone. */
export async function removeNodePageUrl(rootDir: string): Promise<void> {
  await rm(nodePagePaths(rootDir).urlFile, { force: true });
}
