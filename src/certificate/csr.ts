/**
 * certificates.k8s.io/v1 CertificateSigningRequests from the kubelet's side, as client-go's
 * util/certificate/csr does: send one (by a digested name, or with generateName `csr-`), then watch
 * it until it is issued, denied or failed, within a deadline.
 */
import { errorMessage, KubeletError } from '../lib/errors.js';
import type { Clock } from '../lib/clock.js';
import { logger } from '../lib/log.js';
import { KubeApiError, mustSucceed } from '../k8s/api-status.js';
import type * as certificates from 'kubernetes-types/certificates/v1.js';
import type { RestClient } from '../k8s/rest-client.js';
import { parseCsrPem } from './x509.js';

const log = logger('certificate');

export const CSR_API_VERSION = 'certificates.k8s.io/v1';
const CSR_REF = { apiVersion: CSR_API_VERSION, resource: 'certificatesigningrequests' } as const;

/** Upstream's signer names for the kubelet's two certificates. */
export const KUBE_APISERVER_CLIENT_KUBELET_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';

export type KeyUsage = 'digital signature' | 'key encipherment' | 'client auth' | 'server auth';

export type CsrCondition = certificates.CertificateSigningRequestCondition;

/** The API's CSR, with the spec the kubelet sends required and its usages a closed set. */
export type CertificateSigningRequest = Omit<certificates.CertificateSigningRequest, 'spec' | 'status'> & {
  spec: Omit<certificates.CertificateSigningRequestSpec, 'usages'> & { usages?: KeyUsage[] };
  status?: certificates.CertificateSigningRequestStatus;
};

export interface CertificateRequest {
  /** A fixed name (bootstrap's digested `node-csr-...`); '' for generateName `csr-`. */
  name: string;
  csrPem: string;
  signerName: string;
  usages: KeyUsage[];
}

/** Sends the request; returns the name and UID of the CSR to wait on (an identical existing one is reused). */
export async function requestCertificate(
  client: RestClient,
  req: CertificateRequest,
  signal?: AbortSignal,
): Promise<{ name: string; uid: string }> {
  const csr: CertificateSigningRequest = {
    apiVersion: CSR_API_VERSION,
    kind: 'CertificateSigningRequest',
    metadata: req.name ? { name: req.name } : { generateName: 'csr-' },
    spec: {
      request: Buffer.from(req.csrPem).toString('base64'),
      signerName: req.signerName,
      usages: req.usages,
    },
  };
  const created = await client.create<CertificateSigningRequest>(CSR_REF, csr, { signal });
  if (created.ok) return identity(created.object);
  // With the HTTP code kept: the certificate manager judges the server's health by it.
  if (created.reason !== 'AlreadyExists' || !req.name)
    throw new KubeApiError(`cannot create the CSR: ${created.status.message ?? created.reason}`, {
      httpStatus: created.status.code ?? 0,
      reason: created.reason,
      status: created.status,
    });
  // Bootstrap retried after a restart: the same key and subject give the same name.
  const existing = mustSucceed(
    await client.get<CertificateSigningRequest>({ ...CSR_REF, name: req.name }, { signal }),
    `GET certificatesigningrequest ${req.name}`,
  );
  ensureCompatible(existing, req);
  log.info('csr for this node already exists, reusing', { name: req.name });
  return identity(existing);
}

function identity(csr: CertificateSigningRequest): { name: string; uid: string } {
  return { name: csr.metadata?.name ?? '', uid: csr.metadata?.uid ?? '' };
}

function ensureCompatible(existing: CertificateSigningRequest, req: CertificateRequest): void {
  const mine = parseCsrPem(req.csrPem);
  let theirs: ReturnType<typeof parseCsrPem>;
  try {
    theirs = parseCsrPem(Buffer.from(existing.spec.request, 'base64').toString('utf8'));
  } catch (err) {
    throw new KubeletError(
      'CERTIFICATE_REQUEST_FAILED',
      `unable to parse existing request: ${errorMessage(err)}`,
    );
  }
  const same =
    existing.spec.signerName === req.signerName &&
    mine.commonName === theirs.commonName &&
    mine.organization.join(',') === theirs.organization.join(',') &&
    mine.publicKeySpki.equals(theirs.publicKeySpki);
  if (!same)
    throw new KubeletError(
      'CERTIFICATE_REQUEST_FAILED',
      `retrieved csr is not compatible: ${existing.metadata?.name ?? ''} has another subject, key or signer`,
    );
}

/**
 * A CSR the cluster refused: an approver denied it (condition Denied) or its signer could not issue
 * it (Failed). Asking again at once would be refused again, so the caller backs off longer.
 */
