/**
 * Upstream's certificate.Manager (client-go/util/certificate): holds the kubelet's current pair,
 * renews it through a new key and CSR at a jittered 70–84 % of its lifetime (notBefore + 0.7 ×
 * lifetime × (1 + 0.2 × random), as wait.Jitter(0.7 × lifetime, 0.2)), stores what is issued and
 * hands it to onRotate without a restart. A failed or stuck renewal keeps the old pair in use and is
 * retried with back-off (2 s doubling to 128 s) until one succeeds.
 *
 * It also tracks, as upstream's updateServerError does, whether the API server answered the last
 * certificate request (serverHealthy): the client certificate's exit check
 * (client-certificate-exit-check.ts) exits only then.
 *
 * Two things upstream leaves to a restart are done in place here:
 * - A pair that has expired cannot ask for its own successor (the API server refuses it). With
 *   bootstrap credentials (--bootstrap-kubeconfig) the next request is sent with those, as upstream's
 *   clientsetFn falls back to them when Current() is nil; a renewal still pending when the pair
 *   expires is given up for that. Upstream relies on its exit five minutes later (the exit check)
 *   for its restart to bootstrap again; that exit still comes if this has not worked by then.
 * - A CSR the cluster refused (Denied or Failed) gets a Warning event on the Node and a longer
 *   back-off (5 min doubling to 1 h) rather than the 2 s schedule: an approver that said no once will
 *   say it again. Upstream records no event and retries every 32 s at most.
 */
import { X509Certificate } from 'node:crypto';
import type { Clock } from '../lib/clock.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { KubeApiError } from '../k8s/api-status.js';
import type { RestClient } from '../k8s/rest-client.js';
import type { CertificateStore, StoredPair } from './certificate-store.js';
import { CertificateRequestRefused, requestCertificate, waitForCertificate, type KeyUsage } from './csr.js';
import { generateKeyPair, makeCsrPem, type CertificateSubject } from './x509.js';

const log = logger('certificate');

/** Upstream's certificateWaitTimeout: how long one CSR may stay unissued before it is given up. */
export const CERTIFICATE_WAIT_TIMEOUT_MS = 15 * 60_000;
const INITIAL_BACKOFF_MS = 2_000;
const MAX_BACKOFF_MS = 128_000;
/** After a refused CSR (tskubelet's own schedule; see the file comment). */
export const REFUSED_BACKOFF = { initialMs: 5 * 60_000, maxMs: 60 * 60_000 };
/** Node's setTimeout ceiling (2^31-1 ms); longer waits are taken in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Event reasons for a refused CSR (upstream records none; these are tskubelet's). */
export const CSR_DENIED_EVENT_REASON = 'CertificateSigningRequestDenied';
export const CSR_FAILED_EVENT_REASON = 'CertificateSigningRequestFailed';

export interface CertificateManagerOptions {
  /** For logs and events: `client` or `server`. */
  name: string;
  store: CertificateStore;
  /** The subject asked for; read at each renewal (a serving certificate follows the node's addresses). */
  subject: () => CertificateSubject;
  signerName: string;
  usages: KeyUsage[];
  /** The client that sends CSRs (the kubelet's own, with its current credential). */
  csrClient: RestClient;
  /** A pair to start from when the store has none (a kubeconfig's embedded certificate). */
  initial?: { certPem: string; keyPem: string };
  clock: Clock;
  random?: () => number;
  onRotate?: (pair: StoredPair) => void;
  waitTimeoutMs?: number;
  /**
   * Once the pair in use has expired: a client with the bootstrap credentials, which sends the next
   * CSR instead of csrClient. Made for each attempt (so a replaced bootstrap kubeconfig is read) and
   * closed after it.
   */
  bootstrapClient?: () => Promise<RestClient>;
  /** After a pair was issued through bootstrapClient, before onRotate. */
  onBootstrapped?: (pair: StoredPair) => Promise<void>;
  /** False: the pair is replaced only once it has expired, and then only through bootstrapClient. */
  rotate?: boolean;
  /** A Warning on the Node when a CSR is refused. */
  recordEvent?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** The back-off after a refused CSR; REFUSED_BACKOFF by default (tests shorten it). */
  refusedBackoff?: { initialMs: number; maxMs: number };
}

/**
 * Upstream's updateServerError: after a failed certificate request, is the API server up? 401 (an
 * SSL-terminating proxy may answer so), 403 and 404 are answers from a working server; a 5xx, any
 * other code, or no answer at all is not.
 */
export function serverHealthyAfter(err: unknown): boolean {
  if (!(err instanceof KubeApiError)) return false;
  const code = err.status?.code ?? err.httpStatus;
  const bareCode = err.reason === '' || err.reason === 'Unknown';
  const is = (reason: string, httpStatus: number) =>
    err.reason === reason || (bareCode && code === httpStatus);
  return is('Unauthorized', 401) || is('Forbidden', 403) || is('NotFound', 404);
}

