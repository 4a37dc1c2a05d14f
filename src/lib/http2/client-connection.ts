/**
 * An HTTP/2 client connection (RFC 9113) over one socket, for request/response exchanges: the CRI's
 * gRPC unary calls (src/cri/grpc-unary-channel.ts, a unix socket) and the API client's calls and
 * watches (src/k8s/http2-transport.ts, over TLS). Hand-written rather than
 * node:http2 because node's stream is most of a call's CPU however small the call (a Duplex stream,
 * an AsyncResource whose bind() builds two deprecation wrappers, header validation, listeners) and a
 * pod start makes a dozen calls or more: against containerd a call through the unary channel costs
 * the kubelet about 88 µs of CPU over this connection and 187 µs over node:http2 (bench/cri-call.ts,
 * docs/benchmarks.md). Here a request is two frames in one write and its answer a few callbacks.
 *
 * What it does: the preface and SETTINGS (push off, a large receive window), HEADERS/CONTINUATION
 * with HPACK, DATA with flow control both ways, RST_STREAM, PING answers, GOAWAY (streams above the
 * server's last one fail, the rest finish), and a connection error (GOAWAY, then the socket closed)
 * on anything malformed; optionally health checks (PING after a quiet spell) and closing when idle.
 * What it leaves out: server push, priorities, upgrades; TLS is the caller's, who hands it the socket.
 */
import type { Socket } from 'node:net';
import { HpackDecoder, hpackEncode, isHpackError } from './hpack.js';
import {
  http2StreamError,
  type GrpcHttp2Connection,
  type Http2StreamError,
  type StreamHandler,
} from './stream-handler.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
// HPACK's dynamic table size update to 0 (RFC 7541 §6.3): the encoder never uses the table.
const TABLE_SIZE_UPDATE_TO_ZERO = Buffer.from([0x20]);

const enum FrameType {
  Data = 0x0,
  Headers = 0x1,
  Priority = 0x2,
  RstStream = 0x3,
  Settings = 0x4,
  PushPromise = 0x5,
  Ping = 0x6,
  GoAway = 0x7,
  WindowUpdate = 0x8,
  Continuation = 0x9,
}

const FLAG_END_STREAM = 0x1;
const FLAG_ACK = 0x1;
const FLAG_END_HEADERS = 0x4;
const FLAG_PADDED = 0x8;
const FLAG_PRIORITY = 0x20;

const SETTINGS_HEADER_TABLE_SIZE = 0x1;
const SETTINGS_ENABLE_PUSH = 0x2;
const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
const SETTINGS_MAX_FRAME_SIZE = 0x5;

/** RFC 9113 §7 error codes used here. */
export const Http2ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  ENHANCE_YOUR_CALM: 0xb,
} as const;

const DEFAULT_WINDOW = 65_535;
const DEFAULT_MAX_FRAME_SIZE = 16_384;
const MAX_WINDOW = 2 ** 31 - 1;
const MAX_STREAM_ID = 2 ** 31 - 1;
// The largest header block taken in (HEADERS and its CONTINUATIONs), grpc-go's own default limit: a
// server that sends more is broken, and the block is not kept growing.
const MAX_HEADER_BLOCK_BYTES = 16 * 1024 * 1024;
// And the most frames it may come in: what the largest block needs at the smallest frame size. Each
// frame's part is kept until the block ends, so 1-octet frames would cost the heap ~100x the block.
const MAX_HEADER_BLOCK_FRAMES = MAX_HEADER_BLOCK_BYTES / DEFAULT_MAX_FRAME_SIZE;
// How long a closing socket may take to hand its last bytes (a GOAWAY) to a server that is not
// reading before it is destroyed: without it such a socket would stay open for good.
const CLOSE_GRACE_MS = 1000;
// A server that reads nothing more (hung, yet connected) would have every later request, each timed
// out and reset in turn, held in the socket's buffer for as long as the connection lasts: past this
// many unsent octets the connection is given up, and with it the buffer. A live server's reader takes
// frames as they come (only DATA waits for its windows), so a burst of requests stays far below it.
const MAX_UNSENT_BYTES = 4 * 1024 * 1024;

