/**
 * Who may read the node page's data on this machine (node-page-access.ts, local-listeners.ts): the
 * token on the loopback listener, the socket's folder and modes (root only, or a named group), the
 * page's address file, and the bounds on live feeds and log follows.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, readFileSync, mkdirSync, symlinkSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { EventStore } from '../../../src/events/event-store.js';
import { FakeClock } from '../../../src/lib/clock.js';
import type { Component } from '../../../src/lib/component.js';
import { isKubeletError } from '../../../src/lib/errors.js';
import { NodePageFeed } from '../../../src/nodepage/node-page-feed.js';
import { nodePageHandler } from '../../../src/nodepage/node-page-handler.js';
import type { NodePageSource } from '../../../src/nodepage/node-page-model.js';
import { localListenerComponents } from '../../../src/server/local-listeners.js';
import type { ServerHost } from '../../../src/server/local-server.js';
import {
  nodePagePaths,
  nodePageUrl,
  prepareNodePageDir,
  resolveGroup,
  tokenFromNodePageUrl,
} from '../../../src/server/node-page-access.js';
import type { PodLogReader } from '../../../src/server/pod-log-reader.js';
import { freePort } from '../../helpers/ports.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

type Target = { port: number } | { socketPath: string };

/** A GET that resolves with the headers (and the body when it ends, or what came within waitMs). */
function get(target: Target, path: string, headers: Record<string, string> = {}, waitMs = 2000) {
  return new Promise<Answer & { close: () => void }>((resolve, reject) => {
    const where = 'port' in target ? { host: '127.0.0.1', port: target.port } : target;
    const req = http.get({ ...where, path, headers, agent: false }, (res) => {
      let body = '';
      const done = () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, close: () => req.destroy() });
      };
      const timer = setTimeout(done, waitMs);
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', done);
    });
    req.on('error', reject);
  });
}

function source(): NodePageSource {
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const secretPod = {
    metadata: { name: 'a', namespace: 'default', uid: 'uid-a' },
    spec: { containers: [{ name: 'app', image: 'busybox', env: [{ name: 'PASSWORD', value: 'hunter2' }] }] },
    status: { phase: 'Running' },
  };
  return {
    nodeName: 'n1',
    kubeletVersion: 'v1.30.0',
    runtime: { name: 'containerd', version: '1.6.20' },
    startedAtMs: clock.now(),
    now: () => clock.now(),
    pods: () => [secretPod as never],
    node: () => ({ status: {} }) as never,
    pleg: () => ({ healthy: true }),
    pressure: () => ({ memory: false, disk: false, pid: false }),
    probe: () => undefined,
    backoffDelayMs: () => 0,
    events: new EventStore(),
  };
}

/** A log that, when followed, lasts until its client goes. */
const endlessLogs: PodLogReader = {
  follows: (query) => query.get('follow') === 'true',
  async read(_ns, _pod, _c, query, start, write, signal) {
    start();
    await write(Buffer.from('line\n'));
    if (query.get('follow') !== 'true') return undefined;
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    return undefined;
  },
};

