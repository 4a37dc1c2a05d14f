/**
 * The client side of SPDY/3.1 framing as Kubernetes streams use it (moby/spdystream, which CRI
 * runtimes' streaming servers speak): SYN_STREAM / SYN_REPLY with zlib-compressed header blocks
 * (one compression context per direction, primed with the SPDY/3 dictionary), DATA frames with FIN
 * for half-close, RST_STREAM, PING echo, GOAWAY. Like spdystream, no per-stream flow control: TCP's
 * backpressure is the only flow control, so a slow consumer pauses the whole connection.
 */
import { EventEmitter } from 'node:events';
import { Duplex } from 'node:stream';
import type * as Zlib from 'node:zlib';
import { lazyBuiltin } from '../lib/lazy-builtin.js';

// Only a session that is opened needs zlib.
const zlib = lazyBuiltin<typeof Zlib>('node:zlib');

const SPDY_VERSION = 3;
const TYPE_SYN_STREAM = 1;
const TYPE_SYN_REPLY = 2;
const TYPE_RST_STREAM = 3;
const TYPE_PING = 6;
const TYPE_GOAWAY = 7;
const FLAG_FIN = 0x01;
const RST_CANCEL = 5;
/** Frames are at most 16 MiB (24-bit length); data is sent in chunks well below that. */
const MAX_DATA_CHUNK_BYTES = 32 * 1024;
const MAX_FRAME_BYTES = 16 * 1024 * 1024 - 1;
/** How long frames still being decoded may hold the close of a connection whose peer hung up. */
const CLOSE_DRAIN_MS = 1000;

/** The SPDY/3 header compression dictionary (draft-mbelshe-httpbis-spdy-00, 2.6.10.1): length-prefixed names, then a text tail. */
const DICTIONARY_WORDS = [
  'options', 'head', 'post', 'put', 'delete', 'trace', 'accept', 'accept-charset', 'accept-encoding',
  'accept-language', 'accept-ranges', 'age', 'allow', 'authorization', 'cache-control', 'connection',
  'content-base', 'content-encoding', 'content-language', 'content-length', 'content-location',
  'content-md5', 'content-range', 'content-type', 'date', 'etag', 'expect', 'expires', 'from', 'host',
  'if-match', 'if-modified-since', 'if-none-match', 'if-range', 'if-unmodified-since', 'last-modified',
  'location', 'max-forwards', 'pragma', 'proxy-authenticate', 'proxy-authorization', 'range', 'referer',
  'retry-after', 'server', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'user-agent', 'vary', 'via',
  'warning', 'www-authenticate', 'method', 'get', 'status', '200 OK', 'version', 'HTTP/1.1', 'url',
  'public', 'set-cookie', 'keep-alive', 'origin',
]; // prettier-ignore
const DICTIONARY_TAIL =
  '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505' +
  '203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized' +
  '403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable' +
  'Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT' +
  'chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,' +
  'text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';

export const SPDY_DICTIONARY: Buffer = Buffer.concat([
  ...DICTIONARY_WORDS.flatMap((w) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(w.length);
    return [len, Buffer.from(w, 'latin1')];
  }),
  Buffer.from(DICTIONARY_TAIL, 'latin1'),
]);

export type SpdyHeaders = Record<string, string>;

/** GOAWAY status for a peer that broke the framing. */
export const GOAWAY_PROTOCOL_ERROR = 1;

/** The least payload each SPDY/3 control frame type carries (types 1-9; 5, NOOP, is gone from SPDY/3). */
const MIN_CONTROL_PAYLOAD: Record<number, number> = { 1: 10, 2: 4, 3: 8, 4: 4, 6: 4, 7: 8, 8: 4, 9: 8 };

/**
 * Why an 8-byte frame header cannot begin a SPDY/3 frame (a version other than 3, an unknown control
 * type, a payload too short for its type, data on stream 0), or undefined when it can.
 */
export function spdyFrameHeaderProblem(header: Buffer): string | undefined {
  const length = header.readUInt32BE(4) & 0xffffff;
  if ((header[0]! & 0x80) === 0) {
    return (header.readUInt32BE(0) & 0x7fffffff) === 0 ? 'SPDY data frame on stream 0' : undefined;
  }
  const version = header.readUInt16BE(0) & 0x7fff;
  if (version !== SPDY_VERSION) return `unsupported SPDY version ${version}`;
  const type = header.readUInt16BE(2);
  const min = MIN_CONTROL_PAYLOAD[type];
  if (min === undefined) return `invalid SPDY control frame type ${type}`;
  if (length < min) return `SPDY control frame type ${type} too short (${length} bytes)`;
  return undefined;
}

