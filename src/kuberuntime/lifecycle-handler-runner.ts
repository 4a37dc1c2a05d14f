/**
 * Runs a container's postStart and preStop hooks (upstream: lifecycle.handlerRunner): exec in the
 * container through the runtime, an HTTP GET against the pod (or the hook's host), or a sleep.
 */
import type { IncomingMessage } from 'node:http';
import type { Container, HTTPGetAction, LifecycleHandler, Pod } from '../api/core-v1.js';
import { newRequestForHTTPGetAction } from '../api/http-get-action.js';
import type { RuntimeService } from '../cri/types.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { joinHostPort } from '../lib/go-net-error.js';
import { httpGet, HttpGetError, readAtMost } from '../lib/http-get-client.js';
import type { EventRecorder } from './event-recorder.js';
import { formatPod } from './format.js';

/** Upstream reads (and drops) at most this much of a hook's response. */
const MAX_RESPONSE_BODY_BYTES = 10 * 1024;

export type HandlerResult = { ok: true } | { ok: false; message: string };

export interface HandlerRunner {
  run(
    containerId: string,
    pod: Pod,
    container: Container,
    handler: LifecycleHandler,
    podIP: string,
    signal?: AbortSignal,
  ): Promise<HandlerResult>;
}

export interface LifecycleHandlerRunnerOptions {
  runtimeService: RuntimeService;
  clock: Clock;
  /** Deadline of an HTTP hook's request (default 2 min, the runtime request timeout). */
  httpTimeoutMs?: number;
  /** The Kubernetes version this kubelet implements (`v1.30.0`): HTTP hooks say `kube-lifecycle/1.30`. */
  kubernetesVersion?: string;
  /** Where the LifecycleHTTPFallback warning goes. */
  recorder?: EventRecorder;
}

/** `v1.30.0` → `kube-lifecycle/1.30` (upstream's User-Agent for HTTP hooks). */
export function lifecycleUserAgent(kubernetesVersion: string | undefined): string {
  const m = /^v?(\d+)\.(\d+)/.exec(kubernetesVersion ?? '');
  return m ? `kube-lifecycle/${m[1]}.${m[2]}` : 'kube-lifecycle/1.0';
}

export class LifecycleHandlerRunner implements HandlerRunner {
  constructor(private readonly opts: LifecycleHandlerRunnerOptions) {}

  async run(
    containerId: string,
    pod: Pod,
    container: Container,
    handler: LifecycleHandler,
    podIP: string,
    signal?: AbortSignal,
  ): Promise<HandlerResult> {
    const where = `for Container "${container.name}" in Pod "${formatPod(pod)}"`;
    if (handler.exec) {
      const command = handler.exec.command ?? [];
      let output = '';
      try {
        // Timeout 0: the hook may run as long as it likes; the caller bounds it (the grace period, for preStop).
        const res = await this.opts.runtimeService.execSync(containerId, command, 0, { signal });
        output = Buffer.concat([res.stdout, res.stderr]).toString('utf8');
        if (res.exitCode !== 0)
          throw new Error(
            `command '${command.join(' ')}' exited with ${res.exitCode}: ${res.stderr.toString('utf8')}`,
          );
        return { ok: true };
      } catch (err) {
        return {
          ok: false,
          message: `Exec lifecycle hook ([${command.join(' ')}]) ${where} failed - error: ${errorMessage(err)}, message: ${JSON.stringify(output)}`,
        };
      }
    }
    if (handler.httpGet) {
      const get = handler.httpGet;
      try {
        await this.runHttpHandler(pod, container, get, podIP, signal);
        return { ok: true };
      } catch (err) {
        return {
          ok: false,
          message: `HTTP lifecycle hook (${get.path ?? ''}) ${where} failed - error: ${errorMessage(err)}`,
        };
      }
    }
    if (handler.sleep) {
      try {
        await this.opts.clock.sleep(handler.sleep.seconds * 1000, signal);
        return { ok: true };
      } catch (err) {
        return {
          ok: false,
          message: `Sleep lifecycle hook (${handler.sleep.seconds}) ${where} failed - error: ${errorMessage(err)}`,
        };
      }
    }
    return { ok: false, message: `Cannot run handler: invalid handler: ${JSON.stringify(handler)}` };
  }

  /**
   * upstream runHTTPHandler: the request of NewRequestForHTTPGetAction through the insecure client
   * (see lib/http-get-client); an HTTPS hook whose server answers in plain HTTP is retried once over
   * HTTP without its Authorization header, and the pod gets a LifecycleHTTPFallback warning.
   */
  private async runHttpHandler(
    pod: Pod,
    container: Container,
    get: HTTPGetAction,
    podIP: string,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const req = newRequestForHTTPGetAction(
      get,
      container,
      podIP,
      lifecycleUserAgent(this.opts.kubernetesVersion),
    );
    const timeout = AbortSignal.timeout(this.opts.httpTimeoutMs ?? 120_000);
    const bounded = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      await discardBody((await httpGet(req, bounded)).res);
    } catch (err) {
      if (!(err instanceof HttpGetError && err.notTls && req.scheme === 'https')) throw err;
      const headers = new Map(req.headers);
      headers.delete('Authorization');
      try {
        await discardBody((await httpGet({ ...req, scheme: 'http', headers }, bounded)).res);
      } catch {
        throw err;
      }
      this.opts.recorder?.event(
        pod,
        '',
        'Warning',
        'LifecycleHTTPFallback',
        `request to HTTPS lifecycle hook ${joinHostPort(req.host, req.port)} got HTTP response, retry with HTTP succeeded`,
      );
    }
  }
}

/** Reads what a hook's response sends, within bounds, and lets its connection go. */
async function discardBody(res: IncomingMessage): Promise<void> {
  // Like upstream, a hook only fails when the request does: the status code and body are not judged.
  await readAtMost(res, MAX_RESPONSE_BODY_BYTES).catch(() => undefined);
  res.destroy();
}
