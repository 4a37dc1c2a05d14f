/**
 * Property-based fuzzing of the kubelet API's paths and query parameters over real HTTPS: whatever the
 * path, method and query, the server answers (no hang), never with a 5xx, every 4xx carries a reason,
 * and it keeps serving afterwards.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { Pod } from '../../src/api/core-v1.js';
import { FakeRuntime } from '../../src/cri/testing/fake-runtime.js';
import { setLogSink } from '../../src/lib/log.js';
import { pingCheck } from '../../src/server/healthz.js';
import { startKubeletServer, type KubeletServerConfig } from '../../src/server/kubelet-server.js';
import { fuzzRuns } from './fuzz-runs.js';

setLogSink(() => undefined);

const REQUEST_TIMEOUT_MS = 5000;
const dir = mkdtempSync(join(tmpdir(), 'kubelet-api-fuzz-'));
const agent = new https.Agent({ keepAlive: true, maxSockets: 4, rejectUnauthorized: false });
let server: { port: number; close(): Promise<void> };

const pod: Pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'u1' },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
  status: {
    phase: 'Running',
    containerStatuses: [
      {
        name: 'c',
        image: 'busybox',
        imageID: '',
        ready: true,
        restartCount: 0,
        containerID: 'containerd://nope',
        state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
      },
    ],
  },
};

const config: KubeletServerConfig = {
  address: '127.0.0.1',
  port: 0,
  tlsCertFile: '',
  tlsPrivateKeyFile: '',
  tlsMinVersion: '',
  tlsCipherSuites: [],
  authentication: {
    x509: { clientCAFile: '' },
    webhook: { enabled: false, cacheTTLMs: 120_000 },
    anonymous: { enabled: true },
  },
  authorization: { mode: 'AlwaysAllow', webhook: { cacheAuthorizedTTLMs: 0, cacheUnauthorizedTTLMs: 0 } },
  enableDebuggingHandlers: true,
  // /logs/ serves the machine's /var/log: left out so the fuzzer reads no real files.
  enableSystemLogHandler: false,
  streamingConnectionIdleTimeoutMs: 60_000,
  runtimeRequestTimeoutMs: 2000,
  featureGates: {},
};

before(async () => {
  server = await startKubeletServer(
    {
      getPods: () => [pod],
      getRunningPods: async () => [pod],
      healthChecks: () => [pingCheck],
      runtime: new FakeRuntime(),
    },
    { config, nodeName: 'node-a', certDirectory: join(dir, 'pki') },
  );
});

after(async () => {
  agent.destroy();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function request(method: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: server.port, method, path, agent });
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer in ${REQUEST_TIMEOUT_MS} ms: ${method} ${path}`)),
      REQUEST_TIMEOUT_MS,
    );
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() });
      });
      res.on('error', reject);
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

const ROOTS = [
  'pods', 'runningpods', 'healthz', 'stats', 'metrics', 'configz', 'containerLogs', 'exec', 'attach',
  'portForward', 'run', 'logs', 'debug', 'checkpoint', 'spec', 'cri', '',
]; // prettier-ignore
const QUERY_NAMES = [
  'follow', 'previous', 'timestamps', 'sinceSeconds', 'sinceTime', 'tailLines', 'tail', 'limitBytes',
  'stream', 'command', 'input', 'output', 'error', 'tty', 'port', 'cmd', 'only_cpu_and_memory', 'verbose',
  'exclude', 'query', 'boot', 'pattern', 'untilTime', 'x',
]; // prettier-ignore

/** A path segment: known names, numbers, dates, and arbitrary text, percent-encoded or raw. */
const segment = fc.oneof(
  fc.constantFrom(
    'default',
    'web',
    'c',
    'u1',
    'summary',
    'probes',
    'resource',
    '..',
    '.',
    '%2e%2e',
    '%2f',
    '%zz',
    '%',
  ),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.string({ unit: 'binary', maxLength: 8 }).map(encodeURIComponent),
  fc.string({ maxLength: 8 }).map((s) => s.replace(/[\s?#]/g, '')),
);
const queryValue = fc.oneof(
  fc.constantFrom(
    'true',
    'false',
    '1',
    '0',
    '-1',
    '2026-13-45T99:99:99Z',
    '2024-01-01T00:00:00Z',
    'all',
    'NaN',
    '1e400',
  ),
  fc.integer().map(String),
  fc.string({ maxLength: 16 }).map(encodeURIComponent),
  fc.constantFrom('%', '%zz', '%00', '+'),
);
const query = fc
  .array(
    fc.tuple(
      fc.oneof(fc.constantFrom(...QUERY_NAMES), fc.string({ maxLength: 6 }).map(encodeURIComponent)),
      queryValue,
    ),
    {
      maxLength: 5,
    },
  )
  .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));
const target = fc
  .tuple(fc.constantFrom(...ROOTS), fc.array(segment, { maxLength: 5 }), fc.boolean(), query)
  .map(([root, rest, slash, q]) => `/${[root, ...rest].join('/')}${slash ? '/' : ''}${q ? `?${q}` : ''}`);
const method = fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH');

test('every request gets an answer below 500, and every 4xx says why', async () => {
  await fc.assert(
    fc.asyncProperty(method, target, async (m, path) => {
      const { status, body } = await request(m, path);
      assert.ok(status >= 100 && status < 500, `${m} ${path} -> ${status} ${body}`);
      if (status >= 400 && m !== 'HEAD')
        assert.ok(body.trim().length > 0, `${m} ${path} -> ${status} without a reason`);
    }),
    { numRuns: fuzzRuns() },
  );
  // Still serving.
  assert.equal((await request('GET', '/healthz')).body, 'ok');
});

test('a bad sinceTime is a 400 with a reason, as upstream', async () => {
  const { status, body } = await request(
    'GET',
    '/containerLogs/default/web/c?sinceTime=2026-13-45T99:99:99Z',
  );
  assert.equal(status, 400);
  assert.match(body, /decode|sinceTime/i);
});
