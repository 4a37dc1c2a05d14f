/**
 * The manifest URL (--manifest-url, staticPodURL) as a pod source (upstream pkg/kubelet/config/
 * http.go). Polled every httpCheckFrequency, each request bounded by a deadline (10 s, as
 * upstream's client). The body is a single Pod or a PodList, YAML or JSON.
 *
 * - 200 with a usable body: its pods are sent as a SET (only when the body changed).
 * - An empty 200 body: an empty SET (the source counts as seen, its pods stop), and a warning.
 * - Anything else (network error, timeout, non-200 status, a body that is not a valid Pod or
 *   PodList): a warning, and the last good set stays. A bad body is not parsed again until it changes.
 * Repeated failures are logged three times, then at --v=4 until the next success.
 */
import type { Pod } from '../api/core-v1.js';
import { realClock, type Clock, type TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger, type Logger } from '../lib/log.js';
import { withDeadline } from '../lib/deadline.js';
import type { SourceChannel } from './pod-config.js';
import { decodeManifest, podsOrThrow } from './manifest-decoder.js';
import { MAX_MANIFEST_BYTES } from './static-pod-defaults.js';
import { loopPeriodMs } from '../lib/loop-period.js';

export const DEFAULT_HTTP_REQUEST_TIMEOUT_MS = 10_000;

export interface HttpSourceOptions {
  url: string;
  /** Extra request headers; each name may carry several values, sent in order. */
  headers?: Record<string, string[]>;
  nodeName: string;
  /** httpCheckFrequency: time between the end of one poll and the start of the next. */
  periodMs: number;
  send: SourceChannel;
  clock?: Clock;
  log?: Logger;
  requestTimeoutMs?: number;
  /** Injected for tests; the global fetch by default. */
  fetch?: typeof fetch;
}

export class HttpSource {
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly fetchFn: typeof fetch;
  private readonly stopController = new AbortController();
  private timer: TimerHandle | undefined;
  private polling: Promise<void> | undefined;
  private lastBody: string | undefined;
  private failureLogs = 0;
  private started = false;

  constructor(private readonly options: HttpSourceOptions) {
    this.clock = options.clock ?? realClock;
    this.log = options.log ?? logger('config');
    this.fetchFn = options.fetch ?? fetch;
  }

  /** Polls at once, then every periodMs. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.log.v(1, 'Watching URL', { url: this.options.url });
    void this.poll();
  }

  stop(): void {
    this.stopController.abort(new Error('http source stopped'));
    if (this.timer) this.clock.clearTimeout(this.timer);
  }

  /** Polls now, unless a poll is in progress; resolves when it is done. */
  poll(): Promise<void> {
    if (this.stopController.signal.aborted) return Promise.resolve();
    this.polling ??= this.pollOnce().finally(() => {
      this.polling = undefined;
      if (this.timer) this.clock.clearTimeout(this.timer);
      if (!this.stopController.signal.aborted)
        this.timer = this.clock.setTimeout(
          () => void this.poll(),
          loopPeriodMs('http source', this.options.periodMs),
        );
    });
    return this.polling;
  }

  private async pollOnce(): Promise<void> {
    try {
      await this.extractFromURL();
      if (this.failureLogs > 0) {
        this.log.info('Successfully read pods from URL', { url: this.options.url });
        this.failureLogs = 0;
      }
    } catch (err) {
      if (this.stopController.signal.aborted) return;
      if (this.failureLogs < 3) {
        this.log.warn('Failed to read pods from URL', { url: this.options.url, err: errorMessage(err) });
      } else if (this.failureLogs === 3) {
        this.log.warn('Failed to read pods from URL. Dropping verbosity of this message to V(4)', {
          url: this.options.url,
          err: errorMessage(err),
        });
      } else {
        this.log.v(4, 'Failed to read pods from URL', { url: this.options.url, err: errorMessage(err) });
      }
      this.failureLogs++;
    }
  }

  private async extractFromURL(): Promise<void> {
    const { url } = this.options;
    const headers = new Headers();
    for (const [name, values] of Object.entries(this.options.headers ?? {}))
      for (const v of values) headers.append(name, v);
    const deadline = withDeadline(
      this.clock,
      this.options.requestTimeoutMs ?? DEFAULT_HTTP_REQUEST_TIMEOUT_MS,
      this.stopController.signal,
    );
    let body: string;
    try {
      const resp = await this.fetchFn(url, { headers, signal: deadline.signal, redirect: 'follow' });
      body = await readLimited(resp, MAX_MANIFEST_BYTES);
      if (resp.status !== 200) throw new Error(`${url}: ${resp.status} ${resp.statusText}`);
    } catch (err) {
      if (deadline.signal.aborted && !this.stopController.signal.aborted) {
        throw new Error(`${url}: ${errorMessage(deadline.signal.reason)}`, { cause: err });
      }
      throw err;
    } finally {
      deadline.dispose();
    }
    if (this.stopController.signal.aborted) return;

    if (body.length === 0) {
      this.lastBody = body;
      this.options.send({ op: 'SET', pods: [] });
      throw new Error(`zero-length data received from ${url}`);
    }
    // Unchanged since the last read: nothing to do, and a bad body is not reported again.
    if (body === this.lastBody) return;
    this.lastBody = body;

    let pods: Pod[];
    try {
      // A large body is decoded off the main thread, so /healthz and the sync loop go on.
      const result = await decodeManifest({
        text: body,
        origin: { source: 'http', location: url, nodeName: this.options.nodeName },
        what: url,
        shape: 'podOrList',
      });
      if (this.stopController.signal.aborted) return;
      pods = podsOrThrow(result);
    } catch (err) {
      throw new Error(`${errorMessage(err)}; the last good pods from this URL keep running`, { cause: err });
    }
    this.options.send({ op: 'SET', pods });
  }
}

/** The body as text, refusing one larger than maxBytes without reading it all. */
async function readLimited(resp: Response, maxBytes: number): Promise<string> {
  const declared = Number(resp.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await resp.body?.cancel();
    throw new Error(
      `response of ${declared} bytes is larger than the ${maxBytes} bytes a manifest may have; refused`,
    );
  }
  if (!resp.body) return '';
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of resp.body as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    // Throwing out of the loop cancels the stream: the rest is never downloaded.
    if (total > maxBytes)
      throw new Error(
        `response is larger than the ${maxBytes} bytes a manifest may have; stopped reading, refused`,
      );
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
