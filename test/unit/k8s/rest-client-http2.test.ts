import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import http2 from 'node:http2';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls, { type TLSSocket } from 'node:tls';
import { after, before, beforeEach, describe, it, test } from 'node:test';
import { CertificateAuthority, type KeyPair } from '../../apiserver/certs.js';
import { isKubeApiError } from '../../../src/k8s/api-status.js';
import { RestClient, defaultUserAgent, type WatchEvent } from '../../../src/k8s/rest-client.js';
import { ApiHttp2Transport, http2HealthFromEnv } from '../../../src/k8s/http2-transport.js';
import { realClock } from '../../../src/lib/clock.js';

const { NGHTTP2_NO_ERROR } = http2.constants;

interface Seen {
  session: number;
  path: string;
  method: string;
  headers: http2.IncomingHttpHeaders;
  body: string;
  user: string;
}

/** A node:http2 secure server that asks for client certificates and answers as the test tells it. */
class H2Server {
  readonly seen: Seen[] = [];
  /** Each session's client certificate CN, in order of arrival. */
  readonly sessions: string[] = [];
  handler: (stream: http2.ServerHttp2Stream, seen: Seen) => void = (stream) => json(stream, 200, {});
  private readonly open = new Set<http2.ServerHttp2Session>();
  private readonly sockets = new Set<TLSSocket>();

  private constructor(
    private readonly server: http2.Http2SecureServer,
    readonly url: string,
  ) {}

