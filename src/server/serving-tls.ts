/**
 * The kubelet API's TLS settings, as upstream's InitializeTLS makes them: the configured certificate,
 * or else a self-signed pair in the cert directory (`kubelet.crt`, `kubelet.key`) made once and
 * reused across restarts; the minimum version and cipher suites given by their Go names, mapped to
 * what OpenSSL calls them; client certificates requested (never required) when a client CA is set.
 */
import { access, constants, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SecureVersion, TlsOptions } from 'node:tls';
import { selfSignedServingCertificate } from '../certificate/x509.js';
import { KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('server');

/** tlsMinVersion values (Go's constant names) and what Node calls them. */
const TLS_VERSIONS: Record<string, SecureVersion> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

/** Go's TLS 1.3 suites: accepted in tlsCipherSuites, but never configurable (Go ignores them too). */
const TLS13_SUITES = new Set([
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
]);
const DEFAULT_TLS13_CIPHERS = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256';

/** The TLS 1.0–1.2 suites Go knows (secure and insecure lists), by their OpenSSL names. */
const CIPHER_SUITES: Record<string, string> = {
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  // The older names component-base still accepts.
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
};

/** tlsMinVersion to Node's name; '' is Go's server default, TLS 1.2. */
export function tlsMinVersion(name: string): SecureVersion {
  if (name === '') return 'TLSv1.2';
  const v = TLS_VERSIONS[name];
  if (!v) throw new KubeletError('INVALID_CONFIG', `unknown tls version "${name}"`);
  return v;
}

/**
 * tlsCipherSuites to an OpenSSL cipher string, or undefined for Node's defaults. TLS 1.3 suites stay
 * at their defaults whatever the list says, as in Go.
 */
export function openSslCiphers(suites: readonly string[]): string | undefined {
  if (suites.length === 0) return undefined;
  const names: string[] = [];
  for (const s of suites) {
    if (TLS13_SUITES.has(s)) continue;
    const mapped = CIPHER_SUITES[s];
    if (!mapped) throw new KubeletError('INVALID_CONFIG', `Cipher suite ${s} not supported or doesn't exist`);
    names.push(mapped);
  }
  if (names.length === 0) return undefined;
  return [DEFAULT_TLS13_CIPHERS, ...names].join(':');
}

export interface ServingTlsConfig {
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  tlsMinVersion: string;
  tlsCipherSuites: string[];
  authentication: { x509: { clientCAFile: string } };
}

export interface ServingTlsContext {
  options: TlsOptions;
  certFile: string;
  keyFile: string;
}

/**
 * The options for https.createServer. Without tlsCertFile and tlsPrivateKeyFile, uses (and makes on
 * first start) `<certDirectory>/kubelet.crt|key` for hostName.
 */
export async function servingTls(
  config: ServingTlsConfig,
  certDirectory: string,
  hostName: string,
  /** A pair issued through a CSR (serverTLSBootstrap): served instead of any file. */
  issued?: { certPem: string; keyPem: string },
): Promise<ServingTlsContext> {
  let certFile = config.tlsCertFile;
  let keyFile = config.tlsPrivateKeyFile;
  if (issued) {
    certFile = '';
    keyFile = '';
  }
  // What we just made is used as made: another kubelet sharing the folder may be writing its own pair.
  let generated: { cert: Buffer; key: Buffer } | undefined;
  if (issued) {
    generated = { cert: Buffer.from(issued.certPem), key: Buffer.from(issued.keyPem) };
  } else if (certFile === '' && keyFile === '') {
    certFile = path.join(certDirectory, 'kubelet.crt');
    keyFile = path.join(certDirectory, 'kubelet.key');
    if (!(await readable(certFile)) || !(await readable(keyFile))) {
      generated = await writeSelfSignedCertificate(hostName, certFile, keyFile);
      log.info('Using self-signed cert', { TLSCertFile: certFile, TLSPrivateKeyFile: keyFile });
    }
  } else if (certFile === '' || keyFile === '') {
    throw new KubeletError('INVALID_CONFIG', 'tlsCertFile and tlsPrivateKeyFile must be given together');
  }
  const minVersion = tlsMinVersion(config.tlsMinVersion);
  const ciphers = openSslCiphers(config.tlsCipherSuites);
  if (minVersion === 'TLSv1.3' && config.tlsCipherSuites.length > 0)
    log.warn('TLS 1.3 cipher suites are not configurable, ignoring', {
      tlsCipherSuites: config.tlsCipherSuites,
    });
  const [cert, key] = generated
    ? [generated.cert, generated.key]
    : await Promise.all([readFile(certFile), readFile(keyFile)]);
  const options: TlsOptions = { cert, key, minVersion, ...(ciphers ? { ciphers } : {}) };
  const caFile = config.authentication.x509.clientCAFile;
  if (caFile !== '') {
    // Ask for a client certificate but never refuse the handshake without one: the authenticator
    // decides, so a bearer token or an anonymous request still gets through (upstream: RequestClientCert).
    options.ca = await readFile(caFile);
    options.requestCert = true;
    options.rejectUnauthorized = false;
  }
  return { options, certFile, keyFile };
}

async function readable(file: string): Promise<boolean> {
  try {
    await access(file, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Upstream's GenerateSelfSignedCertKey, made in-process (src/certificate/x509.ts): a throwaway CA
 * `<host>-ca@<unix seconds>` signs a serving certificate `<host>@<unix seconds>` whose SAN is the host
 * (an IP SAN when the host is an IP); the certificate file holds the certificate then the CA, so a
 * client can pin either.
 */
export async function writeSelfSignedCertificate(
  host: string,
  certFile: string,
  keyFile: string,
): Promise<{ cert: Buffer; key: Buffer }> {
  if (host === '' || /[\n,=+]/.test(host))
    throw new KubeletError('INVALID_CONFIG', `cannot put ${JSON.stringify(host)} in a certificate subject`);
  try {
    const pair = await selfSignedServingCertificate(host);
    await mkdir(path.dirname(certFile), { recursive: true, mode: 0o755 });
    await mkdir(path.dirname(keyFile), { recursive: true, mode: 0o755 });
    const cert = Buffer.from(pair.certPem);
    const key = Buffer.from(pair.keyPem);
    const suffix = `.tmp-${process.pid}-${Date.now()}`;
    await writeFile(keyFile + suffix, key, { mode: 0o600 });
    await writeFile(certFile + suffix, cert, { mode: 0o644 });
    // The key first: a crash between the renames leaves no certificate, so the next start makes both again.
    await rename(keyFile + suffix, keyFile);
    await rename(certFile + suffix, certFile);
    return { cert, key };
  } catch (err) {
    throw new KubeletError('INVALID_CONFIG', `unable to generate self signed cert: ${String(err)}`, {
      cause: err,
    });
  }
}
