/**
 * Upstream's certificate.FileStore (client-go/util/certificate): each pair issued is written once as
 * `<certDir>/<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem` (mode 0600: the certificate chain, then the private
 * key), and `<prefix>-current.pem` is a symlink to the newest, swapped atomically through
 * `<prefix>-updated.pem`. Kubeconfigs and servers name the `-current.pem` path, so they follow it.
 * When there is no current pair, an explicitly configured certificate/key file pair is used.
 */
import { X509Certificate } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { parseCertificates, pemBlocks } from './x509.js';

export interface StoredPair {
  /** The certificate chain, leaf first. */
  certPem: string;
  keyPem: string;
  leaf: X509Certificate;
  /** Where it was read from. */
  certFile: string;
}

/** Go's time layout "2006-01-02-15-04-05", in local time as time.Now().Format writes it. */
export function storeTimestamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return (
    `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-` +
    `${p(d.getHours())}-${p(d.getMinutes())}-${p(d.getSeconds())}`
  );
}

/** Go's pem.Encode: 64 base64 characters a line. */
function reencode(block: string, type: string): string {
  const body = block
    .replace(`-----BEGIN ${type}-----`, '')
    .replace(`-----END ${type}-----`, '')
    .replace(/\s+/g, '');
  const lines = body.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${type}-----\n${lines.join('\n')}\n-----END ${type}-----\n`;
}

const KEY_TYPES = ['EC PRIVATE KEY', 'PRIVATE KEY', 'RSA PRIVATE KEY'];

function firstKeyBlock(pem: string): string | undefined {
  for (const type of KEY_TYPES) {
    const b = pemBlocks(pem, type)[0];
    if (b) return reencode(b, type);
  }
  return undefined;
}

export class CertificateStore {
  constructor(
    /** `kubelet-client` or `kubelet-server`. */
    readonly prefix: string,
    readonly certDirectory: string,
    /** tlsCertFile/tlsPrivateKeyFile (or a kubeconfig's files): used while there is no current pair. */
    private readonly fallback?: { certFile: string; keyFile: string },
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** `<certDir>/<prefix>-current.pem`: what a kubeconfig written by bootstrap names. */
  currentPath(): string {
    return path.join(this.certDirectory, `${this.prefix}-current.pem`);
  }

  /** The pair in force, or undefined when none is on disk. A pair that does not parse is an error. */
  async current(): Promise<StoredPair | undefined> {
    const current = this.currentPath();
    const text = await readIfExists(current);
    if (text !== undefined) return parsePair(text, text, current);
    if (this.fallback && this.fallback.certFile !== '' && this.fallback.keyFile !== '') {
      const cert = await readIfExists(this.fallback.certFile);
      const key = await readIfExists(this.fallback.keyFile);
      if (cert !== undefined && key !== undefined) return parsePair(cert, key, this.fallback.certFile);
    }
    return undefined;
  }

  /** Writes a newly issued pair and points `-current.pem` at it. */
  async update(certPem: string, keyPem: string): Promise<StoredPair> {
    const chain = pemBlocks(certPem, 'CERTIFICATE');
    const key = firstKeyBlock(keyPem);
    if (chain.length === 0 || !key)
      throw new KubeletError('CERTIFICATE_INVALID', 'the issued certificate or its key has no PEM block');
    await mkdir(this.certDirectory, { recursive: true, mode: 0o755 });
    const file = path.join(this.certDirectory, `${this.prefix}-${storeTimestamp(this.now())}.pem`);
    const text = chain.map((b) => reencode(b, 'CERTIFICATE')).join('') + key;
    const pair = parsePair(text, text, file); // refuse to install what would not load
    const handle = await open(file, 'w', 0o600);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    const updated = path.join(this.certDirectory, `${this.prefix}-updated.pem`);
    await rm(updated, { force: true });
    await symlink(file, updated);
    await rename(updated, this.currentPath());
    return pair;
  }
}

function parsePair(certText: string, keyText: string, file: string): StoredPair {
  let certs: X509Certificate[];
  try {
    certs = parseCertificates(certText);
  } catch (err) {
    throw new KubeletError(
      'CERTIFICATE_INVALID',
      `could not load the certificate in ${file}: ${errorMessage(err)}`,
    );
  }
  const keyPem = firstKeyBlock(keyText);
  if (!keyPem)
    throw new KubeletError('CERTIFICATE_INVALID', `no private key found with the certificate in ${file}`);
  const leaf = certs[0]!;
  const certPem = certs.map((c) => c.toString()).join('');
  return { certPem, keyPem, leaf, certFile: file };
}

async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
