/**
 * A throwaway certificate authority made with the machine's openssl: a self-signed CA, a serving
 * certificate for 127.0.0.1 and localhost, and client certificates whose subject carries a user the
 * way Kubernetes reads it (CN = user name, one O per group).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface KeyPair {
  certPem: string;
  keyPem: string;
}

const OPENSSL_TIMEOUT_MS = 20_000;

/** A subject field value openssl's -subj can carry without escaping. */
function checkSubjectValue(v: string): string {
  if (v === '' || /[/\\+,=\n]/.test(v))
    throw new Error(`cannot put ${JSON.stringify(v)} in a certificate subject`);
  return v;
}

export class CertificateAuthority {
  private serial = 0;

  private constructor(
    private readonly dir: string,
    readonly certPem: string,
    private readonly keyPath: string,
    private readonly certPath: string,
  ) {}

  static async create(commonName = 'tskubelet-test-ca'): Promise<CertificateAuthority> {
    const dir = await mkdtemp(path.join(tmpdir(), 'test-apiserver-ca-'));
    const keyPath = path.join(dir, 'ca.key');
    const certPath = path.join(dir, 'ca.crt');
    try {
      await run(
        'openssl',
        [
          'req',
          '-x509',
          '-new',
          '-nodes',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-keyout',
          keyPath,
          '-out',
          certPath,
          '-days',
          '2',
          '-subj',
          `/CN=${checkSubjectValue(commonName)}`,
          '-addext',
          'basicConstraints=critical,CA:TRUE',
          '-addext',
          'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
        ],
        { timeout: OPENSSL_TIMEOUT_MS },
      );
      return new CertificateAuthority(dir, await readFile(certPath, 'utf8'), keyPath, certPath);
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** A key and a certificate signed by this CA, with the given subject and X.509 extensions. */
  private async issue(subject: string, extensions: string[]): Promise<KeyPair> {
    const id = `${++this.serial}-${randomBytes(4).toString('hex')}`;
    const key = path.join(this.dir, `${id}.key`);
    const csr = path.join(this.dir, `${id}.csr`);
    const crt = path.join(this.dir, `${id}.crt`);
    const ext = path.join(this.dir, `${id}.ext`);
    try {
      await writeFile(ext, extensions.join('\n') + '\n');
      await run(
        'openssl',
        [
          'req',
          '-new',
          '-nodes',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-keyout',
          key,
          '-out',
          csr,
          '-subj',
          subject,
        ],
        { timeout: OPENSSL_TIMEOUT_MS },
      );
      await run(
        'openssl',
        [
          'x509',
          '-req',
          '-in',
          csr,
          '-CA',
          this.certPath,
          '-CAkey',
          this.keyPath,
          '-set_serial',
          `0x${randomBytes(8).toString('hex')}`,
          '-days',
          '2',
          '-extfile',
          ext,
          '-out',
          crt,
        ],
        { timeout: OPENSSL_TIMEOUT_MS },
      );
      return { certPem: await readFile(crt, 'utf8'), keyPem: await readFile(key, 'utf8') };
    } finally {
      await Promise.all([key, csr, crt, ext].map((f) => rm(f, { force: true })));
    }
  }

  issueServing(commonName: string, ips: string[], dnsNames: string[]): Promise<KeyPair> {
    const san = [...ips.map((ip) => `IP:${ip}`), ...dnsNames.map((d) => `DNS:${d}`)].join(',');
    return this.issue(`/CN=${checkSubjectValue(commonName)}`, [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth',
      `subjectAltName=${san}`,
    ]);
  }

  /** A client certificate the API server maps to user `user` in `groups`. */
  issueClient(user: string, groups: string[] = []): Promise<KeyPair> {
    const subject =
      groups.map((g) => `/O=${checkSubjectValue(g)}`).join('') + `/CN=${checkSubjectValue(user)}`;
    return this.issue(subject, [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=clientAuth',
    ]);
  }

  async dispose(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}
