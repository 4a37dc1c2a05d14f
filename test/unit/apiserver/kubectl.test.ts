import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { podManifest } from './client.js';

const run = promisify(execFile);
const KUBECTL = process.env.KUBECTL ?? '/usr/bin/kubectl';

describe('test API server: kubectl', () => {
  let server: TestApiServer;
  let dir: string;

  async function kubectl(kubeconfig: string, ...args: string[]): Promise<string> {
    const { stdout } = await run(
      KUBECTL,
      ['--kubeconfig', kubeconfig, '--cache-dir', path.join(dir, 'cache'), ...args],
      {
        timeout: 30_000,
        // kubectl keeps its discovery cache and config under HOME: keep both inside the test's folder.
        env: { ...process.env, HOME: dir },
      },
    );
    return stdout;
  }

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'test-apiserver-kubectl-'));
    server = await startTestApiServer({ nodeName: 'node-k' });
    server.store.create('nodes', {
      metadata: { name: 'node-k', labels: { 'kubernetes.io/hostname': 'node-k' } },
    });
    server.store.create('pods', {
      ...podManifest('web-1', 'node-k'),
      metadata: { name: 'web-1', namespace: 'default' },
    });
    server.store.create('pods', {
      ...podManifest('dns-1', 'node-k'),
      metadata: { name: 'dns-1', namespace: 'kube-system' },
    });
  });
  after(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('lists pods in all namespaces and nodes with an admin token kubeconfig', async () => {
    const kubeconfig = path.join(dir, 'admin.kubeconfig');
    await server.writeKubeconfig(kubeconfig, 'admin');
    const pods = await kubectl(kubeconfig, 'get', 'pods', '-A');
    // The server prints the table, as a real one does: kubectl's own fallback has only NAME and AGE.
    assert.match(pods, /^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/m);
    assert.match(pods, /^default\s+web-1\s+0\/1\s+Pending\s+0\s/m);
    assert.match(pods, /^kube-system\s+dns-1\s/m);
    const nodes = await kubectl(kubeconfig, 'get', 'nodes');
    assert.match(nodes, /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION$/m);
    assert.match(nodes, /^node-k\s+Unknown\s+<none>\s/m);
  });

  it('deletes with kubectl, which waits for the object to go', async () => {
    const kubeconfig = path.join(dir, 'admin.kubeconfig');
    server.store.create('pods', {
      ...podManifest('short-lived'),
      metadata: { name: 'short-lived', namespace: 'default' },
    });
    const out = await kubectl(kubeconfig, 'delete', 'pod', 'short-lived', '-n', 'default');
    assert.equal(out.trim(), 'pod "short-lived" deleted');
    assert.equal(server.store.tryGet('pods', 'short-lived', 'default'), undefined);
  });

  it('talks to it with the node’s client certificate kubeconfig', async () => {
    const kubeconfig = path.join(dir, 'node.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, { credential: 'certificate' });
    const json = JSON.parse(await kubectl(kubeconfig, 'get', 'pods', '-A', '-o', 'json')) as {
      items: { metadata: { name: string } }[];
    };
    assert.deepEqual(json.items.map((p) => p.metadata.name).sort(), ['dns-1', 'web-1']);
    const who = server.requests.filter((r) => r.resource === 'pods' && r.verb === 'list').pop();
    assert.equal(who?.user, server.nodeUser);
  });
});
