/**
 * The kubelet API as the built kubelet serves it (bin/tskubelet, wired in src/cmd/main.ts): a static
 * pod through the file source, then its logs, exec and port-forward on the HTTPS port, the previous
 * attempt's log after a restart, and the read-only port's upstream shape.
 */
import assert from 'node:assert/strict';
import https from 'node:https';
import { after, before, describe, test } from 'node:test';
import type { ContainerStatus, Pod } from '../../src/api/core-v1.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';
import { exitCodeOf, spdyPortForward, wsExec } from '../unit/server/stream-clients.js';

const ns = 'kapi-process';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
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

function status(p: Pod | undefined, name: string): ContainerStatus | undefined {
  return p?.status?.containerStatuses?.find((c) => c.name === name);
}

describe('the kubelet API served by the kubelet process', () => {
  let cri: CriInspector;
  let kubelet: KubeletProcess;
  let port: number;
  let podName: string;

  before(async () => {
    cri = await CriInspector.connect();
    port = await freePort();
    kubelet = new KubeletProcess({
      extraArgs: [
        `--port=${port}`,
        '--address=127.0.0.1',
        '--anonymous-auth=true',
        '--authentication-token-webhook=false',
        '--authorization-mode=AlwaysAllow',
      ],
    });
    await kubelet.start();
    podName = `api-${kubelet.nodeName}`;
    await kubelet.writeManifest(
      'api.yaml',
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'api', namespace: ns },
        spec: {
          terminationGracePeriodSeconds: 1,
          restartPolicy: 'Always',
          containers: [
            {
              name: 'web',
              image: 'busybox',
              imagePullPolicy: 'IfNotPresent',
              command: ['sh', '-c', 'echo hi > /tmp/index.html; exec httpd -f -p 8080 -h /tmp'],
            },
            // Each attempt prints its own stamp and fails after a while: the restart leaves a previous log.
            {
              name: 'counter',
              image: 'busybox',
              imagePullPolicy: 'IfNotPresent',
              command: ['sh', '-c', 'echo attempt-$(cut -d" " -f1 /proc/uptime); sleep 15; exit 1'],
            },
          ],
        },
      }),
    );
    await waitFor(
      'the pod to run, with counter restarted once',
      async () => {
        const p = await kubelet.pod('api');
        return status(p, 'web')?.state?.running &&
          (status(p, 'counter')?.restartCount ?? 0) >= 1 &&
          status(p, 'counter')?.state?.running
          ? p
          : undefined;
      },
      90_000,
      500,
    );
  });

  after(async () => {
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
  });

  test('/pods on the HTTPS port lists the static pod with its status', async () => {
    const r = await get(port, '/pods');
    assert.equal(r.status, 200);
    const list = JSON.parse(r.body) as { items: Pod[] };
    assert.ok(list.items.some((p) => p.metadata.name === podName && p.status?.phase === 'Running'));
  });

  test('containerLogs: current and previous attempts', async () => {
    const current = await get(port, `/containerLogs/${ns}/${podName}/counter`);
    assert.equal(current.status, 200);
    const previous = await get(port, `/containerLogs/${ns}/${podName}/counter?previous=true`);
    assert.equal(previous.status, 200);
    assert.match(current.body, /^attempt-[\d.]+\n$/);
    assert.match(previous.body, /^attempt-[\d.]+\n$/);
    assert.notEqual(current.body, previous.body);
  });

  test('exec over WebSocket v5 and port-forward over SPDY', async () => {
    const r = await wsExec(
      `https://127.0.0.1:${port}/exec/${ns}/${podName}/web?command=sh&command=-c&command=cat+/tmp/index.html%3B+exit+5&output=1&error=1`,
      ['v5.channel.k8s.io'],
      { tls: { rejectUnauthorized: false } },
    );
    assert.equal(r.stdout, 'hi\n');
    assert.equal(exitCodeOf(r), 5);
    const body = await spdyPortForward(
      `https://127.0.0.1:${port}/portForward/${ns}/${podName}`,
      8080,
      Buffer.from('GET /index.html HTTP/1.0\r\n\r\n'),
      {
        tls: { rejectUnauthorized: false },
      },
    );
    assert.match(body, /200 OK[\s\S]*hi/);
  });

  test('the read-only port answers as upstream: pods and metrics, debugging endpoints 405', async () => {
    const pods = await fetch(`http://127.0.0.1:${kubelet.readOnlyPort}/pods`);
    assert.equal(pods.status, 200);
    const metrics = await fetch(`http://127.0.0.1:${kubelet.readOnlyPort}/metrics`);
    assert.match(await metrics.text(), /kubelet_http_requests_total/);
    const exec = await fetch(`http://127.0.0.1:${kubelet.readOnlyPort}/exec/${ns}/${podName}/web`);
    assert.equal(exec.status, 405);
  });

  test("upstream's pod-start metrics count the start: one sandbox, two containers and a restart", async () => {
    const text = await (await fetch(`http://127.0.0.1:${kubelet.readOnlyPort}/metrics`)).text();
    const value = (series: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      assert.ok(line, `${series} is exposed`);
      return Number(line.slice(series.length + 1));
    };
    assert.equal(value('kubelet_started_pods_total'), 1);
    assert.equal(value('kubelet_started_pods_errors_total'), 0);
    assert.equal(value('kubelet_run_podsandbox_duration_seconds_count{runtime_handler=""}'), 1);
    assert.ok(value('kubelet_run_podsandbox_duration_seconds_sum{runtime_handler=""}') > 0);
    // web and counter, then counter again after its first exit.
    assert.ok(value('kubelet_started_containers_total{container_type="container"}') >= 3);
    assert.equal(value('kubelet_pod_worker_start_duration_seconds_count'), 1);
    // The PLEG has relisted, more than once, within the last minutes.
    assert.ok(value('kubelet_pleg_relist_interval_seconds_count') >= 1);
    assert.ok(Date.now() / 1000 - value('kubelet_pleg_last_seen_seconds') < 300);
    assert.ok(value('kubelet_pod_worker_duration_seconds_count{operation_type="create"}') >= 1);
  });
});
