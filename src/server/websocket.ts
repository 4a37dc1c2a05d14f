/**
 * The kubelet's WebSocket endpoints, on the `ws` library: the opening handshake with the subprotocol
 * the caller chose, binary and text messages (text checked for UTF-8), ping/pong and the closing
 * handshake all come from `ws`. This file adapts it to what the stream handlers need: a message
 * callback, a close callback, backpressure in both directions, and a bound on what a peer can make
 * us buffer.
 */
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import type { Duplex } from 'node:stream';
import type * as Ws from 'ws';
import type { WebSocket, WebSocketServer } from 'ws';

// `ws` is loaded on the first WebSocket upgrade: only exec, attach and port-forward over WebSocket
// use it, and a kubelet that serves none need not hold its 1.5 MiB of heap. `require`, so that the
// synchronous upgrade path can load it; ws is CommonJS, the very module an `import` would give.
const require = createRequire(import.meta.url);

/** Larger than any single write a kubectl or a runtime makes; a bigger message is a protocol abuse (closed with 1009). */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

/** How long a peer has to answer our close frame before its socket is cut. */
const CLOSE_GRACE_MS = 2000;

/** True for a request asking to switch to WebSocket (wsstream.IsWebSocketRequest). */
export function isWebSocketRequest(req: IncomingMessage): boolean {
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return false;
  return /(^|,)\s*upgrade\s*($|,)/i.test(req.headers.connection ?? '');
}

/** The subprotocols a client offers, in its order. */
export function offeredProtocols(req: IncomingMessage): string[] {
  const raw = req.headers['sec-websocket-protocol'];
  if (raw === undefined) return [];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export interface WebSocketHandlers {
  onMessage(data: Buffer, binary: boolean): void;
  /** The peer closed (with its close code), or the connection broke (code 1006). */
  onClose(code: number): void;
}

/** One accepted WebSocket, as the stream handlers use it. */
export class WebSocketConnection {
  private closeSent = false;

  constructor(
    private readonly ws: WebSocket,
    /** The upgraded socket under ws: its 'drain' is when a send that returned false may go on. */
    readonly socket: Duplex,
    readonly protocol: string,
    handlers: WebSocketHandlers,
  ) {
    ws.on('message', (data: Buffer, isBinary: boolean) => handlers.onMessage(data, isBinary));
    ws.once('close', (code: number) => handlers.onClose(code));
    // A protocol error (bad frame, invalid UTF-8 in a text message, a message over the cap): ws
    // has already sent the close frame with the right code; 'close' follows and reports it.
    ws.on('error', () => undefined);
  }

  get isOpen(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  /** Sends one message; false when the socket's buffer is full (wait for 'drain' on socket). */
  send(data: Buffer, binary = true): boolean {
    if (!this.isOpen) return true;
    this.ws.send(data, { binary });
    return !this.socket.writableNeedDrain;
  }

  /** Starts the closing handshake; the socket ends when the peer answers or after a short grace. */
  close(code = 1000, reason = ''): void {
    if (this.closeSent || !this.isOpen) return;
    this.closeSent = true;
    this.ws.close(code, reason);
    // ws waits 30 s for the peer's close frame; a stream's peer gets far less.
    const timer = setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS);
    timer.unref();
    this.ws.once('close', () => clearTimeout(timer));
  }

  destroy(): void {
    this.ws.terminate();
  }

  /** Stops reading the peer's messages until resume(). */
  pause(): void {
    this.ws.pause();
  }

  resume(): void {
    this.ws.resume();
  }
}

// One server object for every upgrade: it holds only options (no listening socket of its own).
let server: WebSocketServer | undefined;
let chosenProtocol = '';

function upgradeServer(): WebSocketServer {
  server ??= new (require('ws') as typeof Ws).WebSocketServer({
    noServer: true,
    maxPayload: MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
    clientTracking: false,
    // handleUpgrade runs this synchronously for the upgrade being answered, so the module-level
    // value is the one acceptWebSocket set just before. '' answers with no subprotocol header.
    handleProtocols: () => chosenProtocol || false,
  });
  return server;
}

/**
 * Completes the opening handshake on socket with the given subprotocol ('' for none). Returns
 * undefined after ws answered with a 4xx when the request is not a valid WebSocket handshake.
 */
export function acceptWebSocket(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  protocol: string,
  handlers: WebSocketHandlers,
): WebSocketConnection | undefined {
  let accepted: WebSocket | undefined;
  chosenProtocol = protocol;
  try {
    // Without a verifyClient hook, ws completes (or refuses) the handshake before handleUpgrade returns.
    upgradeServer().handleUpgrade(req, socket, head, (ws) => (accepted = ws));
  } finally {
    chosenProtocol = '';
  }
  if (!accepted) return undefined;
  if ('setNoDelay' in socket && typeof socket.setNoDelay === 'function') socket.setNoDelay(true);
  return new WebSocketConnection(accepted, socket, protocol, handlers);
}
