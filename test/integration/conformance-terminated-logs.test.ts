/**
 * The logs of a container that has just succeeded stay readable through the kubelet API
 * until GC removes the container, as upstream's e2e framework reads them (MatchContainerOutput:
 * wait for the pod to succeed, then /containerLogs). The `[sig-storage] ConfigMap should be
 * consumable from pods in volume` spec failed here with `failed to try resolving symlinks in path
 * ".../0.log": ENOENT`. Several such pods run side by side, as the e2e suite runs them.
 */
import assert from 'node:assert/strict';
import https from 'node:https';
import { afterEach, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { busybox, ClusterNode, makePod } from '../helpers/conformance.js';
import { freePort } from '../helpers/ports.js';

const ns = `it-conf-tlogs-${process.pid}`;

function kubeletGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1',
      port,
      path,
      rejectUnauthorized: false,
      agent: false,
      timeout: 30_000,
    });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

function configMapPod(name: string): Pod {
  return makePod(ns, name, {
    restartPolicy: 'Never',
    volumes: [{ name: 'cm', configMap: { name: 'cm-data' } }],
    containers: [
      busybox('reader', `cat /etc/cm/data-1; echo " from ${name}"`, {
        volumeMounts: [{ name: 'cm', mountPath: '/etc/cm' }],
      }),
    ],
  });
}

describe('conformance: logs of a container that just succeeded', () => {
  let node: ClusterNode | undefined;

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  test('read through /containerLogs as soon as the pod succeeded, for pods run side by side', async () => {
    const port = await freePort();
    const n = (node = await ClusterNode.start(ns, [
      `--port=${port}`,
      '--address=127.0.0.1',
      '--anonymous-auth=true',
      '--authentication-token-webhook=false',
      '--authorization-mode=AlwaysAllow',
    ]));
    n.create('configmaps', { metadata: { name: 'cm-data' }, data: { 'data-1': 'value-1' } });

    const failures: string[] = [];
    const runOne = async (name: string): Promise<void> => {
      await n.createPod(configMapPod(name));
      await n.waitPod(name, 'Succeeded', (p) => p.status?.phase === 'Succeeded', 60_000, 100);
      const r = await kubeletGet(port, `/containerLogs/${ns}/${name}/reader`);
      if (r.status !== 200 || r.body !== `value-1 from ${name}\n`)
        failures.push(`${name}: ${r.status} ${JSON.stringify(r.body)}`);
      const containers = await n.cri.podContainers(ns, name);
      if (containers.length !== 1) failures.push(`${name}: ${containers.length} containers in the runtime`);
      await n.deletePod(name);
    };
    // Four at a time, as the e2e suite's four parallel processes.
    for (let batch = 0; batch < 4; batch++) {
      await Promise.all([0, 1, 2, 3].map((i) => runOne(`cm-${batch}-${i}`)));
    }
    assert.deepEqual(failures, []);
  });
});
