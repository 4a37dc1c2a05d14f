/**
 * A thin Kubernetes API client (upstream: client-go's rest.RESTClient): JSON only (in Node.js it
 * costs no more CPU than protobuf: src/cmd/api-content-type.ts); over TLS one HTTP/2 connection when
 * the server's ALPN picks h2, as client-go (./http2-transport.ts, on the project's own HTTP/2 client),
 * else node:https keep-alive agents, all carrying the kubeconfig's TLS identity in one secure context;
 * a shared token-bucket rate limit (kubeAPIQPS/kubeAPIBurst), a deadline on every call, and Status
 * replies turned into results.
 *
 * Why not fetch: Node's global fetch cannot present a client certificate or trust a private CA
 * without undici's own Agent, which is not a dependency here; node:https does both.
 */
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { readFile } from 'node:fs/promises';
import type { ObjectMeta } from '../api/core-v1.js';
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger, type Logger } from '../lib/log.js';
import { KubeApiError, expectedFailure, statusFrom, type ApiResult, type Status } from './api-status.js';
import { DeadlineExceededError, withDeadline, type Deadline } from '../lib/deadline.js';
import { loadKubeconfig, type RestConfig } from './kubeconfig.js';
import { rateLimiterFor, type RateLimiter } from '../lib/token-bucket.js';
import { LineWatchStream } from './watch-stream.js';
import {
  ApiHttp2Transport,
  H2WatchStream,
  http2HealthFromEnv,
  readWholeBody,
  type H2Request,
} from './http2-transport.js';

/** Any API object: what the client needs of it is its metadata. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

export interface ObjectList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

/** Where an object or a collection lives: /api/v1/namespaces/{namespace}/{resource}/{name}/{subresource}. */
export interface ResourceRef {
  /** `v1` for the core group (the default), else `group/version`, e.g. `coordination.k8s.io/v1`. */
  apiVersion?: string;
  /** The plural: pods, nodes, events, leases. */
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: string;
}

export interface CallOptions {
  /** Cancels the call (the kubelet stopping). */
  signal?: AbortSignal;
  /** This call's deadline; the client's requestTimeoutMs (30 s) when absent. */
  timeoutMs?: number;
}

export interface ListOptions extends CallOptions {
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  resourceVersionMatch?: 'NotOlderThan' | 'Exact';
  limit?: number;
  continue?: string;
}

export interface WatchOptions {
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  /** Asked of the server, which ends the watch after it; the client's own deadline is a little longer. */
  timeoutSeconds: number;
  signal?: AbortSignal;
}

/** The three PATCH bodies: RFC 7386 JSON merge, Kubernetes strategic merge, RFC 6902 JSON patch. */
export type PatchType = 'merge' | 'strategic' | 'json';

export const PATCH_CONTENT_TYPES: Readonly<Record<PatchType, string>> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
};

