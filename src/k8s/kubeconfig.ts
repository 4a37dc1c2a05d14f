/**
 * Reads a kubeconfig file the way client-go's clientcmd does for one context: the current-context,
 * its cluster (server, certificate-authority or -data, insecure-skip-tls-verify, tls-server-name) and
 * its user (client-certificate/-key or their -data, token or tokenFile). Relative file paths are
 * resolved against the kubeconfig's own folder, as clientcmd's ResolvePaths does.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { KubeletError, errorMessage } from '../lib/errors.js';

/** What a client needs to reach and authenticate to one API server (upstream: rest.Config, the TLS part). */
export interface RestConfig {
  /** `https://host:port`, with an optional path prefix. */
  server: string;
  /** PEM bundle to trust; the system's roots when absent. */
  caPem?: string;
  insecureSkipTLSVerify?: boolean;
  /** SNI and the name checked against the server's certificate, when not the host of `server`. */
  tlsServerName?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  token?: string;
  /** A file holding the bearer token, re-read as it rotates (takes precedence over token, as client-go). */
  tokenFile?: string;
}

interface NamedEntry<T> {
  name?: string;
  cluster?: T;
  user?: T;
  context?: T;
}

interface ClusterEntry {
  server?: string;
  'certificate-authority'?: string;
  'certificate-authority-data'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'tls-server-name'?: string;
  'proxy-url'?: string;
}

interface UserEntry {
  'client-certificate'?: string;
  'client-certificate-data'?: string;
  'client-key'?: string;
  'client-key-data'?: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  exec?: unknown;
  'auth-provider'?: unknown;
}

interface ContextEntry {
  cluster?: string;
  user?: string;
}

interface KubeconfigFile {
  'current-context'?: string;
  clusters?: NamedEntry<ClusterEntry>[];
  users?: NamedEntry<UserEntry>[];
  contexts?: NamedEntry<ContextEntry>[];
}

function invalid(file: string, why: string, cause?: unknown): KubeletError {
  return new KubeletError('INVALID_CONFIG', `kubeconfig ${file}: ${why}`, cause ? { cause } : undefined);
}

function decodeData(file: string, field: string, value: string): string {
  // Go's base64 decoder refuses garbage; Buffer.from silently drops it, so check the alphabet first.
  const compact = value.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw invalid(file, `${field} is not valid base64`);
  return Buffer.from(compact, 'base64').toString('utf8');
}

function byName<T>(
  file: string,
  list: NamedEntry<T>[] | undefined,
  kind: 'cluster' | 'user' | 'context',
  name: string,
): T {
  const entry = list?.find((e) => e.name === name);
  const value = entry?.[kind];
  if (!entry || value === undefined || value === null) throw invalid(file, `${kind} "${name}" not found`);
  return value;
}

/**
 * Parses kubeconfig text (read from `file`, which names it in errors and anchors relative paths).
 * Certificate and token files are read here, once; a tokenFile stays a path, for the client to re-read.
 */
export async function parseKubeconfig(text: string, file: string, context?: string): Promise<RestConfig> {
  let doc: KubeconfigFile;
  try {
    doc = (parse(text) ?? {}) as KubeconfigFile;
  } catch (err) {
    throw invalid(file, errorMessage(err), err);
  }
  if (typeof doc !== 'object' || Array.isArray(doc)) throw invalid(file, 'not a kubeconfig');
  const contextName = context ?? doc['current-context'] ?? '';
  if (contextName === '') throw invalid(file, 'no current-context is set');
  const ctx = byName(file, doc.contexts, 'context', contextName);
  const cluster = byName(file, doc.clusters, 'cluster', ctx.cluster ?? '');
  const user = ctx.user ? byName(file, doc.users, 'user', ctx.user) : {};
  const base = path.dirname(path.resolve(file));
  const resolve = (p: string) => (path.isAbsolute(p) ? p : path.join(base, p));
  const readText = async (field: string, p: string) => {
    try {
      return await readFile(resolve(p), 'utf8');
    } catch (err) {
      throw invalid(file, `${field} ${resolve(p)}: ${errorMessage(err)}`, err);
    }
  };

  if (!cluster.server) throw invalid(file, `cluster "${ctx.cluster ?? ''}" has no server`);
  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch (err) {
    throw invalid(file, `server ${JSON.stringify(cluster.server)} is not a URL`, err);
  }
  if (server.protocol !== 'https:' && server.protocol !== 'http:')
    throw invalid(file, `server ${cluster.server}: only https and http are supported`);
  if (user.exec !== undefined || user['auth-provider'] !== undefined)
    throw invalid(file, 'exec and auth-provider credentials are not supported');
  if (cluster['proxy-url']) throw invalid(file, 'proxy-url is not supported');

  const config: RestConfig = { server: cluster.server.replace(/\/+$/, '') };
  if (cluster['certificate-authority-data'])
    config.caPem = decodeData(file, 'certificate-authority-data', cluster['certificate-authority-data']);
  else if (cluster['certificate-authority'])
    config.caPem = await readText('certificate-authority', cluster['certificate-authority']);
  if (cluster['insecure-skip-tls-verify'] === true) {
    // client-go refuses the combination: a CA that is not checked is a mistake worth reporting.
    if (config.caPem)
      throw invalid(file, 'specifying a root certificates file with the insecure flag is not allowed');
    config.insecureSkipTLSVerify = true;
  }
  if (cluster['tls-server-name']) config.tlsServerName = cluster['tls-server-name'];

  if (user['client-certificate-data'])
    config.clientCertPem = decodeData(file, 'client-certificate-data', user['client-certificate-data']);
  else if (user['client-certificate'])
    config.clientCertPem = await readText('client-certificate', user['client-certificate']);
  if (user['client-key-data'])
    config.clientKeyPem = decodeData(file, 'client-key-data', user['client-key-data']);
  else if (user['client-key']) config.clientKeyPem = await readText('client-key', user['client-key']);
  if ((config.clientCertPem === undefined) !== (config.clientKeyPem === undefined))
    throw invalid(file, 'client-certificate and client-key must be given together');

  if (user.tokenFile) config.tokenFile = resolve(user.tokenFile);
  if (user.token) config.token = user.token;
  return config;
}

/** Reads and parses the kubeconfig at file (--kubeconfig). */
export async function loadKubeconfig(
  file: string,
  options: { context?: string; signal?: AbortSignal } = {},
): Promise<RestConfig> {
  let text: string;
  try {
    text = await readFile(file, { encoding: 'utf8', ...(options.signal ? { signal: options.signal } : {}) });
  } catch (err) {
    throw invalid(file, errorMessage(err), err);
  }
  return parseKubeconfig(text, file, options.context);
}
