/**
 * The bounds on connections per listener and on concurrent exec/attach/port-forward sessions hold
 * under a loopback flood that stops by itself, excess is told why, and the kubelet serves normally
 * afterwards.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import tls from 'node:tls';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { startKubeletReadOnlyServer, startKubeletServer } from '../../../src/server/kubelet-server.js';
import { request, testConfig, testHost, type TestResponse } from './server-kit.js';

const dir = mkdtempSync(join(tmpdir(), 'server-limits-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Raw connections held open (each done with its TLS handshake), to fill a listener. */
async function holdConnections(port: number, n: number, secure: boolean): Promise<net.Socket[]> {
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const s = secure
            ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => resolve(s))
            : net.connect({ host: '127.0.0.1', port }, () => resolve(s));
          s.setTimeout(10_000, () => s.destroy(new Error('connect timed out')));
          s.once('error', reject);
        }),
    ),
  );
}

/** n requests at once, each on its own connection; every one must be answered (or cut), none may hang. */
async function flood(
  port: number,
  path: string,
  n: number,
  secure: boolean,
): Promise<(TestResponse | Error)[]> {
  return Promise.all(
    Array.from({ length: n }, () => request(port, path, { secure }).catch((err: Error) => err)),
  );
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const secure of [true, false]) {
  test(`connections per listener (${secure ? '10250' : 'read-only port'}): the one over the limit gets a 503 with the reason; after the flood all is served`, async () => {
    const limits = { maxConnectionsPerListener: 8 };
    const s = secure
      ? await startKubeletServer(testHost(), {
          config: testConfig(),
          nodeName: 'n',
          certDirectory: join(dir, 'pki'),
          limits,
        })
      : await startKubeletReadOnlyServer(testHost(), {
          address: '127.0.0.1',
          port: 0,
          nodeName: 'n',
          limits,
        });
    try {
      const held = await holdConnections(s.port, 8, secure);
      const over = await request(s.port, '/healthz', { secure });
      assert.equal(over.status, 503);
      assert.equal(over.headers.connection, 'close');
      assert.match(
        over.body,
        new RegExp(
          `too many open connections to the kubelet ${secure ? 'secure' : 'read-only'} listener \\(limit 8\\)`,
        ),
      );
      for (const h of held) h.destroy();

      // A flood of 60 at once: every request is answered, 200 or 503, none left hanging.
      const answers = await flood(s.port, '/pods', 60, secure);
      const statuses = answers.map((a) => (a instanceof Error ? a.message : a.status));
      assert.ok(
        statuses.every((st) => st === 200 || st === 503),
        `unexpected answers: ${JSON.stringify(statuses)}`,
      );
      assert.ok(statuses.includes(200));

      // Afterwards: served as ever.
      await until(
        'the listener to serve again',
        async () => (await request(s.port, '/pods', { secure })).status === 200,
      );
      for (let i = 0; i < 5; i++) assert.equal((await request(s.port, '/healthz', { secure })).body, 'ok');
    } finally {
      await s.close();
    }
  });
}

/** A stand-in for the runtime's streaming server: every upgrade is accepted and held open. */
async function holdingStreamServer(): Promise<{
  url: string;
  sockets: Set<net.Socket>;
  close(): Promise<void>;
}> {
  const sockets = new Set<net.Socket>();
  const server = http.createServer((_req, res) => res.writeHead(400).end());
  server.on('upgrade', (req, socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    // The HTTP server's sockets allow half-open: the kubelet's end must end the stream here too.
    socket.on('end', () => socket.destroy());
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${String(req.headers.upgrade)}\r\n\r\n`,
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/stream`,
    sockets,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** Opens an exec or port-forward stream over SPDY's upgrade; resolves with the status line's code and the socket. */
function openStream(
  port: number,
  path: string,
): Promise<{ status: number; head: string; socket: tls.TLSSocket }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n` +
          'X-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n',
      );
    });
    let got = '';
    const onData = (chunk: Buffer) => {
      got += chunk.toString('latin1');
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      resolve({ status: Number(got.split(' ')[1]), head: got, socket });
    };
    socket.on('data', onData);
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer to ${path}`)));
    socket.once('error', reject);
  });
}

test('streaming sessions: exec and port-forward over the limit get a 429 with the reason; a closed session frees its slot', async () => {
  const backend = await holdingStreamServer();
  const runtime = new FakeRuntime();
  runtime.exec = async () => backend.url;
  runtime.portForward = async () => backend.url;
  runtime.listContainers = async () => [
    {
      id: 'c1',
      podSandboxId: 's1',
      metadata: { name: 'c', attempt: 0 },
      image: { image: 'i' },
      imageRef: 'i',
      state: 'CONTAINER_RUNNING',
      createdAt: 1,
      labels: {},
      annotations: {},
    },
  ];
  runtime.listPodSandbox = async () => [
    {
      id: 's1',
      metadata: { name: 'web-node1', namespace: 'default', uid: 'u1', attempt: 0 },
      state: 'SANDBOX_READY',
      createdAt: 1,
      labels: {},
      annotations: {},
      runtimeHandler: '',
    },
  ];
  const s = await startKubeletServer(testHost({ runtime }), {
    config: testConfig(),
    nodeName: 'n',
    certDirectory: join(dir, 'pki'),
    limits: { maxStreamingSessions: 3 },
  });
  const exec = '/exec/default/web-node1/c?command=sh&input=1&output=1';
  const open: tls.TLSSocket[] = [];
  try {
    // A flood of 20 at once: 3 sessions, 17 refusals that say why.
    const results = await Promise.all(Array.from({ length: 20 }, () => openStream(s.port, exec)));
    open.push(...results.map((r) => r.socket));
    const switched = results.filter((r) => r.status === 101);
    const refused = results.filter((r) => r.status === 429);
    assert.equal(switched.length, 3);
    assert.equal(refused.length, 17);
    assert.match(
      refused[0]!.head + (await readRest(refused[0]!.socket)),
      /Retry-After: 10[\s\S]*too many concurrent exec, attach and port-forward sessions on this kubelet \(limit 3\)/,
    );
    const pf = await openStream(s.port, '/portForward/default/web-node1');
    open.push(pf.socket);
    assert.equal(pf.status, 429, 'port-forward counts against the same limit');
    // Other requests go on being served while the sessions are full.
    assert.equal((await request(s.port, '/pods')).status, 200);

    // One session ends: its slot is free for the next.
    switched[0]!.socket.destroy();
    await until('the slot to be released', async () => {
      const r = await openStream(s.port, exec);
      open.push(r.socket);
      return r.status === 101;
    });
    for (const o of open) o.destroy();
    await until('every session to end', async () => backend.sockets.size === 0);
    const again = await Promise.all(Array.from({ length: 3 }, () => openStream(s.port, exec)));
    open.push(...again.map((r) => r.socket));
    assert.deepEqual(
      again.map((r) => r.status),
      [101, 101, 101],
    );
  } finally {
    for (const o of open) o.destroy();
    await s.close();
    await backend.close();
  }
});

function readRest(socket: tls.TLSSocket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString()));
    socket.once('close', () => resolve(text));
    setTimeout(() => resolve(text), 2000).unref();
  });
}
