/**
 * Test clients for the kubelet API's streams, speaking what kubectl speaks: remote command over
 * WebSocket (channel.k8s.io v4/v5, with the `ws` package) and over SPDY/3.1 (with the server's own
 * SPDY framing, checked against containerd's real SPDY server), and port-forward over SPDY.
 */
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { SpdyConnection } from '../../../src/server/spdy.js';

export interface ClientTls {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  /** For the kubelet's self-signed certificate. */
  rejectUnauthorized?: boolean;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  /** The Status JSON the server put on the error channel, parsed. */
  status:
    | {
        status?: string;
        reason?: string;
        message?: string;
        details?: { causes?: { reason?: string; message?: string }[] };
      }
    | undefined;
  protocol: string;
}

const STREAM_TIMEOUT_MS = 30_000;

export function exitCodeOf(r: ExecResult): number {
  if (r.status?.status === 'Success') return 0;
  const cause = r.status?.details?.causes?.find((c) => c.reason === 'ExitCode');
  return cause ? Number(cause.message) : -1;
}

/** Runs a remote command over WebSocket; resolves when the server closes. */
export function wsExec(
  url: string,
  protocols: string[],
  opts: {
    stdin?: Buffer;
    closeStdin?: boolean;
    /** Close stdin (v5 CLOSE) only once stdout satisfies this: attach ends when stdin does. */
    closeStdinWhen?: (stdout: string) => boolean;
    headers?: Record<string, string>;
    tls?: ClientTls;
  } = {},
): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), protocols, {
      headers: opts.headers,
      ...opts.tls,
      handshakeTimeout: STREAM_TIMEOUT_MS,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const status: Buffer[] = [];
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('websocket exec timed out'));
    }, STREAM_TIMEOUT_MS);
    ws.on('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      const body: Buffer[] = [];
      res.on('data', (c: Buffer) => body.push(c));
      res.on('end', () =>
        reject(
          Object.assign(new Error(`HTTP ${res.statusCode}: ${Buffer.concat(body).toString()}`), {
            statusCode: res.statusCode,
          }),
        ),
      );
    });
    ws.on('open', () => {
      if (opts.stdin) ws.send(Buffer.concat([Buffer.from([0]), opts.stdin]));
      if (opts.closeStdin) ws.send(Buffer.from([255, 0]));
    });
    ws.on('message', (d: Buffer) => {
      if (d.length === 0) return;
      const body = d.subarray(1);
      if (d[0] === 1) {
        out.push(body);
        if (opts.closeStdinWhen?.(Buffer.concat(out).toString())) ws.send(Buffer.from([255, 0]));
      } else if (d[0] === 2) err.push(body);
      else if (d[0] === 3) status.push(body);
    });
    ws.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    ws.on('close', () => {
      clearTimeout(timer);
      const s = Buffer.concat(status).toString();
      let parsed: ExecResult['status'];
      try {
        parsed = s ? (JSON.parse(s) as ExecResult['status']) : undefined;
      } catch {
        parsed = { message: s };
      }
      resolve({
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
        status: parsed,
        protocol: ws.protocol,
      });
    });
  });
}

/** Sends an upgrade request and resolves with the switched socket, or rejects with the HTTP answer. */
export function upgradeRequest(
  url: string,
  headers: http.OutgoingHttpHeaders,
  tls: ClientTls = {},
  method = 'POST',
): Promise<{ socket: Socket; head: Buffer; response: http.IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? https : http;
    const req = mod.request({
      host: u.hostname,
      port: u.port,
      path: u.pathname + u.search,
      method,
      headers,
      agent: false,
      timeout: STREAM_TIMEOUT_MS,
      ...tls,
    });
    req.on('upgrade', (response, socket: Socket, head) => resolve({ socket, head, response }));
    req.on('response', (res) => {
      const body: Buffer[] = [];
      res.on('data', (c: Buffer) => body.push(c));
      res.on('end', () =>
        reject(
          Object.assign(new Error(`HTTP ${res.statusCode}: ${Buffer.concat(body).toString()}`), {
            statusCode: res.statusCode,
          }),
        ),
      );
    });
    req.on('timeout', () => req.destroy(new Error('upgrade timed out')));
    req.on('error', reject);
    req.end();
  });
}

