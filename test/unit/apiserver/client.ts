/**
 * A bare HTTP(S) client for the test API server's tests: requests with a token or a client
 * certificate, and a watch reader that hands out the newline-delimited events as they arrive.
 * Deliberately not the product's client: these tests pin the server's wire behaviour.
 */
import http from 'node:http';
import https from 'node:https';
import type { KeyPair, TestApiServer } from '../../apiserver/test-api-server.js';

export interface Credentials {
  token?: string;
  cert?: KeyPair;
  /** Trust this CA instead of the server's. */
  caPem?: string;
}

export interface Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  // Tests read arbitrary JSON; assertions check its shape.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export interface WatchEventJson {
  type: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  object: any;
}

const DEFAULT_TIMEOUT_MS = 5_000;

export class Client {
  constructor(
    private readonly server: TestApiServer,
    private readonly creds: Credentials = {},
  ) {}

  private options(method: string, path: string, headers: Record<string, string>): https.RequestOptions {
    const url = new URL(path, this.server.url);
    const all: Record<string, string> = { Accept: 'application/json', ...headers };
    if (this.creds.token) all.Authorization = `Bearer ${this.creds.token}`;
    return {
      method,
      hostname: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      headers: all,
      ca: this.creds.caPem ?? this.server.caPem,
      ...(this.creds.cert ? { cert: this.creds.cert.certPem, key: this.creds.cert.keyPem } : {}),
      agent: false,
    };
  }

  private transport(): typeof https | typeof http {
    return this.server.url.startsWith('https:') ? https : http;
  }

  request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...opts.headers };
    let payload: string | undefined;
    if (opts.body !== undefined) {
      payload = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['Content-Type'] = opts.contentType ?? 'application/json';
      // Node does not chunk a DELETE body: without a length the server would never see it.
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    return new Promise((resolve, reject) => {
      const req = this.transport().request(this.options(method, path, headers), (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = undefined;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
        res.on('error', reject);
      });
      req.setTimeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, () =>
        req.destroy(new Error(`${method} ${path} timed out`)),
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  get(path: string): Promise<Response> {
    return this.request('GET', path);
  }

  post(path: string, body: unknown): Promise<Response> {
    return this.request('POST', path, { body });
  }

  put(path: string, body: unknown): Promise<Response> {
    return this.request('PUT', path, { body });
  }

  patch(path: string, contentType: string, body: unknown): Promise<Response> {
    return this.request('PATCH', path, { body, contentType });
  }

  delete(path: string, body?: unknown): Promise<Response> {
    return this.request('DELETE', path, body === undefined ? {} : { body });
  }

  /** Opens a watch; resolves once the response headers are in. */
  watch(path: string): Promise<WatchStream> {
    return new Promise((resolve, reject) => {
      const req = this.transport().request(this.options('GET', path, {}), (res) => {
        resolve(new WatchStream(req, res));
      });
      req.on('error', reject);
      req.end();
    });
  }
}

/** The events of one watch response, read line by line. */
export class WatchStream {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  private readonly queue: WatchEventJson[] = [];
  private waiters: (() => void)[] = [];
  private buffer = '';
  ended = false;

  constructor(
    private readonly req: http.ClientRequest,
    res: http.IncomingMessage,
  ) {
    this.status = res.statusCode ?? 0;
    this.headers = res.headers;
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      this.buffer += chunk;
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        if (line.trim()) this.queue.push(JSON.parse(line) as WatchEventJson);
      }
      this.wake();
    });
    const finish = () => {
      this.ended = true;
      this.wake();
    };
    res.on('end', finish);
    res.on('close', finish);
    res.on('error', finish);
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** The next event; rejects if none comes within timeoutMs or the stream ends first. */
  async next(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<WatchEventJson> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = this.queue.shift();
      if (e) return e;
      if (this.ended) throw new Error('watch ended');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no watch event within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Resolves when the server ends the stream, or rejects after timeoutMs. */
  async waitEnd(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`watch still open after ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Events received and not yet taken. */
  pending(): WatchEventJson[] {
    return [...this.queue];
  }

  close(): void {
    this.req.destroy();
  }
}

export function adminClient(server: TestApiServer): Client {
  return new Client(server, { token: server.adminToken });
}

/** A minimal pod bound to nodeName (or unbound when nodeName is undefined). */
export function podManifest(name: string, nodeName?: string, extra: Record<string, unknown> = {}): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...extra },
    spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'app', image: 'busybox:1.36' }] },
  };
}
