import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AddressInfo } from 'node:net';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import type { Pod } from '../../../src/api/core-v1.js';
import { isKubeApiError, mustSucceed } from '../../../src/k8s/api-status.js';
import { loadKubeconfig } from '../../../src/k8s/kubeconfig.js';
import { RestClient, defaultUserAgent, resourcePath } from '../../../src/k8s/rest-client.js';

const NODE = 'node-a';

function pod(name: string, nodeName = NODE): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { nodeName, containers: [{ name: 'app', image: 'busybox:1.36' }] },
  };
}

describe('k8s RestClient against the test API server', () => {
  let server: TestApiServer;
  let dir: string;
  let tokenClient: RestClient;
  let certClient: RestClient;

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE });
    dir = await mkdtemp(path.join(os.tmpdir(), 'k8s-client-'));
    await server.writeKubeconfig(path.join(dir, 'token.kubeconfig'), server.nodeUser, {
      credential: 'token',
    });
    await server.writeKubeconfig(path.join(dir, 'cert.kubeconfig'), server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    tokenClient = await RestClient.fromKubeconfig(path.join(dir, 'token.kubeconfig'), { qps: -1 });
    certClient = await RestClient.fromKubeconfig(path.join(dir, 'cert.kubeconfig'), { qps: -1 });
  });
  after(async () => {
    tokenClient.close();
    certClient.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('authenticates with the kubeconfig token and with its client certificate', async () => {
    for (const client of [tokenClient, certClient]) {
      const r = await client.get<{ metadata: { name: string } }>({ resource: 'namespaces', name: 'default' });
      assert.ok(r.ok);
      assert.equal(r.object.metadata.name, 'default');
    }
    const users = server.requests.filter((r) => r.path === '/api/v1/namespaces/default').map((r) => r.user);
    assert.deepEqual(users, [server.nodeUser, server.nodeUser]);
  });

  it('reads a kubeconfig with files beside it, relative paths resolved against its folder', async () => {
    const pair = await server.issueClientCertificate(server.nodeUser, ['system:nodes']);
    await writeFile(path.join(dir, 'ca.crt'), server.caPem!);
    await writeFile(path.join(dir, 'client.crt'), pair.certPem);
    await writeFile(path.join(dir, 'client.key'), pair.keyPem);
    await writeFile(path.join(dir, 'token'), server.tokenFor('admin') + '\n');
    const text = [
      'apiVersion: v1',
      'kind: Config',
      'current-context: b',
      'clusters:',
      `- name: c\n  cluster:\n    server: ${server.url}\n    certificate-authority: ca.crt`,
      'users:',
      '- name: cert\n  user:\n    client-certificate: client.crt\n    client-key: client.key',
      '- name: tok\n  user:\n    tokenFile: token',
      'contexts:',
      '- name: a\n  context:\n    cluster: c\n    user: cert',
      '- name: b\n  context:\n    cluster: c\n    user: tok',
      '',
    ].join('\n');
    const file = path.join(dir, 'files.kubeconfig');
    await writeFile(file, text);
    const viaToken = await loadKubeconfig(file);
    assert.equal(viaToken.tokenFile, path.join(dir, 'token'));
    const viaCert = await loadKubeconfig(file, { context: 'a' });
    assert.equal(viaCert.clientCertPem, pair.certPem);
    for (const config of [viaToken, viaCert]) {
      const client = new RestClient({ config, qps: -1 });
      try {
        assert.ok((await client.get({ resource: 'namespaces', name: 'default' })).ok);
      } finally {
        client.close();
      }
    }
    const users = server.requests.slice(-2).map((r) => r.user);
    assert.deepEqual(users, ['admin', server.nodeUser]);
  });

  it('trusts the server without a CA only when told to (insecure-skip-tls-verify)', async () => {
    const text = (insecure: boolean) =>
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: x',
        `clusters:\n- name: c\n  cluster:\n    server: ${server.url}${insecure ? '\n    insecure-skip-tls-verify: true' : ''}`,
        `users:\n- name: u\n  user:\n    token: ${server.tokenFor(server.nodeUser)}`,
        'contexts:\n- name: x\n  context:\n    cluster: c\n    user: u',
        '',
      ].join('\n');
    const insecureFile = path.join(dir, 'insecure.kubeconfig');
    const strictFile = path.join(dir, 'strict.kubeconfig');
    await writeFile(insecureFile, text(true));
    await writeFile(strictFile, text(false));
    const insecure = await RestClient.fromKubeconfig(insecureFile, { qps: -1 });
    const strict = await RestClient.fromKubeconfig(strictFile, { qps: -1 });
    try {
      assert.ok((await insecure.get({ resource: 'namespaces', name: 'default' })).ok);
      await assert.rejects(strict.get({ resource: 'namespaces', name: 'default' }), (err: unknown) =>
        isKubeApiError(err, 'Transport'),
      );
    } finally {
      insecure.close();
      strict.close();
    }
  });

  it('refuses a kubeconfig it cannot use, with INVALID_CONFIG', async () => {
    const file = path.join(dir, 'bad.kubeconfig');
    await writeFile(file, 'apiVersion: v1\nkind: Config\ncurrent-context: nope\ncontexts: []\n');
    await assert.rejects(loadKubeconfig(file), {
      code: 'INVALID_CONFIG',
      message: /context "nope" not found/,
    });
    await assert.rejects(loadKubeconfig(path.join(dir, 'missing')), { code: 'INVALID_CONFIG' });
  });

  it('creates, gets, patches in all three types, updates and deletes; expected failures are results', async () => {
    const created = mustSucceed(
      await tokenClient.create<Pod>({ resource: 'pods', namespace: 'default' }, pod('crud')),
      'create',
    );
    assert.ok(created.metadata.uid);
    const again = await tokenClient.create<Pod>({ resource: 'pods', namespace: 'default' }, pod('crud'));
    assert.equal(again.ok, false);
    assert.equal(!again.ok && again.reason, 'AlreadyExists');

    const ref = { resource: 'pods', namespace: 'default', name: 'crud' };
    const merge = await tokenClient.patch<Pod>(ref, 'merge', { metadata: { labels: { a: '1' } } });
    assert.ok(merge.ok && merge.object.metadata.labels?.a === '1');
    const strategic = await tokenClient.patch<Pod>({ ...ref, subresource: 'status' }, 'strategic', {
      status: { conditions: [{ type: 'X', status: 'True' }] },
    });
    assert.ok(strategic.ok && strategic.object.status?.conditions?.some((c) => c.type === 'X'));
    const json = await tokenClient.patch<Pod>(ref, 'json', [
      { op: 'add', path: '/metadata/labels/b', value: '2' },
    ]);
    assert.ok(json.ok && json.object.metadata.labels?.b === '2');
    const types = server.requests.filter((r) => r.verb === 'patch').map((r) => r.contentType);
    assert.deepEqual(types.slice(-3), [
      'application/merge-patch+json',
      'application/strategic-merge-patch+json',
      'application/json-patch+json',
    ]);

    const stale = { ...created, metadata: { ...created.metadata, labels: { c: '3' } } };
    const conflict = await tokenClient.update<Pod>(ref, stale);
    assert.equal(!conflict.ok && conflict.reason, 'Conflict');

    const missing = await tokenClient.get<Pod>({ ...ref, name: 'nope' });
    assert.equal(!missing.ok && missing.reason, 'NotFound');
    assert.equal(!missing.ok && missing.status.code, 404);

    // The UID precondition protects a pod recreated under the same name.
    const wrongUid = await tokenClient.delete(ref, {
      gracePeriodSeconds: 0,
      preconditions: { uid: 'other' },
    });
    assert.equal(!wrongUid.ok && wrongUid.reason, 'Conflict');
    const deleted = await tokenClient.delete(ref, {
      gracePeriodSeconds: 0,
      preconditions: { uid: created.metadata.uid },
    });
    assert.ok(deleted.ok);
    assert.equal(server.store.tryGet('pods', 'crud', 'default'), undefined);
  });

  it('throws KubeApiError for the unexpected: Invalid, and no server at all', async () => {
    await assert.rejects(
      tokenClient.create({ resource: 'pods', namespace: 'default' }, { metadata: {} }),
      (err: unknown) => isKubeApiError(err, 'Invalid') && err.httpStatus === 422 && err.code === 'API_ERROR',
    );
    const gone = new RestClient({ config: { server: 'http://127.0.0.1:1' }, qps: -1 });
    await assert.rejects(
      gone.get({ resource: 'pods' }),
      (err: unknown) => isKubeApiError(err, 'Transport') && err.retriable && err.httpStatus === 0,
    );
    gone.close();
  });

  it('builds paths for core and grouped resources', () => {
    assert.equal(
      resourcePath({ resource: 'nodes', name: 'n', subresource: 'status' }),
      '/api/v1/nodes/n/status',
    );
    assert.equal(
      resourcePath({
        apiVersion: 'coordination.k8s.io/v1',
        resource: 'leases',
        namespace: 'kube-node-lease',
        name: 'n',
      }),
      '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n',
    );
  });
});