export interface ClientConnectionOptions {
  /** The receive window of each stream and of the connection, which sets how fast a large answer comes. */
  windowBytes: number;
  /**
   * Checked every readIdleMs (client-go's HTTP2_READ_IDLE_TIMEOUT_SECONDS, 30 s): when nothing came
   * from the server since the last check the connection sends a PING and fails when it is not answered
   * within pingTimeoutMs (HTTP2_PING_TIMEOUT_SECONDS, 15 s), so a connection that died silently (a
   * peer gone without a FIN) fails its streams rather than leave them waiting; ping false sends none
   * (client-go with HTTP2_READ_IDLE_TIMEOUT_SECONDS=0). With closeWhenIdle, a connection that carried
   * no stream since the last check is closed instead. Absent: neither.
   */
  healthCheck?: { readIdleMs: number; pingTimeoutMs: number; closeWhenIdle: boolean; ping?: boolean };
}

interface Stream {
  id: number;
  handler: StreamHandler;
  /** How much more the server lets us send on it. */
  sendWindow: number;
  /** The request's body still to send (flow control held it back); undefined once all is sent. */
  pending: Buffer | undefined;
  /** Octets received since the stream's window was last topped up. */
  unacked: number;
}

/**
 * One connection; the caller makes the socket and a new connection when this one reports `onClose`
 * or stops taking streams (`acceptsStreams`: after GOAWAY, or when stream IDs run out).
 */
export class Http2ClientConnection implements GrpcHttp2Connection {
  private readonly streams = new Map<number, Stream>();
  private readonly decoder = new HpackDecoder();
  private nextStreamId = 1;
  private sendWindow = DEFAULT_WINDOW;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrameSize = DEFAULT_MAX_FRAME_SIZE;
  private peerMaxConcurrentStreams = Infinity;
  // Requests beyond the server's concurrency limit, sent as streams end.
  private readonly queued: { headers: Buffer; body: Buffer; handler: StreamHandler; id: number }[] = [];
  private connectionUnacked = 0;
  private inbox: Buffer | undefined;
  // A header block that continues in CONTINUATION frames.
  private headerBlock: { streamId: number; parts: Buffer[]; bytes: number; endStream: boolean } | undefined;
  private goAwayReceived = false;
  private closedWith: Http2StreamError | undefined;
  // Frames written since the last flush, which sends them in one socket write (see write()).
  private readonly unsent: Buffer[] = [];
  private unsentBytes = 0;
  private flushScheduled = false;
  private readonly flushNow = (): void => this.flush();
  // The server changed SETTINGS_HEADER_TABLE_SIZE: the next header block must open with a table size
  // update (RFC 7541 §4.2), which nghttp2, for one, insists on when the size went down.
  private tableSizeUpdateDue = false;
  private readonly windowBytes: number;
  // Health checks: whether anything came, or any stream was asked for, since the last check (a flag
  // costs less per frame than a timer reset), and the PING waiting for its answer.
  private receivedSinceCheck = false;
  private requestedSinceCheck = false;
  private readonly healthTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;

  /** Called once, when the connection can carry nothing more (closed, failed, or drained after GOAWAY). */
  onClose: ((error: Http2StreamError | undefined) => void) | undefined;