export class CertificateManager {
  private pair: StoredPair | undefined;
  /** Upstream's serverHealth: false until a certificate is issued or a request is refused by a live server. */
  private serverHealth = false;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly random: () => number;
  private expiryLogged = false;
  /** Rotations that succeeded, for /metrics-like status and tests. */
  rotations = 0;
  /** Of which through the bootstrap credentials, after the pair had expired. */
  bootstraps = 0;
  lastError: string | undefined;

  constructor(private readonly opts: CertificateManagerOptions) {
    this.random = opts.random ?? Math.random;
  }

  /** The pair in use; undefined until the first one is issued. */
  current(): StoredPair | undefined {
    return this.pair;
  }

  /** The pair in use while it has not expired (upstream's Current()). */
  currentUnexpired(): StoredPair | undefined {
    const notAfter = this.expiresAtMs();
    return notAfter !== undefined && this.opts.clock.now() > notAfter ? undefined : this.pair;
  }

  /** Whether the API server answered the last certificate request (upstream's ServerHealthy). */
  serverHealthy(): boolean {
    return this.serverHealth;
  }

  /** Aborted once stop() is called: what runs beside the manager (the exit check) stops with it. */
  get stopSignal(): AbortSignal {
    return this.stopping.signal;
  }

  /** Loads the stored pair (or the initial one) and starts the renewal loop. */
  async start(): Promise<void> {
    this.pair = await this.opts.store.current();
    if (!this.pair && this.opts.initial) {
      const { certPem, keyPem } = this.opts.initial;
      const leaf = new X509Certificate(certPem);
      this.pair = { certPem, keyPem, leaf, certFile: '' };
    }
    if (this.pair && this.rotates())
      log.info('Certificate rotation is enabled', {
        name: this.opts.name,
        expiration: this.pair.leaf.validTo,
      });
    else if (this.pair)
      log.info(
        'Certificate rotation is off: the certificate is requested again with the bootstrap credentials once it expires',
        {
          name: this.opts.name,
          expiration: this.pair.leaf.validTo,
        },
      );
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopping.abort(new Error('certificate manager stopped'));
    await this.loop;
  }

  /** notBefore + 0.7 × lifetime × (1 + 0.2 × random): upstream's nextRotationDeadline. */
  nextRotationDeadline(pair: StoredPair): number {
    const notBefore = Date.parse(pair.leaf.validFrom);
    const notAfter = Date.parse(pair.leaf.validTo);
    const total = notAfter - notBefore;
    return notBefore + total * 0.7 * (1 + 0.2 * this.random());
  }

  private rotates(): boolean {
    return this.opts.rotate ?? true;
  }

  private expiresAtMs(): number | undefined {
    return this.pair ? Date.parse(this.pair.leaf.validTo) : undefined;
  }

  private hasExpired(): boolean {
    const notAfter = this.expiresAtMs();
    return notAfter !== undefined && this.opts.clock.now() >= notAfter;
  }

  private async run(): Promise<void> {
    const { clock } = this.opts;
    const signal = this.stopping.signal;
    const refused = this.opts.refusedBackoff ?? REFUSED_BACKOFF;
    let backoffMs = INITIAL_BACKOFF_MS;
    let refusedBackoffMs = refused.initialMs;
    while (!signal.aborted) {
      let deadline = clock.now();
      if (this.pair) {
        deadline = this.rotates() ? this.nextRotationDeadline(this.pair) : (this.expiresAtMs() ?? deadline);
        log.info('Waiting for the next certificate rotation', {
          name: this.opts.name,
          deadline: new Date(deadline).toISOString(),
        });
      }
      try {
        await this.sleepUntil(deadline, signal);
        await this.rotate(signal);
        backoffMs = INITIAL_BACKOFF_MS;
        refusedBackoffMs = refused.initialMs;
      } catch (err) {
        if (signal.aborted) return;
        this.lastError = errorMessage(err);
        log.error('Failed while requesting a signed certificate from the control plane', {
          name: this.opts.name,
          err: this.lastError,
          expiration: this.pair?.leaf.validTo,
        });
        let waitMs: number;
        if (err instanceof CertificateRequestRefused) {
          waitMs = refusedBackoffMs;
          refusedBackoffMs = Math.min(refusedBackoffMs * 2, refused.maxMs);
          this.recordRefusal(err, waitMs);
        } else {
          waitMs = backoffMs * (1 + 0.1 * this.random());
          backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
        }
        // A pair that expires meanwhile is replaced through the bootstrap credentials at once.
        let until = clock.now() + waitMs;
        const notAfter = this.expiresAtMs();
        if (this.opts.bootstrapClient && notAfter !== undefined && !this.hasExpired())
          until = Math.min(until, notAfter);
        await this.sleepUntil(until, signal).catch(() => undefined);
      }
    }
  }