/**
 * Follows the frame boundaries of a SPDY/3 byte stream fed in arbitrary chunks, without keeping the
 * payloads, and says what is wrong at the first header that cannot begin a frame.
 */
export class SpdyFrameChecker {
  private header = Buffer.alloc(0);
  /** Payload bytes of the current frame still to skip. */
  private skip = 0;
  private problem: string | undefined;

  /** The problem found so far (it stays), or undefined while the stream is well framed. */
  push(chunk: Buffer): string | undefined {
    let off = 0;
    while (this.problem === undefined && off < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - off);
        this.skip -= n;
        off += n;
        continue;
      }
      const need = 8 - this.header.length;
      this.header = Buffer.concat([this.header, chunk.subarray(off, off + need)]);
      off += Math.min(need, chunk.length - off);
      if (this.header.length < 8) break;
      this.problem = spdyFrameHeaderProblem(this.header);
      this.skip = this.header.readUInt32BE(4) & 0xffffff;
      this.header = Buffer.alloc(0);
    }
    return this.problem;
  }
}

/** GOAWAY (last good stream 0) with status, the answer SPDY gives a peer before closing. */
export function goAwayFrame(status: number): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(0, 0);
  payload.writeUInt32BE(status, 4);
  return controlFrame(TYPE_GOAWAY, 0, payload);
}

/** Runs one zlib operation at a time on a long-lived context, collecting what each flush produces. */
class ZlibContext {
  private chunks: Buffer[] = [];
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly stream: Zlib.Deflate | Zlib.Inflate) {
    stream.on('data', (c: Buffer) => this.chunks.push(c));
    stream.on('error', () => undefined);
  }

  process(input: Buffer): Promise<Buffer> {
    const run = () =>
      new Promise<Buffer>((resolve, reject) => {
        // A stream that failed once (bad compressed data) never calls back again: fail at once instead.
        if (this.stream.destroyed) return reject(new Error('spdy header compression context is broken'));
        // Nothing to inflate: the context is unchanged (and a flush with no input may never call back).
        if (input.length === 0) return resolve(Buffer.alloc(0));
        const onError = (err: Error) => reject(err);
        this.stream.once('error', onError);
        this.stream.write(input);
        this.stream.flush(zlib().constants.Z_SYNC_FLUSH, () => {
          this.stream.off('error', onError);
          const out = Buffer.concat(this.chunks);
          this.chunks = [];
          resolve(out);
        });
      });
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }

  close(): void {
    this.stream.close();
  }
}

function encodeHeaderBlock(headers: SpdyHeaders): Buffer {
  const parts: Buffer[] = [];
  const count = Buffer.alloc(4);
  const entries = Object.entries(headers);
  count.writeUInt32BE(entries.length);
  parts.push(count);
  for (const [name, value] of entries) {
    for (const s of [name.toLowerCase(), value]) {
      const b = Buffer.from(s, 'utf8');
      const len = Buffer.alloc(4);
      len.writeUInt32BE(b.length);
      parts.push(len, b);
    }
  }
  return Buffer.concat(parts);
}

function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  const out: SpdyHeaders = {};
  if (block.length < 4) return out;
  const n = block.readUInt32BE(0);
  let off = 4;
  const take = (): string | undefined => {
    if (off + 4 > block.length) return undefined;
    const len = block.readUInt32BE(off);
    off += 4;
    if (off + len > block.length) return undefined;
    const s = block.toString('utf8', off, off + len);
    off += len;
    return s;
  };
  for (let i = 0; i < n; i++) {
    const name = take();
    const value = take();
    if (name === undefined || value === undefined) break;
    out[name] = value;
  }
  return out;
}

function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | SPDY_VERSION, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([head, payload]);
}

function dataFrame(streamId: number, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([head, payload]);
}

/** One SPDY stream: writes go out as DATA frames, end() sends FIN; reads are the peer's DATA. */
export class SpdyStream extends Duplex {
  /** The peer's SYN_REPLY headers, once they came. */
  replyHeaders: SpdyHeaders | undefined;
  private remoteClosed = false;

  constructor(
    readonly id: number,
    readonly headers: SpdyHeaders,
    private readonly connection: SpdyConnection,
  ) {
    super({ allowHalfOpen: true });
  }