  constructor(
    private readonly socket: Socket,
    options: ClientConnectionOptions,
  ) {
    this.windowBytes = Math.min(MAX_WINDOW, Math.max(DEFAULT_WINDOW, options.windowBytes));
    socket.setNoDelay?.(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', (err) => this.fail(http2StreamError(`connection error: ${err.message}`)));
    socket.on('close', () => this.fail(http2StreamError('connection closed')));
    const settings = Buffer.alloc(18);
    settings.writeUInt16BE(SETTINGS_ENABLE_PUSH, 0);
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(SETTINGS_INITIAL_WINDOW_SIZE, 6);
    settings.writeUInt32BE(this.windowBytes, 8);
    settings.writeUInt16BE(SETTINGS_HEADER_TABLE_SIZE, 12);
    settings.writeUInt32BE(4096, 14);
    this.write(PREFACE);
    this.writeFrame(FrameType.Settings, 0, 0, settings);
    if (this.windowBytes > DEFAULT_WINDOW) this.windowUpdate(0, this.windowBytes - DEFAULT_WINDOW);
    const check = options.healthCheck;
    if (check) {
      this.healthTimer = setInterval(
        () => this.checkHealth(check.ping === false ? undefined : check.pingTimeoutMs, check.closeWhenIdle),
        check.readIdleMs,
      ).unref();
    }
  }

  private checkHealth(pingTimeoutMs: number | undefined, closeWhenIdle: boolean): void {
    const received = this.receivedSinceCheck;
    const requested = this.requestedSinceCheck;
    this.receivedSinceCheck = false;
    this.requestedSinceCheck = false;
    if (closeWhenIdle && !requested && this.activeStreams === 0) {
      this.close();
      return;
    }
    if (pingTimeoutMs === undefined || received || this.pingTimer || this.closedWith) return;
    this.pingTimer = setTimeout(() => {
      this.pingTimer = undefined;
      this.fail(http2StreamError(`the server did not answer a PING within ${pingTimeoutMs} ms`));
    }, pingTimeoutMs).unref();
    this.writeFrame(FrameType.Ping, 0, 0, Buffer.alloc(8));
  }

  /** False once GOAWAY came, the connection failed, or it used its last stream ID. */
  get acceptsStreams(): boolean {
    return !this.goAwayReceived && this.closedWith === undefined && this.nextStreamId <= MAX_STREAM_ID;
  }

  /** Streams open or waiting to open. */
  get activeStreams(): number {
    return this.streams.size + this.queued.length;
  }

  ref(): void {
    this.socket.ref();
  }

  unref(): void {
    this.socket.unref();
  }

  /**
   * Sends a request: its header fields (pseudo-headers first) and whole body, ending the stream.
   * Returns the stream ID, which cancel() takes. The handler is called from socket events only.
   */
  request(fields: readonly (readonly [string, string])[], body: Buffer, handler: StreamHandler): number {
    this.requestedSinceCheck = true;
    if (this.unreadBytes > MAX_UNSENT_BYTES && !this.closedWith) {
      this.fail(http2StreamError(`the server has not read the last ${this.unreadBytes} octets sent`));
    }
    if (!this.acceptsStreams) {
      const why =
        this.closedWith ?? http2StreamError('connection is going away', Http2ErrorCode.REFUSED_STREAM);
      queueMicrotask(() => handler.onError(why));
      return 0;
    }
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    const headers = hpackEncode(fields);
    // Behind any that wait already: streams must open in the order of their IDs.
    if (this.queued.length > 0 || this.streams.size >= this.peerMaxConcurrentStreams) {
      this.queued.push({ headers, body, handler, id });
      return id;
    }
    this.open(id, headers, body, handler);
    return id;
  }

  /** Resets a stream the caller no longer wants (RST_STREAM CANCEL); its handler hears nothing more. */
  cancel(id: number): void {
    const waiting = this.queued.findIndex((q) => q.id === id);
    if (waiting >= 0) {
      this.queued.splice(waiting, 1);
      this.maybeDrained();
      return;
    }
    if (!this.streams.delete(id)) return;
    this.resetStream(id, Http2ErrorCode.CANCEL);
    this.openQueued();
    this.maybeDrained();
  }

  /** Closes at once (GOAWAY NO_ERROR, then the socket); streams still open fail. */
  close(): void {
    if (this.closedWith) return;
    this.goAway(Http2ErrorCode.NO_ERROR);
    this.fail(http2StreamError('connection closed by the client'));
  }

  // ---- sending ----

  private open(id: number, headers: Buffer, body: Buffer, handler: StreamHandler): void {
    const stream: Stream = {
      id,
      handler,
      sendWindow: this.peerInitialWindow,
      pending: body,
      unacked: 0,
    };
    this.streams.set(id, stream);
    const due = this.tableSizeUpdateDue;
    this.tableSizeUpdateDue = false;
    this.writeHeaders(id, due ? Buffer.concat([TABLE_SIZE_UPDATE_TO_ZERO, headers]) : headers);
    this.sendPending(stream);
  }

  private writeHeaders(id: number, block: Buffer): void {
    const max = this.peerMaxFrameSize;
    if (block.length <= max) {
      this.writeFrame(FrameType.Headers, FLAG_END_HEADERS, id, block);
      return;
    }
    this.writeFrame(FrameType.Headers, 0, id, block.subarray(0, max));
    for (let at = max; at < block.length; at += max) {
      const last = at + max >= block.length;
      this.writeFrame(FrameType.Continuation, last ? FLAG_END_HEADERS : 0, id, block.subarray(at, at + max));
    }
  }

  /**
   * Sends as much of the stream's body as both windows allow; the last frame ends the stream (an
   * empty body is one empty DATA frame, which flow control does not count).
   */
  private sendPending(stream: Stream): void {
    let body = stream.pending;
    if (body === undefined) return;
    for (;;) {
      // A window may be below zero after the server lowered SETTINGS_INITIAL_WINDOW_SIZE.
      const n = Math.max(0, Math.min(body.length, stream.sendWindow, this.sendWindow, this.peerMaxFrameSize));
      const last = n === body.length;
      if (n === 0 && !last) {
        stream.pending = body;
        return;
      }
      this.writeFrame(FrameType.Data, last ? FLAG_END_STREAM : 0, stream.id, body.subarray(0, n));
      stream.sendWindow -= n;
      this.sendWindow -= n;
      if (last) {
        stream.pending = undefined;
        return;
      }
      body = body.subarray(n);
    }
  }

  private openQueued(): void {
    while (this.queued.length > 0 && this.streams.size < this.peerMaxConcurrentStreams && !this.closedWith) {
      const q = this.queued.shift()!;
      this.open(q.id, q.headers, q.body, q.handler);
    }
  }

  private windowUpdate(streamId: number, increment: number): void {
    const payload = Buffer.allocUnsafe(4);
    payload.writeUInt32BE(increment, 0);
    this.writeFrame(FrameType.WindowUpdate, 0, streamId, payload);
  }

  private resetStream(id: number, code: number): void {
    const payload = Buffer.allocUnsafe(4);
    payload.writeUInt32BE(code, 0);
    this.writeFrame(FrameType.RstStream, 0, id, payload);
  }

  private goAway(code: number): void {
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(0, 0); // no server-initiated streams were taken
    payload.writeUInt32BE(code, 4);
    this.writeFrame(FrameType.GoAway, 0, 0, payload);
  }

  private writeFrame(type: FrameType, flags: number, streamId: number, payload: Buffer): void {
    // One buffer per frame: copying the payload costs less than a second write through the stream.
    const frame = Buffer.allocUnsafe(9 + payload.length);
    frame.writeUIntBE(payload.length, 0, 3);
    frame[3] = type;
    frame[4] = flags;
    frame.writeUInt32BE(streamId, 5);
    payload.copy(frame, 9);
    this.write(frame);
  }

  /**
   * Frames go out together once per turn of the event loop (setImmediate, after the poll phase's
   * callbacks and their promise continuations), not once per tick: an answer's read acks the PING
   * that came with it, then the caller's continuation sends the next request, and the reads of one
   * poll phase answer several streams. Per tick each of those was a write of its own (a system call,
   * and over TLS a record); one write also spares the socket's cork/writev bookkeeping per frame.
   */
  private write(bytes: Buffer): void {
    if (this.closedWith || this.socket.destroyed) return;
    this.unsent.push(bytes);
    this.unsentBytes += bytes.length;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushNow);
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const unsent = this.unsent;
    if (unsent.length === 0) return;
    const bytes = unsent.length === 1 ? unsent[0]! : Buffer.concat(unsent, this.unsentBytes);
    unsent.length = 0;
    this.unsentBytes = 0;
    if (!this.socket.destroyed) this.socket.write(bytes);
  }

