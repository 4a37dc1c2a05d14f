/**
 * Upstream's exitAfter check (pkg/kubelet/certificate/transport.go, addCertRotation): with client
 * certificate rotation on, every 10 s (every second until a first valid certificate is seen) the
 * kubelet looks at its client certificate. Without a valid one for longer than five minutes, or
 * with one past its NotAfter, it exits if the API server answered its last certificate request
 * (so that a supervisor restarts it and the bootstrap credentials lay down a new certificate), and
 * only logs when the server is not responding (a restart would not help then).
 *
 * As upstream, the certificate manager's current pair counts as missing once it has expired
 * (Manager.Current), so an expiring certificate leads to the five-minute branch; the "has expired"
 * branch is for a pair that expires between that look and this check's own clock reading.
 */
import type { Clock, TimerHandle } from '../lib/clock.js';
import { formatGoDuration } from '../lib/go-duration.js';
import { logger } from '../lib/log.js';
import type { StoredPair } from './certificate-store.js';

const log = logger('certificate');

/** Upstream's exitAfter for the kubelet's client certificate (cmd/kubelet/app/server.go). */
export const CLIENT_CERTIFICATE_EXIT_AFTER_MS = 5 * 60_000;
/** UpdateTransport's period. */
export const CLIENT_CERTIFICATE_CHECK_PERIOD_MS = 10_000;
/** The faster poll while no valid certificate has been seen yet. */
const FIRST_CERTIFICATE_POLL_MS = 1_000;

export const NO_VALID_CERTIFICATE_EXIT_MESSAGE =
  'No valid client certificate is found and the server is responsive, exiting.';
export const NO_VALID_CERTIFICATE_UNRESPONSIVE_MESSAGE =
  'No valid client certificate is found but the server is not responsive. A restart may be necessary to retrieve new initial credentials.';
export const EXPIRED_CERTIFICATE_EXIT_MESSAGE =
  'The currently active client certificate has expired and the server is responsive, exiting.';
export const EXPIRED_CERTIFICATE_UNRESPONSIVE_MESSAGE =
  'The currently active client certificate has expired, but the server is not responsive. A restart may be necessary to retrieve new initial credentials.';

/** What the check reads from the client certificate manager. */
export interface ClientCertificateSource {
  /** The pair in use while it has not expired (upstream's Manager.Current). */
  currentUnexpired(): StoredPair | undefined;
  /** Whether the last certificate request was answered (upstream's Manager.ServerHealthy). */
  serverHealthy(): boolean;
}

export interface ClientCertificateExitCheckOptions {
  source: ClientCertificateSource;
  clock: Clock;
  /** Ends the kubelet with this error (main's fatal path: components stopped, exit code 1). */
  exit: (err: Error) => void;
  exitAfterMs?: number;
  periodMs?: number;
}

export class ClientCertificateExitCheck {
  private lastCertificateAvailableMs: number;
  /** Once a valid certificate has been seen the check slows from every second to every period. */
  private hasCertificate: boolean;
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly exitAfterMs: number;

  constructor(private readonly opts: ClientCertificateExitCheckOptions) {
    this.exitAfterMs = opts.exitAfterMs ?? CLIENT_CERTIFICATE_EXIT_AFTER_MS;
    this.lastCertificateAvailableMs = opts.clock.now();
    this.hasCertificate = opts.source.currentUnexpired() !== undefined;
  }

  /** Checks on its schedule until stop() or until it has called exit. */
  start(): void {
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One look (upstream's checkNewCertificateAndRotate); true when it called exit. */
  check(): boolean {
    const { source, clock } = this.opts;
    const current = source.currentUnexpired();
    const now = clock.now();
    if (current === undefined) {
      if (now > this.lastCertificateAvailableMs + this.exitAfterMs) {
        const kv = {
          lastCertificateAvailabilityTime: new Date(this.lastCertificateAvailableMs).toISOString(),
          shutdownThreshold: formatGoDuration(this.exitAfterMs),
        };
        if (source.serverHealthy()) return this.exit(NO_VALID_CERTIFICATE_EXIT_MESSAGE, kv);
        log.error(NO_VALID_CERTIFICATE_UNRESPONSIVE_MESSAGE, kv);
      }
      return false;
    }
    this.hasCertificate = true;
    if (now > Date.parse(current.leaf.validTo)) {
      if (source.serverHealthy()) return this.exit(EXPIRED_CERTIFICATE_EXIT_MESSAGE, {});
      log.error(EXPIRED_CERTIFICATE_UNRESPONSIVE_MESSAGE);
    }
    this.lastCertificateAvailableMs = now;
    return false;
  }

  private exit(message: string, kv: Record<string, unknown>): true {
    log.error(message, kv);
    this.stop();
    this.opts.exit(new Error(message));
    return true;
  }

  private schedule(): void {
    if (this.stopped) return;
    const periodMs = this.hasCertificate
      ? (this.opts.periodMs ?? CLIENT_CERTIFICATE_CHECK_PERIOD_MS)
      : FIRST_CERTIFICATE_POLL_MS;
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = undefined;
      if (!this.check()) this.schedule();
    }, periodMs);
  }
}
