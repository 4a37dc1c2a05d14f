/**
 * The cluster-mode half of the environment: configMapKeyRef, secretKeyRef and envFrom through the
 * API, optional references, upstream's CreateContainerConfigError messages for missing ones, the
 * service variables (the `kubernetes` service of `default` always, the namespace's own unless
 * enableServiceLinks is false), and resource limits that default to the Node's allocatable
 * (test/e2e/common/node/configmap.go, secrets.go, expansion.go, downwardapi.go; docs: "Environment
 * variables" of services).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { busybox, ClusterNode, containerStatus, makePod } from '../helpers/conformance.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-conf-envc-${process.pid}`;

function parseEnv(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) out.set(line.slice(0, i), line.slice(i + 1));
  }
  return out;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('conformance: the environment through the API', () => {
  let node: ClusterNode | undefined;

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  async function start(): Promise<ClusterNode> {
    const n = (node = await ClusterNode.start(ns));
    n.create('configmaps', {
      metadata: { name: 'settings', namespace: ns },
      data: { color: 'blue', size: 'L', 'bad key': 'x' },
    });
    n.create('secrets', {
      metadata: { name: 'creds', namespace: ns },
      type: 'Opaque',
      data: { user: b64('admin'), password: b64('s3cr3t') },
    });
    n.create(
      'services',
      {
        metadata: { name: 'kubernetes', namespace: 'default' },
        spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
      },
      'default',
    );
    n.create('services', {
      metadata: { name: 'my-db', namespace: ns },
      spec: { clusterIP: '10.96.0.20', ports: [{ port: 5432, protocol: 'TCP' }] },
    });
    n.create('services', {
      metadata: { name: 'headless', namespace: ns },
      spec: { clusterIP: 'None', ports: [{ port: 80, protocol: 'TCP' }] },
    });
    return n;
  }

  async function envOf(n: ClusterNode, p: Pod, container: string): Promise<Map<string, string>> {
    return parseEnv(await n.waitLogs(p, container, /PATH=/));
  }

  test('configMap and secret values, envFrom with a prefix, optional references, service variables', async () => {
    const n = await start();
    await n.createPod(
      makePod(ns, 'refs', {
        restartPolicy: 'Never',
        containers: [
          busybox('c', 'env', {
            envFrom: [
              { configMapRef: { name: 'settings' }, prefix: 'CFG_' },
              { secretRef: { name: 'creds' } },
            ],
            env: [
              { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'settings', key: 'color' } } },
              { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
              {
                name: 'OPTIONAL_MISSING_MAP',
                valueFrom: { configMapKeyRef: { name: 'nope', key: 'k', optional: true } },
              },
              {
                name: 'OPTIONAL_MISSING_KEY',
                valueFrom: { secretKeyRef: { name: 'creds', key: 'nokey', optional: true } },
              },
              { name: 'DB_URL', value: 'postgres://$(MY_DB_SERVICE_HOST):$(MY_DB_SERVICE_PORT)/$(CFG_size)' },
              // Env wins over envFrom.
              { name: 'user', value: 'overridden' },
            ],
          }),
        ],
      }),
    );
    await n.createPod(
      makePod(ns, 'unlinked', {
        restartPolicy: 'Never',
        enableServiceLinks: false,
        containers: [busybox('c', 'env')],
      }),
    );
    const refs = await n.waitPod('refs', 'Succeeded', (p) => p.status?.phase === 'Succeeded');
    const env = await envOf(n, refs, 'c');
    const want: Record<string, string> = {
      CFG_color: 'blue',
      CFG_size: 'L',
      password: 's3cr3t',
      user: 'overridden',
      COLOR: 'blue',
      PASSWORD: 's3cr3t',
      DB_URL: 'postgres://10.96.0.20:5432/L',
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      KUBERNETES_SERVICE_PORT_HTTPS: '443',
      KUBERNETES_PORT: 'tcp://10.96.0.1:443',
      KUBERNETES_PORT_443_TCP_ADDR: '10.96.0.1',
      MY_DB_SERVICE_HOST: '10.96.0.20',
      MY_DB_PORT_5432_TCP: 'tcp://10.96.0.20:5432',
    };
    for (const [k, v] of Object.entries(want)) assert.equal(env.get(k), v, k);
    for (const k of ['OPTIONAL_MISSING_MAP', 'OPTIONAL_MISSING_KEY', 'CFG_bad key', 'HEADLESS_SERVICE_HOST'])
      assert.equal(env.has(k), false, k);
    const invalid = await n.waitEvent('refs', 'InvalidEnvironmentVariableNames');
    assert.equal(
      invalid.message,
      `Keys [CFG_bad key] from the EnvFrom configMap ${ns}/settings were skipped since they are considered invalid environment variable names.`,
    );

    const unlinked = await envOf(
      n,
      await n.waitPod('unlinked', 'Succeeded', (p) => p.status?.phase === 'Succeeded'),
      'c',
    );
    assert.equal(unlinked.get('KUBERNETES_SERVICE_HOST'), '10.96.0.1', 'the master service always');
    assert.equal(unlinked.has('MY_DB_SERVICE_HOST'), false);
  });

  test('a missing required reference: CreateContainerConfigError with upstream message, until it appears', async () => {
    const n = await start();
    const refPod = (name: string, env: NonNullable<Pod['spec']['containers'][number]['env']>): Pod =>
      makePod(ns, name, { containers: [busybox('c', 'env; exec sleep 3600', { env })] });
    await n.createPod(
      refPod('no-map', [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'later', key: 'k' } } }]),
    );
    await n.createPod(
      refPod('no-secret', [{ name: 'X', valueFrom: { secretKeyRef: { name: 'gone', key: 'k' } } }]),
    );
    await n.createPod(
      refPod('no-key', [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'settings', key: 'k' } } }]),
    );
    const waiting = async (name: string) =>
      containerStatus(
        await n.waitPod(
          name,
          'CreateContainerConfigError',
          (p) => containerStatus(p, 'c')?.state?.waiting?.reason === 'CreateContainerConfigError',
        ),
        'c',
      )?.state?.waiting?.message;
    assert.equal(await waiting('no-map'), 'configmap "later" not found');
    assert.equal(await waiting('no-secret'), 'secret "gone" not found');
    assert.equal(await waiting('no-key'), `couldn't find key k in ConfigMap ${ns}/settings`);
    const failed = await n.waitEvent('no-map', 'Failed', 'spec.containers{c}');
    assert.equal(failed.message, 'Error: configmap "later" not found');

    // Once the configMap exists, the container starts (on a retry of the sync).
    n.create('configmaps', { metadata: { name: 'later', namespace: ns }, data: { k: 'v' } });
    const started = await n.waitPod('no-map', 'Running', (p) => p.status?.phase === 'Running', 60_000);
    assert.equal((await envOf(n, started, 'c')).get('X'), 'v');
  });

  test("a container without limits sees the Node's allocatable", async () => {
    const n = await start();
    await n.createPod(
      makePod(ns, 'limits', {
        restartPolicy: 'Never',
        containers: [
          busybox('c', 'env', {
            env: [
              { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } },
              { name: 'MEMORY', valueFrom: { resourceFieldRef: { resource: 'limits.memory' } } },
            ],
          }),
        ],
      }),
    );
    const done = await n.waitPod('limits', 'Succeeded', (p) => p.status?.phase === 'Succeeded');
    const env = await envOf(n, done, 'c');
    const nodeObj = await waitFor(
      'the registered Node',
      () =>
        n.server.store.tryGet('nodes', n.kubelet.nodeName) as
          { status?: { allocatable?: Record<string, string> } } | undefined,
      10_000,
    );
    const alloc = nodeObj.status?.allocatable ?? {};
    const milli = (q: string) => (q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000);
    assert.equal(Number(env.get('CPU')), milli(alloc.cpu ?? ''));
    const memoryUnits: Record<string, number> = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, '': 1 };
    const m = /^(\d+)(Ki|Mi|Gi|)$/.exec(alloc.memory ?? '');
    assert.ok(m, alloc.memory);
    assert.equal(Number(env.get('MEMORY')), Number(m[1]) * (memoryUnits[m[2] ?? ''] ?? 1));
  });
});
