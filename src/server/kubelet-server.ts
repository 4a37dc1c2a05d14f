/**
 * The kubelet API (upstream pkg/kubelet/server): HTTPS on address:port (10250) with authentication
 * and authorization, or the unauthenticated read-only port. Endpoints, query parameters, answers and
 * error texts follow upstream; docs/kubelet-api.md is the reference.
 *
 * Requests that switch protocols (exec, attach, port-forward over SPDY or WebSocket) arrive on the
 * server's 'upgrade' event and go through the same pipeline: parse, authenticate, authorize, route.
 */
import { readFile, stat } from 'node:fs/promises';
import http, { ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Pod, PodList } from '../api/core-v1.js';
import type { RuntimeService } from '../cri/types.js';
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { MetricsRegistry, PROMETHEUS_TEXT_CONTENT_TYPE } from '../lib/metrics.js';
import { serveContainerLogs } from './container-logs-handler.js';
import {
  alwaysAllowAuthorizer,
  CachingTokenReviewer,
  WebhookAuthorizer,
  WebhookTokenReviewer,
  type ApiPoster,
  type Authorizer,
  type TokenReviewer,
} from './delegated-auth.js';
import type { ComponentStatus } from '../lib/component.js';
import { serveHealthz, type HealthChecker } from './healthz.js';
import { authorizeRequest, nodeRequestAttributes, RequestAuthenticator } from './kubelet-auth.js';
import { serveNodeLogs } from './node-logs.js';
import {
  NODE_LOG_QUERY_TIMEOUT_MS,
  serveNodeLogQuery,
  type NodeLogQuerySettings,
} from './node-log-query-handler.js';
import {
  methodNotAllowed,
  notFound,
  parseRequestTarget,
  sendJson,
  sendJsonBody,
  sendText,
  type RequestContext,
} from './request-context.js';
import { PodListBody } from './pod-list-body.js';
import { cadvisorMetricsText, type CadvisorMetricsSource } from './cadvisor-metrics.js';
import { resourceMetricsText } from './resource-metrics.js';
import type { SummaryProvider } from '../stats/stats-provider.js';
import type { NodePageHandler } from '../nodepage/node-page-handler.js';
// eslint-disable-next-line @typescript-eslint/no-restricted-imports -- the summary's wire encoding belongs with its types
import { summaryJson } from '../stats/summary-types.js';
import { serveDebug, type DebugHandlerSettings } from './debug-handlers.js';
import { servingTls } from './serving-tls.js';
import { StreamRegistry } from './stream-proxy.js';
import {
  ConnectionLimiter,
  DEFAULT_SERVER_LIMITS,
  StreamingSessions,
  type ServerLimitOptions,
} from './connection-limits.js';
import { serveAttach, serveExec, servePortForward, serveRun } from './streaming-handlers.js';

const log = logger('server');

/** What the kubelet API reads from the kubelet. Kubelet already has getPods, getRunningPods and healthChecks. */
export interface KubeletServerHost {
  /** The pods this kubelet manages, each with its latest status (upstream: GetPods). */
  getPods(): Pod[];
  /** Upstream GetPodByName; a search of getPods() when absent. */
  getPodByName?(namespace: string, name: string): Pod | undefined;
  /** The pods the runtime has, as bare pods (upstream: /runningpods/). */
  getRunningPods(): Promise<Pod[]>;
  healthChecks(): readonly HealthChecker[];
  /** Every component's state, listed by /healthz?verbose. */
  componentStatuses?(): readonly ComponentStatus[];
  /** The CRI runtime: streaming URLs for exec/attach/port-forward, ExecSync, log paths, stats. */
  runtime: RuntimeService;
  /** What /metrics exposes (the kubelet's own metrics); the server adds its HTTP metrics to it. */
  metrics?: MetricsRegistry;
  /** What /metrics/probes exposes (prober_probe_total, prober_probe_duration_seconds). */
  probeMetrics?: MetricsRegistry;
  /** The configuration in force, for /configz (served as {"kubeletconfig": …}). */
  configz?(): unknown;
  /** /stats/summary and /metrics/resource, when a stats provider exists (404 otherwise). */
  statsProvider?: SummaryProvider;
  /** The node page under /node/ (nodes/proxy, as other debugging paths), not on the read-only port. */
  nodePage?: NodePageHandler;
  /** /metrics/cadvisor: the stats provider's summary with the runtime's ids and cgroups (404 when absent). */
  cadvisor?: CadvisorMetricsSource;
}