  /** Octets written and not yet taken by the server: the socket's buffer and what waits for the flush. */
  private get unreadBytes(): number {
    return this.socket.writableLength + this.unsentBytes;
  }

  // ---- receiving ----

  private receive(chunk: Buffer): void {
    this.receivedSinceCheck = true;
    try {
      const rest = this.inbox ? this.completeHeldFrame(this.inbox, chunk) : chunk;
      if (rest !== undefined) this.frames(rest);
    } catch (err) {
      // Anything else is a bug in a stream's handler, not the server's: it is not hidden, but the
      // connection, whose input is now half read, is given up first.
      if (!isConnectionError(err) && !isHpackError(err)) {
        this.fail(
          http2StreamError(`a stream's handler failed: ${err instanceof Error ? err.message : String(err)}`),
        );
        throw err;
      }
      const code = isConnectionError(err) ? err.connectionErrorCode : Http2ErrorCode.COMPRESSION_ERROR;
      const message = err.message;
      this.goAway(code);
      this.fail(http2StreamError(`HTTP/2 protocol error from the server: ${message}`, code));
    }
  }

  /**
   * The last read ended inside a frame: that frame is made whole from the start of this read and
   * handled, and the rest of the read returned (undefined while the frame is still incomplete). Only
   * that frame is copied, not the whole read behind it: a large answer comes in 64 KiB reads of
   * 16 KiB frames, nearly every read ending inside one.
   */
  private completeHeldFrame(held: Buffer, chunk: Buffer): Buffer | undefined {
    this.inbox = undefined;
    let head = held;
    let rest = chunk;
    if (head.length < 9) {
      const n = Math.min(9 - head.length, rest.length);
      head = Buffer.concat([head, rest.subarray(0, n)]);
      rest = rest.subarray(n);
      if (head.length < 9) {
        this.inbox = head;
        return undefined;
      }
    }
    const missing = 9 + head.readUIntBE(0, 3) - head.length;
    // A length over the limit is refused by frames(), from the header alone.
    if (head.readUIntBE(0, 3) > DEFAULT_MAX_FRAME_SIZE || rest.length < missing) {
      this.frames(Buffer.concat([head, rest]));
      return undefined;
    }
    this.frames(Buffer.concat([head, rest.subarray(0, missing)]));
    return this.closedWith ? undefined : rest.subarray(missing);
  }

