import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { LifecycleHandlerRunner } from '../../../src/kuberuntime/lifecycle-handler-runner.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { CertificateAuthority } from '../../apiserver/certs.js';

const pod: Pod = { metadata: { name: 'web', namespace: 'prod', uid: 'u-1' }, spec: { containers: [] } };

async function runningContainer(fake: FakeRuntime): Promise<string> {
  fake.addImage('busybox:latest');
  const sb = await fake.runPodSandbox(
    {
      metadata: { name: 'web', namespace: 'prod', uid: 'u-1', attempt: 0 },
      hostname: '',
      logDirectory: '',
      portMappings: [],
      labels: {},
      annotations: {},
    },
    '',
  );
  const id = await fake.createContainer(
    sb,
    {
      metadata: { name: 'app', attempt: 0 },
      image: { image: 'busybox:latest' },
      command: [],
      args: [],
      workingDir: '',
      envs: [],
      mounts: [],
      labels: {},
      annotations: {},
      logPath: '',
      stdin: false,
      stdinOnce: false,
      tty: false,
    },
    {
      metadata: { name: 'web', namespace: 'prod', uid: 'u-1', attempt: 0 },
      hostname: '',
      logDirectory: '',
      portMappings: [],
      labels: {},
      annotations: {},
    },
  );
  await fake.startContainer(id);
  return id;
}

test('exec: success, and a non-zero exit in upstream words', async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  const id = await runningContainer(fake);
  const runner = new LifecycleHandlerRunner({ runtimeService: fake, clock });
  const c: Container = { name: 'app' };
  assert.deepEqual(await runner.run(id, pod, c, { exec: { command: ['true'] } }, ''), { ok: true });
  fake.execSync = async () => ({ stdout: Buffer.from('out'), stderr: Buffer.from('bad'), exitCode: 2 });
  assert.deepEqual(await runner.run(id, pod, c, { exec: { command: ['sh', '-c', 'exit 2'] } }, ''), {
    ok: false,
    message:
      'Exec lifecycle hook ([sh -c exit 2]) for Container "app" in Pod "web_prod(u-1)" failed - error: command \'sh -c exit 2\' exited with 2: bad, message: "outbad"',
  });
});

test('sleep waits on the clock; httpGet reaches the pod with its headers and a named port', async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  const runner = new LifecycleHandlerRunner({ runtimeService: fake, clock, kubernetesVersion: 'v1.30.2' });
  let done = false;
  const sleeping = runner.run('x', pod, { name: 'app' }, { sleep: { seconds: 5 } }, '').then((r) => {
    done = true;
    return r;
  });
  await Promise.resolve();
  clock.advance(4_999);
  await Promise.resolve();
  assert.equal(done, false);
  clock.advance(1);
  assert.deepEqual(await sleeping, { ok: true });

  let seen: { url?: string; headers?: IncomingHttpHeaders } = {};
  const server = createServer((req, res) => {
    seen = { url: req.url, headers: req.headers };
    res.statusCode = 500; // Not judged: only a failed request fails the hook.
    res.end('no');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as AddressInfo).port;
    const c: Container = { name: 'app', ports: [{ name: 'http', containerPort: port }] };
    const r = await runner.run(
      'x',
      pod,
      c,
      { httpGet: { path: 'hook', port: 'http', httpHeaders: [{ name: 'X-Test', value: '1' }] } },
      '127.0.0.1',
    );
    assert.deepEqual(r, { ok: true });
    assert.equal(seen.url, '/hook');
    assert.equal(seen.headers?.['x-test'], '1');
    assert.equal(seen.headers?.['user-agent'], 'kube-lifecycle/1.30');
    assert.equal(seen.headers?.accept, '*/*');
    // The hook's own User-Agent replaces the kubelet's.
    await runner.run(
      'x',
      pod,
      c,
      { httpGet: { path: '/', port, httpHeaders: [{ name: 'user-agent', value: 'mine' }] } },
      '127.0.0.1',
    );
    assert.equal(seen.headers?.['user-agent'], 'mine');
  } finally {
    server.close();
  }
  const refused = await runner.run(
    'x',
    pod,
    { name: 'app' },
    { httpGet: { path: '/x', port: 1 } },
    '127.0.0.1',
  );
  assert.equal(refused.ok, false);
  assert.match(
    refused.ok ? '' : refused.message,
    /^HTTP lifecycle hook \(\/x\) for Container "app" in Pod "web_prod\(u-1\)" failed - error: /,
  );
});

