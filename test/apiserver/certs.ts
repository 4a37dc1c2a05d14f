/**
 * A throwaway certificate authority made with the machine's openssl: a self-signed CA, a serving
 * certificate for 127.0.0.1 and localhost, and client certificates whose subject carries a user the
 * way Kubernetes reads it (CN = user name, one O per group). CSRs are signed with @peculiar/x509.
 */
import { execFile } from 'node:child_process';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const ECDSA_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

async function signWithCa(
  csrPem: string,
  caCertPem: string,
  caKeyPem: string,
  opts: CsrSigningOptions,
): Promise<string> {
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  const csr = new x509.Pkcs10CertificateRequest(csrPem);
  if (!(await csr.verify())) throw new Error('the CSR signature does not verify');
  const caCert = new x509.X509Certificate(caCertPem);
  const pkcs8 = createPrivateKey(caKeyPem).export({ type: 'pkcs8', format: 'der' });
  const caKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, ECDSA_P256, false, ['sign']);
  let keyUsage = 0;
  const eku: string[] = [];
  for (const u of opts.usages) {
    if (u === 'digital signature') keyUsage |= x509.KeyUsageFlags.digitalSignature;
    else if (u === 'key encipherment') keyUsage |= x509.KeyUsageFlags.keyEncipherment;
    else if (u === 'client auth') eku.push(x509.ExtendedKeyUsage.clientAuth);
    else if (u === 'server auth') eku.push(x509.ExtendedKeyUsage.serverAuth);
  }
  const san = csr.extensions.find((e) => e.type === '2.5.29.17');
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomBytes(8)
      .toString('hex')
      .replace(/^[89a-f]/, '1'),
    subject: csr.subject,
    issuer: caCert.subject,
    notBefore: opts.notBefore,
    notAfter: opts.notAfter,
    publicKey: csr.publicKey,
    signingKey: caKey,
    signingAlgorithm: ECDSA_P256,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      ...(keyUsage ? [new x509.KeyUsagesExtension(keyUsage, true)] : []),
      ...(eku.length ? [new x509.ExtendedKeyUsageExtension(eku)] : []),
      ...(san ? [new x509.SubjectAlternativeNameExtension(san.rawData)] : []),
    ],
  });
  return cert.toString('pem') + '\n';
}

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

export interface CsrSigningOptions {
  /** Key usages as a CSR names them (`client auth`, `server auth`, ...). */
  usages: string[];
  notBefore: Date;
  notAfter: Date;
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

  /**
   * Signs a PKCS#10 request as a Kubernetes signer does: the request's subject and SANs, the usages
   * the CSR object asks for, the validity given (a short one makes rotation tests quick).
   */
  async signCsr(csrPem: string, opts: CsrSigningOptions): Promise<string> {
    return signWithCa(csrPem, this.certPem, await readFile(this.keyPath, 'utf8'), opts);
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