/** The fields of the kubelet configuration the server reads; ResolvedKubeletConfig fits it as is. */
export interface KubeletServerConfig {
  address: string;
  port: number;
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  tlsMinVersion: string;
  tlsCipherSuites: string[];
  authentication: {
    x509: { clientCAFile: string };
    webhook: { enabled: boolean; cacheTTLMs: number };
    anonymous: { enabled: boolean };
  };
  authorization: {
    mode: 'AlwaysAllow' | 'Webhook';
    webhook: { cacheAuthorizedTTLMs: number; cacheUnauthorizedTTLMs: number };
  };
  enableDebuggingHandlers: boolean;
  enableSystemLogHandler: boolean;
  /** `/logs/?query=` (journalctl and log files), with the NodeLogQuery feature gate. */
  enableSystemLogQuery?: boolean;
  /** /debug/pprof/ (upstream default true); a debugging handler, off with enableDebuggingHandlers. */
  enableProfilingHandler?: boolean;
  /** PUT /debug/flags/v (upstream default true); a debugging handler too. */
  enableDebugFlagsHandler?: boolean;
  streamingConnectionIdleTimeoutMs: number;
  runtimeRequestTimeoutMs: number;
  featureGates: Record<string, boolean>;
}

export interface KubeletServerOptions {
  config: KubeletServerConfig;
  nodeName: string;
  /** --cert-dir: where the self-signed kubelet.crt/kubelet.key live when no certificate is configured. */
  certDirectory: string;
  /** For TokenReview and SubjectAccessReview (cluster mode); required by webhook authentication or authorization. */
  apiPoster?: ApiPoster;
  /** Replaces the TokenReview webhook (tests, or another token source). */
  tokenReviewer?: TokenReviewer;
  /** Replaces the authorizer the mode would build. */
  authorizer?: Authorizer;
  /** What /logs/ serves (upstream: /var/log). */
  nodeLogsDir?: string;
  /** Folders that symlinks under nodeLogsDir may point into (the pod log folder, when it is elsewhere). */
  nodeLogsSymlinkRoots?: string[];
  /** The journalctl node log queries run (default: found on PATH). */
  journalctlPath?: string;
  /** How long one node log query may run (default upstream's 30 s). */
  nodeLogQueryTimeoutMs?: number;
  clock?: Clock;
  /** The serving pair issued through a CSR (serverTLSBootstrap), instead of tlsCertFile or a self-signed one. */
  servingCertificate?: { certPem: string; keyPem: string };
  /** How often tlsCertFile/tlsPrivateKeyFile are checked for changes (default 60 s, as upstream's dynamic certificates). */
  certReloadIntervalMs?: number;
  /** Connections and streaming sessions (tskubelet's own bounds; defaults in connection-limits.ts). */
  limits?: ServerLimitOptions;
}

export interface KubeletServer {
  /** The port actually bound (useful with port 0). */
  readonly port: number;
  /** Serves this pair to new connections from now on (a rotated serving certificate). */
  setServingCertificate?(certPem: string, keyPem: string): void;
  /** Stops listening and cuts every connection, streams included. */
  close(): Promise<void>;
}

export interface ReadOnlyServerOptions {
  address: string;
  port: number;
  nodeName: string;
  clock?: Clock;
  limits?: ServerLimitOptions;
}

/** Requests other than streams must arrive whole within this (upstream: ReadTimeout bounds them). */
const REQUEST_TIMEOUT_MS = 60_000;
/** Upstream's IdleTimeout: a kept-alive connection with no request is closed after this. */
const KEEP_ALIVE_TIMEOUT_MS = 90_000;
const DEFAULT_NODE_LOGS_DIR = '/var/log';

/** Paths upstream counts metrics under; anything else is "other". */
const METRIC_PATH_BUCKETS = new Set([
  'healthz', 'pods', 'stats', 'metrics', 'metrics/cadvisor', 'metrics/probes', 'metrics/resource', 'run', 'exec',
  'attach', 'portForward', 'containerLogs', 'configz', 'runningpods', 'logs', 'checkpoint', 'debug', 'pprof',
]); // prettier-ignore
const METRIC_METHODS = new Set(['OPTIONS', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'TRACE', 'CONNECT']);
const LONG_RUNNING = new Set(['exec', 'attach', 'portforward', 'debug']);

