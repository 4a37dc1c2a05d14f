/**
 * Container log rotation through the built kubelet and real containerd: a container writing about
 * 1 MiB/s keeps at most containerLogMaxFiles files (older ones gzipped) of about
 * containerLogMaxSize, and the kubelet API's containerLogs still answers across rotations.
 */
import assert from 'node:assert/strict';
import { readdir, stat } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { freePort } from '../helpers/ports.js';
import { sleep, waitFor } from '../helpers/wait.js';

const ns = 'logrotate-it';
const Mi = 1024 * 1024;
const MAX_FILES = 3;

function get(port: number, p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1',
      port,
      path: p,
      rejectUnauthorized: false,
      agent: false,
      timeout: 20_000,
    });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${p} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

describe('container log rotation through the kubelet process', () => {
  let cri: CriInspector;
  let kubelet: KubeletProcess;
  let port: number;

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
      extraConfig: [
        'containerLogMaxSize: 1Mi',
        `containerLogMaxFiles: ${MAX_FILES}`,
        'containerLogMonitorInterval: 3s',
      ],
    });
    await kubelet.start();
    await kubelet.writeManifest(
      'chatty.yaml',
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'chatty', namespace: ns },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'talker',
              image: 'busybox',
              imagePullPolicy: 'IfNotPresent',
              // 100 KiB of 1000-character lines every 0.1 s: about 1 MiB/s.
              command: [
                'sh',
                '-c',
                'i=0; while true; do i=$((i+1)); echo "batch $i"; head -c 102400 /dev/zero | tr \'\\0\' x | fold -w 1000; sleep 0.1; done',
              ],
            },
          ],
        },
      }),
    );
  });

  after(async () => {
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
  });

  test('at most containerLogMaxFiles files, older ones gzipped, and containerLogs still answers', async () => {
    const pod = await waitFor(
      'the pod to run',
      async () => {
        const p = await kubelet.pod('chatty');
        return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
      },
      30_000,
    );
    const dir = path.join(
      kubelet.podLogsDir,
      `${ns}_${pod.metadata.name ?? ''}_${pod.metadata.uid ?? ''}`,
      'talker',
    );
    const files = async () => (await readdir(dir)).filter((f) => !f.endsWith('.tmp'));
    await waitFor(
      'two rotations (a gzipped file)',
      async () => (await files()).some((f) => f.endsWith('.gz')) && (await files()).length === MAX_FILES,
      40_000,
      500,
    );
    // Watched over a few more rotations: never more than MAX_FILES, none far past the size limit
    // (it grows by about 3 MiB between two looks of the 3 s monitor).
    for (let i = 0; i < 8; i++) {
      const names = await files();
      assert.ok(names.length <= MAX_FILES, `${names.join(', ')}`);
      for (const n of names) {
        const { size } = await stat(path.join(dir, n)).catch(() => ({ size: 0 }));
        assert.ok(size < 6 * Mi, `${n} is ${size} bytes`);
        if (n !== '0.log') assert.match(n, /^0\.log\.\d{8}-\d{6}(\.gz)?$/);
      }
      await sleep(1000);
    }
    const logs = await get(port, `/containerLogs/${ns}/${pod.metadata.name ?? ''}/talker?tailLines=3`);
    assert.equal(logs.status, 200);
    assert.equal(logs.body.split('\n').filter((l) => l !== '').length, 3);
    assert.match(logs.body, /x{100}|batch \d+/);
  });
});
