import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Container } from '../../../src/api/core-v1.js';
import { FakeClock, realClock } from '../../../src/lib/clock.js';
import { newRequestForHTTPGetAction, resolveContainerPort } from '../../../src/api/http-get-action.js';
import {
  canonicalHeaderKey,
  httpGetUrlString as probeUrlString,
  type HttpGetRequest as HttpProbeRequest,
} from '../../../src/lib/http-get-client.js';
import { doHttpProbe } from '../../../src/prober/http-probe.js';
import { CertificateAuthority } from '../../apiserver/certs.js';

const UA = 'kube-probe/1.30';
const container: Container = {
  name: 'app',
  ports: [
    { name: 'http', containerPort: 8080 },
    { name: 'metrics', containerPort: 9100 },
  ],
};

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function listen(server: Server | net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function close(server: Server | net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  const port = await listen(s);
  await close(s);
  return port;
}

function request(port: number, path: string, extra: Partial<HttpProbeRequest> = {}): HttpProbeRequest {
  return {
    scheme: 'http',
    host: '127.0.0.1',
    port,
    path,
    headers: new Map([
      ['User-Agent', [UA]],
      ['Accept', ['*/*']],
    ]),
    ...extra,
  };
}

describe('httpGet probe against a real server', () => {
  let server: Server;
  let port: number;
  const seen: { url: string; headers: IncomingMessage['headers'] }[] = [];
  const routes = new Map<string, Handler>();

  before(async () => {
    server = createServer((req, res) => {
      seen.push({ url: req.url ?? '', headers: req.headers });
      const route = routes.get((req.url ?? '').split('?')[0]!);
      if (route) return route(req, res);
      res.writeHead(404).end('not found');
    });
    port = await listen(server);
    routes.set('/ok', (_req, res) => res.writeHead(200).end('fine'));
    routes.set('/', (_req, res) => res.writeHead(200).end('root'));
    routes.set('/boom', (_req, res) => res.writeHead(500).end('secret details'));
    routes.set('/no-content', (_req, res) => res.writeHead(204).end());
    routes.set('/moved', (_req, res) => res.writeHead(301, { location: '/ok' }).end());
    routes.set('/away', (_req, res) =>
      res.writeHead(302, { location: `http://localhost:${port}/ok` }).end('going elsewhere'),
    );
    routes.set('/not-modified', (_req, res) => res.writeHead(304).end());
    routes.set('/big', (_req, res) => {
      res.writeHead(200);
      res.end(Buffer.alloc(1024 * 1024, 'x'));
    });
    routes.set('/hangup', (req) => req.socket.destroy());
    for (let i = 0; i < 20; i++) {
      routes.set(`/loop${i}`, (_req, res) => res.writeHead(302, { location: `/loop${i + 1}` }).end());
    }
  });

  after(() => close(server));

  test('2xx is a success whose output is the body', async () => {
    const o = await doHttpProbe(request(port, '/ok'), { clock: realClock, timeoutMs: 5000 });
    assert.deepEqual(o, { result: 'success', output: 'fine' });
    const o2 = await doHttpProbe(request(port, '/no-content'), { clock: realClock, timeoutMs: 5000 });
    assert.equal(o2.result, 'success');
  });

  test('a status of 400 and over is a failure that keeps the body out of the message', async () => {
    const o = await doHttpProbe(request(port, '/boom'), { clock: realClock, timeoutMs: 5000 });
    assert.deepEqual(o, { result: 'failure', output: 'HTTP probe failed with statuscode: 500' });
    const o2 = await doHttpProbe(request(port, '/nowhere'), { clock: realClock, timeoutMs: 5000 });
    assert.equal(o2.output, 'HTTP probe failed with statuscode: 404');
  });

  test('a redirect to the same host is followed, with the same headers', async () => {
    seen.length = 0;
    const req = request(port, '/moved');
    req.headers.set('X-Custom', ['one']);
    const o = await doHttpProbe(req, { clock: realClock, timeoutMs: 5000 });
    assert.deepEqual(o, { result: 'success', output: 'fine' });
    assert.deepEqual(
      seen.map((s) => s.url),
      ['/moved', '/ok'],
    );
    assert.equal(seen[1]!.headers['x-custom'], 'one');
    assert.equal(seen[1]!.headers['user-agent'], UA);
  });

  test('CVE-2020-8559: a redirect to another host is not followed: a success with a warning', async () => {
    seen.length = 0;
    const o = await doHttpProbe(request(port, '/away'), { clock: realClock, timeoutMs: 5000 });
    assert.deepEqual(o, {
      result: 'warning',
      output: 'Probe terminated redirects, Response body: going elsewhere',
    });
    assert.deepEqual(
      seen.map((s) => s.url),
      ['/away'],
    );
  });

  test('a 3xx that is not a redirect is a success with a warning', async () => {
    const o = await doHttpProbe(request(port, '/not-modified'), { clock: realClock, timeoutMs: 5000 });
    assert.equal(o.result, 'warning');
  });

  test('a redirect chain stops at the 10th request, as Go does', async () => {
    seen.length = 0;
    const o = await doHttpProbe(request(port, '/loop0'), { clock: realClock, timeoutMs: 5000 });
    assert.deepEqual(o, {
      result: 'failure',
      output: `Get "http://127.0.0.1:${port}/loop9": stopped after 10 redirects`,
    });
    assert.equal(seen.length, 10);
  });

  test('the body is read to 10 KiB at most', async () => {
    const o = await doHttpProbe(request(port, '/big'), { clock: realClock, timeoutMs: 5000 });
    assert.equal(o.result, 'success');
    assert.equal(o.output.length, 10 * 1024);
  });

  test('an empty path asks for / and messages quote the URL as Go prints it', async () => {
    seen.length = 0;
    const o = await doHttpProbe(request(port, ''), { clock: realClock, timeoutMs: 5000 });
    assert.equal(o.result, 'success');
    assert.equal(seen[0]!.url, '/');
    assert.equal(probeUrlString('http', '10.0.0.5', 8080, ''), 'http://10.0.0.5:8080');
    assert.equal(probeUrlString('http', '10.0.0.5', 8080, 'healthz'), 'http://10.0.0.5:8080/healthz');
    assert.equal(probeUrlString('https', 'fd00::5', 443, '/a b?x=1'), 'https://[fd00::5]:443/a%20b?x=1');
  });

  test('the query is kept and spaces in the path are escaped on the wire', async () => {
    seen.length = 0;
    await doHttpProbe(request(port, '/ok?verbose=1'), { clock: realClock, timeoutMs: 5000 });
    await doHttpProbe(request(port, '/a b'), { clock: realClock, timeoutMs: 5000 });
    assert.deepEqual(
      seen.map((s) => s.url),
      ['/ok?verbose=1', '/a%20b'],
    );
  });

  test('headers: User-Agent, Accept, custom Host, canonical names, repeated values', async () => {
    seen.length = 0;
    const req = newRequestForHTTPGetAction(
      {
        port: 'http',
        path: '/ok',
        httpHeaders: [
          { name: 'x-trace', value: 'a' },
          { name: 'X-Trace', value: 'b' },
          { name: 'Host', value: 'example.test' },
        ],
      },
      container,
      '127.0.0.1',
      UA,
    );
    req.port = port;
    const o = await doHttpProbe(req, { clock: realClock, timeoutMs: 5000 });
    assert.equal(o.result, 'success');
    const h = seen[0]!.headers;
    assert.equal(h['user-agent'], 'kube-probe/1.30');
    assert.equal(h.accept, '*/*');
    assert.equal(h.host, 'example.test');
    assert.equal(h['x-trace'], 'a, b');
    assert.equal(h.connection, 'close');
  });

  test('the default Host header is the probed address', async () => {
    seen.length = 0;
    await doHttpProbe(request(port, '/ok'), { clock: realClock, timeoutMs: 5000 });
    assert.equal(seen[0]!.headers.host, `127.0.0.1:${port}`);
  });

  test('a User-Agent of the spec wins, and an empty Accept sends none', async () => {
    seen.length = 0;
    const req = newRequestForHTTPGetAction(
      {
        port,
        path: '/ok',
        httpHeaders: [
          { name: 'User-Agent', value: 'mine/1' },
          { name: 'Accept', value: '' },
        ],
      },
      container,
      '127.0.0.1',
      UA,
    );
    await doHttpProbe(req, { clock: realClock, timeoutMs: 5000 });
    assert.equal(seen[0]!.headers['user-agent'], 'mine/1');
    assert.equal(seen[0]!.headers.accept, undefined);
  });

  test('a peer that hangs up without answering is EOF, as Go reports it', async () => {
    const o = await doHttpProbe(request(port, '/hangup'), { clock: realClock, timeoutMs: 5000 });
    assert.deepEqual(o, { result: 'failure', output: `Get "http://127.0.0.1:${port}/hangup": EOF` });
  });
});

describe('httpGet probe failures to connect and time out', () => {
  test('connection refused reads as Go dial error inside Go url error', async () => {
    const port = await closedPort();
    const o = await doHttpProbe(request(port, '/healthz'), { clock: realClock, timeoutMs: 5000 });
    assert.deepEqual(o, {
      result: 'failure',
      output: `Get "http://127.0.0.1:${port}/healthz": dial tcp 127.0.0.1:${port}: connect: connection refused`,
    });
  });

  test('a server that does not answer in time fails at the injected clock timeout', async () => {
    const clock = new FakeClock();
    let sawRequest!: () => void;
    const requested = new Promise<void>((r) => (sawRequest = r));
    const held: ServerResponse[] = [];
    const server = createServer((_req, res) => {
      held.push(res);
      sawRequest();
    });
    const port = await listen(server);
    try {
      const pending = doHttpProbe(request(port, '/slow'), { clock, timeoutMs: 1000 });
      await requested;
      clock.advance(999);
      clock.advance(1);
      const o = await pending;
      assert.deepEqual(o, {
        result: 'failure',
        output: `Get "http://127.0.0.1:${port}/slow": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
      });
      assert.equal(clock.pendingTimers(), 0);
    } finally {
      held.forEach((r) => r.destroy());
      server.closeAllConnections();
      await close(server);
    }
  });

  test('a timeout while reading the body is an error, as upstream (thrown away, not a verdict)', async () => {
    const clock = new FakeClock();
    let sawRequest!: () => void;
    const requested = new Promise<void>((r) => (sawRequest = r));
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
      sawRequest();
    });
    const port = await listen(server);
    try {
      const pending = doHttpProbe(request(port, '/drip'), { clock, timeoutMs: 1000 });
      await requested;
      // Let the headers reach the client before the deadline.
      await new Promise((r) => setTimeout(r, 50));
      clock.advance(1000);
      const o = await pending;
      assert.equal(o.result, 'failure');
      assert.match(
        o.error?.message ?? '',
        /context deadline exceeded \(Client.Timeout or context cancellation while reading body\)/,
      );
    } finally {
      server.closeAllConnections();
      await close(server);
    }
  });

  test('aborting the probe gives an error, not a verdict', async () => {
    const server = createServer(() => undefined);
    const port = await listen(server);
    try {
      const controller = new AbortController();
      const pending = doHttpProbe(request(port, '/'), {
        clock: realClock,
        timeoutMs: 5000,
        signal: controller.signal,
      });
      controller.abort(new Error('worker stopped'));
      const o = await pending;
      assert.equal(o.result, 'unknown');
      assert.equal(o.error?.message, 'worker stopped');
    } finally {
      server.closeAllConnections();
      await close(server);
    }
  });
});

describe('httpGet probe over HTTPS', () => {
  test('does not verify the certificate, as upstream', async () => {
    const ca = await CertificateAuthority.create();
    const pair = await ca.issueServing('probe-target', ['127.0.0.1'], ['localhost']);
    const server = createHttpsServer({ cert: pair.certPem, key: pair.keyPem }, (_req, res) =>
      res.writeHead(200).end('secure'),
    );
    const port = await listen(server);
    try {
      const o = await doHttpProbe(request(port, '/', { scheme: 'https' }), {
        clock: realClock,
        timeoutMs: 5000,
      });
      assert.deepEqual(o, { result: 'success', output: 'secure' });
    } finally {
      await close(server);
      await ca.dispose();
    }
  });
});

describe('request building', () => {
  test('ports: numbers, and names resolved against the container', () => {
    assert.equal(resolveContainerPort(8080, container), 8080);
    assert.equal(resolveContainerPort('metrics', container), 9100);
    assert.throws(() => resolveContainerPort('admin', container), { message: 'port "admin" not found' });
    assert.throws(() => resolveContainerPort(0, container), { message: 'invalid port number: 0' });
    assert.throws(() => resolveContainerPort(70000, container), { message: 'invalid port number: 70000' });
  });

  test('host defaults to the pod IP; scheme is lower-cased', () => {
    const r = newRequestForHTTPGetAction({ port: 'http', scheme: 'HTTPS' }, container, '10.244.1.7', UA);
    assert.equal(r.host, '10.244.1.7');
    assert.equal(r.scheme, 'https');
    assert.equal(r.port, 8080);
    const r2 = newRequestForHTTPGetAction({ port: 80, host: 'example.test' }, container, '10.244.1.7', UA);
    assert.equal(r2.host, 'example.test');
    assert.equal(r2.scheme, 'http');
  });

  test('header names are canonicalized as Go does', () => {
    assert.equal(canonicalHeaderKey('user-agent'), 'User-Agent');
    assert.equal(canonicalHeaderKey('X-FORWARDED-FOR'), 'X-Forwarded-For');
    assert.equal(canonicalHeaderKey('bad header'), 'bad header');
  });
});