export interface DeleteOptions extends CallOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export type WatchEvent<T> =
  { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK'; object: T } | { type: 'ERROR'; object: Status };

/** An open watch: its events in order; iteration ends when the server ends the watch. */
export interface WatchStream<T> extends AsyncIterable<WatchEvent<T>> {
  /** Ends the watch from this side. */
  close(): void;
}

export interface RestClientOptions {
  config: RestConfig;
  clock?: Clock;
  /** kubeAPIQPS: 0 means client-go's default (5), below 0 no limit. Ignored when rateLimiter is given. */
  qps?: number;
  /** kubeAPIBurst: 0 means client-go's default (10). */
  burst?: number;
  /** Shared with other clients, or a custom one; built from qps and burst when absent. */
  rateLimiter?: RateLimiter;
  userAgent?: string;
  /** The deadline of each call that names none (default 30 s). */
  requestTimeoutMs?: number;
  log?: Logger;
  /**
   * `auto` (the default): HTTP/2 over TLS when the server's ALPN picks it, HTTP/1.1 otherwise;
   * `http/1.1`: never HTTP/2 (client-go's DisableHTTP2). Absent: `http/1.1` when the environment
   * has DISABLE_HTTP2 set (as client-go reads it), else `auto`.
   */
  httpVersion?: 'auto' | 'http/1.1';
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** How much longer than its timeoutSeconds the client waits for a watch before cutting it itself. */
export const WATCH_DEADLINE_GRACE_MS = 15_000;
/** client-go re-reads a token file at most this often, so a rotated token is picked up. */
const TOKEN_FILE_REFRESH_MS = 60_000;
/** Idle keep-alive connections are closed after this, before a server would (Go's is 90 s). */
const IDLE_SOCKET_TIMEOUT_MS = 60_000;
/**
 * Connections for calls other than watches, at most. client-go multiplexes everything on one HTTP/2
 * connection; over HTTP/1.1 each call in flight needs a connection of its own, and without a bound a
 * burst (a hundred pods' tokens and statuses at once) opened one TLS connection per call, each a
 * handshake and a secure context, then closed them all a minute later. Calls beyond it wait for a free
 * connection under their own deadline; at the kubelet's QPS few are ever waiting.
 */
export const MAX_CALL_CONNECTIONS = 8;

/** The User-Agent the kubelet sends: `kubelet/v1.30.0 (linux/amd64) tskubelet`. */
export function defaultUserAgent(kubernetesVersion = 'v1.30.0'): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  return `kubelet/${kubernetesVersion} (${process.platform}/${arch}) tskubelet`;
}

/** The URL path of ref (no query). */
export function resourcePath(ref: ResourceRef): string {
  const version = ref.apiVersion ?? 'v1';
  const parts = [version.includes('/') ? `/apis/${version}` : `/api/${version}`];
  if (ref.namespace) parts.push('namespaces', encodeURIComponent(ref.namespace));
  parts.push(ref.resource);
  if (ref.name !== undefined) parts.push(encodeURIComponent(ref.name));
  if (ref.subresource) parts.push(ref.subresource);
  return parts.join('/');
}

/** What goes on the wire besides the request line: headers as node's flat [name, value, …] list. */
interface WireRequest {
  headers: string[];
  body: string | undefined;
}

interface RawResponse {
  status: number;
  body: unknown;
  text: string;
}

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path with its query, e.g. from resourcePath(). */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
}

export class RestClient {
  /** The connection settings; setClientCertificate replaces it with one carrying the new pair. */
  config: RestConfig;
  readonly userAgent: string;
  readonly requestTimeoutMs: number;
  private readonly clock: Clock;
  private readonly limiter: RateLimiter;
  private agent: http.Agent;
  // Watches hold a connection for minutes each: they get one of their own, outside the calls' bound.
  private watchAgent: http.Agent;
  // Over TLS unless told http/1.1: used while the server speaks h2 (unknown until the first call).
  private h2: ApiHttp2Transport | undefined;
  private readonly httpVersion: 'auto' | 'http/1.1';
  private readonly transport: typeof http | typeof https;
  private readonly base: URL;
  // Taken from the server's URL once: a request names them rather than a URL node would parse again.
  private readonly hostname: string;
  private readonly port: number | undefined;
  private readonly pathPrefix: string;
  private readonly hostHeader: string;
  private readonly log: Logger;
  private tokenCache: { token: string; readAtMs: number } | undefined;

  constructor(options: RestClientOptions) {
    this.config = options.config;
    this.clock = options.clock ?? realClock;
    this.log = options.log ?? logger('k8s');
    this.userAgent = options.userAgent ?? defaultUserAgent();
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.limiter = options.rateLimiter ?? rateLimiterFor(options.qps ?? 0, options.burst ?? 0, this.clock);
    this.base = new URL(this.config.server);
    const secure = this.base.protocol === 'https:';
    this.transport = secure ? https : http;
    // URL keeps an IPv6 address in brackets; a request's hostname is the bare address.
    this.hostname = this.base.hostname.replace(/^\[(.*)\]$/, '$1');
    this.port = this.base.port === '' ? undefined : Number(this.base.port);
    this.pathPrefix = this.base.pathname.replace(/\/+$/, '');
    this.hostHeader = this.base.host;
    // client-go's switch for the same: any value of DISABLE_HTTP2 keeps the client on HTTP/1.1.
    this.httpVersion = options.httpVersion ?? (process.env.DISABLE_HTTP2 ? 'http/1.1' : 'auto');
    [this.agent, this.watchAgent, this.h2] = this.makeAgents();
  }

