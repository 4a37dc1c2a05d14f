/**
 * The kubelet API server over real HTTP(S) with a fake runtime: routing, the read-only port, the
 * debugging switch, startup refusals, path hygiene and the TLS settings. Streams against a real
 * runtime are in test/integration/kubelet-api.test.ts.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { isKubeletError } from '../../../src/lib/errors.js';
import { MetricsRegistry } from '../../../src/lib/metrics.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import {
  startKubeletReadOnlyServer,
  startKubeletServer,
  type KubeletServerConfig,
  type KubeletServerHost,
} from '../../../src/server/kubelet-server.js';
import { parseRequestTarget } from '../../../src/server/request-context.js';
import { openSslCiphers, tlsMinVersion } from '../../../src/server/serving-tls.js';
import { request as get, testConfig as config, testHost as host } from './server-kit.js';

const dir = mkdtempSync(join(tmpdir(), 'kserver-unit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('startup refuses what upstream refuses', async () => {
  const certDirectory = join(dir, 'refuse');
  const refuse = async (c: KubeletServerConfig, message: string) =>
    assert.rejects(startKubeletServer(host(), { config: c, nodeName: 'n', certDirectory }), (err) => {
      assert.ok(isKubeletError(err, 'INVALID_CONFIG'));
      assert.equal((err as Error).message, message);
      return true;
    });
  await refuse(
    config({
      authentication: {
        x509: { clientCAFile: '' },
        webhook: { enabled: true, cacheTTLMs: 0 },
        anonymous: { enabled: false },
      },
    }),
    'no client provided, cannot use webhook authentication',
  );
  await refuse(
    config({
      authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTLMs: 0, cacheUnauthorizedTTLMs: 0 } },
    }),
    'no client provided, cannot use webhook authorization',
  );
  await refuse(
    config({
      authentication: {
        x509: { clientCAFile: '' },
        webhook: { enabled: false, cacheTTLMs: 0 },
        anonymous: { enabled: false },
      },
    }),
    'No authentication method configured',
  );
  await refuse(config({ tlsMinVersion: 'VersionTLS14' }), 'unknown tls version "VersionTLS14"');
  await refuse(
    config({ tlsCipherSuites: ['TLS_NOPE'] }),
    "Cipher suite TLS_NOPE not supported or doesn't exist",
  );
});

test('TLS names map from Go to OpenSSL; TLS 1.3 suites stay at their defaults', () => {
  assert.equal(tlsMinVersion(''), 'TLSv1.2');
  assert.equal(tlsMinVersion('VersionTLS13'), 'TLSv1.3');
  assert.equal(openSslCiphers([]), undefined);
  assert.equal(openSslCiphers(['TLS_AES_128_GCM_SHA256']), undefined);
  assert.equal(
    openSslCiphers(['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305']),
    'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305',
  );
});

test('the self-signed pair is made once, named for the node, and reused', async () => {
  const certDirectory = join(dir, 'pki');
  const s1 = await startKubeletServer(host(), { config: config(), nodeName: 'node-a', certDirectory });
  await s1.close();
  const certFile = join(certDirectory, 'kubelet.crt');
  const first = readFileSync(certFile, 'utf8');
  assert.equal(statSync(join(certDirectory, 'kubelet.key')).mode & 0o777, 0o600);
  const certs = first.split(/(?=-----BEGIN CERTIFICATE-----)/).map((p) => new X509Certificate(p));
  assert.equal(certs.length, 2, 'the serving certificate, then its CA');
  assert.match(certs[0]!.subject, /CN=node-a@\d+/);
  assert.equal(certs[0]!.subjectAltName, 'DNS:node-a');
  assert.match(certs[1]!.subject, /CN=node-a-ca@\d+/);
  assert.ok(certs[0]!.checkIssued(certs[1]!));
  const s2 = await startKubeletServer(host(), { config: config(), nodeName: 'node-a', certDirectory });
  await s2.close();
  assert.equal(readFileSync(certFile, 'utf8'), first);
});

test('the secure port: pods, runningpods, configz, healthz, metrics; unknown paths and methods', async () => {
  const metrics = new MetricsRegistry();
  metrics.gauge('kubelet_running_pods', 'Number of pods that have a running pod sandbox').set(undefined, 1);
  const probes = new MetricsRegistry();
  probes
    .counter('prober_probe_total', 'Cumulative number of a liveness, readiness or startup probe', [
      'probe_type',
      'result',
    ])
    .inc({ probe_type: 'Liveness', result: 'successful' });
  const s = await startKubeletServer(
    host({ metrics, probeMetrics: probes, configz: () => ({ maxPods: 110 }) }),
    {
      config: config(),
      nodeName: 'n',
      certDirectory: join(dir, 'pki'),
    },
  );
  try {
    const pods = await get(s.port, '/pods');
    assert.equal(pods.status, 200);
    assert.equal(pods.headers['content-type'], 'application/json');
    assert.equal((JSON.parse(pods.body) as { items: Pod[] }).items[0]?.metadata.name, 'web-node1');
    assert.equal((await get(s.port, '/runningpods/')).status, 200);
    assert.equal((await get(s.port, '/runningpods')).status, 404);
    assert.deepEqual(JSON.parse((await get(s.port, '/configz')).body), { kubeletconfig: { maxPods: 110 } });
    assert.equal((await get(s.port, '/healthz')).body, 'ok');
    const m = await get(s.port, '/metrics');
    assert.equal(m.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
    assert.match(m.body, /^kubelet_running_pods 1$/m);
    assert.match(m.body, /^process_start_time_seconds \d+$/m);
    assert.match(
      (await get(s.port, '/metrics/probes')).body,
      /prober_probe_total\{probe_type="Liveness",result="successful"\} 1/,
    );
    assert.equal((await get(s.port, '/metrics/cadvisor')).status, 404);
    assert.equal((await get(s.port, '/spec/')).status, 404);
    assert.equal((await get(s.port, '/nope')).status, 404);
    assert.equal((await get(s.port, '/pods', { method: 'POST' })).status, 405);
    assert.equal((await get(s.port, '/containerLogs/default/web-node1/c', { method: 'POST' })).status, 405);
  } finally {
    await s.close();
  }
});

test('dot segments and bad escapes are a 400 before anything else', async () => {
  const s = await startKubeletServer(host(), {
    config: config(),
    nodeName: 'n',
    certDirectory: join(dir, 'pki'),
  });
  try {
    for (const p of [
      '/logs/../x',
      '/logs/%2e%2e/x',
      '/logs/.%2E/x',
      '/logs/a/./b',
      '/logs/%2fetc',
      '/logs//etc',
      '/logs/%zz',
    ]) {
      assert.equal((await get(s.port, p)).status, 400, p);
    }
  } finally {
    await s.close();
  }
  assert.deepEqual(parseRequestTarget('/'), { path: '/', segments: [''], query: new URLSearchParams() });
  const ok = parseRequestTarget('/containerLogs/ns/pod%20x/c?tail=1');
  assert.ok(!('error' in ok));
  assert.deepEqual(ok.segments, ['containerLogs', 'ns', 'pod x', 'c']);
  assert.equal(ok.query.get('tail'), '1');
});

test('without enableDebuggingHandlers the debugging endpoints answer 405 as upstream', async () => {
  const s = await startKubeletServer(host(), {
    config: config({ enableDebuggingHandlers: false }),
    nodeName: 'n',
    certDirectory: join(dir, 'pki'),
  });
  try {
    for (const p of [
      '/exec/a/b/c',
      '/run/a/b/c',
      '/containerLogs/a/b/c',
      '/portForward/a/b',
      '/runningpods/',
      '/logs/',
    ]) {
      const r = await get(s.port, p);
      assert.equal(r.status, 405, p);
      assert.equal(r.body, 'Debug endpoints are disabled.\n');
    }
    assert.equal((await get(s.port, '/configz')).status, 404);
    assert.equal((await get(s.port, '/pods')).status, 200);
  } finally {
    await s.close();
  }
  const noSystemLogs = await startKubeletServer(host(), {
    config: config({ enableSystemLogHandler: false }),
    nodeName: 'n',
    certDirectory: join(dir, 'pki'),
  });
  try {
    assert.equal((await get(noSystemLogs.port, '/logs/')).body, 'logs endpoint is disabled.\n');
  } finally {
    await noSystemLogs.close();
  }
});

test('the read-only port: plain HTTP, no authentication, read endpoints only', async () => {
  const s = await startKubeletReadOnlyServer(host(), { address: '127.0.0.1', port: 0, nodeName: 'n' });
  try {
    assert.equal((await get(s.port, '/pods', { secure: false })).status, 200);
    assert.equal((await get(s.port, '/healthz', { secure: false })).body, 'ok');
    assert.equal((await get(s.port, '/metrics', { secure: false })).status, 200);
    assert.match((await get(s.port, '/metrics', { secure: false })).body, /server_type="readonly"/);
    assert.equal((await get(s.port, '/configz', { secure: false })).status, 404);
    assert.equal((await get(s.port, '/exec/a/b/c', { secure: false })).status, 405);
    assert.equal((await get(s.port, '/runningpods/', { secure: false })).status, 405);
  } finally {
    await s.close();
  }
});

test('anonymous off: 401 says why; /exec with a bad request is a 400 after authorization', async () => {
  const s = await startKubeletServer(host(), {
    config: config({
      authentication: {
        x509: { clientCAFile: '' },
        webhook: { enabled: true, cacheTTLMs: 0 },
        anonymous: { enabled: false },
      },
    }),
    nodeName: 'n',
    certDirectory: join(dir, 'pki'),
    tokenReviewer: {
      review: async (t) =>
        t === 'ok' ? { authenticated: true, user: { username: 'u', groups: [] } } : { authenticated: false },
    },
  });
  try {
    const r = await get(s.port, '/pods');
    assert.equal(r.status, 401);
    assert.equal(r.body, 'Unauthorized: no credentials provided and anonymous requests are disabled');
    const auth = { authorization: 'Bearer ok' };
    assert.equal((await get(s.port, '/pods', { headers: auth })).status, 200);
    const bad = await get(s.port, '/exec/default/web-node1/c?command=ls', { headers: auth });
    assert.equal(bad.status, 400);
    assert.equal(
      (await get(s.port, '/portForward/default/other', { headers: auth })).body,
      'pod does not exist',
    );
    assert.equal(
      (await get(s.port, '/portForward/default/web-node1/not-the-uid', { headers: auth })).body,
      'pod not found',
    );
  } finally {
    await s.close();
  }
});

test('the node page on the kubelet API: behind authentication, authorized as nodes/proxy; not on the read-only port', async () => {
  const asked: string[] = [];
  const nodePage: KubeletServerHost['nodePage'] = async ({ res, path }) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end(`page ${path}`);
  };
  const s = await startKubeletServer(host({ nodePage }), {
    config: config({
      authentication: {
        x509: { clientCAFile: '' },
        webhook: { enabled: true, cacheTTLMs: 0 },
        anonymous: { enabled: false },
      },
    }),
    nodeName: 'n',
    certDirectory: join(dir, 'pki'),
    tokenReviewer: {
      review: async (t) =>
        t === 'ok' ? { authenticated: true, user: { username: 'u', groups: [] } } : { authenticated: false },
    },
    authorizer: {
      authorize: async (a) => {
        asked.push(`${a.verb} ${a.resource}/${a.subresource}`);
        return { decision: 'allow' as const, reason: '' };
      },
    },
  });
  const ro = await startKubeletReadOnlyServer(host({ nodePage }), {
    address: '127.0.0.1',
    port: 0,
    nodeName: 'n',
  });
  try {
    assert.equal((await get(s.port, '/node/')).status, 401);
    const r = await get(s.port, '/node/api/pods', { headers: { authorization: 'Bearer ok' } });
    assert.equal(r.status, 200);
    assert.equal(r.body, 'page /node/api/pods');
    assert.deepEqual(asked, ['get nodes/proxy']);
    assert.equal((await get(ro.port, '/node/', { secure: false })).status, 404);
  } finally {
    await s.close();
    await ro.close();
  }
});

test('/node on the kubelet API is a debugging handler: 404 without enableDebuggingHandlers', async () => {
  let served = 0;
  const nodePage: KubeletServerHost['nodePage'] = async ({ res }) => {
    served++;
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('page');
  };
  const s = await startKubeletServer(host({ nodePage }), {
    config: config({ enableDebuggingHandlers: false }),
    nodeName: 'n',
    certDirectory: join(dir, 'pki'),
  });
  try {
    for (const p of ['/node/', '/node/api/pods', '/node/api/events']) {
      const r = await get(s.port, p);
      assert.equal(r.status, 404, p);
    }
    assert.equal(served, 0, 'the node page was never asked');
  } finally {
    await s.close();
  }
});

/** Two pods in one namespace, only the second with a running container "c". */
async function twoPods(): Promise<{ host: KubeletServerHost; runtime: FakeRuntime }> {
  const podA: Pod = {
    metadata: { name: 'web-node1', namespace: 'default', uid: 'uid-a' },
    spec: { containers: [{ name: 'c', image: 'i' }] },
  };
  const podB: Pod = {
    metadata: { name: 'other', namespace: 'default', uid: 'uid-b' },
    spec: { containers: [{ name: 'c', image: 'i' }] },
  };
  const runtime = new FakeRuntime();
  runtime.addImage('i');
  const labels = {
    'io.kubernetes.pod.name': 'other',
    'io.kubernetes.pod.namespace': 'default',
    'io.kubernetes.pod.uid': 'uid-b',
  };
  const sandboxConfig = {
    metadata: { name: 'other', namespace: 'default', uid: 'uid-b', attempt: 0 },
    hostname: 'other',
    logDirectory: '',
    portMappings: [],
    labels,
    annotations: {},
  };
  const sandbox = await runtime.runPodSandbox(sandboxConfig, '');
  const id = await runtime.createContainer(
    sandbox,
    {
      metadata: { name: 'c', attempt: 0 },
      image: { image: 'i' },
      command: [],
      args: [],
      workingDir: '',
      envs: [],
      mounts: [],
      labels: { ...labels, 'io.kubernetes.container.name': 'c' },
      annotations: {},
      logPath: 'c.log',
      stdin: false,
      stdinOnce: false,
      tty: false,
    },
    sandboxConfig,
  );
  await runtime.startContainer(id);
  return { host: host({ getPods: () => [podA, podB], runtime }), runtime };
}

