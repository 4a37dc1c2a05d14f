/**
 * The HTTP GET that httpGet probes and httpGet lifecycle hooks make against a pod (upstream: the
 * http.Client of pkg/probe/http and the kubelet's insecureContainerLifecycleHTTPClient): TLS
 * verification off (pods serve self-signed certificates), a fresh connection per request,
 * redirects followed only while they stay on the first host (Go's RedirectChecker(false), at most 10
 * requests), and errors worded as Go's `url.Error` (`Get "http://10.0.0.5:8080/": ...`), because
 * they reach users verbatim in probe and hook messages.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import { KubeletError } from './errors.js';
import { connErrorMessage, dialErrorMessage, joinHostPort } from './go-net-error.js';

/** Go's http.Client default: it gives up on the 10th request of a redirect chain. */
const MAX_REQUESTS_PER_CHAIN = 10;
const REDIRECT_CODES = new Set([301, 302, 303, 307, 308]);

export interface HttpGetRequest {
  scheme: 'http' | 'https';
  /** As the spec or the pod IP gave it; '' dials the local host, as Go does. */
  host: string;
  port: number;
  /** Path and query as written in the spec (may be '' or lack its leading '/'). */
  path: string;
  /** Canonical header name → its values, in the order given; Host is among them when the spec sets it. */
  headers: Map<string, string[]>;
}

/** A failed request, worded as Go's url.Error: `Get "<url>": <cause>`. */
export class HttpGetError extends KubeletError {
  constructor(
    /** The URL of the request that failed (the last hop of a redirect chain). */
    readonly url: string,
    readonly causeMessage: string,
    /**
     * An HTTPS request whose server did not answer with TLS (Go: "http: server gave HTTP response
     * to HTTPS client", which lifecycle hooks retry over plain HTTP).
     */
    readonly notTls = false,
  ) {
    super('HTTP_GET_FAILED', `Get "${url}": ${causeMessage}`);
    this.name = 'HttpGetError';
  }
}

/** Go's textproto.CanonicalMIMEHeaderKey: `user-agent` → `User-Agent`; names with odd bytes stay as written. */
export function canonicalHeaderKey(name: string): string {
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) return name;
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
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

/** Go's url.URL.String() for the request's URL: what messages quote (`http://10.0.0.5:8080/healthz`). */
export function httpGetUrlString(scheme: string, host: string, port: number, rawPath: string): string {
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

export interface HttpGetResponse {
  /** The last response of the chain: its body is unread. */
  res: IncomingMessage;
  /** The URL it answered. */
  url: string;
}

/**
 * Sends req and follows its redirects (see the file comment). Rejects with an HttpGetError, or with
 * the signal's reason once it is aborted.
 */
export async function httpGet(req: HttpGetRequest, signal: AbortSignal): Promise<HttpGetResponse> {
  const customHost = req.headers.get('Host')?.[0];
  let hop: Hop = {
    scheme: req.scheme,
    host: req.host,
    port: req.port,
    target: requestTarget(req.path),
    url: httpGetUrlString(req.scheme, req.host, req.port, req.path),
    hostHeader: customHost || joinHostPort(req.host, req.port),
  };
  const firstHostname = req.host;
  let requests = 0;
  for (;;) {
    requests++;
    const res = await send(hop, req.headers, signal);
    const location = res.headers.location;
    if (!REDIRECT_CODES.has(res.statusCode ?? 0) || !location) return { res, url: hop.url };
    let next: URL;
    try {
      next = new URL(location, `${hop.scheme}://${joinHostPort(dialHost(hop.host), hop.port)}${hop.target}`);
    } catch (err) {
      res.destroy();
      throw new HttpGetError(
        hop.url,
        `failed to parse Location header ${JSON.stringify(location)}: ${(err as Error).message}`,
      );
    }
    const nextHost = next.hostname.replace(/^\[(.*)\]$/, '$1');
    // A redirect to another host ends the chain: its response is the answer (Go: http.ErrUseLastResponse).
    if (nextHost !== firstHostname && !(firstHostname === '' && isLocalName(nextHost))) {
      return { res, url: hop.url };
    }
    res.destroy();
    if (requests >= MAX_REQUESTS_PER_CHAIN) throw new HttpGetError(hop.url, 'stopped after 10 redirects');
    const scheme = next.protocol.slice(0, -1);
    if (scheme !== 'http' && scheme !== 'https') {
      throw new HttpGetError(next.href, `unsupported protocol scheme "${scheme}"`);
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
  }
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
    // A fresh connection each time, closed after: upstream's probe transport has keep-alives off.
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
    const fail = (message: string, notTls = false) => reject(new HttpGetError(hop.url, message, notTls));
    const request = (hop.scheme === 'https' ? https : http).request(options);
    request.once('socket', (s: Socket) => {
      socket = s;
      s.once('connect', () => (connected = true));
    });
    request.once('response', resolve);
    request.once('error', (err: NodeJS.ErrnoException) => {
      // The caller asked to stop (or its deadline passed): Go words a cancelled request so.
      if (err.name === 'AbortError') return fail('context canceled');
      // OpenSSL's word for a first record that is not TLS; Go's when it is not even HTTP.
      if (err.code === 'ERR_SSL_WRONG_VERSION_NUMBER' || /wrong version number/.test(err.message)) {
        return fail('tls: first record does not look like a TLS handshake', true);
      }
      if (!connected && err.message !== 'socket hang up') return fail(dialErrorMessage(err, addr, host));
      const local = socket?.localAddress
        ? joinHostPort(socket.localAddress, socket.localPort ?? 0)
        : undefined;
      fail(connErrorMessage(err, local, addr));
    });
    request.end();
  });
}

/**
 * Reads at most maxBytes of the body, then drops the connection (upstream: ReadAtMost). A body cut
 * short rejects with `unexpected EOF`.
 */
export function readAtMost(res: IncomingMessage, maxBytes: number): Promise<string> {
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
      const take = Math.min(chunk.length, maxBytes - size);
      chunks.push(chunk.subarray(0, take));
      size += take;
      if (size >= maxBytes) {
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