  /** Handles each whole frame in data; a frame that data ends inside is held for the next read. */
  private frames(data: Buffer): void {
    let at = 0;
    while (data.length - at >= 9 && !this.closedWith) {
      const length = data.readUIntBE(at, 3);
      if (length > DEFAULT_MAX_FRAME_SIZE) {
        throw connectionError(Http2ErrorCode.FRAME_SIZE_ERROR, `frame of ${length} octets`);
      }
      if (data.length - at < 9 + length) break;
      const type = data[at + 3]!;
      const flags = data[at + 4]!;
      const streamId = data.readUInt32BE(at + 5) & 0x7fffffff;
      const payload = data.subarray(at + 9, at + 9 + length);
      at += 9 + length;
      this.frame(type, flags, streamId, payload);
    }
    if (at < data.length && !this.closedWith) this.inbox = data.subarray(at);
  }

  private frame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (this.headerBlock && type !== FrameType.Continuation) {
      throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, 'a header block was interrupted');
    }
    switch (type) {
      case FrameType.Data:
        return this.dataFrame(flags, streamId, payload);
      case FrameType.Headers:
        return this.headersFrame(flags, streamId, payload);
      case FrameType.Continuation:
        return this.continuationFrame(flags, streamId, payload);
      case FrameType.RstStream:
        return this.rstStreamFrame(streamId, payload);
      case FrameType.Settings:
        return this.settingsFrame(flags, streamId, payload);
      case FrameType.Ping:
        if (payload.length !== 8) throw connectionError(Http2ErrorCode.FRAME_SIZE_ERROR, 'PING size');
        if (!(flags & FLAG_ACK)) this.answer(FrameType.Ping, Buffer.from(payload));
        else if (this.pingTimer) {
          clearTimeout(this.pingTimer);
          this.pingTimer = undefined;
        }
        return;
      case FrameType.GoAway:
        return this.goAwayFrame(payload);
      case FrameType.WindowUpdate:
        return this.windowUpdateFrame(streamId, payload);
      case FrameType.PushPromise:
        throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, 'PUSH_PROMISE with push disabled');
      default:
        // PRIORITY and unknown types are ignored (RFC 9113 §5.5).
        return;
    }
  }

  private dataFrame(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, 'DATA on stream 0');
    // Flow control counts the whole payload, padding included, whether or not the stream is wanted.
    this.connectionUnacked += payload.length;
    if (this.connectionUnacked >= this.windowBytes / 2) {
      this.windowUpdate(0, this.connectionUnacked);
      this.connectionUnacked = 0;
    }
    const stream = this.streams.get(streamId);
    if (!stream) return;
    const data = flags & FLAG_PADDED ? unpad(payload) : payload;
    if (data.length > 0) stream.handler.onData(data);
    if (flags & FLAG_END_STREAM) {
      this.endStream(stream);
      return;
    }
    if (!this.streams.has(streamId)) return;
    stream.unacked += payload.length;
    if (stream.unacked >= this.windowBytes / 2) {
      this.windowUpdate(streamId, stream.unacked);
      stream.unacked = 0;
    }
  }

  private headersFrame(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, 'HEADERS on stream 0');
    let block = flags & FLAG_PADDED ? unpad(payload) : payload;
    if (flags & FLAG_PRIORITY) {
      if (block.length < 5) throw connectionError(Http2ErrorCode.FRAME_SIZE_ERROR, 'HEADERS priority');
      block = block.subarray(5);
    }
    const endStream = (flags & FLAG_END_STREAM) !== 0;
    if (!(flags & FLAG_END_HEADERS)) {
      this.headerBlock = { streamId, parts: [Buffer.from(block)], bytes: block.length, endStream };
      return;
    }
    this.headerBlockDone(streamId, block, endStream);
  }

  private continuationFrame(flags: number, streamId: number, payload: Buffer): void {
    const pending = this.headerBlock;
    if (!pending || pending.streamId !== streamId) {
      throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, 'CONTINUATION without a header block');
    }
    pending.parts.push(Buffer.from(payload));
    pending.bytes += payload.length;
    if (pending.parts.length > MAX_HEADER_BLOCK_FRAMES) {
      throw connectionError(
        Http2ErrorCode.PROTOCOL_ERROR,
        `a header block in more than ${MAX_HEADER_BLOCK_FRAMES} CONTINUATION frames`,
      );
    }
    if (pending.bytes > MAX_HEADER_BLOCK_BYTES) {
      throw connectionError(
        Http2ErrorCode.PROTOCOL_ERROR,
        `a header block over ${MAX_HEADER_BLOCK_BYTES} octets`,
      );
    }
    if (!(flags & FLAG_END_HEADERS)) return;
    this.headerBlock = undefined;
    this.headerBlockDone(streamId, Buffer.concat(pending.parts), pending.endStream);
  }

  private headerBlockDone(streamId: number, block: Buffer, endStream: boolean): void {
    // Decoded even for a stream no longer wanted: the decoder's table must see every block.
    const fields = this.decoder.decode(block);
    const stream = this.streams.get(streamId);
    if (!stream) return;
    stream.handler.onHeaders(fields, endStream);
    if (endStream) this.endStream(stream);
  }

  /** The server's END_STREAM came: the stream leaves the map, so no later frame reaches its handler. */
  private endStream(stream: Stream): void {
    if (!this.streams.delete(stream.id)) return;
    // The answer is complete: a body still held back by flow control is not needed any more.
    if (stream.pending !== undefined) this.resetStream(stream.id, Http2ErrorCode.NO_ERROR);
    stream.handler.onEnd();
    this.openQueued();
    this.maybeDrained();
  }

  private rstStreamFrame(streamId: number, payload: Buffer): void {
    if (streamId === 0 || payload.length !== 4) {
      throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, 'malformed RST_STREAM');
    }
    const stream = this.streams.get(streamId);
    if (!stream) return;
    this.streams.delete(streamId);
    const code = payload.readUInt32BE(0);
    stream.handler.onError(http2StreamError(`stream reset by the server (code ${code})`, code));
    this.openQueued();
    this.maybeDrained();
  }

  private settingsFrame(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & FLAG_ACK) return;
    if (payload.length % 6 !== 0) throw connectionError(Http2ErrorCode.FRAME_SIZE_ERROR, 'SETTINGS size');
    for (let at = 0; at < payload.length; at += 6) {
      const id = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      if (id === SETTINGS_INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) throw connectionError(Http2ErrorCode.FLOW_CONTROL_ERROR, 'window too large');
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const s of this.streams.values()) {
          s.sendWindow += delta;
          // §6.9.2: a change that takes any window past 2^31-1 is a connection error.
          if (s.sendWindow > MAX_WINDOW) {
            throw connectionError(Http2ErrorCode.FLOW_CONTROL_ERROR, `stream ${s.id} window past 2^31-1`);
          }
        }
      } else if (id === SETTINGS_MAX_FRAME_SIZE) {
        if (value < DEFAULT_MAX_FRAME_SIZE || value > 2 ** 24 - 1) {
          throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, `MAX_FRAME_SIZE ${value}`);
        }
        this.peerMaxFrameSize = value;
      } else if (id === SETTINGS_MAX_CONCURRENT_STREAMS) {
        this.peerMaxConcurrentStreams = value;
      } else if (id === SETTINGS_HEADER_TABLE_SIZE) {
        // The server's decoder's table, which this encoder never fills, but must say so once more.
        this.tableSizeUpdateDue = true;
      }
      // The rest do not apply.
    }
    this.answer(FrameType.Settings, Buffer.alloc(0));
    this.flushAll();
    this.openQueued();
  }

  /**
   * Acknowledges a PING or SETTINGS. The server sets their pace, not a request: one that sends them
   * and reads none of the answers would have them kept unsent for as long as the connection lasts, so
   * past the bound on unsent octets the connection is given up instead.
   */
  private answer(type: FrameType.Ping | FrameType.Settings, payload: Buffer): void {
    if (this.unreadBytes > MAX_UNSENT_BYTES) {
      throw connectionError(
        Http2ErrorCode.ENHANCE_YOUR_CALM,
        `the server has not read the last ${this.unreadBytes} octets sent`,
      );
    }
    this.writeFrame(type, FLAG_ACK, 0, payload);
  }

  private windowUpdateFrame(streamId: number, payload: Buffer): void {
    if (payload.length !== 4) throw connectionError(Http2ErrorCode.FRAME_SIZE_ERROR, 'WINDOW_UPDATE size');
    const increment = payload.readUInt32BE(0) & 0x7fffffff;
    if (streamId === 0) {
      // §6.9: an increment of 0 is a PROTOCOL_ERROR; a window past 2^31-1 a FLOW_CONTROL_ERROR.
      if (increment === 0)
        throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, 'connection window update of 0');
      if (this.sendWindow + increment > MAX_WINDOW) {
        throw connectionError(Http2ErrorCode.FLOW_CONTROL_ERROR, 'connection window past 2^31-1');
      }
      this.sendWindow += increment;
      this.flushAll();
      return;
    }
    const stream = this.streams.get(streamId);
    if (!stream) return;
    if (increment === 0 || stream.sendWindow + increment > MAX_WINDOW) {
      // §6.9: a stream error, which ends that stream only.
      const code = increment === 0 ? Http2ErrorCode.PROTOCOL_ERROR : Http2ErrorCode.FLOW_CONTROL_ERROR;
      this.streams.delete(streamId);
      this.resetStream(streamId, code);
      stream.handler.onError(http2StreamError(`stream window update of ${increment} refused`, code));
      this.openQueued();
      this.maybeDrained();
      return;
    }
    stream.sendWindow += increment;
    this.sendPending(stream);
  }

  private flushAll(): void {
    for (const s of this.streams.values()) {
      if (s.pending !== undefined) this.sendPending(s);
      if (this.sendWindow <= 0) return;
    }
  }

  private goAwayFrame(payload: Buffer): void {
    if (payload.length < 8) throw connectionError(Http2ErrorCode.FRAME_SIZE_ERROR, 'GOAWAY size');
    const lastStreamId = payload.readUInt32BE(0) & 0x7fffffff;
    const code = payload.readUInt32BE(4);
    this.goAwayReceived = true;
    // Streams the server never took fail at once and may be retried elsewhere; the others finish.
    const refused = http2StreamError(
      `the server is going away (code ${code}) and did not take the stream`,
      Http2ErrorCode.REFUSED_STREAM,
    );
    this.failStreams(refused, lastStreamId);
    this.maybeDrained();
  }

  /** After GOAWAY, or once its stream IDs ran out, the connection closes when its last stream ends. */
  private maybeDrained(): void {
    if (this.closedWith || this.streams.size > 0 || this.queued.length > 0) return;
    if (this.goAwayReceived) {
      this.fail(http2StreamError('connection closed after GOAWAY'));
    } else if (this.nextStreamId > MAX_STREAM_ID) {
      this.close();
    }
  }

  private fail(error: Http2StreamError): void {
    if (this.closedWith) return;
    this.closedWith = error;
    clearInterval(this.healthTimer);
    clearTimeout(this.pingTimer);
    this.flush();
    // What was written (a GOAWAY) goes out first; then the socket is gone.
    const socket = this.socket;
    const grace = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
    socket.once('close', () => clearTimeout(grace));
    socket.end(() => socket.destroy());
    this.failStreams(error, 0);
    this.onClose?.(error);
  }

  /**
   * Fails the open streams above aboveId and every queued one. Each is taken out before its handler
   * hears of it: a handler that cancels or closes in turn must not make another one hear twice, or
   * hear after its cancel.
   */
  private failStreams(error: Http2StreamError, aboveId: number): void {
    for (const s of [...this.streams.values()]) {
      if (s.id > aboveId && this.streams.delete(s.id)) s.handler.onError(error);
    }
    for (let q = this.queued.shift(); q; q = this.queued.shift()) q.handler.onError(error);
  }
}

/** Something the server sent that ends the whole connection (RFC 9113 §5.4.1), with the code its GOAWAY carries. */
type ConnectionError = Error & { connectionErrorCode: number };

function connectionError(code: number, message: string): ConnectionError {
  return Object.assign(new Error(message), { connectionErrorCode: code });
}

function isConnectionError(err: unknown): err is ConnectionError {
  return err instanceof Error && typeof (err as Partial<ConnectionError>).connectionErrorCode === 'number';
}

function unpad(payload: Buffer): Buffer {
  if (payload.length < 1)
    throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, 'padded frame without padding');
  const padLength = payload[0]!;
  if (padLength >= payload.length) throw connectionError(Http2ErrorCode.PROTOCOL_ERROR, 'padding too long');
  return payload.subarray(1, payload.length - padLength);
}
