/**
 * /debug/pprof/ on the kubelet API: a V8 CPU profile and heap snapshot of this process behind
 * authentication and authorization (nodes/proxy), one at a time, and upstream's answer when off.
 */
import assert from 'node:assert/strict';
import https from 'node:https';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { getVerbosity, setVerbosity } from '../../../src/lib/log.js';
import { profileSeconds } from '../../../src/server/debug-handlers.js';
import { startKubeletServer, type KubeletServerConfig } from '../../../src/server/kubelet-server.js';
import { request as get, testConfig, testHost as host } from './server-kit.js';

const dir = mkdtempSync(join(tmpdir(), 'debug-handlers-unit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Token "ok" is user u, allowed; token "other" is user v, who the authorizer refuses; none is a 401. */
async function server(overrides: Partial<KubeletServerConfig> = {}) {
  const asked: string[] = [];
  const s = await startKubeletServer(host(), {
    config: testConfig({
      authentication: {
        x509: { clientCAFile: '' },
        webhook: { enabled: true, cacheTTLMs: 0 },
        anonymous: { enabled: false },
      },
      ...overrides,
    }),
    nodeName: 'n',
    certDirectory: join(dir, 'pki'),
    tokenReviewer: {
      review: async (t) =>
        t === 'ok' || t === 'other'
          ? { authenticated: true, user: { username: t === 'ok' ? 'u' : 'v', groups: [] } }
          : { authenticated: false },
    },
    authorizer: {
      authorize: async (a) => {
        asked.push(`${a.user.username} ${a.verb} ${a.resource}/${a.subresource}`);
        return { decision: a.user.username === 'u' ? ('allow' as const) : ('deny' as const), reason: '' };
      },
    },
  });
  return { s, asked };
}

const as = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

test('an authorized GET of /debug/pprof/profile is a V8 CPU profile; others are refused first', async () => {
  const { s, asked } = await server();
  try {
    assert.equal((await get(s.port, '/debug/pprof/profile?seconds=1')).status, 401);
    const refused = await get(s.port, '/debug/pprof/profile?seconds=1', as('other'));
    assert.equal(refused.status, 403);
    assert.match(refused.body, /user=v, verb=get, resource=nodes, subresource=proxy/);
    const r = await get(s.port, '/debug/pprof/profile?seconds=1', as('ok'));
    assert.equal(r.status, 200, r.body);
    assert.equal(r.headers['content-type'], 'application/json');
    const profile = JSON.parse(r.body) as {
      nodes: unknown[];
      samples: unknown[];
      startTime: number;
      endTime: number;
    };
    assert.ok(Array.isArray(profile.nodes) && profile.nodes.length > 0);
    assert.ok(Array.isArray(profile.samples));
    // Lasted about the second asked for (microseconds).
    assert.ok(profile.endTime - profile.startTime >= 900_000, String(profile.endTime - profile.startTime));
    assert.deepEqual(asked, ['v get nodes/proxy', 'u get nodes/proxy']);
  } finally {
    await s.close();
  }
});

test('a heap snapshot is streamed whole; a second profile meanwhile is a 429', async () => {
  const { s } = await server();
  try {
    const long = get(s.port, '/debug/pprof/profile?seconds=2', as('ok'));
    await new Promise((r) => setTimeout(r, 300));
    const busy = await get(s.port, '/debug/pprof/heap', as('ok'));
    assert.equal(busy.status, 429);
    assert.equal((await long).status, 200);
    const heap = await get(s.port, '/debug/pprof/heap', as('ok'));
    assert.equal(heap.status, 200);
    const snapshot = JSON.parse(heap.body) as { snapshot: { node_count: number }; nodes: number[] };
    assert.ok(snapshot.snapshot.node_count > 0);
    assert.ok(snapshot.nodes.length > 0);
  } finally {
    await s.close();
  }
});

test('the index, bad seconds, unknown names and methods', async () => {
  const { s } = await server();
  try {
    const index = await get(s.port, '/debug/pprof/', as('ok'));
    assert.equal(index.status, 200);
    assert.match(index.body, /not Go's pprof format/);
    const bad = await get(s.port, '/debug/pprof/profile?seconds=1h', as('ok'));
    assert.equal(bad.status, 400);
    assert.equal(bad.body, 'seconds must be a whole number of seconds, not "1h"\n');
    assert.equal((await get(s.port, '/debug/pprof/profile?seconds=301', as('ok'))).status, 400);
    assert.equal((await get(s.port, '/debug/pprof/goroutine', as('ok'))).status, 404);
    assert.equal((await get(s.port, '/debug/nothing', as('ok'))).status, 404);
    assert.equal((await get(s.port, '/debug/pprof/heap', { method: 'POST', ...as('ok') })).status, 405);
  } finally {
    await s.close();
  }
  assert.equal(profileSeconds(null), 30);
  assert.equal(profileSeconds('300'), 300);
  assert.equal(typeof profileSeconds('0'), 'string');
});

test('enableProfilingHandler false: upstream\'s 405 "profiling endpoint is disabled."; no debugging: all off', async () => {
  const off = await server({ enableProfilingHandler: false });
  try {
    const r = await get(off.s.port, '/debug/pprof/profile?seconds=1', as('ok'));
    assert.equal(r.status, 405);
    assert.equal(r.body, 'profiling endpoint is disabled.\n');
    // Still behind authorization: the setting does not open anything to the unauthenticated.
    assert.equal((await get(off.s.port, '/debug/pprof/heap')).status, 401);
  } finally {
    await off.s.close();
  }
  const noDebugging = await server({ enableDebuggingHandlers: false });
  try {
    const r = await get(noDebugging.s.port, '/debug/pprof/heap', as('ok'));
    assert.equal(r.status, 405);
    assert.equal(r.body, 'Debug endpoints are disabled.\n');
  } finally {
    await noDebugging.s.close();
  }
});

/** A PUT with a body, answered within 10 s. */
function put(
  port: number,
  path: string,
  body: string,
  token?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1',
      port,
      path,
      method: 'PUT',
      headers: token ? { authorization: `Bearer ${token}` } : {},
      agent: false,
      rejectUnauthorized: false,
      timeout: 10_000,
    });
    req.on('timeout', () => req.destroy(new Error(`no answer to ${path} within 10 s`)));
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('PUT /debug/flags/v sets the log verbosity, for whoever may update nodes/proxy', async () => {
  const before = getVerbosity();
  const { s, asked } = await server();
  try {
    assert.equal((await put(s.port, '/debug/flags/v', '4')).status, 401);
    const refused = await put(s.port, '/debug/flags/v', '4', 'other');
    assert.equal(refused.status, 403);
    assert.match(refused.body, /user=v, verb=update, resource=nodes, subresource=proxy/);
    assert.equal(getVerbosity(), before);
    const r = await put(s.port, '/debug/flags/v', '4', 'ok');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'successfully set klog.logging.verbosity to 4');
    assert.equal(getVerbosity(), 4);
    assert.deepEqual(asked, ['v update nodes/proxy', 'u update nodes/proxy']);
    for (const bad of ['-1', 'x', '4294967296', ' 3', '']) {
      const b = await put(s.port, '/debug/flags/v', bad, 'ok');
      assert.equal(b.status, 400, bad);
      assert.match(b.body, /^failed set klog.logging.verbosity /);
    }
    assert.equal((await put(s.port, '/debug/flags/v', '9'.repeat(100), 'ok')).status, 400);
    assert.equal(getVerbosity(), 4);
    const g = await get(s.port, '/debug/flags/v', as('ok'));
    assert.equal(g.status, 406);
    assert.equal(g.body, 'unsupported http method');
  } finally {
    setVerbosity(before);
    await s.close();
  }
  const off = await server({ enableDebugFlagsHandler: false });
  try {
    const r = await put(off.s.port, '/debug/flags/v', '5', 'ok');
    assert.equal(r.status, 405);
    assert.equal(r.body, 'flags endpoint is disabled.\n');
    assert.equal(getVerbosity(), before);
  } finally {
    await off.s.close();
  }
});
