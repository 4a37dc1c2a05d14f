/**
 * ApiMirrorClient against the in-process test API server: the mirror pod it creates (annotations,
 * owner reference, spec), AlreadyExists, deletion at once with and without a UID precondition, and an
 * API server that does not answer. The same scenario runs on FakeMirrorClient, so the fake answers as
 * the real one does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { podFullName, type Pod } from '../../../src/api/core-v1.js';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { setLogSink } from '../../../src/lib/log.js';
import type { Node } from '../../../src/api/node.js';
import { isMirrorPod, isStaticPod } from '../../../src/api/pod-source.js';
import {
  ApiMirrorClient,
  getPodHash,
  isMirrorPodOf,
  mirrorPodFor,
  parsePodFullName,
  type MirrorClient,
} from '../../../src/pod/mirror-client.js';
import { FakeMirrorClient } from '../../../src/pod/mirror-client.fake.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';

setLogSink(() => undefined);

const NODE = 'node-mirror';

function staticPod(name: string, hash: string, extra: Partial<Pod['metadata']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${name}-${NODE}`,
      namespace: 'default',
      uid: hash,
      labels: { app: name },
      annotations: {
        'kubernetes.io/config.source': 'file',
        'kubernetes.io/config.hash': hash,
        'kubernetes.io/config.seen': '2024-01-02T03:04:05.6Z',
        team: 'infra',
      },
      ...extra,
    },
    spec: {
      nodeName: NODE,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
    },
  };
}

describe('mirror pod helpers', () => {
  test('static and mirror pods are told apart by their annotations', () => {
    const s = staticPod('web', 'h1');
    assert.equal(isStaticPod(s), true);
    assert.equal(isMirrorPod(s), false);
    const api: Pod = {
      metadata: { annotations: { 'kubernetes.io/config.source': 'api' } },
      spec: { containers: [] },
    };
    assert.equal(isStaticPod(api), false);
    const m = mirrorPodFor(s, NODE, 'node-uid');
    assert.equal(isMirrorPod(m), true);
    assert.equal(getPodHash(s), 'h1');
  });

  test('isMirrorPodOf: same name, namespace and hash', () => {
    const s = staticPod('web', 'h1');
    const m = mirrorPodFor(s, NODE, 'node-uid');
    assert.equal(isMirrorPodOf(m, s), true);
    assert.equal(isMirrorPodOf(m, staticPod('web', 'h2')), false);
    assert.equal(isMirrorPodOf(m, staticPod('other', 'h1')), false);
    assert.equal(isMirrorPodOf(m, { ...s, metadata: { ...s.metadata, namespace: 'kube-system' } }), false);
  });

  test('mirrorPodFor: the static pod less what the server assigns, plus the hash and the node as owner', () => {
    const s = staticPod('web', 'h1', { resourceVersion: '5', creationTimestamp: '2024-01-01T00:00:00Z' });
    s.status = { phase: 'Running' };
    const m = mirrorPodFor(s, NODE, 'node-uid');
    assert.equal(m.metadata.uid, undefined);
    assert.equal(m.metadata.resourceVersion, undefined);
    assert.equal(m.metadata.creationTimestamp, undefined);
    assert.equal(m.status, undefined);
    assert.deepEqual(m.metadata.annotations, {
      ...s.metadata.annotations,
      'kubernetes.io/config.mirror': 'h1',
    });
    assert.deepEqual(m.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: NODE, uid: 'node-uid', controller: true },
    ]);
    assert.deepEqual(m.spec, s.spec);
    // The static pod is untouched.
    assert.equal(s.metadata.annotations?.['kubernetes.io/config.mirror'], undefined);
  });

  test('parsePodFullName', () => {
    assert.deepEqual(parsePodFullName('web-node_default'), { name: 'web-node', namespace: 'default' });
    assert.throws(() => parsePodFullName('web'), /failed to parse the pod full name "web"/);
    assert.throws(() => parsePodFullName('a_b_c'), /failed to parse/);
  });
});

/** What a MirrorClient must do, as seen through the mirror pods it leaves "in the API". */
async function contract(
  client: MirrorClient,
  apiMirror: (fullName: string) => Pod | undefined,
): Promise<void> {
  const s = staticPod('contract', 'hash-1');
  const fullName = podFullName(s);
  await client.createMirrorPod(s);
  const created = apiMirror(fullName);
  assert.ok(created, 'the mirror pod exists');
  assert.equal(created.metadata.annotations?.['kubernetes.io/config.mirror'], 'hash-1');
  await assert.rejects(client.createMirrorPod(s), /already exists/);
  assert.equal(await client.deleteMirrorPod(fullName, 'another-uid'), false, 'another UID: not deleted');
  assert.ok(apiMirror(fullName));
  assert.equal(await client.deleteMirrorPod(fullName, created.metadata.uid), true);
  assert.equal(apiMirror(fullName), undefined, 'deleted at once');
  assert.equal(await client.deleteMirrorPod(fullName, undefined), false, 'nothing left to delete');
  await client.createMirrorPod(s);
  assert.equal(await client.deleteMirrorPod(fullName, undefined), true, 'no precondition');
  await assert.rejects(client.deleteMirrorPod('no-namespace', undefined), /failed to parse/);
}

