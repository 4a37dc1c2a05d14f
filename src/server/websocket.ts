/**
 * The server side of RFC 6455, as much as the kubelet's streams need: the opening handshake with a
 * chosen subprotocol, binary and text messages (fragmented or not), ping/pong and the closing
 * handshake. Client frames must be masked; messages are capped so a peer cannot make us buffer
 * without bound. Backpressure: send() reports whether the socket wants a pause, and the reader pauses
 * the socket while the consumer asks it to.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** Larger than any single write a kubectl or a runtime makes; a bigger message is a protocol abuse. */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

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

export class WebSocketConnection {
  private buffer: Buffer = Buffer.alloc(0);
  private fragments: Buffer[] = [];
  private fragmentsBytes = 0;
  private fragmentBinary = true;
  private closed = false;
  private closeSent = false;

  constructor(
    readonly socket: Duplex,
    readonly protocol: string,
    private readonly handlers: WebSocketHandlers,
    head: Buffer,
  ) {
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('close', () => this.finish(1006));
    socket.on('error', () => socket.destroy());
    if (head.length > 0) this.receive(head);
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  /** Sends one message; false when the socket's buffer is full (wait for 'drain' on socket). */
  send(data: Buffer, binary = true): boolean {
    if (this.closed || this.closeSent) return true;
    return this.socket.write(frame(binary ? OP_BINARY : OP_TEXT, data));
  }

  /** Starts the closing handshake; the socket ends when the peer answers or after a short grace. */
  close(code = 1000, reason = ''): void {
    if (this.closed || this.closeSent) return;
    this.closeSent = true;
    const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
    payload.writeUInt16BE(code, 0);
    payload.write(reason, 2);
    this.socket.write(frame(OP_CLOSE, payload));
    // A peer that never answers the close must not keep the socket: end it ourselves soon after.
    const t = setTimeout(() => this.socket.destroy(), 2000);
    t.unref();
    this.socket.once('close', () => clearTimeout(t));
    this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  private finish(code: number): void {
    if (this.closed) return;
    this.closed = true;
    this.handlers.onClose(code);
  }

  private fail(code: number, reason: string): void {
    this.close(code, reason);
    this.finish(code);
  }

  private receive(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    while (!this.closed) {
      const f = parseFrame(this.buffer);
      if (f === undefined) return;
      if ('error' in f) return this.fail(1002, f.error);
      this.buffer = this.buffer.subarray(f.length);
      this.handleFrame(f.fin, f.opcode, f.payload);
    }
  }

  private handleFrame(fin: boolean, opcode: number, payload: Buffer): void {
    switch (opcode) {
      case OP_PING:
        if (!this.closeSent) this.socket.write(frame(OP_PONG, payload));
        return;
      case OP_PONG:
        return;
      case OP_CLOSE: {
        const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
        if (!this.closeSent) {
          this.closeSent = true;
          this.socket.write(frame(OP_CLOSE, payload.subarray(0, 2)));
          this.socket.end();
        }
        return this.finish(code);
      }
      case OP_TEXT:
      case OP_BINARY:
        if (this.fragments.length > 0) return this.fail(1002, 'new message inside a fragmented one');
        if (fin) return this.handlers.onMessage(payload, opcode === OP_BINARY);
        this.fragmentBinary = opcode === OP_BINARY;
        this.addFragment(payload);
        return;
      case OP_CONTINUATION: {
        if (this.fragments.length === 0) return this.fail(1002, 'continuation without a message');
        if (!this.addFragment(payload)) return;
        if (!fin) return;
        const whole = Buffer.concat(this.fragments);
        this.fragments = [];
        this.fragmentsBytes = 0;
        return this.handlers.onMessage(whole, this.fragmentBinary);
      }
      default:
        return this.fail(1002, `unknown opcode ${opcode}`);
    }
  }

  private addFragment(payload: Buffer): boolean {
    this.fragmentsBytes += payload.length;
    if (this.fragmentsBytes > MAX_MESSAGE_BYTES) {
      this.fail(1009, 'message too big');
      return false;
    }
    this.fragments.push(payload);
    return true;
  }
}

type ParsedFrame = { fin: boolean; opcode: number; payload: Buffer; length: number } | { error: string };

/** One client frame from the start of buf, or undefined when it has not all arrived. */
function parseFrame(buf: Buffer): ParsedFrame | undefined {
  if (buf.length < 2) return undefined;
  const b0 = buf[0]!;
  const b1 = buf[1]!;
  if ((b0 & 0x70) !== 0) return { error: 'reserved bits set' };
  if ((b1 & 0x80) === 0) return { error: 'client frames must be masked' };
  let len = b1 & 0x7f;
  let offset = 2;
  if (len === 126) {
    if (buf.length < 4) return undefined;
    len = buf.readUInt16BE(2);
    offset = 4;
  } else if (len === 127) {
    if (buf.length < 10) return undefined;
    const big = buf.readBigUInt64BE(2);
    if (big > BigInt(MAX_MESSAGE_BYTES)) return { error: 'frame too big' };
    len = Number(big);
    offset = 10;
  }
  const opcode = b0 & 0x0f;
  if (opcode >= 0x8 && (len > 125 || (b0 & 0x80) === 0)) return { error: 'bad control frame' };
  if (buf.length < offset + 4 + len) return undefined;
  const mask = buf.subarray(offset, offset + 4);
  const payload = Buffer.from(buf.subarray(offset + 4, offset + 4 + len));
  for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i & 3]!;
  return { fin: (b0 & 0x80) !== 0, opcode, payload, length: offset + 4 + len };
}

/** A server frame (never masked). */
function frame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  let header: Buffer;
  if (len < 126) {
    header = Buffer.from([0x80 | opcode, len]);
  } else if (len < 65536) {
    header = Buffer.alloc(4);
    header[0] = 0x80 | opcode;
    header[1] = 126;
    header.writeUInt16BE(len, 2);
  } else {
    header = Buffer.alloc(10);
    header[0] = 0x80 | opcode;
    header[1] = 127;
    header.writeBigUInt64BE(BigInt(len), 2);
  }
  return Buffer.concat([header, payload]);
}

/**
 * Completes the opening handshake on socket with the given subprotocol ('' for none). Returns
 * undefined after answering 400 when the request is not a valid WebSocket handshake.
 */
export function acceptWebSocket(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  protocol: string,
  handlers: WebSocketHandlers,
  extraHeaders: Record<string, string> = {},
): WebSocketConnection | undefined {
  const key = req.headers['sec-websocket-key'];
  const version = req.headers['sec-websocket-version'];
  if (typeof key !== 'string' || Buffer.from(key, 'base64').length !== 16 || version !== '13') {
    socket.end(
      'HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n' +
        'invalid websocket handshake\n',
    );
    return undefined;
  }
  const accept = createHash('sha1')
    .update(key + GUID)
    .digest('base64');
  const lines = [
    'HTTP/1.1 101 Switching Protocols',
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Accept: ${accept}`,
    ...(protocol !== '' ? [`Sec-WebSocket-Protocol: ${protocol}`] : []),
    ...Object.entries(extraHeaders).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.write(lines.join('\r\n') + '\r\n\r\n');
  if ('setNoDelay' in socket && typeof socket.setNoDelay === 'function') socket.setNoDelay(true);
  return new WebSocketConnection(socket, protocol, handlers, head);
}
