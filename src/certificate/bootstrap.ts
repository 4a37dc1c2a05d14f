/**
 * TLS bootstrap (upstream pkg/kubelet/certificate/bootstrap, LoadClientCert): when --kubeconfig has
 * no usable client certificate, use the --bootstrap-kubeconfig (a bootstrap token) to ask for one.
 * The key is ECDSA P-256, kept in `<certDir>/kubelet-client.key.tmp` until the certificate is issued
 * (so a restart reuses it and its CSR); the CSR is named `node-csr-<digest>` for signer
 * kubernetes.io/kube-apiserver-client-kubelet, subject CN=system:node:<name>, O=system:nodes; once
 * issued the pair is stored as `kubelet-client-<timestamp>.pem` with the `kubelet-client-current.pem`
 * link, and --kubeconfig is written to name that link.
 */
import { createHash, createPublicKey } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import type { Clock } from '../lib/clock.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { loadKubeconfig, type RestConfig } from '../k8s/kubeconfig.js';
import { RestClient } from '../k8s/rest-client.js';
import { CertificateStore } from './certificate-store.js';
import {
  KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
  requestCertificate,
  waitForCertificate,
  type KeyUsage,
} from './csr.js';
import { generateKeyPair, keyPairFromPem, makeCsrPem, parseCertificates, type KeyPair } from './x509.js';

const log = logger('certificate');

export const TMP_PRIVATE_KEY_FILE = 'kubelet-client.key.tmp';
/** The usages bootstrap asks for (upstream requestNodeCertificate). */
export const CLIENT_USAGES: KeyUsage[] = ['digital signature', 'key encipherment', 'client auth'];
/** Upstream waits an hour for the CSR to be approved and issued. */
const BOOTSTRAP_WAIT_MS = 3600_000;
/** And up to a minute for the API server to answer /healthz first. */
const WAIT_FOR_SERVER_MS = 60_000;

export interface LoadClientCertOptions {
  kubeconfigPath: string;
  bootstrapKubeconfigPath: string;
  certDirectory: string;
  nodeName: string;
  clock: Clock;
  signal?: AbortSignal;
  userAgent?: string;
  waitTimeoutMs?: number;
}