async function listenLocal(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

test('an HTTPS hook does not verify the certificate, as upstream (the pod serves a self-signed one)', async () => {
  const clock = new FakeClock();
  const runner = new LifecycleHandlerRunner({
    runtimeService: new FakeRuntime(clock),
    clock,
    kubernetesVersion: 'v1.30.2',
  });
  const ca = await CertificateAuthority.create();
  const pair = await ca.issueServing('hook-target', ['127.0.0.1'], ['localhost']);
  const seen: { url?: string; headers: IncomingHttpHeaders }[] = [];
  const server = createHttpsServer({ cert: pair.certPem, key: pair.keyPem }, (req, res) => {
    seen.push({ url: req.url, headers: req.headers });
    res.end('ok');
  });
  const port = await listenLocal(server);
  try {
    const r = await runner.run(
      'x',
      pod,
      { name: 'app' },
      {
        httpGet: {
          scheme: 'HTTPS',
          port,
          path: '/echo?msg=poststart',
          httpHeaders: [{ name: 'Host', value: 'hooks.example' }],
        },
      },
      '127.0.0.1',
    );
    assert.deepEqual(r, { ok: true });
    assert.equal(seen.length, 1);
    assert.equal(seen[0]?.url, '/echo?msg=poststart');
    assert.equal(seen[0]?.headers['user-agent'], 'kube-lifecycle/1.30');
    // A Host header among the hook's headers names the request's host, as Go's req.Host does.
    assert.equal(seen[0]?.headers.host, 'hooks.example');
  } finally {
    server.closeAllConnections();
    server.close();
    await ca.dispose();
  }
});

test("redirects: followed on the pod's host (at most 10 requests), a redirect elsewhere is the answer", async () => {
  const clock = new FakeClock();
  const runner = new LifecycleHandlerRunner({ runtimeService: new FakeRuntime(clock), clock });
  const urls: string[] = [];
  const server = createServer((req, res) => {
    urls.push(req.url ?? '');
    if (req.url === '/away') res.writeHead(302, { Location: 'http://192.0.2.1:1/never' }).end();
    else if (req.url === '/hop') res.writeHead(302, { Location: '/end' }).end();
    else if (req.url?.startsWith('/r')) res.writeHead(302, { Location: `/r${urls.length}` }).end();
    else res.end('done');
  });
  const port = await listenLocal(server);
  try {
    const c: Container = { name: 'app' };
    urls.length = 0;
    assert.deepEqual(await runner.run('x', pod, c, { httpGet: { port, path: '/hop' } }, '127.0.0.1'), {
      ok: true,
    });
    assert.deepEqual(urls, ['/hop', '/end']);
    urls.length = 0;
    // Another host ends the chain without a request to it (192.0.2.1 is TEST-NET-1, never reached).
    assert.deepEqual(await runner.run('x', pod, c, { httpGet: { port, path: '/away' } }, '127.0.0.1'), {
      ok: true,
    });
    assert.deepEqual(urls, ['/away']);
    urls.length = 0;
    const looping = await runner.run('x', pod, c, { httpGet: { port, path: '/r' } }, '127.0.0.1');
    assert.equal(urls.length, 10);
    assert.equal(looping.ok, false);
    assert.match(looping.ok ? '' : looping.message, /stopped after 10 redirects$/);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('HTTPS to a server that answers in plain HTTP retries over HTTP, without Authorization, and says so', async () => {
  const clock = new FakeClock();
  const events: string[] = [];
  const runner = new LifecycleHandlerRunner({
    runtimeService: new FakeRuntime(clock),
    clock,
    recorder: {
      event: (_p, fieldPath, type, reason, message) =>
        events.push(`${fieldPath}|${type}|${reason}|${message}`),
    },
  });
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    res.end('plain');
  });
  const port = await listenLocal(server);
  try {
    const r = await runner.run(
      'x',
      pod,
      { name: 'app' },
      {
        httpGet: {
          scheme: 'HTTPS',
          port,
          path: '/hook',
          httpHeaders: [
            { name: 'Authorization', value: 'Bearer secret' },
            { name: 'X-Keep', value: 'yes' },
          ],
        },
      },
      '127.0.0.1',
    );
    assert.deepEqual(r, { ok: true });
    assert.equal(seen.length, 1);
    assert.equal(seen[0]?.authorization, undefined);
    assert.equal(seen[0]?.['x-keep'], 'yes');
    assert.deepEqual(events, [
      `|Warning|LifecycleHTTPFallback|request to HTTPS lifecycle hook 127.0.0.1:${port} got HTTP response, retry with HTTP succeeded`,
    ]);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
