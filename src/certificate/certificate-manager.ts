/**
 * Upstream's certificate.Manager (client-go/util/certificate): holds the kubelet's current pair,
 * renews it through a new key and CSR at a jittered 70–84 % of its lifetime (notBefore + 0.7 ×
 * lifetime × (1 + 0.2 × random), as wait.Jitter(0.7 × lifetime, 0.2)), stores what is issued and
 * hands it to onRotate without a restart. A failed or stuck renewal keeps the old pair in use and is
 * retried with back-off (2 s doubling to 128 s) until one succeeds.
 */
import { X509Certificate } from 'node:crypto';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { RestClient } from '../k8s/rest-client.js';
import type { CertificateStore, StoredPair } from './certificate-store.js';
import { requestCertificate, waitForCertificate, type KeyUsage } from './csr.js';
import { generateKeyPair, makeCsrPem, type CertificateSubject } from './x509.js';

const log = logger('certificate');

/** Upstream's certificateWaitTimeout: how long one CSR may stay unissued before it is given up. */
export const CERTIFICATE_WAIT_TIMEOUT_MS = 15 * 60_000;
const INITIAL_BACKOFF_MS = 2_000;
const MAX_BACKOFF_MS = 128_000;
/** Node's setTimeout ceiling (2^31-1 ms); longer waits are taken in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface CertificateManagerOptions {
  /** For logs: `client` or `server`. */
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
}

export class CertificateManager {
  private pair: StoredPair | undefined;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly random: () => number;
  /** Rotations that succeeded, for /metrics-like status and tests. */
  rotations = 0;
  lastError: string | undefined;

  constructor(private readonly opts: CertificateManagerOptions) {
    this.random = opts.random ?? Math.random;
  }

  /** The pair in use; undefined until the first one is issued. */
  current(): StoredPair | undefined {
    return this.pair;
  }

  /** Loads the stored pair (or the initial one) and starts the renewal loop. */
  async start(): Promise<void> {
    this.pair = await this.opts.store.current();
    if (!this.pair && this.opts.initial) {
      const { certPem, keyPem } = this.opts.initial;
      const leaf = new X509Certificate(certPem);
      this.pair = { certPem, keyPem, leaf, certFile: '' };
    }
    if (this.pair)
      log.info('Certificate rotation is enabled', {
        name: this.opts.name,
        expiration: this.pair.leaf.validTo,
      });
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

  private async run(): Promise<void> {
    const { clock } = this.opts;
    const signal = this.stopping.signal;
    let backoffMs = INITIAL_BACKOFF_MS;
    while (!signal.aborted) {
      const deadline = this.pair ? this.nextRotationDeadline(this.pair) : clock.now();
      if (this.pair)
        log.info('Waiting for the next certificate rotation', {
          name: this.opts.name,
          deadline: new Date(deadline).toISOString(),
        });
      try {
        while (clock.now() < deadline)
          await clock.sleep(Math.min(deadline - clock.now(), MAX_TIMER_MS), signal);
        await this.rotate(signal);
        backoffMs = INITIAL_BACKOFF_MS;
      } catch (err) {
        if (signal.aborted) return;
        this.lastError = errorMessage(err);
        log.error('Failed while requesting a signed certificate from the control plane', {
          name: this.opts.name,
          err: this.lastError,
          expiration: this.pair?.leaf.validTo,
        });
        await clock.sleep(backoffMs * (1 + 0.1 * this.random()), signal).catch(() => undefined);
        backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
      }
    }
  }

  /** One renewal: new key, CSR, wait, store, swap. */
  private async rotate(signal: AbortSignal): Promise<void> {
    log.info('Rotating certificates', { name: this.opts.name });
    const keys = await generateKeyPair();
    const csrPem = await makeCsrPem(this.opts.subject(), keys);
    const csr = await requestCertificate(
      this.opts.csrClient,
      { name: '', csrPem, signerName: this.opts.signerName, usages: this.opts.usages },
      signal,
    );
    const certPem = await waitForCertificate(this.opts.csrClient, csr, {
      timeoutMs: this.opts.waitTimeoutMs ?? CERTIFICATE_WAIT_TIMEOUT_MS,
      clock: this.opts.clock,
      signal,
    });
    const pair = await this.opts.store.update(certPem, keys.keyPem);
    this.pair = pair;
    this.rotations++;
    this.lastError = undefined;
    log.info('Certificate rotated', {
      name: this.opts.name,
      expiration: pair.leaf.validTo,
      file: pair.certFile,
    });
    this.opts.onRotate?.(pair);
  }
}