/** Everything a request handler may need, built once per server. */
export interface ServerState {
  host: KubeletServerHost;
  /** /pods, serialised again only when a pod or status changed. */
  podListBody: PodListBody;
  nodeName: string;
  readOnly: boolean;
  debugging: boolean;
  systemLogs: boolean;
  debugHandlers: DebugHandlerSettings;
  nodeLogsDir: string;
  nodeLogsSymlinkRoots: string[];
  /** Set when `/logs/?query=` is served (NodeLogQuery and enableSystemLogQuery). */
  nodeLogQuery?: NodeLogQuerySettings;
  streamIdleTimeoutMs: number;
  runtimeRequestTimeoutMs: number;
  clock: Clock;
  streams: StreamRegistry;
  sessions: StreamingSessions;
  connections: ConnectionLimiter;
  /** What /metrics exposes: the host's registry, with the server's HTTP metrics added. */
  metrics: MetricsRegistry;
  authenticator?: RequestAuthenticator;
  authorizer?: Authorizer;
  fineGrainedAuthz: boolean;
  httpMetrics: HttpMetrics;
}

interface HttpMetrics {
  requests: ReturnType<MetricsRegistry['counter']>;
  inflight: ReturnType<MetricsRegistry['gauge']>;
  duration: ReturnType<MetricsRegistry['histogram']>;
}

function httpMetrics(registry: MetricsRegistry): HttpMetrics {
  const labels = ['method', 'path', 'server_type', 'long_running'];
  return {
    requests: registry.counter('kubelet_http_requests_total', 'Number of the http requests received since the server started', labels),
    inflight: registry.gauge('kubelet_http_inflight_requests', 'Number of the inflight http requests', labels),
    duration: registry.histogram('kubelet_http_requests_duration_seconds', 'Duration in seconds to serve http requests', labels),
  }; // prettier-ignore
}

const withProcess = new WeakSet<MetricsRegistry>();

