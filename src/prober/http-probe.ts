/**
 * The httpGet probe (upstream: pkg/probe/http DoHTTPProbe): one GET through lib/http-get-client (TLS
 * verification off, same-host redirects only), 2xx a success, 3xx a success with a warning, anything
 * else a failure.
 * The whole exchange, redirects and body included, has one deadline (Go's Client.Timeout).
 */
import type { Clock } from '../lib/clock.js';
import { httpGet, HttpGetError, readAtMost, type HttpGetRequest } from '../lib/http-get-client.js';
import { MAX_READ_LENGTH_BYTES, type ProbeOutcome } from './probe-outcome.js';

export interface HttpProbeOptions {
  clock: Clock;
  timeoutMs: number;
  /** Aborts the probe (its worker stopped); the outcome is then an error. */
  signal?: AbortSignal;
}

/** upstream DoHTTPProbe with the prober's http.Client: see the file comment. */
export async function doHttpProbe(req: HttpGetRequest, opts: HttpProbeOptions): Promise<ProbeOutcome> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = opts.clock.setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('probe timed out'));
  }, opts.timeoutMs);
  const onAbort = () => controller.abort(opts.signal?.reason);
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await runChain(req, controller.signal, () => timedOut);
  } finally {
    opts.clock.clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
}

async function runChain(
  req: HttpGetRequest,
  signal: AbortSignal,
  timedOut: () => boolean,
): Promise<ProbeOutcome> {
  let res;
  try {
    res = (await httpGet(req, signal)).res;
  } catch (err) {
    if (timedOut()) {
      const url = err instanceof HttpGetError ? err.url : '';
      return failure(
        `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
      );
    }
    if (signal.aborted) return aborted(signal);
    return failure((err as Error).message);
  }
  let body: string;
  try {
    body = await readAtMost(res, MAX_READ_LENGTH_BYTES);
  } catch (err) {
    if (timedOut()) {
      return {
        result: 'failure',
        output: '',
        error: new Error(
          'context deadline exceeded (Client.Timeout or context cancellation while reading body)',
        ),
      };
    }
    if (signal.aborted) return aborted(signal);
    return { result: 'failure', output: '', error: err as Error };
  }
  const code = res.statusCode ?? 0;
  if (code >= 200 && code < 400) {
    if (code >= 300)
      return { result: 'warning', output: `Probe terminated redirects, Response body: ${body}` };
    return { result: 'success', output: body };
  }
  // Upstream keeps the body out of this message on purpose (kubernetes#99425).
  return failure(`HTTP probe failed with statuscode: ${code}`);
}

function failure(output: string): ProbeOutcome {
  return { result: 'failure', output };
}

function aborted(signal: AbortSignal): ProbeOutcome {
  const reason: unknown = signal.reason;
  return {
    result: 'unknown',
    output: '',
    error: reason instanceof Error ? reason : new Error('probe aborted'),
  };
}