  private makeAgents(): [calls: http.Agent, watches: http.Agent, h2: ApiHttp2Transport | undefined] {
    const common = { keepAlive: true, timeout: IDLE_SOCKET_TIMEOUT_MS };
    if (this.base.protocol !== 'https:') {
      const calls = new http.Agent({ ...common, maxSockets: MAX_CALL_CONNECTIONS });
      return [calls, new http.Agent(common), undefined];
    }
    // One secure context for every connection: given the PEM texts instead, node parses the CA, the
    // certificate and the key again for each connection it opens.
    const secureContext = tls.createSecureContext({
      ...(this.config.caPem ? { ca: this.config.caPem } : {}),
      ...(this.config.clientCertPem
        ? { cert: this.config.clientCertPem, key: this.config.clientKeyPem }
        : {}),
    });
    const options: https.AgentOptions = {
      ...common,
      secureContext,
      ...(this.config.tlsServerName ? { servername: this.config.tlsServerName } : {}),
      rejectUnauthorized: this.config.insecureSkipTLSVerify !== true,
    };
    const h2 =
      this.httpVersion === 'auto'
        ? new ApiHttp2Transport(
            {
              host: this.hostname,
              port: this.port ?? 443,
              authority: this.hostHeader,
              secureContext,
              ...(this.config.tlsServerName ? { servername: this.config.tlsServerName } : {}),
              rejectUnauthorized: this.config.insecureSkipTLSVerify !== true,
            },
            this.clock,
            http2HealthFromEnv(process.env, (message) => this.log.warn(message)),
          )
        : undefined;
    // A server known to speak only HTTP/1.1 is not asked again with the new certificate.
    if (h2 && this.h2?.speaksHttp2 === false) h2.speaksHttp2 = false;
    return [new https.Agent({ ...options, maxSockets: MAX_CALL_CONNECTIONS }), new https.Agent(options), h2];
  }

  /**
   * Presents a new client certificate from now on (certificate rotation). Every connection made with
   * the old one is closed, open watches included, so the API server sees the new identity at once
   * (upstream's UpdateTransport closes them the same way); callers retry as after any cut.
   */
  setClientCertificate(certPem: string, keyPem: string): void {
    this.config = { ...this.config, clientCertPem: certPem, clientKeyPem: keyPem };
    const old = [this.agent, this.watchAgent];
    const oldH2 = this.h2;
    [this.agent, this.watchAgent, this.h2] = this.makeAgents();
    for (const agent of old) agent.destroy();
    oldH2?.retire();
  }

  /** A client for the kubeconfig at path (--kubeconfig). */
  static async fromKubeconfig(
    path: string,
    options: Omit<RestClientOptions, 'config'> & { signal?: AbortSignal } = {},
  ): Promise<RestClient> {
    const { signal, ...rest } = options;
    const config = await loadKubeconfig(path, signal ? { signal } : {});
    return new RestClient({ ...rest, config });
  }