  private async sleepUntil(deadline: number, signal: AbortSignal): Promise<void> {
    const { clock } = this.opts;
    while (clock.now() < deadline) await clock.sleep(Math.min(deadline - clock.now(), MAX_TIMER_MS), signal);
  }

  private recordRefusal(err: CertificateRequestRefused, nextInMs: number): void {
    const verb = err.condition === 'Denied' ? 'was denied' : 'failed';
    this.opts.recordEvent?.(
      'Warning',
      err.condition === 'Denied' ? CSR_DENIED_EVENT_REASON : CSR_FAILED_EVENT_REASON,
      `The ${this.opts.name} certificate signing request ${err.csrName} ${verb} ` +
        `(reason: ${err.conditionReason || 'none'}, message: ${err.conditionMessage || 'none'}); ` +
        `a new one will be sent in ${Math.round(nextInMs / 1000)}s`,
    );
  }

  /** The client to send this attempt's CSR with; a bootstrap one once the pair has expired. */
  private async clientForAttempt(): Promise<{ client: RestClient; bootstrap: boolean }> {
    if (!this.hasExpired()) return { client: this.opts.csrClient, bootstrap: false };
    if (!this.opts.bootstrapClient) {
      if (!this.expiryLogged)
        log.error(
          'The certificate has expired and there are no bootstrap credentials (--bootstrap-kubeconfig) to request another with: the API server will refuse the node until it is given new credentials',
          { name: this.opts.name, expiration: this.pair?.leaf.validTo },
        );
      this.expiryLogged = true;
      return { client: this.opts.csrClient, bootstrap: false };
    }
    log.info('The certificate has expired: requesting a new one with the bootstrap credentials', {
      name: this.opts.name,
      expiration: this.pair?.leaf.validTo,
    });
    return { client: await this.opts.bootstrapClient(), bootstrap: true };
  }

  /** One renewal; returns early, without error, when the pair expires while it waits. */
  private async rotate(stopping: AbortSignal): Promise<void> {
    log.info('Rotating certificates', { name: this.opts.name });
    const { client, bootstrap } = await this.clientForAttempt();
    // A renewal sent with the current pair is given up when that pair expires, so that the next
    // attempt goes out with the bootstrap credentials.
    const done = new AbortController();
    const expired = new AbortController();
    const notAfter = this.expiresAtMs();
    if (!bootstrap && this.opts.bootstrapClient && notAfter !== undefined)
      void this.sleepUntil(notAfter, AbortSignal.any([done.signal, stopping])).then(
        () =>
          expired.abort(
            new KubeletError(
              'CERTIFICATE_REQUEST_FAILED',
              'the certificate expired while its renewal was pending',
            ),
          ),
        () => undefined,
      );
    const signal = AbortSignal.any([stopping, expired.signal]);
    try {
      await this.requestAndSwap(client, bootstrap, signal);
    } catch (err) {
      if (!expired.signal.aborted || stopping.aborted) throw err;
      // Not a failure: the next attempt, at once, goes out with the bootstrap credentials.
      log.info('The certificate expired while its renewal was pending', {
        name: this.opts.name,
        expiration: this.pair?.leaf.validTo,
      });
    } finally {
      done.abort();
      if (bootstrap) client.close();
    }
  }

  /** New key, CSR, wait, store, swap. */
  private async requestAndSwap(client: RestClient, bootstrap: boolean, signal: AbortSignal): Promise<void> {
    const keys = await generateKeyPair();
    const csrPem = await makeCsrPem(this.opts.subject(), keys);
    let csr: { name: string; uid: string };
    try {
      csr = await requestCertificate(
        client,
        { name: '', csrPem, signerName: this.opts.signerName, usages: this.opts.usages },
        signal,
      );
    } catch (err) {
      if (!signal.aborted) this.serverHealth = serverHealthyAfter(err);
      throw err;
    }
    const certPem = await waitForCertificate(client, csr, {
      timeoutMs: this.opts.waitTimeoutMs ?? CERTIFICATE_WAIT_TIMEOUT_MS,
      clock: this.opts.clock,
      signal,
    });
    const pair = await this.opts.store.update(certPem, keys.keyPem);
    this.pair = pair;
    this.serverHealth = true;
    this.rotations++;
    this.lastError = undefined;
    this.expiryLogged = false;
    if (bootstrap) {
      this.bootstraps++;
      await this.opts.onBootstrapped?.(pair);
    }
    log.info(bootstrap ? 'Certificate issued to the bootstrap credentials' : 'Certificate rotated', {
      name: this.opts.name,
      expiration: pair.leaf.validTo,
      file: pair.certFile,
    });
    this.opts.onRotate?.(pair);
  }
}