export class CertificateRequestRefused extends KubeletError {
  constructor(
    readonly csrName: string,
    readonly condition: 'Denied' | 'Failed',
    readonly conditionReason: string,
    readonly conditionMessage: string,
  ) {
    super(
      'CERTIFICATE_REQUEST_FAILED',
      condition === 'Denied'
        ? `certificate signing request is denied, reason: ${conditionReason}, message: ${conditionMessage}`
        : `certificate signing request failed, reason: ${conditionReason}, message: ${conditionMessage}`,
    );
  }
}

/** What one look at a CSR says: the certificate, a refusal, or keep waiting. */
export function csrOutcome(
  csr: CertificateSigningRequest,
): { certificatePem: string } | { refused: CertificateRequestRefused } | undefined {
  for (const c of csr.status?.conditions ?? []) {
    if (c.type === 'Denied' || c.type === 'Failed')
      return {
        refused: new CertificateRequestRefused(
          csr.metadata?.name ?? '',
          c.type,
          c.reason ?? '',
          c.message ?? '',
        ),
      };
  }
  const approved = (csr.status?.conditions ?? []).some((c) => c.type === 'Approved');
  const cert = csr.status?.certificate;
  if (approved && cert) return { certificatePem: Buffer.from(cert, 'base64').toString('utf8') };
  return undefined;
}

/**
 * Waits for the CSR to be issued (list, then watch from there; a broken watch is reopened after a
 * short pause) until timeoutMs passes or signal aborts. Returns the issued PEM; a denied or failed
 * CSR, a replaced one (another UID) or the deadline is an error.
 */
export async function waitForCertificate(
  client: RestClient,
  csr: { name: string; uid: string },
  opts: { timeoutMs: number; clock: Clock; signal?: AbortSignal },
): Promise<string> {
  const deadline = AbortSignal.any([
    AbortSignal.timeout(opts.timeoutMs),
    ...(opts.signal ? [opts.signal] : []),
  ]);
  const fieldSelector = `metadata.name=${csr.name}`;
  let approvedLogged = false;
  const look = (obj: CertificateSigningRequest): string | undefined => {
    if (csr.uid && obj.metadata?.uid && obj.metadata.uid !== csr.uid)
      throw new KubeletError('CERTIFICATE_REQUEST_FAILED', `csr ${csr.name} was replaced (another UID)`);
    const outcome = csrOutcome(obj);
    if (outcome && 'refused' in outcome) throw outcome.refused;
    if (outcome) {
      log.info('certificate signing request is issued', { name: csr.name });
      return outcome.certificatePem;
    }
    if (!approvedLogged && (obj.status?.conditions ?? []).some((c) => c.type === 'Approved')) {
      approvedLogged = true;
      log.info('certificate signing request is approved, waiting to be issued', { name: csr.name });
    }
    return undefined;
  };
  while (!deadline.aborted) {
    try {
      const list = mustSucceed(
        await client.list<CertificateSigningRequest>(CSR_REF, { fieldSelector, signal: deadline }),
        'LIST certificatesigningrequests',
      );
      for (const item of list.items) {
        const pem = look(item);
        if (pem) return pem;
      }
      const remainingSeconds = Math.max(1, Math.ceil(opts.timeoutMs / 1000));
      const watch = await client.watch<CertificateSigningRequest>(CSR_REF, {
        fieldSelector,
        resourceVersion: list.metadata.resourceVersion,
        timeoutSeconds: Math.min(remainingSeconds, 300),
        signal: deadline,
      });
      if (!watch.ok) continue; // 410: list again
      try {
        for await (const ev of watch.object) {
          if (ev.type === 'ERROR') break;
          if (ev.type === 'DELETED')
            throw new KubeletError('CERTIFICATE_REQUEST_FAILED', `csr ${csr.name} was deleted`);
          if (ev.type === 'ADDED' || ev.type === 'MODIFIED') {
            const pem = look(ev.object);
            if (pem) return pem;
          }
        }
      } finally {
        watch.object.close();
      }
    } catch (err) {
      if (err instanceof KubeletError && err.code === 'CERTIFICATE_REQUEST_FAILED') throw err;
      if (deadline.aborted) break;
      log.v(2, 'Watching the certificate signing request failed, retrying', {
        name: csr.name,
        err: errorMessage(err),
      });
    }
    if (!deadline.aborted) await opts.clock.sleep(1000, deadline).catch(() => undefined);
  }
  if (opts.signal?.aborted) throw opts.signal.reason;
  throw new KubeletError(
    'CERTIFICATE_REQUEST_FAILED',
    `timed out waiting for certificate signing request ${csr.name} to be issued`,
  );
}
