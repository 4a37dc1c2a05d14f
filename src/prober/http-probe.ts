/**
 * The httpGet probe (upstream: pkg/probe/http, NewRequestForHTTPGetAction and DoHTTPProbe): one GET
 * with no keep-alive and TLS verification off, redirects followed only while they stay on the same
 * host (at most 10 requests), 2xx a success, 3xx a success with a warning, anything else a failure.
 * The whole exchange, redirects and body included, has one deadline (Go's Client.Timeout).
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { Container, HTTPGetAction } from '../api/core-v1.js';
import type { Clock } from '../lib/clock.js';
import { connErrorMessage, dialErrorMessage, joinHostPort } from './go-net-error.js';
import { MAX_READ_LENGTH_BYTES, type ProbeOutcome } from './probe-outcome.js';

/** Go's http.Client default: it gives up on the 10th request of a redirect chain. */
const MAX_REQUESTS_PER_CHAIN = 10;
const REDIRECT_CODES = new Set([301, 302, 303, 307, 308]);

export interface HttpProbeRequest {
  scheme: 'http' | 'https';
  /** As the spec or the pod IP gave it; '' dials the local host, as Go does. */
  host: string;
  port: number;
  /** Path and query as written in the probe (may be '' or lack its leading '/'). */
  path: string;
  /** Canonical header name → its values, in the order given; Host is among them when the spec sets it. */
  headers: Map<string, string[]>;
}

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

/** Go's textproto.CanonicalMIMEHeaderKey: `user-agent` → `User-Agent`; names with odd bytes stay as written. */
export function canonicalHeaderKey(name: string): string {
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) return name;
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

/** upstream NewRequestForHTTPGetAction: scheme, host (default the pod IP), port, path and headers of the probe. */
export function newRequestForHTTPGetAction(
  action: HTTPGetAction,
  container: Container,
  podIP: string,
  userAgent: string,
): HttpProbeRequest {
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

interface SplitPath {
  path: string;
  query: string | undefined;
  fragment: string | undefined;
}

function splitPath(raw: string): SplitPath {
  let rest = raw;
  let fragment: string | undefined;
  const hash = rest.indexOf('#');
  if (hash >= 0) {
    fragment = rest.slice(hash + 1);
    rest = rest.slice(0, hash);
  }
  let query: string | undefined;
  const q = rest.indexOf('?');
  if (q >= 0) {
    query = rest.slice(q + 1);
    rest = rest.slice(0, q);
  }
  return { path: rest, query, fragment };
}

// What Go leaves unescaped in a path it was given already encoded (url.validEncoded).
const PATH_SAFE = /[A-Za-z0-9\-._~!$&'()*+,;=:@/]/;

function escapePart(s: string, safe: RegExp): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '%' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) out += c;
    else if (safe.test(c)) out += c;
    else {
      const cp = s.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      out += encodeURIComponent(ch);
      i += ch.length - 1;
    }
  }
  return out;
}

/** Go's url.URL.String() for the probe's URL: what messages quote (`http://10.0.0.5:8080/healthz`). */
export function probeUrlString(scheme: string, host: string, port: number, rawPath: string): string {
  const { path, query, fragment } = splitPath(rawPath);
  let s = `${scheme}://${joinHostPort(host, port)}`;
  if (path !== '' && !path.startsWith('/')) s += '/';
  s += escapePart(path, PATH_SAFE);
  if (query !== undefined) s += `?${query}`;
  if (fragment !== undefined && fragment !== '') s += `#${fragment}`;
  return s;
}

/** The request target on the wire: never empty, always rooted, no fragment. */
function requestTarget(rawPath: string): string {
  const { path, query } = splitPath(rawPath);
  let target = escapePart(path, PATH_SAFE);
  if (!target.startsWith('/')) target = `/${target}`;
  // Node refuses a request line with spaces or control bytes, which Go would send raw; escape those.
  if (query !== undefined) target += `?${query.replace(/[^\x21-\x7e]/gu, (c) => encodeURIComponent(c))}`;
  return target;
}

interface Hop {
  scheme: 'http' | 'https';
  host: string;
  port: number;
  target: string;
  url: string;
  hostHeader: string;
}

export interface HttpProbeOptions {
  clock: Clock;
  timeoutMs: number;
  /** Aborts the probe (its worker stopped); the outcome is then an error. */
  signal?: AbortSignal;
}