/** Runs a remote command over SPDY (protocol v4, as kubectl's SPDY executor). */
export async function spdyExec(
  url: string,
  opts: {
    stdin?: Buffer;
    stdout?: boolean;
    stderr?: boolean;
    tty?: boolean;
    headers?: Record<string, string>;
    tls?: ClientTls;
  } = {},
): Promise<ExecResult> {
  const { socket, head, response } = await upgradeRequest(
    url,
    {
      connection: 'Upgrade',
      upgrade: 'SPDY/3.1',
      'x-stream-protocol-version': ['v4.channel.k8s.io', 'v3.channel.k8s.io'],
      ...opts.headers,
    },
    opts.tls,
  );
  const conn = new SpdyConnection(socket, head);
  const error = conn.openStream({ streamtype: 'error' });
  const stdin = opts.stdin ? conn.openStream({ streamtype: 'stdin' }) : undefined;
  const stdout = opts.stdout !== false ? conn.openStream({ streamtype: 'stdout' }) : undefined;
  const stderr = opts.stderr !== false && !opts.tty ? conn.openStream({ streamtype: 'stderr' }) : undefined;
  const collect = (s: ReturnType<SpdyConnection['openStream']> | undefined) =>
    new Promise<string>((resolve) => {
      if (!s) return resolve('');
      const parts: Buffer[] = [];
      s.on('data', (d: Buffer) => parts.push(d));
      s.on('error', () => undefined);
      s.once('end', () => resolve(Buffer.concat(parts).toString()));
      s.once('close', () => resolve(Buffer.concat(parts).toString()));
    });
  if (stdin && opts.stdin) {
    stdin.on('error', () => undefined);
    stdin.write(opts.stdin);
    stdin.end();
  }
  const timer = setTimeout(() => conn.close(), STREAM_TIMEOUT_MS);
  try {
    const [out, err, status] = await Promise.all([collect(stdout), collect(stderr), collect(error)]);
    return {
      stdout: out,
      stderr: err,
      status: status ? (JSON.parse(status) as ExecResult['status']) : undefined,
      protocol: String(response.headers['x-stream-protocol-version'] ?? ''),
    };
  } finally {
    clearTimeout(timer);
    conn.close();
  }
}

/** One port-forward round trip over SPDY: send request bytes to port, read until the pod closes or quiet. */
export async function spdyPortForward(
  url: string,
  port: number,
  request: Buffer,
  opts: { headers?: Record<string, string>; tls?: ClientTls; socket?: { socket: Socket; head: Buffer } } = {},
): Promise<string> {
  const up =
    opts.socket ??
    (await upgradeRequest(
      url,
      {
        connection: 'Upgrade',
        upgrade: 'SPDY/3.1',
        'x-stream-protocol-version': 'portforward.k8s.io',
        ...opts.headers,
      },
      opts.tls,
    ));
  const conn = new SpdyConnection(up.socket, up.head);
  try {
    const error = conn.openStream({ streamtype: 'error', port: String(port), requestid: '0' });
    const data = conn.openStream({ streamtype: 'data', port: String(port), requestid: '0' });
    error.end();
    const errText: Buffer[] = [];
    error.on('data', (d: Buffer) => errText.push(d));
    error.on('error', () => undefined);
    data.on('error', () => undefined);
    const parts: Buffer[] = [];
    data.on('data', (d: Buffer) => parts.push(d));
    data.write(request);
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, STREAM_TIMEOUT_MS);
      data.once('end', () => {
        clearTimeout(t);
        resolve();
      });
    });
    const e = Buffer.concat(errText).toString();
    if (e) throw new Error(`port-forward error: ${e}`);
    return Buffer.concat(parts).toString();
  } finally {
    conn.close();
  }
}