describe('the node page on this machine: token, socket, limits', () => {
  let dir: string;
  let components: Component[];
  let port: number;
  let feed: NodePageFeed;

  async function start(opts: { group?: string; maxSubscribers?: number; maxLogFollows?: number } = {}) {
    port = await freePort();
    const src = source();
    feed = new NodePageFeed(src, { clock: new FakeClock(0) });
    const host: ServerHost = {
      getPods: () => [],
      getRunningPods: async () => [],
      healthChecks: () => [],
      nodePage: nodePageHandler({
        source: src,
        feed,
        logs: endlessLogs,
        maxSubscribers: opts.maxSubscribers ?? 16,
        maxLogFollows: opts.maxLogFollows ?? 16,
      }),
    };
    components = localListenerComponents(host, {
      rootDir: join(dir, 'root'),
      nodePageGroup: opts.group ?? '',
      healthz: { address: '127.0.0.1', port },
    });
    for (const c of components) await c.start();
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'node-page-access-'));
    components = [];
  });
  afterEach(async () => {
    for (const c of [...components].reverse()) await c.stop(AbortSignal.timeout(5000));
    feed?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('on the loopback listener the data asks for the token; the page itself and /healthz do not', async () => {
    await start();
    const paths = nodePagePaths(join(dir, 'root'));
    const url = readFileSync(paths.urlFile, 'utf8').trim();
    assert.match(url, new RegExp(`^http://127\\.0\\.0\\.1:${port}/node/#token=[A-Za-z0-9_-]{43}$`));
    const token = tokenFromNodePageUrl(url)!;

    for (const path of [
      '/node/api/pods',
      '/node/api/snapshot',
      '/node/api/stream',
      '/node/api/logs/default/a/app',
    ]) {
      const tries: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong' },
        { authorization: `Basic ${token}` },
      ];
      for (const headers of tries) {
        const r = await get({ port }, path, headers);
        assert.equal(r.status, 401, `${path} ${JSON.stringify(headers)}`);
        assert.match(String(r.headers['www-authenticate']), /^Bearer realm=/);
        assert.doesNotMatch(r.body, /hunter2|"items"/);
        assert.match(r.body, /tskubelet node-page-url/);
      }
    }
    const ok = await get({ port }, '/node/api/pods', { authorization: `Bearer ${token}` });
    assert.equal(ok.status, 200);
    assert.match(ok.body, /hunter2/);
    assert.equal((await get({ port }, '/node/')).status, 200);
    assert.equal((await get({ port }, '/node/node-page.js')).status, 200);
    assert.equal((await get({ port }, '/healthz')).status, 200);
    const access = JSON.parse((await get({ port }, '/node/access')).body) as Record<string, string>;
    assert.deepEqual(access, { socket: paths.socket, urlFile: paths.urlFile });
  });

  test('a new token at each start; the address file goes at stop', async () => {
    await start();
    const { urlFile } = nodePagePaths(join(dir, 'root'));
    const first = readFileSync(urlFile, 'utf8');
    for (const c of [...components].reverse()) await c.stop(AbortSignal.timeout(5000));
    assert.throws(() => statSync(urlFile), /ENOENT/);
    await start();
    assert.notEqual(readFileSync(urlFile, 'utf8'), first);
  });

  test('the socket answers without a token; its folder, the socket and the address are root-only', async () => {
    await start();
    const paths = nodePagePaths(join(dir, 'root'));
    const r = await get({ socketPath: paths.socket }, '/node/api/pods');
    assert.equal(r.status, 200);
    assert.match(r.body, /hunter2/);
    assert.equal(statSync(paths.dir).mode & 0o777, 0o700);
    assert.equal(statSync(paths.socket).mode & 0o777, 0o600);
    assert.equal(statSync(paths.urlFile).mode & 0o777, 0o600);
  });

  test('with --node-page-group, that group may read too: 0750, 0660, 0640', async () => {
    await start({ group: '65534' });
    const paths = nodePagePaths(join(dir, 'root'));
    for (const [p, mode] of [
      [paths.dir, 0o750],
      [paths.socket, 0o660],
      [paths.urlFile, 0o640],
    ] as const) {
      const st = statSync(p);
      assert.equal(st.mode & 0o777, mode, p);
      if (process.getuid?.() === 0) assert.equal(st.gid, 65534, p);
    }
  });

  test('a group that does not exist is an error naming the flag; a folder the kubelet does not own is refused', async () => {
    await assert.rejects(
      resolveGroup('no-such-group-here'),
      /--node-page-group: no group named "no-such-group-here"/,
    );
    assert.equal(await resolveGroup('0'), 0);
    assert.equal(await resolveGroup('root'), 0);
    // A link planted where the folder goes is not followed.
    mkdirSync(join(dir, 'root'));
    mkdirSync(join(dir, 'elsewhere'));
    symlinkSync(join(dir, 'elsewhere'), join(dir, 'root', 'node-page'));
    await assert.rejects(prepareNodePageDir(join(dir, 'root'), undefined), (err) =>
      isKubeletError(err, 'INVALID_CONFIG'),
    );
  });

  test('the page address names loopback for an unspecified bind address, and brackets IPv6', () => {
    assert.equal(nodePageUrl('0.0.0.0', 10248, 't'), 'http://127.0.0.1:10248/node/#token=t');
    assert.equal(nodePageUrl('::1', 10248, 't'), 'http://[::1]:10248/node/#token=t');
    assert.equal(tokenFromNodePageUrl('http://[::1]:10248/node/#token=abc_-1\n'), 'abc_-1');
    assert.equal(tokenFromNodePageUrl('http://127.0.0.1:10248/node/'), undefined);
  });

  test('live feeds beyond --node-page-max-subscribers get 429 with the reason; a closed one frees its place', async () => {
    await start({ maxSubscribers: 2 });
    const socketPath = nodePagePaths(join(dir, 'root')).socket;
    const open = [
      await get({ socketPath }, '/node/api/stream', {}, 300),
      await get({ socketPath }, '/node/api/stream', {}, 300),
    ];
    assert.deepEqual(
      open.map((r) => r.status),
      [200, 200],
    );
    const refused = await get({ socketPath }, '/node/api/stream');
    assert.equal(refused.status, 429);
    assert.match(
      refused.body,
      /2 live feeds of the node page are open, the most --node-page-max-subscribers allows/,
    );
    open[0]!.close();
    await waitUntil(() => feed.subscribers === 1);
    const again = await get({ socketPath }, '/node/api/stream', {}, 300);
    assert.equal(again.status, 200);
    again.close();
    open[1]!.close();
  });

  test('log follows beyond --node-page-max-log-follows get 429; tails without follow are not counted', async () => {
    await start({ maxLogFollows: 1 });
    const socketPath = nodePagePaths(join(dir, 'root')).socket;
    const following = await get({ socketPath }, '/node/api/logs/default/a/app?follow=true', {}, 300);
    assert.equal(following.status, 200);
    const refused = await get({ socketPath }, '/node/api/logs/default/a/app?follow=true');
    assert.equal(refused.status, 429);
    assert.match(refused.body, /1 container logs are followed through the node page/);
    assert.equal((await get({ socketPath }, '/node/api/logs/default/a/app')).status, 200);
    following.close();
    await waitUntil(async () => {
      const r = await get({ socketPath }, '/node/api/logs/default/a/app?follow=true', {}, 300);
      r.close();
      return r.status === 200;
    });
  });
});

async function waitUntil(fn: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
