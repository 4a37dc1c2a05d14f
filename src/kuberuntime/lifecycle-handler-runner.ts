/**
 * Runs a container's postStart and preStop hooks (upstream: lifecycle.handlerRunner): exec in the
 * container through the runtime, an HTTP GET against the pod, or a sleep.
 */
import type { Container, LifecycleHandler, Pod } from '../api/core-v1.js';
import type { RuntimeService } from '../cri/types.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { formatPod } from './format.js';

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
        const port = resolvePort(get.port, container);
        const host = get.host || podIP;
        const scheme = (get.scheme ?? 'HTTP').toLowerCase();
        const p = get.path ?? '';
        const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${p.startsWith('/') || p === '' ? p : `/${p}`}`;
        // The hook's own headers win; User-Agent and Accept are filled in only when it has none.
        const headers = new Headers();
        for (const h of get.httpHeaders ?? []) headers.append(h.name, h.value);
        if (!headers.has('User-Agent'))
          headers.set('User-Agent', lifecycleUserAgent(this.opts.kubernetesVersion));
        if (!headers.has('Accept')) headers.set('Accept', '*/*');
        const timeout = AbortSignal.timeout(this.opts.httpTimeoutMs ?? 120_000);
        const res = await fetch(url, {
          headers,
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
          redirect: 'manual',
        });
        // Like upstream, a hook only fails when the request does; the status code is not judged.
        await res.body?.cancel();
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
}

function resolvePort(port: number | string, container: Container): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number.parseInt(port, 10);
  const found = container.ports?.find((p) => p.name === port);
  if (!found) throw new Error(`couldn't find port: ${port} in ${JSON.stringify(container.ports ?? [])}`);
  return found.containerPort;
}