  /** Closes idle connections; open watches end. */
  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
    this.h2?.close();
  }

  // ---- verbs ----------------------------------------------------------------------------------------

  get<T extends KubeObject>(ref: ResourceRef, options: CallOptions = {}): Promise<ApiResult<T>> {
    return this.call<T>({ method: 'GET', path: resourcePath(ref) }, options);
  }

  list<T extends KubeObject>(ref: ResourceRef, options: ListOptions = {}): Promise<ApiResult<ObjectList<T>>> {
    return this.call<ObjectList<T>>(
      {
        method: 'GET',
        path: resourcePath(ref),
        query: {
          labelSelector: options.labelSelector,
          fieldSelector: options.fieldSelector,
          resourceVersion: options.resourceVersion,
          resourceVersionMatch: options.resourceVersionMatch,
          limit: options.limit,
          continue: options.continue,
        },
      },
      options,
    );
  }

  create<T extends KubeObject>(
    ref: ResourceRef,
    object: T,
    options: CallOptions = {},
  ): Promise<ApiResult<T>> {
    return this.call<T>(
      { method: 'POST', path: resourcePath({ ...ref, name: undefined }), body: object },
      options,
    );
  }

  /** PUT: ref names the object (and subresource 'status' to replace only its status). */
  update<T extends KubeObject>(
    ref: ResourceRef,
    object: T,
    options: CallOptions = {},
  ): Promise<ApiResult<T>> {
    return this.call<T>({ method: 'PUT', path: resourcePath(ref), body: object }, options);
  }

  patch<T extends KubeObject>(
    ref: ResourceRef,
    type: PatchType,
    patch: unknown,
    options: CallOptions = {},
  ): Promise<ApiResult<T>> {
    return this.call<T>(
      { method: 'PATCH', path: resourcePath(ref), body: patch, contentType: PATCH_CONTENT_TYPES[type] },
      options,
    );
  }

  /**
   * DELETE with metav1.DeleteOptions in the body. The result holds what the server returns: the
   * object (pods: still there while it terminates) or a Success Status.
   */
  delete<T extends KubeObject = KubeObject>(
    ref: ResourceRef,
    options: DeleteOptions = {},
  ): Promise<ApiResult<T | Status>> {
    const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1' };
    if (options.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = options.gracePeriodSeconds;
    if (options.preconditions) body.preconditions = options.preconditions;
    if (options.propagationPolicy) body.propagationPolicy = options.propagationPolicy;
    return this.call<T | Status>({ method: 'DELETE', path: resourcePath(ref), body }, options);
  }

  /**
   * Opens a watch. A 410 (the resourceVersion is too old) comes back as { ok: false, reason: 'Gone' };
   * so does one in the stream, as an ERROR event whose Status has code 410.
   */
  async watch<T extends KubeObject>(
    ref: ResourceRef,
    options: WatchOptions,
  ): Promise<ApiResult<WatchStream<T>>> {
    const query = {
      watch: 'true',
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      resourceVersion: options.resourceVersion,
      allowWatchBookmarks: options.allowWatchBookmarks ? 'true' : undefined,
      timeoutSeconds: options.timeoutSeconds,
    };
    const spec: RequestSpec = { method: 'GET', path: resourcePath(ref), query };
    await this.throttle(options.signal);
    const deadline = withDeadline(
      this.clock,
      options.timeoutSeconds * 1000 + WATCH_DEADLINE_GRACE_MS,
      options.signal,
    );
    const failed = (err: unknown) =>
      this.transportError(spec, err, deadlineExceeded(deadline.signal), options.signal);
    if (this.h2 && this.h2.speaksHttp2 !== false) {
      const opened = await this.watchHttp2<T>(spec, deadline, failed);
      if (opened) return opened;
    }
    let res: http.IncomingMessage;
    try {
      res = await this.openWatch(spec, deadline.signal);
    } catch (err) {
      deadline.dispose();
      throw failed(err);
    }
    if (res.statusCode !== 200)
      return this.watchRefused<T>(spec, () => readResponse(res, deadline.signal), deadline, failed);
    return { ok: true, object: new ResponseWatchStream<T>(res, deadline, this.describe(spec)) };
  }

  /** A watch as a stream of the HTTP/2 connection; undefined when the server speaks only HTTP/1.1. */
  private async watchHttp2<T>(
    spec: RequestSpec,
    deadline: Deadline,
    failed: (err: unknown) => KubeApiError,
  ): Promise<ApiResult<WatchStream<T>> | undefined> {
    let res;
    try {
      const req = this.h2Request(spec, await this.bearerToken());
      // Taken after the token's read: a certificate rotated meanwhile retired the transport before it.
      const h2 = this.h2;
      if (!h2 || h2.speaksHttp2 === false) return undefined;
      res = await h2.stream(req, deadline.signal);
    } catch (err) {
      deadline.dispose();
      throw failed(err);
    }
    if (!res) return undefined;
    if (res.status !== 200) {
      const reply = res;
      const read = async () =>
        decodeBody(reply.status, reply.contentType, await readWholeBody(reply, deadline.signal));
      return this.watchRefused<T>(spec, read, deadline, failed);
    }
    return { ok: true, object: new H2WatchStream<T>(res, deadline, this.describe(spec)) };
  }

  /** A watch the server answered with other than 200, over either transport: its Status as a result or thrown. */
  private async watchRefused<T>(
    spec: RequestSpec,
    read: () => Promise<RawResponse>,
    deadline: Deadline,
    failed: (err: unknown) => KubeApiError,
  ): Promise<ApiResult<WatchStream<T>>> {
    try {
      return this.toResult<WatchStream<T>>(spec, await read(), () => {
        throw new Error('unreachable');
      });
    } catch (err) {
      throw err instanceof KubeApiError ? err : failed(err);
    } finally {
      deadline.dispose();
    }
  }

  // ---- plumbing -------------------------------------------------------------------------------------

  /** Sends spec and decodes the reply: 2xx as the object, expected failures as results, the rest thrown. */
  async call<T>(spec: RequestSpec, options: CallOptions = {}): Promise<ApiResult<T>> {
    await this.throttle(options.signal);
    const token = this.config.tokenFile ? await this.bearerToken() : this.config.token;
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    const h2 = this.h2;
    const raw =
      (h2 && h2.speaksHttp2 !== false
        ? await this.exchangeHttp2(h2, spec, token, timeoutMs, options.signal)
        : undefined) ?? (await this.exchange(spec, token, timeoutMs, options.signal));
    return this.toResult<T>(spec, raw, () => raw.body as T);
  }

  /** exchange() as a stream of the HTTP/2 connection; undefined when the server speaks only HTTP/1.1. */
  private async exchangeHttp2(
    h2: ApiHttp2Transport,
    spec: RequestSpec,
    token: string | undefined,
    timeoutMs: number,
    caller: AbortSignal | undefined,
  ): Promise<RawResponse | undefined> {
    let reply;
    try {
      reply = await h2.exchange(this.h2Request(spec, token), timeoutMs, caller);
    } catch (err) {
      throw this.transportError(spec, err, err instanceof DeadlineExceededError ? err : undefined, caller);
    }
    return reply && decodeBody(reply.status, reply.contentType, reply.chunks);
  }

  /** spec for HTTP/2: header names in lower case, the body as bytes (its length is the frames'). */
  private h2Request(spec: RequestSpec, token: string | undefined): H2Request {
    const headers: [string, string][] = [
      ['accept', 'application/json'],
      ['user-agent', this.userAgent],
    ];
    if (token) headers.push(['authorization', `Bearer ${token}`]);
    let body: Buffer | undefined;
    if (spec.body !== undefined) {
      body = Buffer.from(typeof spec.body === 'string' ? spec.body : JSON.stringify(spec.body));
      headers.push(['content-type', spec.contentType ?? 'application/json']);
    }
    return { method: spec.method, path: this.pathPrefix + withQuery(spec.path, spec.query), headers, body };
  }

  /**
   * Sends spec and reads its whole reply under one deadline: a timer and a listener on the caller's
   * signal, either of which ends the request itself. No AbortController and no signal handed to node
   * per call: with their listeners they were a tenth of a call's CPU (docs/benchmarks.md).
   */
  private exchange(
    spec: RequestSpec,
    token: string | undefined,
    timeoutMs: number,
    caller: AbortSignal | undefined,
  ): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      if (caller?.aborted) return reject(this.transportError(spec, caller.reason, undefined, caller));
      let expired: DeadlineExceededError | undefined;
      let settled = false;
      // Called only from the request's events and the timer, all of which come after this function.
      const settle = (err: unknown, raw?: RawResponse) => {
        if (settled) return;
        settled = true;
        this.clock.clearTimeout(timer);
        caller?.removeEventListener('abort', onAbort);
        if (raw) resolve(raw);
        else reject(this.transportError(spec, err, expired, caller));
      };
      let wire: WireRequest;
      let req: http.ClientRequest;
      try {
        wire = this.wireRequest(spec, token);
        // Throws at once for what node will not send (a header with a newline, say).
        req = this.transport.request(this.requestOptions(spec, wire, this.agent), (res) => {
          // Chunks are kept as they come and decoded once at the end: no string work per chunk.
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => settle(undefined, decodeReply(res, chunks)));
          res.on('error', settle);
        });
      } catch (err) {
        return reject(this.transportError(spec, err, undefined, caller));
      }
      req.on('error', settle);
      const cut = (err: unknown) => {
        settle(err);
        req.destroy(err as Error);
      };
      const onAbort = () => cut(caller?.reason);
      const timer = this.clock.setTimeout(
        () => cut((expired = new DeadlineExceededError(timeoutMs))),
        timeoutMs,
      );
      caller?.addEventListener('abort', onAbort, { once: true });
      req.end(wire.body);
    });
  }

  /** Opens the response of a watch; the signal ends the request until the stream takes over. */
  private async openWatch(spec: RequestSpec, signal: AbortSignal): Promise<http.IncomingMessage> {
    signal.throwIfAborted();
    const wire = this.wireRequest(spec, await this.bearerToken());
    return new Promise((resolve, reject) => {
      const options = { ...this.requestOptions(spec, wire, this.watchAgent), signal };
      const req = this.transport.request(options, resolve);
      req.on('error', reject);
      req.end(wire.body);
    });
  }

  /**
   * The headers in node's flat form, which it writes as they are (an object goes through setHeader,
   * header by header), and the body as text, which node writes in one piece with the headers.
   */
  private wireRequest(spec: RequestSpec, token: string | undefined): WireRequest {
    const headers = ['Host', this.hostHeader, 'Accept', 'application/json', 'User-Agent', this.userAgent];
    if (token) headers.push('Authorization', `Bearer ${token}`);
    if (spec.body === undefined) return { headers, body: undefined };
    const body = typeof spec.body === 'string' ? spec.body : JSON.stringify(spec.body);
    // A DELETE body is not sent chunked by Node; the length makes the server read it.
    const length = String(Buffer.byteLength(body));
    headers.push('Content-Type', spec.contentType ?? 'application/json', 'Content-Length', length);
    return { headers, body };
  }

  private requestOptions(spec: RequestSpec, wire: WireRequest, agent: http.Agent): http.RequestOptions {
    return {
      hostname: this.hostname,
      port: this.port,
      path: this.pathPrefix + withQuery(spec.path, spec.query),
      method: spec.method,
      headers: wire.headers,
      agent,
    };
  }

  private toResult<T>(spec: RequestSpec, raw: RawResponse, ok: () => T): ApiResult<T> {
    if (raw.status >= 200 && raw.status < 300) return { ok: true, object: ok() };
    const fallback = raw.text.trim() || `the server responded with HTTP ${raw.status}`;
    const status = statusFrom(raw.status, raw.body, fallback);
    const expected = expectedFailure(raw.status, status);
    if (expected) return { ok: false, reason: expected, status };
    throw new KubeApiError(`${this.describe(spec)}: ${status.message ?? status.reason ?? raw.status}`, {
      httpStatus: raw.status,
      reason: status.reason ?? 'Unknown',
      status,
    });
  }

  private async throttle(signal: AbortSignal | undefined): Promise<void> {
    try {
      await this.limiter.wait(signal);
    } catch (err) {
      throw new KubeApiError(`rate limiter wait: ${errorMessage(err)}`, {
        httpStatus: 0,
        reason: 'Aborted',
        cause: err,
      });
    }
  }

  private describe(spec: RequestSpec): string {
    return `${spec.method} ${spec.path}`;
  }

  private transportError(
    spec: RequestSpec,
    err: unknown,
    expired: DeadlineExceededError | undefined,
    caller: AbortSignal | undefined,
  ): KubeApiError {
    if (err instanceof KubeApiError) return err;
    if (caller?.aborted) {
      return new KubeApiError(`${this.describe(spec)}: aborted`, {
        httpStatus: 0,
        reason: 'Aborted',
        cause: caller.reason,
      });
    }
    if (expired) {
      return new KubeApiError(`${this.describe(spec)}: ${expired.message}`, {
        httpStatus: 0,
        reason: 'DeadlineExceeded',
        cause: err,
      });
    }
    const code = (err as NodeJS.ErrnoException).code;
    return new KubeApiError(`${this.describe(spec)}: ${errorMessage(err)}${code ? ` (${code})` : ''}`, {
      httpStatus: 0,
      reason: 'Transport',
      cause: err,
    });
  }

  private async bearerToken(): Promise<string | undefined> {
    const file = this.config.tokenFile;
    if (!file) return this.config.token;
    const now = this.clock.now();
    if (this.tokenCache && now - this.tokenCache.readAtMs < TOKEN_FILE_REFRESH_MS)
      return this.tokenCache.token;
    try {
      const token = (await readFile(file, 'utf8')).trim();
      this.tokenCache = { token, readAtMs: now };
      return token;
    } catch (err) {
      // A token file mid-rotation may be briefly unreadable: keep the last one, as client-go does.
      if (this.tokenCache) {
        this.log.warn('Failed to re-read the token file, using the last token', {
          file,
          err: errorMessage(err),
        });
        return this.tokenCache.token;
      }
      throw new KubeApiError(`reading token file ${file}: ${errorMessage(err)}`, {
        httpStatus: 0,
        reason: 'Transport',
        cause: err,
      });
    }
  }
}