test("a UID that is not the named pod's is refused: /exec/nsA/podA/<uidB>/c never reaches pod B", async () => {
  const { host: h, runtime } = await twoPods();
  const s = await startKubeletServer(h, { config: config(), nodeName: 'n', certDirectory: join(dir, 'pki') });
  try {
    runtime.resetCalls();
    for (const [method, p] of [
      ['GET', '/exec/default/web-node1/uid-b/c?command=id&output=1'],
      ['POST', '/exec/default/web-node1/uid-b/c?command=id&output=1'],
      ['GET', '/attach/default/web-node1/uid-b/c?output=1'],
      ['POST', '/run/default/web-node1/uid-b/c?cmd=id'],
      ['GET', '/portForward/default/web-node1/uid-b'],
      ['GET', '/containerLogs/default/web-node1/uid-b/c'],
    ] as const) {
      const r = await get(s.port, p, { method });
      assert.equal(r.status, 404, `${method} ${p}: ${r.body}`);
    }
    for (const m of ['exec', 'attach', 'execSync', 'portForward', 'listContainers'] as const)
      assert.deepEqual(runtime.callsOf(m), [], `${m} was called`);
    // The right UID still works, and so does no UID at all.
    assert.equal((await get(s.port, '/run/default/other/uid-b/c?cmd=id', { method: 'POST' })).status, 200);
    assert.equal((await get(s.port, '/run/default/other/c?cmd=id', { method: 'POST' })).status, 200);
  } finally {
    await s.close();
  }
});