/** The process_* metrics every Prometheus client exposes, added once per registry. */
function withProcessMetrics(registry: MetricsRegistry): MetricsRegistry {
  if (withProcess.has(registry)) return registry;
  withProcess.add(registry);
  const startSeconds = Math.floor(Date.now() / 1000 - process.uptime());
  registry.addCollector(() => {
    const cpu = process.cpuUsage();
    const mem = process.memoryUsage();
    return [
      { name: 'process_start_time_seconds', help: 'Start time of the process since unix epoch in seconds.', type: 'gauge', samples: [{ value: startSeconds }] },
      { name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', type: 'counter', samples: [{ value: (cpu.user + cpu.system) / 1e6 }] },
      { name: 'process_resident_memory_bytes', help: 'Resident memory size in bytes.', type: 'gauge', samples: [{ value: mem.rss }] },
    ];
  }); // prettier-ignore
  return registry;
}

/** Upstream's getURLRootPath: the first segment, or metrics/<second>. */
function metricPath(segments: readonly string[]): string {
  const root = segments[0] ?? '';
  const bucket =
    root === 'metrics' && segments.length > 1 && segments[1] !== '' ? `metrics/${segments[1]}` : root;
  return METRIC_PATH_BUCKETS.has(bucket) ? bucket : 'other';
}

/**
 * Starts the authenticated HTTPS kubelet API on config.address:config.port. Rejects (KubeletError
 * INVALID_CONFIG) when the configuration cannot work: webhook authentication or authorization
 * without an apiPoster, no authentication method at all, a bad TLS setting.
 */
export async function startKubeletServer(
  host: KubeletServerHost,
  opts: KubeletServerOptions,
): Promise<KubeletServer> {
  const { config } = opts;
  const clock = opts.clock ?? realClock;
  let tokenReviewer = opts.tokenReviewer;
  if (!tokenReviewer && config.authentication.webhook.enabled) {
    if (!opts.apiPoster)
      throw new KubeletError('INVALID_CONFIG', 'no client provided, cannot use webhook authentication');
    tokenReviewer = new WebhookTokenReviewer(opts.apiPoster, clock);
  }
  if (tokenReviewer && config.authentication.webhook.cacheTTLMs > 0)
    tokenReviewer = new CachingTokenReviewer(tokenReviewer, clock, config.authentication.webhook.cacheTTLMs);
  let authorizer = opts.authorizer;
  if (!authorizer) {
    if (config.authorization.mode === 'Webhook') {
      if (!opts.apiPoster)
        throw new KubeletError('INVALID_CONFIG', 'no client provided, cannot use webhook authorization');
      const w = config.authorization.webhook;
      authorizer = new WebhookAuthorizer(
        opts.apiPoster,
        clock,
        w.cacheAuthorizedTTLMs,
        w.cacheUnauthorizedTTLMs,
      );
    } else if (config.authorization.mode === 'AlwaysAllow') {
      authorizer = alwaysAllowAuthorizer;
    } else {
      throw new KubeletError(
        'INVALID_CONFIG',
        `unknown authorization mode ${String(config.authorization.mode)}`,
      );
    }
  }
  const x509 = config.authentication.x509.clientCAFile !== '';
  if (!x509 && !tokenReviewer && !config.authentication.anonymous.enabled)
    throw new KubeletError('INVALID_CONFIG', 'No authentication method configured');
  const tls = await servingTls(config, opts.certDirectory, opts.nodeName, opts.servingCertificate);
  const registry = withProcessMetrics(host.metrics ?? new MetricsRegistry());
  const state: ServerState = {
    host,
    podListBody: new PodListBody(),
    nodeName: opts.nodeName,
    readOnly: false,
    debugging: config.enableDebuggingHandlers,
    systemLogs: config.enableDebuggingHandlers && config.enableSystemLogHandler,
    debugHandlers: {
      profiling: config.enableProfilingHandler ?? true,
      flags: config.enableDebugFlagsHandler ?? true,
    },
    nodeLogsDir: opts.nodeLogsDir ?? DEFAULT_NODE_LOGS_DIR,
    nodeLogsSymlinkRoots: opts.nodeLogsSymlinkRoots ?? [],
    ...((config.featureGates.NodeLogQuery ?? false) && config.enableSystemLogQuery
      ? {
          nodeLogQuery: {
            journalctlPath: opts.journalctlPath ?? 'journalctl',
            timeoutMs: opts.nodeLogQueryTimeoutMs ?? NODE_LOG_QUERY_TIMEOUT_MS,
          },
        }
      : {}),
    streamIdleTimeoutMs: config.streamingConnectionIdleTimeoutMs,
    runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs,
    clock,
    streams: new StreamRegistry(),
    ...limitsFor(opts.limits, 'secure'),
    metrics: registry,
    authenticator: new RequestAuthenticator({
      x509,
      ...(tokenReviewer ? { tokenReviewer } : {}),
      anonymous: config.authentication.anonymous.enabled,
    }),
    authorizer,
    // KubeletFineGrainedAuthz is beta and on by default since 1.33.
    fineGrainedAuthz: config.featureGates.KubeletFineGrainedAuthz ?? true,
    httpMetrics: httpMetrics(registry),
  };
  const server = https.createServer(tls.options);
  const setServingCertificate = (certPem: string, keyPem: string) => {
    server.setSecureContext({ ...tls.options, cert: certPem, key: keyPem });
    log.info('Serving certificate updated', { nodeName: opts.nodeName });
  };
  const stopReload =
    !opts.servingCertificate && config.tlsCertFile !== '' && config.tlsPrivateKeyFile !== ''
      ? reloadOnChange(
          [config.tlsCertFile, config.tlsPrivateKeyFile],
          opts.certReloadIntervalMs ?? CERT_RELOAD_INTERVAL_MS,
          clock,
          async () => {
            const [cert, key] = await Promise.all([
              readFile(config.tlsCertFile, 'utf8'),
              readFile(config.tlsPrivateKeyFile, 'utf8'),
            ]);
            setServingCertificate(cert, key);
          },
        )
      : () => undefined;
  const listening = await listen(server, state, config.address, config.port, 'readwrite');
  return {
    port: listening.port,
    setServingCertificate,
    close: () => {
      stopReload();
      return listening.close();
    },
  };
}

/** Upstream's dynamic serving certificate controller checks its files about once a minute. */
const CERT_RELOAD_INTERVAL_MS = 60_000;

/** Calls reload when any file's mtime or size changes; a failed reload keeps the old pair and is logged. */
function reloadOnChange(
  files: string[],
  intervalMs: number,
  clock: Clock,
  reload: () => Promise<void>,
): () => void {
  const seen = new Map<string, string>();
  let stopped = false;
  let timer: ReturnType<Clock['setTimeout']> | undefined;
  const fingerprint = async (f: string) => {
    try {
      const st = await stat(f);
      return `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch {
      return 'missing';
    }
  };
  const tick = async () => {
    let changed = false;
    for (const f of files) {
      const fp = await fingerprint(f);
      if (seen.has(f) && seen.get(f) !== fp) changed = true;
      seen.set(f, fp);
    }
    if (changed) {
      try {
        await reload();
      } catch (err) {
        log.error('Unable to reload the serving certificate; keeping the old one', {
          err: errorMessage(err),
        });
      }
    }
    if (!stopped) timer = clock.setTimeout(() => void tick(), Math.max(intervalMs, 100));
  };
  void tick();
  return () => {
    stopped = true;
    if (timer) clock.clearTimeout(timer);
  };
}

/**
 * The read-only port (upstream ListenAndServeKubeletReadOnlyServer): plain HTTP, no authentication,
 * /healthz, /pods, /stats/ and /metrics*; the debugging endpoints answer 405.
 */
export function startKubeletReadOnlyServer(
  host: KubeletServerHost,
  opts: ReadOnlyServerOptions,
): Promise<KubeletServer> {
  const registry = withProcessMetrics(host.metrics ?? new MetricsRegistry());
  const state: ServerState = {
    host,
    podListBody: new PodListBody(),
    nodeName: opts.nodeName,
    readOnly: true,
    debugging: false,
    systemLogs: false,
    debugHandlers: { profiling: false, flags: false },
    nodeLogsDir: DEFAULT_NODE_LOGS_DIR,
    nodeLogsSymlinkRoots: [],
    streamIdleTimeoutMs: 0,
    runtimeRequestTimeoutMs: 120_000,
    clock: opts.clock ?? realClock,
    streams: new StreamRegistry(),
    ...limitsFor(opts.limits, 'read-only'),
    metrics: registry,
    fineGrainedAuthz: false,
    httpMetrics: httpMetrics(registry),
  };
  return listen(http.createServer(), state, opts.address, opts.port, 'readonly');
}

function limitsFor(
  limits: ServerLimitOptions | undefined,
  listener: string,
): Pick<ServerState, 'sessions' | 'connections'> {
  const d = DEFAULT_SERVER_LIMITS;
  return {
    sessions: new StreamingSessions(limits?.maxStreamingSessions ?? d.maxStreamingSessions),
    connections: new ConnectionLimiter(
      limits?.maxConnectionsPerListener ?? d.maxConnectionsPerListener,
      listener,
    ),
  };
}

function listen(
  server: http.Server | https.Server,
  state: ServerState,
  address: string,
  port: number,
  serverType: 'readwrite' | 'readonly',
): Promise<KubeletServer> {
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  const closing = new AbortController();
  // Upgraded sockets leave the HTTP server's bookkeeping, so closeAllConnections() cannot end them.
  const upgraded = new Set<Duplex>();
  state.connections.attach(server);
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (state.connections.refuse(req, res)) return;
    void dispatch(state, serverType, req, res, undefined, closing.signal);
  });
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    // A response object on the raw socket, so refusals (401, 404, 400) are written by the same handlers.
    const res = new ServerResponse(req);
    res.assignSocket(socket as Socket);
    res.shouldKeepAlive = false;
    res.on('finish', () => {
      res.detachSocket(socket as Socket);
      socket.end();
    });
    socket.on('error', () => socket.destroy());
    if (state.connections.refuse(req, res)) return;
    void dispatch(state, serverType, req, res, { socket, head }, closing.signal);
  });
  server.on('clientError', (err: Error, socket: Duplex) => {
    log.v(4, 'Bad client connection', { err: err.message });
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  if (server instanceof https.Server) {
    server.on('tlsClientError', (err: Error) => log.v(4, 'TLS handshake failed', { err: err.message }));
  }
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      server.off('error', reject);
      server.on('error', (err: Error) => log.error('Kubelet server error', { err: err.message }));
      const bound = (server.address() as AddressInfo).port;
      log.info(serverType === 'readonly' ? 'Starting to listen read-only' : 'Starting to listen', {
        address,
        port: bound,
      });
      resolve({
        port: bound,
        close: () =>
          new Promise<void>((done) => {
            closing.abort(new Error('server closing'));
            state.streams.closeAll();
            server.close(() => done());
            server.closeAllConnections();
            for (const s of upgraded) s.destroy();
          }),
      });
    });
  });
}

async function dispatch(
  state: ServerState,
  serverType: 'readwrite' | 'readonly',
  req: http.IncomingMessage,
  res: http.ServerResponse,
  upgrade: { socket: Duplex; head: Buffer } | undefined,
  serverClosing: AbortSignal,
): Promise<void> {
  const parsed = parseRequestTarget(req.url ?? '/');
  const method = req.method ?? 'GET';
  const segments = 'error' in parsed ? [] : parsed.segments;
  const bucket = metricPath(segments);
  const labels = {
    method: METRIC_METHODS.has(method) ? method : 'other',
    path: bucket,
    server_type: serverType,
    // Upstream's map says "portforward" while the bucket is "portForward": port-forwards count as short, as there.
    long_running: String(LONG_RUNNING.has(bucket)),
  };
  const m = state.httpMetrics;
  m.requests.inc(labels);
  m.inflight.inc(labels);
  const stopTimer = m.duration.startTimer(labels, () => state.clock.now());
  // The request's signal is made when a handler first asks for it: most requests (/pods, /healthz,
  // /metrics) answer at once and never do, and an AbortSignal.any per request is not free.
  let signal: AbortSignal | undefined;
  const requestSignal = (): AbortSignal => {
    if (signal) return signal;
    const clientGone = new AbortController();
    const stream = upgrade?.socket ?? res;
    if (stream.closed) clientGone.abort(new Error('client went away'));
    else stream.once('close', () => clientGone.abort(new Error('client went away')));
    signal = AbortSignal.any([clientGone.signal, serverClosing]);
    return signal;
  };
  try {
    if ('error' in parsed) return sendText(res, 400, parsed.error);
    const ctx: RequestContext = {
      req,
      res,
      method,
      ...parsed,
      ...(upgrade ? { upgrade } : {}),
      get signal() {
        return requestSignal();
      },
    };
    if (!state.readOnly && !(await authenticateAndAuthorize(state, ctx))) return;
    await route(state, ctx);
  } catch (err) {
    log.error('Request failed', { method, path: req.url, err: errorMessage(err) });
    if (upgrade && !res.headersSent && !res.writableEnded) sendText(res, 500, 'internal server error');
    else if (!res.headersSent) sendText(res, 500, 'internal server error');
    else res.destroy();
  } finally {
    m.inflight.dec(labels);
    stopTimer();
  }
}

async function authenticateAndAuthorize(state: ServerState, ctx: RequestContext): Promise<boolean> {
  const authn = await state.authenticator!.authenticate(ctx.req, ctx.signal);
  if (!authn.authenticated) {
    log.v(2, 'Unauthorized', { path: ctx.path, reason: authn.reason });
    sendText(ctx.res, 401, `Unauthorized: ${authn.reason}`);
    return false;
  }
  ctx.user = authn.user;
  const attrs = nodeRequestAttributes(
    authn.user,
    ctx.method,
    ctx.path,
    state.nodeName,
    state.fineGrainedAuthz,
  );
  const decision = await authorizeRequest(state.authorizer!, attrs, ctx.signal);
  if (!decision.allowed) {
    sendText(ctx.res, decision.status, decision.message);
    return false;
  }
  return true;
}

function podList(items: Pod[]): PodList {
  return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items };
}

/** Upstream's debugging-disabled answer for /run/, /exec/, … on the read-only port or without enableDebuggingHandlers. */
const DEBUGGING_PATHS = new Set([
  'run',
  'exec',
  'attach',
  'portForward',
  'containerLogs',
  'runningpods',
  'debug',
  'logs',
]);

async function route(state: ServerState, ctx: RequestContext): Promise<void> {
  const { res, segments, method } = ctx;
  const root = segments[0] ?? '';
  const isGet = method === 'GET' || method === 'HEAD';

  if (root === 'healthz') {
    const url = new URL(`http://kubelet${ctx.path}?${ctx.query.toString()}`);
    if (
      await serveHealthz(
        state.host.healthChecks(),
        ctx.req,
        res,
        url,
        () => state.host.componentStatuses?.() ?? [],
      )
    )
      return;
    return notFound(res);
  }
  if (ctx.path === '/pods' || ctx.path === '/pods/') {
    if (method !== 'GET') return methodNotAllowed(res);
    return sendJsonBody(res, 200, state.podListBody.for(state.host.getPods()));
  }
  if (root === 'stats') return serveStats(state, ctx);
  if (root === 'metrics') return serveMetrics(state, ctx);

  if (!state.debugging) {
    if (DEBUGGING_PATHS.has(root) && segments.length > 1)
      return sendText(res, 405, 'Debug endpoints are disabled.\n');
    return notFound(res);
  }
  switch (root) {
    case 'run':
      return serveRun(state, ctx);
    case 'exec':
      return serveExec(state, ctx);
    case 'attach':
      return serveAttach(state, ctx);
    case 'portForward':
      return servePortForward(state, ctx);
    case 'containerLogs':
      return serveContainerLogs(state, ctx);
    case 'configz':
      if (ctx.path !== '/configz') return notFound(res);
      if (!isGet) return methodNotAllowed(res);
      return sendJson(res, 200, { kubeletconfig: state.host.configz?.() ?? {} });
    case 'runningpods':
      if (ctx.path !== '/runningpods/') return notFound(res);
      if (method !== 'GET') return methodNotAllowed(res);
      return sendJson(res, 200, podList(await state.host.getRunningPods()));
    case 'logs':
      if (!state.systemLogs) return sendText(res, 405, 'logs endpoint is disabled.\n');
      if (state.nodeLogQuery && (await serveNodeLogQuery(state, state.nodeLogQuery, ctx))) return;
      return serveNodeLogs(state, ctx);
    case 'node':
      // The node page shows what /pods, /containerLogs and the events show: a debugging handler, off with them.
      if (!state.host.nodePage) return notFound(res);
      return state.host.nodePage({ req: ctx.req, res, path: ctx.path, query: ctx.query, signal: ctx.signal });
    case 'debug':
      if (!(await serveDebug(state.debugHandlers, ctx))) return notFound(res);
      return;
    default:
      return notFound(res);
  }
}

async function serveStats(state: ServerState, ctx: RequestContext): Promise<void> {
  const provider = state.host.statsProvider;
  if (ctx.path !== '/stats/summary' || !provider) return notFound(ctx.res);
  if (ctx.method !== 'GET') return methodNotAllowed(ctx.res);
  // Upstream: only_cpu_and_memory=true skips the filesystems and network; any other value is "false".
  const only = ctx.query.get('only_cpu_and_memory') === 'true';
  let body: string;
  try {
    body = summaryJson(
      only ? await provider.getCPUAndMemorySummary(ctx.signal) : await provider.getSummary(ctx.signal),
    );
  } catch (err) {
    return sendText(ctx.res, 500, `Internal Error: ${errorMessage(err)}`);
  }
  ctx.res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  ctx.res.end(body);
}

async function serveMetrics(state: ServerState, ctx: RequestContext): Promise<void> {
  const { res } = ctx;
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return methodNotAllowed(res);
  let text: string;
  switch (ctx.path) {
    case '/metrics':
      text = await state.metrics.expose();
      break;
    case '/metrics/probes':
      text = await (state.host.probeMetrics ?? new MetricsRegistry()).expose();
      break;
    case '/metrics/resource':
      if (!state.host.statsProvider) return notFound(res);
      text = await resourceMetricsText(state.host.statsProvider, ctx.signal);
      break;
    case '/metrics/cadvisor':
      if (!state.host.cadvisor) return notFound(res);
      text = await cadvisorMetricsText(state.host.cadvisor, ctx.signal);
      break;
    default:
      return notFound(res);
  }
  res.writeHead(200, {
    'Content-Type': PROMETHEUS_TEXT_CONTENT_TYPE,
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(ctx.method === 'HEAD' ? undefined : text);
}