  /** The RST_STREAM status the peer reset this stream with, if it did. */
  resetStatus: number | undefined;

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.resetStatus !== undefined) return cb();
    this.connection.sendData(this.id, chunk, false).then(() => cb(), cb);
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (this.resetStatus !== undefined) return cb();
    this.connection.sendData(this.id, Buffer.alloc(0), true).then(() => cb(), cb);
  }

  /** @internal */
  resetByPeer(status: number): void {
    this.resetStatus = status;
    this.remoteEnd();
    this.end();
    this.emit('reset', status);
  }

  override _read(): void {
    this.connection.resumeReading();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.connection.forget(this.id, !this.remoteClosed && this.resetStatus === undefined);
    cb(err);
  }

  /** @internal */
  pushData(data: Buffer, fin: boolean): void {
    if (data.length > 0 && !this.push(data)) this.connection.pauseReading();
    if (fin) this.remoteEnd();
  }

  /** @internal */
  remoteEnd(): void {
    if (this.remoteClosed) return;
    this.remoteClosed = true;
    this.push(null);
  }
}

/**
 * A SPDY client connection over an upgraded socket. Streams it opens have odd ids; streams the server
 * opens are refused (Kubernetes servers never open any).
 */
export class SpdyConnection extends EventEmitter {
  private nextStreamId = 1;
  private readonly streams = new Map<number, SpdyStream>();
  private readonly compressor = new ZlibContext(zlib().createDeflate({ dictionary: SPDY_DICTIONARY }));
  private readonly decompressor = new ZlibContext(zlib().createInflate({ dictionary: SPDY_DICTIONARY }));
  /** Frames leave in the order they were asked for, header compression (async) included. */
  private sendQueue: Promise<unknown> = Promise.resolve();
  private inbound: Buffer = Buffer.alloc(0);
  private processing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    readonly socket: Duplex,
    head: Buffer = Buffer.alloc(0),
  ) {
    super();
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    // Frames still being decoded when the peer hangs up (its last status, say) are delivered first.
    // Bounded: frames that never finish decoding must not keep the connection from closing.
    socket.on('close', () => {
      const timer = setTimeout(() => this.shutdown(), CLOSE_DRAIN_MS);
      void this.processing.then(() => {
        clearTimeout(timer);
        this.shutdown();
      });
    });
    socket.on('error', (err: Error) => {
      this.reportError(err);
      socket.destroy();
    });
    if (head.length > 0) this.onData(head);
  }

  /** Opens a stream with the given headers (SYN_STREAM); resolves once the frame is written. */
  openStream(headers: SpdyHeaders): SpdyStream {
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    const stream = new SpdyStream(id, headers, this);
    this.streams.set(id, stream);
    this.enqueue(async () => {
      const block = await this.compressor.process(encodeHeaderBlock(headers));
      const payload = Buffer.alloc(10);
      payload.writeUInt32BE(id & 0x7fffffff, 0);
      payload.writeUInt32BE(0, 4); // associated-to stream: none
      payload.writeUInt16BE(0, 8); // priority 0, slot 0
      return controlFrame(TYPE_SYN_STREAM, 0, Buffer.concat([payload, block]));
    });
    return stream;
  }

  /** @internal */
  sendData(id: number, data: Buffer, fin: boolean): Promise<void> {
    if (this.closed) return Promise.reject(new Error('spdy connection closed'));
    let last: Promise<void> = Promise.resolve();
    if (data.length === 0) return this.enqueue(async () => dataFrame(id, fin ? FLAG_FIN : 0, data));
    for (let off = 0; off < data.length; off += MAX_DATA_CHUNK_BYTES) {
      const chunk = data.subarray(off, off + MAX_DATA_CHUNK_BYTES);
      const isLast = off + MAX_DATA_CHUNK_BYTES >= data.length;
      last = this.enqueue(async () => dataFrame(id, fin && isLast ? FLAG_FIN : 0, chunk));
    }
    return last;
  }

  /** @internal: a stream destroyed on our side; a RST tells the peer when it had not finished. */
  forget(id: number, reset: boolean): void {
    if (!this.streams.delete(id) || !reset || this.closed) return;
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(id & 0x7fffffff, 0);
    payload.writeUInt32BE(RST_CANCEL, 4);
    void this.enqueue(async () => controlFrame(TYPE_RST_STREAM, 0, payload)).catch(() => undefined);
  }

  pauseReading(): void {
    this.socket.pause();
  }

  resumeReading(): void {
    if (!this.closed) this.socket.resume();
  }

  /** Closes the connection and every stream. */
  close(): void {
    this.socket.destroy();
    this.shutdown();
  }

  private enqueue(make: () => Promise<Buffer>): Promise<void> {
    const p = this.sendQueue.then(async () => {
      if (this.closed) throw new Error('spdy connection closed');
      const bytes = await make();
      if (this.socket.write(bytes)) return;
      // Wait for the socket to drain, so a slow peer slows our writers instead of filling memory.
      await new Promise<void>((resolve) => {
        const done = () => {
          this.socket.off('drain', done);
          this.socket.off('close', done);
          resolve();
        };
        this.socket.once('drain', done);
        this.socket.once('close', done);
      });
    });
    this.sendQueue = p.catch(() => undefined);
    return p;
  }

  private onData(chunk: Buffer): void {
    this.inbound = this.inbound.length === 0 ? chunk : Buffer.concat([this.inbound, chunk]);
    // Frames are handled strictly in order (header blocks share one decompression context).
    this.processing = this.processing
      .then(() => this.drainFrames())
      .catch((err: unknown) => {
        this.reportError(err instanceof Error ? err : new Error(String(err)));
        this.close();
      });
  }

  private async drainFrames(): Promise<void> {
    while (!this.closed && this.inbound.length >= 8) {
      const length = this.inbound.readUInt32BE(4) & 0xffffff;
      if (length > MAX_FRAME_BYTES) throw new Error('spdy frame too large');
      // A peer that breaks the framing is not waited on: the connection closes at once.
      const problem = spdyFrameHeaderProblem(this.inbound.subarray(0, 8));
      if (problem) throw new Error(problem);
      if (this.inbound.length < 8 + length) return;
      const frame = this.inbound.subarray(0, 8 + length);
      this.inbound = this.inbound.subarray(8 + length);
      await this.handleFrame(frame);
    }
  }

  private async handleFrame(frame: Buffer): Promise<void> {
    const flags = frame[4]!;
    const payload = frame.subarray(8);
    if ((frame[0]! & 0x80) === 0) {
      const id = frame.readUInt32BE(0) & 0x7fffffff;
      this.streams.get(id)?.pushData(Buffer.from(payload), (flags & FLAG_FIN) !== 0);
      return;
    }
    const type = frame.readUInt16BE(2);
    switch (type) {
      case TYPE_SYN_REPLY: {
        const id = payload.readUInt32BE(0) & 0x7fffffff;
        const headers = decodeHeaderBlock(await this.decompressor.process(payload.subarray(4)));
        const stream = this.streams.get(id);
        if (stream) {
          stream.replyHeaders = headers;
          stream.emit('reply', headers);
          if ((flags & FLAG_FIN) !== 0) stream.remoteEnd();
        }
        return;
      }
      case TYPE_SYN_STREAM: {
        // Keep the decompression context in step even for a stream we refuse.
        await this.decompressor.process(payload.subarray(10));
        const id = payload.readUInt32BE(0) & 0x7fffffff;
        const rst = Buffer.alloc(8);
        rst.writeUInt32BE(id, 0);
        rst.writeUInt32BE(3, 4); // REFUSED_STREAM
        await this.enqueue(async () => controlFrame(TYPE_RST_STREAM, 0, rst));
        return;
      }
      case TYPE_RST_STREAM: {
        const id = payload.readUInt32BE(0) & 0x7fffffff;
        const stream = this.streams.get(id);
        if (stream) {
          this.streams.delete(id);
          // The peer is done with the stream (a command that exited resets the stdin it no longer
          // reads): what it sent stays readable, what we would still send is dropped.
          stream.resetByPeer(payload.readUInt32BE(4));
        }
        return;
      }
      case TYPE_PING:
        await this.enqueue(async () => controlFrame(TYPE_PING, 0, Buffer.from(payload)));
        return;
      case TYPE_GOAWAY:
        this.emit('goaway');
        return;
      case 8: // HEADERS: carries nothing Kubernetes streams use, but shares the compression context.
        await this.decompressor.process(payload.subarray(4));
        return;
      default:
        // SETTINGS, WINDOW_UPDATE and others: nothing to do for a client without flow control.
        return;
    }
  }

  /** 'error' only for someone listening: an unheard 'error' would throw out of a socket callback. */
  private reportError(err: Error): void {
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }

  private shutdown(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.streams.values()) s.remoteEnd();
    this.streams.clear();
    this.compressor.close();
    this.decompressor.close();
    this.emit('close');
  }
}
