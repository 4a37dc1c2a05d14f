/**
 * The evented PLEG through the private containerd: with containerd's task events a container's
 * exit reaches the pod's status well before the next periodic relist (10 s while the stream is
 * open), and when containerd restarts (the stream breaks) the node goes on and later exits are
 * seen again. Each container waits for a file the test writes into a hostPath folder, so the test
 * knows when the exit happened. Sandboxes are removed by namespace afterwards.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import assert from 'node:assert/strict';
import type { ContainerStatus, Pod } from '../../src/api/core-v1.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-evented-${process.pid}`;

/** A pod whose one container runs until the file `stop-<name>` appears in triggers. */
function waitingPod(name: string, triggers: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'main',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', `until [ -e /triggers/stop-${name} ]; do sleep 0.05; done; exit 7`],
          volumeMounts: [{ name: 'triggers', mountPath: '/triggers' }],
        },
      ],
      volumes: [{ name: 'triggers', hostPath: { path: triggers, type: 'Directory' } }],
    },
  };
}

function mainStatus(p: Pod | undefined): ContainerStatus | undefined {
  return p?.status?.containerStatuses?.find((c) => c.name === 'main');
}

describe('evented PLEG through containerd', () => {
  let cri: CriInspector;
  let kubelet: KubeletProcess | undefined;
  let triggers: string;

  before(async () => {
    cri = await CriInspector.connect();
    triggers = mkdtempSync(join(tmpdir(), 'evented-pleg-it-'));
  });

  afterEach(async () => {
    await kubelet?.dispose();
    kubelet = undefined;
    await cri.removeNamespace(ns);
  });

  after(() => {
    cri.close();
    rmSync(triggers, { recursive: true, force: true });
  });

  /** Starts the pod, waits for it to run, ends its container and returns how long until the kubelet showed the exit. */
  async function exitSeenAfterMs(k: KubeletProcess, name: string): Promise<number> {
    await k.writeManifest(`${name}.yaml`, waitingPod(name, triggers));
    await waitFor(`${name} to run`, async () => mainStatus(await k.pod(name))?.state?.running, 60_000);
    const t0 = Date.now();
    await writeFile(join(triggers, `stop-${name}`), '');
    const terminated = await waitFor(
      `${name}'s exit to show in /pods`,
      async () => mainStatus(await k.pod(name))?.state?.terminated,
      20_000,
      50,
    );
    assert.equal(terminated.exitCode, 7);
    return Date.now() - t0;
  }

  test('an exit is seen well before the next periodic relist, and again after containerd restarts', async (t) => {
    kubelet = new KubeletProcess();
    const k = kubelet;
    await k.start();
    const firstMs = await exitSeenAfterMs(k, 'first');
    // The periodic relist runs every 10 s while the stream is open: only the events make this quick.
    assert.ok(firstMs < 5000, `the exit was seen after ${firstMs} ms`);
    assert.match(await k.logs(), /EventedPLEG: subscribing to containerd task events/);

    // The stream breaks with containerd; the PLEG relists every second meanwhile and subscribes again.
    await restartContainerd();
    assert.ok(k.isRunning(), 'the kubelet is still running');
    // The client re-subscribes with a back-off of at most 5 s: past it, the next pod's events flow.
    await new Promise((r) => setTimeout(r, 6000));
    const laterMs = await exitSeenAfterMs(k, 'later');
    assert.ok(laterMs < 5000, `the exit after the restart was seen after ${laterMs} ms`);
    t.diagnostic(`exit seen after ${firstMs} ms, and ${laterMs} ms after the containerd restart`);
    const logs = await k.logs();
    assert.match(logs, /EventedPLEG: the task event stream broke/);
    assert.match(logs, /EventedPLEG: containerd task events flow again/);
    assert.equal((await fetch(`http://127.0.0.1:${k.healthzPort}/healthz`)).status, 200);
  });
});

/** Stops only the containerd daemon (the shims and containers go on), then starts it with the stack script. */
async function restartContainerd(): Promise<void> {
  const stackDir = process.env.TSKUBELET_STACK_DIR ?? new URL('../../.stack', import.meta.url).pathname;
  const pid = Number((await readFile(`${stackDir}/containerd.pid`, 'utf8')).trim());
  process.kill(pid, 'SIGTERM');
  await waitFor(
    'containerd to exit',
    () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    },
    20_000,
    100,
  );
  const script = new URL('../../scripts/runtime-stack.sh', import.meta.url).pathname;
  await promisify(execFile)('bash', [script, 'up'], { timeout: 60_000 });
}