/** upstream DoHTTPProbe with the prober's http.Client: see the file comment. */
export async function doHttpProbe(req: HttpProbeRequest, opts: HttpProbeOptions): Promise<ProbeOutcome> {
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
  req: HttpProbeRequest,
  signal: AbortSignal,
  timedOut: () => boolean,
): Promise<ProbeOutcome> {
  const customHost = req.headers.get('Host')?.[0];
  let hop: Hop = {
    scheme: req.scheme,
    host: req.host,
    port: req.port,
    target: requestTarget(req.path),
    url: probeUrlString(req.scheme, req.host, req.port, req.path),
    hostHeader: customHost || joinHostPort(req.host, req.port),
  };
  const firstHostname = req.host;
  let requests = 0;
  for (;;) {
    requests++;
    let res: IncomingMessage;
    try {
      res = await send(hop, req.headers, signal);
    } catch (err) {
      if (timedOut()) {
        return failure(
          `Get "${hop.url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
        );
      }
      if (signal.aborted) return aborted(signal);
      return failure(`Get "${hop.url}": ${(err as Error).message}`);
    }

    const location = res.headers.location;
    if (REDIRECT_CODES.has(res.statusCode ?? 0) && location) {
      let next: URL;
      try {
        next = new URL(
          location,
          `${hop.scheme}://${joinHostPort(dialHost(hop.host), hop.port)}${hop.target}`,
        );
      } catch (err) {
        res.destroy();
        return failure(
          `Get "${hop.url}": failed to parse Location header ${JSON.stringify(location)}: ${(err as Error).message}`,
        );
      }
      const nextHost = next.hostname.replace(/^\[(.*)\]$/, '$1');
      // A redirect to another host ends the chain: its response is the answer (Go: http.ErrUseLastResponse).
      if (nextHost === firstHostname || (firstHostname === '' && isLocalName(nextHost))) {
        res.destroy();
        if (requests >= MAX_REQUESTS_PER_CHAIN)
          return failure(`Get "${hop.url}": stopped after 10 redirects`);
        const scheme = next.protocol.slice(0, -1);
        if (scheme !== 'http' && scheme !== 'https') {
          return failure(`Get "${next.href}": unsupported protocol scheme "${scheme}"`);
        }
        const relative = !/^([a-z][a-z0-9+.-]*:)?\/\//i.test(location);
        const port = next.port === '' ? (scheme === 'https' ? 443 : 80) : Number(next.port);
        hop = {
          scheme,
          host: firstHostname === '' ? '' : nextHost,
          port,
          target: next.pathname + next.search,
          url: next.href,
          // Go keeps a custom Host header only through relative redirects.
          hostHeader: relative && customHost ? customHost : next.host,
        };
        continue;
      }
    }

    let body: string;
    try {
      body = await readBounded(res);
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

/** Go dials the local system for an empty host. */
function dialHost(host: string): string {
  return host === '' ? 'localhost' : host;
}

function isLocalName(host: string): boolean {
  return host === 'localhost' || host === '127.0.0.1' || host === '::1';
}

function send(hop: Hop, headers: Map<string, string[]>, signal: AbortSignal): Promise<IncomingMessage> {
  const out: Record<string, string | string[]> = {};
  for (const [name, values] of headers) {
    if (name === 'Host') continue;
    out[name] = values.length === 1 ? values[0]! : values;
  }
  out.Host = hop.hostHeader;
  const host = dialHost(hop.host);
  const addr = joinHostPort(host, hop.port);
  const options: https.RequestOptions = {
    host,
    port: hop.port,
    method: 'GET',
    path: hop.target,
    headers: out,
    // A fresh connection each time, closed after: upstream's transport has keep-alives off.
    agent: false,
    signal,
  };
  if (hop.scheme === 'https') {
    options.rejectUnauthorized = false;
    // Go names the server (SNI) from the URL, never from a Host header, and never an IP.
    options.servername = isIP(host) ? '' : host;
  }
  return new Promise((resolve, reject) => {
    let socket: Socket | undefined;
    let connected = false;
    const request = (hop.scheme === 'https' ? https : http).request(options);
    request.once('socket', (s: Socket) => {
      socket = s;
      s.once('connect', () => (connected = true));
    });
    request.once('response', resolve);
    request.once('error', (err: NodeJS.ErrnoException) => {
      if (err.name === 'AbortError') return reject(err);
      if (err.code === 'ERR_SSL_WRONG_VERSION_NUMBER' || /wrong version number/.test(err.message)) {
        return reject(new Error('tls: first record does not look like a TLS handshake'));
      }
      if (!connected && err.message !== 'socket hang up') {
        return reject(new Error(dialErrorMessage(err, addr, host)));
      }
      const local = socket?.localAddress
        ? joinHostPort(socket.localAddress, socket.localPort ?? 0)
        : undefined;
      reject(new Error(connErrorMessage(err, local, addr)));
    });
    request.end();
  });
}

/** Reads at most MAX_READ_LENGTH_BYTES of the body, then drops the connection (upstream: ReadAtMost). */
function readBounded(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const done = (err?: Error) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve(Buffer.concat(chunks).toString('utf8'));
    };
    res.on('data', (chunk: Buffer) => {
      if (settled) return;
      const take = Math.min(chunk.length, MAX_READ_LENGTH_BYTES - size);
      chunks.push(chunk.subarray(0, take));
      size += take;
      if (size >= MAX_READ_LENGTH_BYTES) {
        done();
        res.destroy();
      }
    });
    res.once('end', () => done());
    res.once('aborted', () => done(new Error('unexpected EOF')));
    res.once('error', (err) => done(err.message === 'aborted' ? new Error('unexpected EOF') : err));
    res.once('close', () => {
      if (!res.complete) done(new Error('unexpected EOF'));
    });
  });
}
