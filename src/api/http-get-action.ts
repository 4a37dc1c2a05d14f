/**
 * The request an httpGet action (of a probe or a lifecycle hook) makes (upstream: pkg/probe/http
 * NewRequestForHTTPGetAction, shared by the prober and the lifecycle handler runner).
 */
import { canonicalHeaderKey, type HttpGetRequest } from '../lib/http-get-client.js';
import type { Container, HTTPGetAction } from './core-v1.js';

/** upstream probe.ResolveContainerPort: a number, or the name of one of the container's ports. */
export function resolveContainerPort(port: number | string, container: Container): number {
  let n: number;
  if (typeof port === 'number') {
    n = port;
  } else {
    const found = container.ports?.find((p) => p.name === port);
    if (!found) throw new Error(`port ${JSON.stringify(port)} not found`);
    n = found.containerPort;
  }
  if (Number.isInteger(n) && n > 0 && n < 65536) return n;
  throw new Error(`invalid port number: ${n}`);
}

/**
 * Scheme, host (default the pod IP), port, path and headers of the action; userAgent
 * (`kube-probe/1.30`, `kube-lifecycle/1.30`) and `Accept: *\/*` only where the action sets none.
 */
export function newRequestForHTTPGetAction(
  action: HTTPGetAction,
  container: Container,
  podIP: string,
  userAgent: string,
): HttpGetRequest {
  const scheme = (action.scheme ?? 'HTTP').toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') throw new Error(`unsupported protocol scheme "${scheme}"`);
  const port = resolveContainerPort(action.port, container);
  const headers = new Map<string, string[]>();
  for (const h of action.httpHeaders ?? []) {
    const key = canonicalHeaderKey(h.name);
    const values = headers.get(key);
    if (values) values.push(h.value);
    else headers.set(key, [h.value]);
  }
  if (!headers.has('User-Agent')) headers.set('User-Agent', [userAgent]);
  if (!headers.has('Accept')) headers.set('Accept', ['*/*']);
  // An Accept header set to nothing means "send none".
  else if ((headers.get('Accept')?.[0] ?? '') === '') headers.delete('Accept');
  return { scheme, host: action.host || podIP, port, path: action.path ?? '', headers };
}