describe('k8s RestClient on the wire', () => {
  let server: http.Server;
  let url: string;
  const seen: http.IncomingHttpHeaders[] = [];

  before(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.headers);
      if (req.url?.startsWith('/api/v1/namespaces/slow')) return; // never answers
      if (req.url?.startsWith('/api/v1/namespaces/pieces/pods?')) {
        // Events cut anywhere: one across three writes, two in one write, blank lines between.
        res.writeHead(200, { 'Content-Type': 'application/json' });
        const event = (name: string) => JSON.stringify({ type: 'ADDED', object: { metadata: { name } } });
        const a = event('a');
        const writes = [
          a.slice(0, 5),
          a.slice(5, 20),
          `${a.slice(20)}\n\n`,
          `${event('b')}\n${event('c')}`,
          '\n \n',
        ];
        const next = () => {
          const w = writes.shift();
          if (w === undefined) return void res.end();
          res.write(w);
          setTimeout(next, 5);
        };
        next();
        return;
      }
      if (req.url?.includes('watch=true')) {
        // A watch that stays open, with no event.
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.flushHeaders();
        return;
      }
      if (req.url?.startsWith('/api/v1/namespaces/delayed')) {
        setTimeout(() => {
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end('{"kind":"Namespace","metadata":{"name":"delayed"}}');
        }, 20);
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"kind":"Namespace","metadata":{"name":"x"}}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("sends the kubelet's User-Agent and asks for JSON", async () => {
    const client = new RestClient({ config: { server: url, token: 't' }, qps: -1 });
    await client.get({ resource: 'namespaces', name: 'x' });
    client.close();
    const h = seen.at(-1)!;
    assert.equal(h['user-agent'], defaultUserAgent());
    assert.match(h['user-agent'] ?? '', /^kubelet\/v1\.30\.0 \(linux\/(amd64|arm64)\) tskubelet$/);
    assert.equal(h.accept, 'application/json');
    assert.equal(h.authorization, 'Bearer t');
  });

  it('carries a burst of calls on a few connections, which open watches do not take', async () => {
    let connections = 0;
    const count = () => connections++;
    server.on('connection', count);
    const client = new RestClient({ config: { server: url }, qps: -1 });
    const ac = new AbortController();
    try {
      const watches = [];
      for (let i = 0; i < 12; i++) {
        const w = await client.watch(
          { resource: 'pods', namespace: `w${i}` },
          { timeoutSeconds: 60, signal: ac.signal },
        );
        assert.ok(w.ok);
        watches.push(w.object);
      }
      assert.equal(connections, 12);
      const calls = Array.from({ length: 40 }, () => client.get({ resource: 'namespaces', name: 'delayed' }));
      for (const r of await Promise.all(calls)) assert.ok(r.ok);
      assert.ok(connections - 12 <= 8, `the 40 calls opened ${connections - 12} connections`);
      for (const w of watches) w.close();
    } finally {
      ac.abort();
      client.close();
      server.off('connection', count);
    }
  });

  it('decodes watch events however the stream cuts them', async () => {
    const client = new RestClient({ config: { server: url }, qps: -1 });
    const w = mustSucceed(
      await client.watch<Pod>({ resource: 'pods', namespace: 'pieces' }, { timeoutSeconds: 5 }),
      'watch',
    );
    const names: string[] = [];
    for await (const event of w)
      names.push(event.type === 'ERROR' ? 'ERROR' : `${event.type} ${event.object.metadata?.name ?? ''}`);
    client.close();
    assert.deepEqual(names, ['ADDED a', 'ADDED b', 'ADDED c']);
  });

  it('turns a request node refuses to send into a KubeApiError', async () => {
    const client = new RestClient({ config: { server: url, token: 'bad\ntoken' }, qps: -1 });
    await assert.rejects(client.get({ resource: 'namespaces', name: 'x' }), (err: unknown) =>
      isKubeApiError(err, 'Transport'),
    );
    client.close();
  });

  it('gives up at its deadline', async () => {
    const client = new RestClient({ config: { server: url }, qps: -1, requestTimeoutMs: 200 });
    const started = Date.now();
    await assert.rejects(client.get({ resource: 'namespaces', name: 'slow' }), (err: unknown) =>
      isKubeApiError(err, 'DeadlineExceeded'),
    );
    assert.ok(Date.now() - started < 2000);
    const ac = new AbortController();
    const p = client.get({ resource: 'namespaces', name: 'slow' }, { signal: ac.signal, timeoutMs: 10_000 });
    ac.abort(new Error('stop'));
    await assert.rejects(p, (err: unknown) => isKubeApiError(err, 'Aborted'));
    client.close();
  });
});
