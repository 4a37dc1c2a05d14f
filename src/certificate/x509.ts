/**
 * The X.509 work the kubelet does itself, over @peculiar/x509 and Node's WebCrypto: ECDSA P-256 keys
 * (what upstream's keyutil makes), PKCS#10 requests as Go's x509.CreateCertificateRequest writes
 * them (subject O then CN, SANs in an extension request), and self-signed serving certificates.
 * Reading certificates uses node:crypto's X509Certificate.
 */
import type * as X509 from '@peculiar/x509';
import { createPrivateKey, createPublicKey, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';

const require = createRequire(import.meta.url);
let x509Module: typeof X509 | undefined;

/**
 * @peculiar/x509, loaded on first use: with its dependencies (asn1js, tsyringe, reflect-metadata) it
 * holds about 3 MiB of heap, which a kubelet that never writes a CSR or a self-signed certificate
 * (standalone, the usual case) need not carry. `require`, so that the sync parseCsrPem can load it
 * too; the package is CommonJS, so this is the very module an `import` would give.
 */
function loadX509(): typeof X509 {
  if (!x509Module) {
    require('reflect-metadata'); // @peculiar/x509's dependency injection needs it loaded first.
    const m = require('@peculiar/x509') as typeof X509;
    m.cryptoProvider.set(webcrypto as unknown as Crypto);
    x509Module = m;
  }
  return x509Module;
}

const subtle = webcrypto.subtle;
const SAN_OID = '2.5.29.17';
const ECDSA_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface KeyPair {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** SEC1 `EC PRIVATE KEY` PEM, as Go's keyutil writes an ECDSA key. */
  keyPem: string;
}

export interface CertificateSubject {
  commonName: string;
  organization?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
}

/** A new ECDSA P-256 key (upstream keyutil.MakeEllipticPrivateKeyPEM). */
export async function generateKeyPair(): Promise<KeyPair> {
  const keys = (await subtle.generateKey(ECDSA_P256, true, ['sign', 'verify'])) as CryptoKeyPair;
  const pkcs8 = Buffer.from(await subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })
    .export({ type: 'sec1', format: 'pem' })
    .toString();
  return { privateKey: keys.privateKey, publicKey: keys.publicKey, keyPem };
}

/** An ECDSA P-256 key read back from PEM (SEC1 or PKCS#8). Throws on any other key. */
export async function keyPairFromPem(keyPem: string): Promise<KeyPair> {
  const key = createPrivateKey(keyPem);
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    throw new Error('only ECDSA P-256 private keys are supported');
  const pkcs8 = key.export({ type: 'pkcs8', format: 'der' });
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  return {
    privateKey: await subtle.importKey('pkcs8', pkcs8, ECDSA_P256, true, ['sign']),
    publicKey: await subtle.importKey('spki', spki, ECDSA_P256, true, ['verify']),
    keyPem: key.export({ type: 'sec1', format: 'pem' }).toString(),
  };
}

function subjectName(s: CertificateSubject): X509.JsonName {
  // Go's pkix.Name.ToRDNSequence puts O before CN.
  const name: X509.JsonName = [];
  for (const o of s.organization ?? []) name.push({ O: [o] });
  name.push({ CN: [s.commonName] });
  return name;
}

function sanExtension(s: CertificateSubject): X509.SubjectAlternativeNameExtension | undefined {
  const names: X509.JsonGeneralName[] = [
    ...(s.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(s.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  return names.length > 0 ? new (loadX509().SubjectAlternativeNameExtension)(names) : undefined;
}

/** A PEM `CERTIFICATE REQUEST` for subject, signed by keys (upstream certutil.MakeCSR). */
export async function makeCsrPem(subject: CertificateSubject, keys: KeyPair): Promise<string> {
  const x509 = loadX509();
  const san = sanExtension(subject);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: subjectName(subject),
    keys: { privateKey: keys.privateKey, publicKey: keys.publicKey },
    signingAlgorithm: ECDSA_P256,
    extensions: san ? [san] : [],
  });
  return csr.toString('pem') + '\n';
}

/** Parses a PEM CSR: its subject, SANs and public key (SPKI DER), for tests and the compatibility check. */
export function parseCsrPem(pem: string): {
  commonName: string;
  organization: string[];
  dnsNames: string[];
  ipAddresses: string[];
  publicKeySpki: Buffer;
  verify(): Promise<boolean>;
} {
  const x509 = loadX509();
  const csr = new x509.Pkcs10CertificateRequest(pem);
  const json = csr.subjectName.toJSON();
  const values = (type: string) => json.flatMap((rdn) => rdn[type] ?? []);
  const sanRaw = csr.extensions.find((e) => e.type === SAN_OID);
  const general = sanRaw ? new x509.SubjectAlternativeNameExtension(sanRaw.rawData).names.toJSON() : [];
  return {
    commonName: values('CN')[0] ?? '',
    organization: values('O'),
    dnsNames: general.filter((n) => n.type === 'dns').map((n) => n.value),
    ipAddresses: general.filter((n) => n.type === 'ip').map((n) => n.value),
    publicKeySpki: Buffer.from(csr.publicKey.rawData),
    verify: () => csr.verify(),
  };
}

/**
 * Upstream's certutil.GenerateSelfSignedCertKey: a throwaway CA `<host>-ca@<unix seconds>` signs a
 * serving certificate `<host>@<unix seconds>` for the host (an IP SAN when it is an IP) that lasts
 * a year; the certificate PEM holds the certificate then the CA.
 */
export async function selfSignedServingCertificate(
  host: string,
  now = new Date(),
): Promise<{ certPem: string; keyPem: string }> {
  const x509 = loadX509();
  const seconds = Math.floor(now.getTime() / 1000);
  const notAfter = new Date(now.getTime() + 365 * 24 * 3600 * 1000);
  const ca = await generateKeyPair();
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: [{ CN: [`${host}-ca@${seconds}`] }],
    notBefore: now,
    notAfter,
    keys: { privateKey: ca.privateKey, publicKey: ca.publicKey },
    signingAlgorithm: ECDSA_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign |
          x509.KeyUsageFlags.digitalSignature |
          x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
    ],
  });
  const leaf = await generateKeyPair();
  const san = isIP(host) ? { ipAddresses: [host] } : { dnsNames: [host] };
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: [{ CN: [`${host}@${seconds}`] }],
    issuer: caCert.subject,
    notBefore: now,
    notAfter,
    publicKey: leaf.publicKey,
    signingKey: ca.privateKey,
    signingAlgorithm: ECDSA_P256,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      sanExtension({ commonName: host, ...san })!,
    ],
  });
  return { certPem: cert.toString('pem') + '\n' + caCert.toString('pem') + '\n', keyPem: leaf.keyPem };
}

function serial(): string {
  // A positive 63-bit serial (the top bit cleared so DER does not read it as negative).
  const b = randomBytes(8);
  b[0] = b[0]! & 0x7f;
  return b.toString('hex');
}

/** The PEM blocks of type in text, in order. */
export function pemBlocks(text: string, type: string): string[] {
  const re = new RegExp(`-----BEGIN ${type}-----[\\s\\S]*?-----END ${type}-----`, 'g');
  return text.match(re) ?? [];
}

/** The certificates of a PEM bundle; throws when there are none or one does not parse. */
export function parseCertificates(pem: string): X509Certificate[] {
  const blocks = pemBlocks(pem, 'CERTIFICATE');
  if (blocks.length === 0) throw new Error('no certificate found');
  return blocks.map((b) => new X509Certificate(b));
}