async function readResponse(res: http.IncomingMessage, signal: AbortSignal): Promise<RawResponse> {
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      res.destroy();
      reject(signal.reason as Error);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
    res.on('error', (err) => {
      signal.removeEventListener('abort', onAbort);
      reject(err);
    });
  });
  return decodeReply(res, chunks);
}

/** A reply's status and body: JSON decoded when it says it is JSON, the text kept for error messages. */
function decodeReply(res: http.IncomingMessage, chunks: Buffer[]): RawResponse {
  return decodeBody(res.statusCode ?? 0, res.headers['content-type'] ?? '', chunks);
}

function decodeBody(status: number, contentType: string, chunks: Buffer[]): RawResponse {
  const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
  let body: unknown;
  if (text !== '' && contentType.includes('json')) {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  return { status, body, text };
}

/** The reason a signal aborted when it was its own deadline passing. */
function deadlineExceeded(signal: AbortSignal): DeadlineExceededError | undefined {
  const reason: unknown = signal.reason;
  return signal.aborted && reason instanceof DeadlineExceededError ? reason : undefined;
}

/** path with query's set parameters appended (undefined and empty ones left out), percent-encoded. */
function withQuery(path: string, query: RequestSpec['query']): string {
  if (!query) return path;
  let joined = path;
  let sep = path.includes('?') ? '&' : '?';
  for (const key in query) {
    const value = query[key];
    if (value === undefined || value === '') continue;
    joined += `${sep}${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`;
    sep = '&';
  }
  return joined;
}

/** A watch's events over HTTP/1.1: the response's body as text. */
class ResponseWatchStream<T> extends LineWatchStream<T> {
  constructor(
    private readonly res: http.IncomingMessage,
    deadline: Deadline,
    what: string,
  ) {
    super(deadline, what);
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => this.onText(chunk));
    res.on('end', () => this.finish());
    res.on('error', (err) => this.finish(err));
    res.on('close', () => this.finish(res.complete ? undefined : new Error('connection closed mid-watch')));
    this.watchDeadline();
  }

  protected cut(): void {
    this.res.destroy();
  }
}