/** Does --kubeconfig exist with a client certificate that has not expired? (upstream isClientConfigStillValid) */
export async function isClientConfigStillValid(kubeconfigPath: string, nowMs = Date.now()): Promise<boolean> {
  try {
    await stat(kubeconfigPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new KubeletError(
      'INVALID_CONFIG',
      `error reading existing bootstrap kubeconfig ${kubeconfigPath}: ${errorMessage(err)}`,
    );
  }
  let config: RestConfig;
  try {
    config = await loadKubeconfig(kubeconfigPath);
  } catch (err) {
    log.error('Unable to read existing bootstrap client config', {
      path: kubeconfigPath,
      err: errorMessage(err),
    });
    return false;
  }
  if (!config.clientCertPem) return false;
  try {
    for (const cert of parseCertificates(config.clientCertPem)) {
      if (nowMs > Date.parse(cert.validTo)) {
        log.error('Part of the existing bootstrap client certificate is expired', {
          path: kubeconfigPath,
          expiration: cert.validTo,
        });
        return false;
      }
    }
  } catch (err) {
    log.error('Unable to load TLS certificates from existing bootstrap client config', {
      path: kubeconfigPath,
      err: errorMessage(err),
    });
    return false;
  }
  return true;
}

/** `node-csr-<base64url(sha512/256(...))>` over the public key, subject and usages (upstream digestedName). */
export function digestedName(
  publicKeySpki: Buffer,
  commonName: string,
  organization: string[],
  usages: string[],
): string {
  const hash = createHash('sha512-256');
  const write = (data: Buffer | string) => {
    hash.update(Buffer.from(data).toString('base64url'));
    hash.update('|');
  };
  write(publicKeySpki);
  write(commonName);
  for (const o of organization) write(o);
  for (const u of usages) write(u);
  return `node-csr-${hash.digest('base64url')}`;
}

/** Runs bootstrap when needed; returns true when a new certificate was obtained. */
export async function loadClientCert(opts: LoadClientCertOptions): Promise<boolean> {
  if (await isClientConfigStillValid(opts.kubeconfigPath)) {
    log.v(2, 'Kubeconfig exists and is valid, skipping bootstrap', { path: opts.kubeconfigPath });
    return false;
  }
  log.info('Using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file', {
    bootstrapKubeconfig: opts.bootstrapKubeconfigPath,
  });
  let bootstrapConfig: RestConfig;
  try {
    bootstrapConfig = await loadKubeconfig(opts.bootstrapKubeconfigPath);
  } catch (err) {
    throw new KubeletError('INVALID_CONFIG', `unable to load bootstrap kubeconfig: ${errorMessage(err)}`, {
      cause: err,
    });
  }
  const client = new RestClient({
    config: bootstrapConfig,
    clock: opts.clock,
    ...(opts.userAgent ? { userAgent: opts.userAgent } : {}),
  });
  try {
    const store = new CertificateStore('kubelet-client', opts.certDirectory);
    const keys = await bootstrapKey(store, opts.certDirectory);
    await waitForServer(client, opts.clock, opts.signal);

    const commonName = `system:node:${opts.nodeName}`;
    const organization = ['system:nodes'];
    const csrPem = await makeCsrPem({ commonName, organization }, keys);
    const spki = createPublicKey(keys.keyPem).export({ type: 'spki', format: 'der' });
    const name = digestedName(spki, commonName, organization, CLIENT_USAGES);
    const csr = await requestCertificate(
      client,
      { name, csrPem, signerName: KUBE_APISERVER_CLIENT_KUBELET_SIGNER, usages: CLIENT_USAGES },
      opts.signal,
    );
    log.v(2, 'Waiting for client certificate to be issued', { name: csr.name });
    const certPem = await waitForCertificate(client, csr, {
      timeoutMs: opts.waitTimeoutMs ?? BOOTSTRAP_WAIT_MS,
      clock: opts.clock,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    await store.update(certPem, keys.keyPem);
    await rm(path.join(opts.certDirectory, TMP_PRIVATE_KEY_FILE), { force: true });
    await writeKubeconfigFromBootstrapping(bootstrapConfig, opts.kubeconfigPath, store.currentPath());
    log.info('Client certificate issued; kubeconfig written', {
      kubeconfig: opts.kubeconfigPath,
      certificate: store.currentPath(),
    });
    return true;
  } finally {
    client.close();
  }
}

/** The stored pair's key when it still parses, else the cached temporary key, else a new one (cached). */
async function bootstrapKey(store: CertificateStore, certDirectory: string): Promise<KeyPair> {
  try {
    const current = await store.current();
    if (current) return await keyPairFromPem(current.keyPem);
  } catch {
    // An unreadable pair: fall through to the temporary key.
  }
  const tmp = path.join(certDirectory, TMP_PRIVATE_KEY_FILE);
  try {
    return await keyPairFromPem(await readFile(tmp, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      log.info('Replacing an unusable cached bootstrap key', { path: tmp, err: errorMessage(err) });
  }
  const keys = await generateKeyPair();
  await mkdir(certDirectory, { recursive: true, mode: 0o755 });
  await writeFile(tmp, keys.keyPem, { mode: 0o600 });
  return keys;
}

async function waitForServer(client: RestClient, clock: Clock, signal?: AbortSignal): Promise<void> {
  const until = clock.now() + WAIT_FOR_SERVER_MS;
  while (clock.now() < until) {
    try {
      const r = await client.call(
        { method: 'GET', path: '/healthz' },
        { timeoutMs: 1000, ...(signal ? { signal } : {}) },
      );
      if (r.ok) return;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      log.info('Failed to connect to apiserver', { err: errorMessage(err) });
    }
    await clock.sleep(2000, signal);
  }
  log.info('Error waiting for apiserver to come up', { err: 'timed out waiting to connect to apiserver' });
}

/** The kubeconfig upstream writes after bootstrap: the bootstrap cluster, the stored pair as the user. */
export async function writeKubeconfigFromBootstrapping(
  bootstrap: RestConfig,
  kubeconfigPath: string,
  pemPath: string,
): Promise<void> {
  const cluster: Record<string, unknown> = {};
  if (bootstrap.caPem)
    cluster['certificate-authority-data'] = Buffer.from(bootstrap.caPem).toString('base64');
  if (bootstrap.insecureSkipTLSVerify) cluster['insecure-skip-tls-verify'] = true;
  cluster.server = bootstrap.server;
  if (bootstrap.tlsServerName) cluster['tls-server-name'] = bootstrap.tlsServerName;
  const doc = {
    apiVersion: 'v1',
    clusters: [{ cluster, name: 'default-cluster' }],
    contexts: [
      {
        context: { cluster: 'default-cluster', namespace: 'default', user: 'default-auth' },
        name: 'default-context',
      },
    ],
    'current-context': 'default-context',
    kind: 'Config',
    preferences: {},
    users: [{ name: 'default-auth', user: { 'client-certificate': pemPath, 'client-key': pemPath } }],
  };
  await mkdir(path.dirname(kubeconfigPath), { recursive: true });
  const tmp = `${kubeconfigPath}.tmp-${process.pid}`;
  await writeFile(tmp, stringify(doc), { mode: 0o600 });
  await rename(tmp, kubeconfigPath);
}
