import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Pod } from '../../../src/api/core-v1.js';
import { pingCheck, type HealthChecker } from '../../../src/server/healthz.js';
import { startLocalServer, type ServerHost } from '../../../src/server/local-server.js';

function host(pods: Pod[], checks: HealthChecker[]): ServerHost {
  return { getPods: () => pods, getRunningPods: async () => [], healthChecks: () => checks };
}

const pod: Pod = {
  metadata: { name: 'web-node1', namespace: 'default', uid: 'u1' },
  spec: { containers: [] },
};

test('healthz answers ok while every check passes, 500 naming the failing check otherwise', async () => {
  let plegReason: string | undefined;
  const checks = [pingCheck, { name: 'pleg', check: () => plegReason }];
  const server = await startLocalServer(host([], checks), { address: '127.0.0.1', port: 0, readOnly: false });
  try {
    const base = `http://127.0.0.1:${server.port}`;
    let res = await fetch(`${base}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok');

    plegReason = 'pleg was last seen active 3m1s ago; threshold is 3m0s';
    res = await fetch(`${base}/healthz`);
    assert.equal(res.status, 500);
    const body = await res.text();
    assert.match(body, /\[-\]pleg failed: reason withheld/);
    assert.match(body, /\[\+\]ping ok/);
    assert.doesNotMatch(body, /3m1s/, 'the reason goes to the log, not to the caller');

    res = await fetch(`${base}/healthz/ping`);
    assert.equal(res.status, 200);
    res = await fetch(`${base}/healthz/pleg`);
    assert.equal(res.status, 500);
    res = await fetch(`${base}/healthz/nope`);
    assert.equal(res.status, 404);
    res = await fetch(`${base}/pods`);
    assert.equal(res.status, 404, 'the healthz port does not serve /pods');
  } finally {
    await server.close();
  }
});

test('the read-only port serves the pod list as a v1.PodList', async () => {
  const server = await startLocalServer(host([pod], [pingCheck]), {
    address: '127.0.0.1',
    port: 0,
    readOnly: true,
  });
  try {
    const res = await fetch(`http://127.0.0.1:${server.port}/pods`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const list = (await res.json()) as { kind: string; apiVersion: string; items: Pod[] };
    assert.equal(list.kind, 'PodList');
    assert.equal(list.apiVersion, 'v1');
    assert.deepEqual(
      list.items.map((p) => p.metadata.name),
      ['web-node1'],
    );
    const post = await fetch(`http://127.0.0.1:${server.port}/pods`, { method: 'POST' });
    assert.equal(post.status, 405);
  } finally {
    await server.close();
  }
});