describe('ApiMirrorClient against the test API server', () => {
  let server: TestApiServer;
  let rest: RestClient;
  let node: Node | undefined;
  let client: ApiMirrorClient;

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE, plainHttp: true });
    rest = new RestClient({
      config: { server: server.url, token: server.tokenFor(server.nodeUser) },
      qps: -1,
    });
    client = new ApiMirrorClient({
      client: rest,
      nodeName: NODE,
      getNode: () => node,
      requestTimeoutMs: 2000,
    });
  });
  after(async () => {
    rest.close();
    await server.stop();
  });

  test('without the node there is no owner to name: nothing is created', async () => {
    node = undefined;
    await assert.rejects(client.createMirrorPod(staticPod('early', 'h0')), {
      message: `failed to get node UID: UID unset for node ${NODE}`,
    });
    assert.equal(server.store.tryGet('pods', `early-${NODE}`, 'default'), undefined);
  });

  test('creates the mirror pod as upstream does, and deletes it with grace 0', async () => {
    node = server.store.create('nodes', { metadata: { name: NODE } }) as unknown as Node;
    const s = staticPod('web', 'h1');
    await client.createMirrorPod(s);
    const m = server.store.get('pods', `web-${NODE}`, 'default') as unknown as Pod;
    assert.notEqual(m.metadata.uid, s.metadata.uid, 'the server gives the mirror pod its own UID');
    assert.deepEqual(m.metadata.labels, { app: 'web' });
    assert.equal(m.metadata.annotations?.['kubernetes.io/config.mirror'], 'h1');
    assert.equal(m.metadata.annotations?.['kubernetes.io/config.hash'], 'h1');
    assert.equal(m.metadata.annotations?.['kubernetes.io/config.source'], 'file');
    assert.equal(m.metadata.annotations?.team, 'infra');
    assert.deepEqual(m.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: NODE, uid: node.metadata.uid, controller: true },
    ]);
    assert.equal(m.spec.nodeName, NODE);
    assert.equal(m.spec.serviceAccountName, undefined, 'a mirror pod gets no service account');
    assert.ok(!(m.spec.volumes ?? []).some((v) => v.name.startsWith('kube-api-access-')));
    const create = server.requests.find((r) => r.verb === 'create' && r.resource === 'pods');
    assert.equal(create?.user, server.nodeUser);

    // A pod with a grace period is still deleted at once, the UID as precondition.
    assert.equal(await client.deleteMirrorPod(podFullName(s), m.metadata.uid), true);
    assert.equal(server.store.tryGet('pods', `web-${NODE}`, 'default'), undefined);
  });

  test('the contract the fake follows too', async () => {
    await contract(client, (fullName) => {
      const { name, namespace } = parsePodFullName(fullName);
      return server.store.tryGet('pods', name, namespace) as unknown as Pod | undefined;
    });
  });

  test('an API server that does not answer: create throws, delete reports false, both within the deadline', async () => {
    await server.pause();
    try {
      const started = Date.now();
      await assert.rejects(client.createMirrorPod(staticPod('away', 'h9')));
      assert.equal(await client.deleteMirrorPod(`away-${NODE}_default`, undefined), false);
      assert.ok(Date.now() - started < 5000);
    } finally {
      await server.resume();
    }
  });
});

test('FakeMirrorClient follows the same contract', async () => {
  const fake = new FakeMirrorClient(NODE, 'node-uid');
  await contract(fake, (fullName) => fake.pods.get(fullName));
  assert.equal(fake.createCounts.get(`contract-${NODE}_default`), 3);
  fake.failing = true;
  await assert.rejects(fake.createMirrorPod(staticPod('x', 'h')));
  assert.equal(await fake.deleteMirrorPod(`x-${NODE}_default`, undefined), false);
});
