/**
 * Bounds on what clients can hold open on the kubelet's listeners: open connections per listener
 * (10250 and the read-only port), and concurrent exec/attach/port-forward sessions. Upstream's kubelet
 * has neither (its http.Server accepts until the process runs out of descriptors, and its streaming
 * server counts nothing), so both are tskubelet's own: --max-connections-per-listener and
 * --max-streaming-sessions (docs/flags.md). Excess is answered with a reason, and the connections and
 * sessions already open go on being served.
 */
import type http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { logger } from '../lib/log.js';
import { sendText } from './request-context.js';

const log = logger('server');

/** Far above what a node's API server, metrics scrapers and kubectl users hold, far below the descriptor limit. */
export const DEFAULT_MAX_CONNECTIONS_PER_LISTENER = 4096;
/** A quarter of the connections, so a flood of sessions leaves room for /pods, /metrics and logs. */
export const DEFAULT_MAX_STREAMING_SESSIONS = 1024;

export interface ServerLimits {
  /** Open connections per listener; 0 for no bound. */
  maxConnectionsPerListener: number;
  /** Concurrent exec, attach and port-forward sessions per server; 0 for no bound. */
  maxStreamingSessions: number;
}

/** What a caller may set; anything unset (or undefined) takes its default. */
export type ServerLimitOptions = { [K in keyof ServerLimits]?: number | undefined };

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  maxConnectionsPerListener: DEFAULT_MAX_CONNECTIONS_PER_LISTENER,
  maxStreamingSessions: DEFAULT_MAX_STREAMING_SESSIONS,
};

/** How long a connection over the limit may take to send the request it is refused on. */
const REFUSED_CONNECTION_DEADLINE_MS = 5_000;
/** Refusals are logged at most this often: a flood must not become a flood of log lines. */
const WARN_INTERVAL_MS = 30_000;

/**
 * Counts the connections a listener serves. One over the limit is still taken (and its TLS handshake
 * made) so it can be told why: its request gets a 503, then it is closed. Beyond the limit plus a
 * margin for those refusals, connections are dropped at accept, before any work is spent on them.
 */
export class ConnectionLimiter {
  private open = 0;
  private refusedSinceWarning = 0;
  private lastWarningMs = 0;
  private readonly refused = new WeakSet<object>();

  constructor(
    private readonly limit: number,
    private readonly listener: string,
  ) {}

  attach(server: http.Server | https.Server): void {
    if (this.limit <= 0) return;
    server.maxConnections = this.limit + Math.max(64, Math.ceil(this.limit / 8));
    server.on('drop', () => this.noteRefusal());
    // An HTTPS request's socket is the TLS socket, which exists once the handshake is done.
    const event = server instanceof https.Server ? 'secureConnection' : 'connection';
    server.on(event, (socket: Socket) => this.admit(socket));
  }

  get openConnections(): number {
    return this.open;
  }

  private admit(socket: Socket): void {
    if (this.open >= this.limit) {
      this.refused.add(socket);
      socket.setTimeout(REFUSED_CONNECTION_DEADLINE_MS, () => socket.destroy());
      this.noteRefusal();
      return;
    }
    this.open++;
    socket.once('close', () => this.open--);
  }

  /** Answers a request that came on a connection over the limit (503, then close); false for the others. */
  refuse(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    if (!this.refused.has(req.socket)) return false;
    res.shouldKeepAlive = false;
    sendText(
      res,
      503,
      `too many open connections to the kubelet ${this.listener} listener (limit ${this.limit}); try again later\n`,
      { 'Retry-After': '1', Connection: 'close' },
    );
    return true;
  }

  private noteRefusal(): void {
    this.refusedSinceWarning++;
    const now = Date.now();
    if (now - this.lastWarningMs < WARN_INTERVAL_MS) return;
    log.warn('Refusing connections over the limit', {
      listener: this.listener,
      limit: this.limit,
      refused: this.refusedSinceWarning,
    });
    this.lastWarningMs = now;
    this.refusedSinceWarning = 0;
  }
}

/** Concurrent exec, attach and port-forward sessions of one server. */
export class StreamingSessions {
  private active = 0;

  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.active;
  }

  /**
   * Takes a session slot until signal aborts (the client's connection closed, or the server
   * stopped); false, and nothing taken, when every slot is in use.
   */
  hold(signal: AbortSignal): boolean {
    if (this.limit > 0 && this.active >= this.limit) return false;
    this.active++;
    const release = () => {
      this.active--;
    };
    if (signal.aborted) release();
    else signal.addEventListener('abort', release, { once: true });
    return true;
  }

  /** The answer to a session over the limit: 429, as upstream answers a runtime's ResourceExhausted. */
  refuse(res: http.ServerResponse): void {
    log.v(2, 'Refusing a streaming session over the limit', { limit: this.limit });
    sendText(
      res,
      429,
      `too many concurrent exec, attach and port-forward sessions on this kubelet (limit ${this.limit}); try again later`,
      { 'Retry-After': '10' },
    );
  }
}