  static async start(
    ca: CertificateAuthority,
    serving: KeyPair,
    settings: http2.Settings = {},
  ): Promise<H2Server> {
    const server = http2.createSecureServer({
      cert: serving.certPem,
      key: serving.keyPem,
      ca: ca.certPem,
      requestCert: true,
      rejectUnauthorized: true,
      settings,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const h = new H2Server(server, `https://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('secureConnection', (socket: TLSSocket) => {
      h.sockets.add(socket);
      socket.on('close', () => h.sockets.delete(socket));
    });
    server.on('session', (session) => {
      const cert = (session.socket as TLSSocket).getPeerCertificate();
      const index = h.sessions.push(String(cert.subject?.CN ?? '')) - 1;
      h.open.add(session);
      session.on('close', () => h.open.delete(session));
      session.on('error', () => {});
      session.on('stream', (stream, headers) => {
        stream.on('error', () => {});
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const seen: Seen = {
            session: index,
            path: String(headers[':path']),
            method: String(headers[':method']),
            headers,
            body: Buffer.concat(chunks).toString('utf8'),
            user: h.sessions[index]!,
          };
          h.seen.push(seen);
          h.handler(stream, seen);
        });
      });
    });
    return h;
  }

  /** Drops every connection without a word (no GOAWAY): a server or network gone. */
  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async stop(): Promise<void> {
    for (const s of this.open) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

function json(stream: http2.ServerHttp2Stream, status: number, body: unknown): void {
  if (stream.closed) return;
  stream.respond({ ':status': status, 'content-type': 'application/json' });
  stream.end(JSON.stringify(body));
}

const notFound = {
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  message: 'pods "gone" not found',
  reason: 'NotFound',
  code: 404,
};

describe('k8s RestClient over HTTP/2', () => {
  let ca: CertificateAuthority;
  let server: H2Server;
  let first: KeyPair;
  let second: KeyPair;
  let client: RestClient;

  before(async () => {
    ca = await CertificateAuthority.create();
    const serving = await ca.issueServing('test-h2-server', ['127.0.0.1'], ['localhost']);
    first = await ca.issueClient('system:node:first', ['system:nodes']);
    second = await ca.issueClient('system:node:second', ['system:nodes']);
    server = await H2Server.start(ca, serving);
  });
  after(async () => {
    await server.stop();
    await ca.dispose();
  });
  beforeEach(() => {
    server.seen.length = 0;
    server.sessions.length = 0;
    server.handler = (stream, seen) => {
      if (seen.path.includes('/pods/gone')) return json(stream, 404, notFound);
      if (seen.path.includes('/pods/broken'))
        return json(stream, 500, {
          ...notFound,
          message: 'etcd is down',
          reason: 'InternalError',
          code: 500,
        });
      json(stream, 200, { kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, echo: seen.body });
    };
    client?.close();
    client = new RestClient({
      config: {
        server: server.url,
        caPem: ca.certPem,
        clientCertPem: first.certPem,
        clientKeyPem: first.keyPem,
      },
      qps: -1,
      requestTimeoutMs: 2000,
    });
  });
  after(() => client.close());

  it('carries every call of a burst on one connection, with the headers and bodies of HTTP/1.1', async () => {
    const gets = Array.from({ length: 24 }, () =>
      client.get({ resource: 'pods', namespace: 'default', name: 'p' }),
    );
    for (const r of await Promise.all(gets)) assert.ok(r.ok);
    const patched = await client.patch<{ echo?: string } & { metadata: object }>(
      { resource: 'pods', namespace: 'default', name: 'p', subresource: 'status' },
      'strategic',
      { status: { phase: 'Running' } },
    );
    assert.ok(patched.ok);
    assert.equal(patched.object.echo, '{"status":{"phase":"Running"}}');
    const deleted = await client.delete(
      { resource: 'pods', namespace: 'default', name: 'p' },
      { gracePeriodSeconds: 0, preconditions: { uid: 'u1' } },
    );
    assert.ok(deleted.ok);
    const gone = await client.get({ resource: 'pods', namespace: 'default', name: 'gone' });
    assert.ok(!gone.ok);
    assert.equal(gone.reason, 'NotFound');
    assert.equal(gone.status.message, 'pods "gone" not found');
    const created = await client.create<{ echo?: string } & { metadata: object }>(
      { resource: 'events', namespace: 'default' },
      { metadata: { name: 'e1' } },
    );
    assert.ok(created.ok);
    assert.equal(created.object.echo, '{"metadata":{"name":"e1"}}');
    await assert.rejects(
      client.get({ resource: 'pods', namespace: 'default', name: 'broken' }),
      (err) => isKubeApiError(err, 'InternalError') && /etcd is down/.test((err as Error).message),
    );
    assert.equal(server.sessions.length, 1, 'one connection');
    assert.deepEqual(server.sessions, ['system:node:first']);
    const patch = server.seen.find((s) => s.method === 'PATCH')!;
    assert.equal(patch.path, '/api/v1/namespaces/default/pods/p/status');
    assert.equal(patch.headers['content-type'], 'application/strategic-merge-patch+json');
    assert.equal(patch.headers['user-agent'], defaultUserAgent());
    assert.equal(patch.headers.accept, 'application/json');
    const post = server.seen.find((s) => s.method === 'POST')!;
    assert.equal(post.path, '/api/v1/namespaces/default/events');
    assert.equal(post.headers['content-type'], 'application/json');
    assert.equal(post.headers[':scheme'], 'https');
    assert.equal(post.headers[':authority'], new URL(server.url).host);
    const del = server.seen.find((s) => s.method === 'DELETE')!;
    assert.deepEqual(JSON.parse(del.body), {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      gracePeriodSeconds: 0,
      preconditions: { uid: 'u1' },
    });
  });

  it('streams a watch: events in order, a 410 ERROR event as an event, the end when the server ends it', async () => {
    server.handler = (stream, seen) => {
      if (!seen.path.includes('watch=true')) return json(stream, 200, {});
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      const pod = (rv: string) => ({ kind: 'Pod', metadata: { name: 'p', resourceVersion: rv } });
      // One event split across writes, two in one write: the client must frame them by newline.
      const text =
        JSON.stringify({ type: 'ADDED', object: pod('5') }) +
        '\n' +
        JSON.stringify({ type: 'BOOKMARK', object: pod('7') }) +
        '\n' +
        JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } }) +
        '\n';
      stream.write(text.slice(0, 20));
      setTimeout(() => stream.end(text.slice(20)), 20);
    };
    const w = await client.watch(
      { resource: 'pods' },
      { resourceVersion: '4', allowWatchBookmarks: true, timeoutSeconds: 30 },
    );
    assert.ok(w.ok);
    const events: WatchEvent<unknown>[] = [];
    for await (const e of w.object) events.push(e);
    assert.deepEqual(
      events.map((e) => e.type),
      ['ADDED', 'BOOKMARK', 'ERROR'],
    );
    assert.equal((events[2]!.object as { code: number }).code, 410);
    const path = server.seen[0]!.path;
    assert.match(
      path,
      /^\/api\/v1\/pods\?watch=true&resourceVersion=4&allowWatchBookmarks=true&timeoutSeconds=30$/,
    );
  });

  it('reports a stream the server resets as a transport failure, and goes on on the same connection', async () => {
    server.handler = (stream, seen) => {
      // destroy sends RST_STREAM at once; close() would end the stream first, then reset it.
      if (seen.path.includes('/pods/reset')) {
        stream.destroy(new Error('reset'));
        return;
      }
      if (seen.path.includes('watch=true')) {
        stream.respond({ ':status': 200, 'content-type': 'application/json' });
        stream.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } }) + '\n');
        setTimeout(() => stream.destroy(new Error('reset')), 20);
        return;
      }
      json(stream, 200, {});
    };
    await assert.rejects(client.get({ resource: 'pods', namespace: 'default', name: 'reset' }), (err) =>
      isKubeApiError(err, 'Transport'),
    );
    const w = await client.watch({ resource: 'pods' }, { timeoutSeconds: 30 });
    assert.ok(w.ok);
    const types: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const e of w.object) types.push(e.type);
      })(),
      (err) => isKubeApiError(err, 'Transport'),
    );
    assert.deepEqual(types, ['ADDED']);
    assert.ok((await client.get({ resource: 'pods', namespace: 'default', name: 'p' })).ok);
    assert.equal(server.sessions.length, 1);
  });

  it("sends a call beyond a GOAWAY's last stream again on a new connection, and new calls there too", async () => {
    let held: http2.ServerHttp2Stream | undefined;
    server.handler = (stream, seen) => {
      if (seen.session === 0 && seen.path.endsWith('/first')) {
        held = stream;
        return;
      }
      if (seen.session === 0 && held) {
        // The server takes streams up to the held one: this later one is refused, unprocessed.
        stream.session?.goaway(NGHTTP2_NO_ERROR, held.id ?? 0);
        json(held, 200, { kind: 'Pod', metadata: { name: 'first' } });
        return;
      }
      json(stream, 200, { kind: 'Pod', metadata: { name: 'p' } });
    };
    const first = client.get({ resource: 'pods', namespace: 'default', name: 'first' });
    while (!held) await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await client.get({ resource: 'pods', namespace: 'default', name: 'second' });
    assert.ok(second.ok);
    assert.ok((await first).ok);
    assert.ok((await client.get({ resource: 'pods', namespace: 'default', name: 'third' })).ok);
    assert.deepEqual(
      server.seen.map((s) => `${s.path.split('/').at(-1)}@${s.session}`),
      ['first@0', 'second@0', 'second@1', 'third@1'],
    );
  });

  it('does not send again a call whose answer had begun when the server reset it as refused', async () => {
    server.handler = (stream) => {
      // The server acted on it (its head came): a reset after that, whatever its code, is a failure.
      // waitForTrailers: the body's end is not END_STREAM, so the reset comes after an unfinished answer.
      stream.respond({ ':status': 201, 'content-type': 'application/json' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.close(http2.constants.NGHTTP2_REFUSED_STREAM));
      stream.end('{"kind":');
    };
    await assert.rejects(
      client.create({ resource: 'events', namespace: 'default' }, { metadata: { name: 'e' } }),
      (err) => isKubeApiError(err, 'Transport'),
    );
    assert.deepEqual(
      server.seen.map((s) => s.method),
      ['POST'],
    );
  });

  it("keeps to the call's deadline when a refused call waits for a new connection", async () => {
    // The first connection reaches the server; later ones are accepted and never answered.
    let connections = 0;
    const silent: net.Socket[] = [];
    const proxy = net.createServer((socket) => {
      if (connections++ > 0) return void silent.push(socket);
      const upstream = net.connect(Number(new URL(server.url).port), '127.0.0.1');
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    let held: http2.ServerHttp2Stream | undefined;
    server.handler = (stream, seen) => {
      if (seen.path.endsWith('/held')) return void (held = stream);
      // Most of the deadline goes by before the server refuses the stream unprocessed.
      setTimeout(() => stream.session?.goaway(NGHTTP2_NO_ERROR, held?.id ?? 0), 800);
    };
    const c = new RestClient({
      config: {
        server: `https://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
        caPem: ca.certPem,
        clientCertPem: first.certPem,
        clientKeyPem: first.keyPem,
      },
      qps: -1,
    });
    try {
      const first = c.get({ resource: 'pods', namespace: 'default', name: 'held' }, { timeoutMs: 3000 });
      const firstFailed = assert.rejects(first);
      while (!held) await new Promise((resolve) => setTimeout(resolve, 5));
      const started = Date.now();
      await assert.rejects(
        c.get({ resource: 'pods', namespace: 'default', name: 'p' }, { timeoutMs: 1000 }),
        (err) => isKubeApiError(err, 'DeadlineExceeded'),
      );
      assert.equal(connections, 2);
      const took = Date.now() - started;
      assert.ok(took < 1500, `the call took ${took} ms against its deadline of 1000 ms`);
      held?.close();
      await firstFailed;
    } finally {
      c.close();
      for (const socket of silent) socket.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('opens a new connection after a graceful GOAWAY, the call in flight answered on the old one', async () => {
    server.handler = (stream, seen) => {
      if (seen.session === 0) stream.session?.goaway(NGHTTP2_NO_ERROR, stream.id ?? 0);
      json(stream, 200, {});
    };
    assert.ok((await client.get({ resource: 'pods', namespace: 'default', name: 'p' })).ok);
    assert.ok((await client.get({ resource: 'pods', namespace: 'default', name: 'p' })).ok);
    assert.deepEqual(
      server.seen.map((s) => s.session),
      [0, 1],
    );
  });

  it('gives up at its deadline and cancels the stream', async () => {
    server.handler = (stream, seen) => {
      if (!seen.path.includes('/slow')) json(stream, 200, {});
    };
    const started = Date.now();
    await assert.rejects(
      client.get({ resource: 'namespaces', name: 'slow' }, { timeoutMs: 200 }),
      (err: unknown) => isKubeApiError(err, 'DeadlineExceeded'),
    );
    assert.ok(Date.now() - started < 1500);
    const ac = new AbortController();
    const p = client.get({ resource: 'namespaces', name: 'slow' }, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('stop')), 20);
    await assert.rejects(p, (err: unknown) => isKubeApiError(err, 'Aborted'));
  });

  it('presents a rotated client certificate on a new connection and ends the watches of the old one', async () => {
    server.handler = (stream, seen) => {
      if (!seen.path.includes('watch=true')) return json(stream, 200, {});
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
    };
    assert.ok((await client.get({ resource: 'pods', namespace: 'default', name: 'p' })).ok);
    const w = await client.watch({ resource: 'pods' }, { timeoutSeconds: 30 });
    assert.ok(w.ok);
    const watching = (async () => {
      for await (const e of w.object) void e;
    })();
    client.setClientCertificate(second.certPem, second.keyPem);
    await assert.rejects(watching, (err) => isKubeApiError(err, 'Transport'));
    assert.ok((await client.get({ resource: 'pods', namespace: 'default', name: 'p' })).ok);
    assert.deepEqual(server.sessions, ['system:node:first', 'system:node:second']);
    assert.equal(server.seen.at(-1)!.user, 'system:node:second');
  });

  it('ends the watches of a connection draining after GOAWAY too when the certificate rotates', async () => {
    server.handler = (stream, seen) => {
      if (!seen.path.includes('watch=true')) return json(stream, 200, {});
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      // The server goes away but keeps the watch (its stream is the last it takes): it drains.
      if (seen.session === 0) stream.session?.goaway(NGHTTP2_NO_ERROR, stream.id ?? 0);
    };
    const w = await client.watch({ resource: 'pods' }, { timeoutSeconds: 30 });
    assert.ok(w.ok);
    const watching = (async () => {
      for await (const e of w.object) void e;
    })();
    // A later call goes to a new connection: the draining one is no longer the transport's current.
    assert.ok((await client.get({ resource: 'pods', namespace: 'default', name: 'p' })).ok);
    assert.deepEqual(
      server.seen.map((s) => s.session),
      [0, 1],
    );
    client.setClientCertificate(second.certPem, second.keyPem);
    const bound = new Promise((resolve) => setTimeout(() => resolve('still open'), 2000).unref());
    const ended = watching.then(
      () => 'ended',
      (err: unknown) => (isKubeApiError(err, 'Transport') ? 'failed' : String(err)),
    );
    assert.equal(await Promise.race([ended, bound]), 'failed');
  });

  it('opens a watch with the rotated certificate when it rotated while the token was read', async () => {
    server.handler = (stream, seen) => {
      if (!seen.path.includes('watch=true')) return json(stream, 200, {});
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
    };
    // A FIFO as the token file: its read waits until the test writes, with the rotation in between.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'h2-token-'));
    const fifo = path.join(dir, 'token');
    execFileSync('mkfifo', [fifo]);
    const c = new RestClient({
      config: {
        server: server.url,
        caPem: ca.certPem,
        clientCertPem: first.certPem,
        clientKeyPem: first.keyPem,
        tokenFile: fifo,
      },
      qps: -1,
    });
    try {
      const opening = c.watch({ resource: 'pods' }, { timeoutSeconds: 30 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      c.setClientCertificate(second.certPem, second.keyPem);
      await writeFile(fifo, 'tok\n');
      const w = await opening;
      assert.ok(w.ok);
      w.object.close();
      assert.equal(server.seen.at(-1)!.user, 'system:node:second');
      assert.equal(server.seen.at(-1)!.headers.authorization, 'Bearer tok');
    } finally {
      c.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('speaks HTTP/1.1 to a server that does not choose h2, and when told to', async () => {
    const ca2 = await CertificateAuthority.create();
    const serving = await ca2.issueServing('h1', ['127.0.0.1'], []);
    const pair = await ca2.issueClient('system:node:first', []);
    const versions: string[] = [];
    const h1 = https.createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      versions.push(req.httpVersion);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"kind":"Pod"}');
    });
    await new Promise<void>((resolve) => h1.listen(0, '127.0.0.1', resolve));
    const config = {
      server: `https://127.0.0.1:${(h1.address() as AddressInfo).port}`,
      caPem: ca2.certPem,
      clientCertPem: pair.certPem,
      clientKeyPem: pair.keyPem,
    };
    const c1 = new RestClient({ config, qps: -1 });
    const c2 = new RestClient({
      config: { ...config, server: server.url, caPem: ca.certPem },
      qps: -1,
      httpVersion: 'http/1.1',
    });
    try {
      for (let i = 0; i < 3; i++)
        assert.ok((await c1.get({ resource: 'pods', namespace: 'd', name: 'p' })).ok);
      assert.deepEqual(versions, ['1.1', '1.1', '1.1']);
      // The HTTP/2-only test server cannot answer HTTP/1.1: the client did not offer h2.
      await assert.rejects(
        c2.get({ resource: 'pods', namespace: 'd', name: 'p' }, { timeoutMs: 1000 }),
        (err) => isKubeApiError(err),
      );
      assert.equal(server.sessions.length, 0);
    } finally {
      c1.close();
      c2.close();
      h1.closeAllConnections();
      await new Promise((resolve) => h1.close(resolve));
      await ca2.dispose();
    }
  });

  it('reads a large reply that comes in many DATA frames', async () => {
    const items = Array.from({ length: 3000 }, (_, i) => ({
      metadata: { name: `pod-${i}`, namespace: 'default', labels: { app: 'x'.repeat(200) } },
    }));
    server.handler = (stream) => json(stream, 200, { kind: 'PodList', metadata: {}, items });
    const list = await client.list<{ metadata: { name: string } }>({ resource: 'pods' });
    assert.ok(list.ok);
    assert.equal(list.object.items.length, 3000);
    assert.equal(list.object.items[2999]!.metadata.name, 'pod-2999');
  });

  it('keeps a watch open past every window: events over time, many MiB, all in order', async () => {
    // 6 MiB in all, more than the 65,535-octet default window and the client's own 4 MiB one: the
    // server stalls unless the client gives WINDOW_UPDATEs as it reads.
    const events = 3000;
    const filler = 'f'.repeat(2000);
    server.handler = (stream, seen) => {
      if (!seen.path.includes('watch=true')) return json(stream, 200, {});
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      let i = 0;
      const burst = () => {
        if (stream.closed) return;
        let text = '';
        for (const end = Math.min(events, i + 300); i < end; i++) {
          text +=
            JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: `p${i}` }, filler } }) + '\n';
        }
        if (i < events) {
          stream.write(text);
          setTimeout(burst, 10);
        } else stream.end(text);
      };
      burst();
    };
    const w = await client.watch<{ metadata: { name: string } }>(
      { resource: 'pods' },
      { timeoutSeconds: 30 },
    );
    assert.ok(w.ok);
    let n = 0;
    for await (const e of w.object) {
      assert.equal(e.type, 'MODIFIED');
      assert.equal((e.object as { metadata: { name: string } }).metadata.name, `p${n}`);
      n++;
    }
    assert.equal(n, events);
  });

  it('answers a watch refused with a Status as a result, not a stream', async () => {
    server.handler = (stream) =>
      json(stream, 410, { ...notFound, message: 'too old resource version', reason: 'Expired', code: 410 });
    const w = await client.watch({ resource: 'pods' }, { resourceVersion: '1', timeoutSeconds: 30 });
    assert.ok(!w.ok);
    assert.equal(w.reason, 'Gone');
  });

  it("queues calls beyond the server's MAX_CONCURRENT_STREAMS and answers them all on one connection", async () => {
    const ca2 = await CertificateAuthority.create();
    const serving = await ca2.issueServing('h2-narrow', ['127.0.0.1'], []);
    const pair = await ca2.issueClient('system:node:first', []);
    const narrow = await H2Server.start(ca2, serving, { maxConcurrentStreams: 2 });
    let inFlight = 0;
    let most = 0;
    narrow.handler = (stream) => {
      inFlight++;
      most = Math.max(most, inFlight);
      setTimeout(() => {
        inFlight--;
        json(stream, 200, {});
      }, 5);
    };
    const c = new RestClient({
      config: {
        server: narrow.url,
        caPem: ca2.certPem,
        clientCertPem: pair.certPem,
        clientKeyPem: pair.keyPem,
      },
      qps: -1,
      requestTimeoutMs: 5000,
    });
    try {
      // The first call learns the server's settings; the burst after it must respect them.
      assert.ok((await c.get({ resource: 'pods', namespace: 'd', name: 'p' })).ok);
      const burst = Array.from({ length: 20 }, () => c.get({ resource: 'pods', namespace: 'd', name: 'p' }));
      for (const r of await Promise.all(burst)) assert.ok(r.ok);
      assert.ok(most <= 2, `at most 2 streams at once, saw ${most}`);
      assert.equal(narrow.sessions.length, 1);
    } finally {
      c.close();
      await narrow.stop();
      await ca2.dispose();
    }
  });

  it('fails the calls and watches of a lost connection, and the next call opens another', async () => {
    server.handler = (stream, seen) => {
      if (seen.path.includes('/pods/hang')) return;
      if (seen.path.includes('watch=true')) {
        stream.respond({ ':status': 200, 'content-type': 'application/json' });
        stream.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } }) + '\n');
        return;
      }
      json(stream, 200, {});
    };
    const w = await client.watch({ resource: 'pods' }, { timeoutSeconds: 30 });
    assert.ok(w.ok);
    const types: string[] = [];
    const watching = (async () => {
      for await (const e of w.object) types.push(e.type);
    })();
    const hanging = client.get({ resource: 'pods', namespace: 'default', name: 'hang' });
    while (server.seen.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    server.dropConnections();
    await assert.rejects(hanging, (err) => isKubeApiError(err, 'Transport'));
    await assert.rejects(watching, (err) => isKubeApiError(err, 'Transport'));
    assert.deepEqual(types, ['ADDED']);
    assert.ok((await client.get({ resource: 'pods', namespace: 'default', name: 'p' })).ok);
    assert.equal(server.sessions.length, 2);
  });

  it('fails a call and a watch whose answer has a malformed :status as a transport error', async () => {
    // nghttp2 sends no such head: a raw TLS server that answers every stream with :status "abc".
    const serving = await ca.issueServing('raw-h2', ['127.0.0.1'], []);
    const raw = tls.createServer(
      { cert: serving.certPem, key: serving.keyPem, ALPNProtocols: ['h2'] },
      (socket) => {
        socket.on('error', () => undefined);
        let seen = Buffer.alloc(0);
        let answered = 0;
        socket.on('data', (chunk: Buffer) => {
          if (answered === 0) socket.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])); // SETTINGS
          seen = Buffer.concat([seen, chunk]);
          // Each HEADERS frame the client sent (type 1, after the 24-octet preface) gets the bad head.
          for (let at = 24; at + 9 <= seen.length; at += 9 + seen.readUIntBE(at, 3)) {
            if (seen[at + 3] !== 1) continue;
            const id = seen.readUInt32BE(at + 5);
            if (id < answered) continue;
            answered = id + 1;
            // HEADERS, END_STREAM|END_HEADERS: `:status` (static name 8) literal "abc", not indexed.
            const block = Buffer.from([0x08, 0x03, 0x61, 0x62, 0x63]);
            const head = Buffer.from([0, 0, block.length, 1, 0x5, 0, 0, 0, 0]);
            head.writeUInt32BE(id, 5);
            socket.write(Buffer.concat([head, block]));
          }
        });
      },
    );
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const c = new RestClient({
      config: { server: `https://127.0.0.1:${(raw.address() as AddressInfo).port}`, caPem: ca.certPem },
      qps: -1,
      requestTimeoutMs: 2000,
    });
    try {
      await assert.rejects(c.get({ resource: 'pods', namespace: 'default', name: 'p' }), (err) =>
        isKubeApiError(err, 'Transport'),
      );
      await assert.rejects(c.watch({ resource: 'pods' }, { timeoutSeconds: 5 }), (err) =>
        isKubeApiError(err, 'Transport'),
      );
    } finally {
      c.close();
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  it('gives up a TLS handshake still under way when the client is closed', async () => {
    // A server that takes the TCP connection and never answers the handshake.
    const held: net.Socket[] = [];
    let closedAt = 0;
    const silent = net.createServer((socket) => {
      held.push(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => (closedAt = Date.now()));
      socket.resume(); // read (and drop) the ClientHello, so the client's FIN is seen
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const c = new RestClient({
      config: { server: `https://127.0.0.1:${(silent.address() as AddressInfo).port}`, caPem: ca.certPem },
      qps: -1,
    });
    try {
      await assert.rejects(
        c.get({ resource: 'pods', namespace: 'd', name: 'p' }, { timeoutMs: 100 }),
        (err) => isKubeApiError(err, 'DeadlineExceeded'),
      );
      assert.equal(held.length, 1);
      const closing = Date.now();
      c.close();
      // The dial's socket held the process open for up to its 30 s handshake bound.
      while (closedAt === 0 && Date.now() - closing < 2000) await new Promise((r) => setTimeout(r, 10));
      assert.ok(closedAt > 0, 'the handshake socket stayed open after close()');
    } finally {
      c.close();
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('fails a call to a server that is not there as a transport error', async () => {
    const c = new RestClient({ config: { server: 'https://127.0.0.1:1', caPem: ca.certPem }, qps: -1 });
    try {
      await assert.rejects(c.get({ resource: 'pods', namespace: 'd', name: 'p' }), (err) =>
        isKubeApiError(err, 'Transport'),
      );
    } finally {
      c.close();
    }
  });
});

test("the HTTP/2 health check's timing comes from client-go's environment variables", () => {
  const warnings: string[] = [];
  const warn = (m: string) => warnings.push(m);
  assert.deepEqual(http2HealthFromEnv({}, warn), { readIdleMs: 30_000, pingTimeoutMs: 15_000 });
  assert.deepEqual(
    http2HealthFromEnv({ HTTP2_READ_IDLE_TIMEOUT_SECONDS: '10', HTTP2_PING_TIMEOUT_SECONDS: '3' }, warn),
    { readIdleMs: 10_000, pingTimeoutMs: 3_000 },
  );
  // 0 turns the PINGs off; a ping timeout of 0 is Go's default.
  assert.deepEqual(
    http2HealthFromEnv({ HTTP2_READ_IDLE_TIMEOUT_SECONDS: '0', HTTP2_PING_TIMEOUT_SECONDS: '0' }, warn),
    { readIdleMs: 0, pingTimeoutMs: 15_000 },
  );
  assert.deepEqual(warnings, []);
  assert.deepEqual(http2HealthFromEnv({ HTTP2_READ_IDLE_TIMEOUT_SECONDS: '5s' }, warn), {
    readIdleMs: 30_000,
    pingTimeoutMs: 15_000,
  });
  assert.deepEqual(warnings, [
    'Illegal HTTP2_READ_IDLE_TIMEOUT_SECONDS("5s"): not a whole number of seconds. Default value 30 is used',
  ]);
  // Past a timer's 2^31-1 ms node would fire at once (every 1 ms): such a value is held to the most a timer takes.
  warnings.length = 0;
  assert.deepEqual(
    http2HealthFromEnv(
      { HTTP2_READ_IDLE_TIMEOUT_SECONDS: '9999999', HTTP2_PING_TIMEOUT_SECONDS: '9999999' },
      warn,
    ),
    { readIdleMs: 2 ** 31 - 1, pingTimeoutMs: 2 ** 31 - 1 },
  );
  assert.equal(warnings.length, 2);
  assert.match(warnings[0]!, /HTTP2_READ_IDLE_TIMEOUT_SECONDS.*2147483 s/);
});

test('a call whose caller gave up before the connection is made leaves no dial failing unheard', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const transport = new ApiHttp2Transport(
      {
        host: '127.0.0.1',
        port: 1,
        authority: '127.0.0.1:1',
        secureContext: tls.createSecureContext(),
        rejectUnauthorized: true,
      },
      realClock,
    );
    const ac = new AbortController();
    ac.abort(new Error('stop'));
    const req = { method: 'GET', path: '/api/v1/pods', headers: [], body: undefined };
    await assert.rejects(transport.exchange(req, 1000, ac.signal), /stop/);
    // The refused TCP connection fails within a few ms; give its rejection the time to surface.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
