/**
 * --lock-file through the built kubelet. A second kubelet with the same lock file
 * does not start while the first holds it (it says so and waits, as upstream's flock.Acquire
 * waits), and starts once the first is gone; with --exit-on-lock-contention the first exits when
 * the second asks for the lock, and the second takes over.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, describe, test } from 'node:test';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

describe('--lock-file', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tskubelet-lock-it-'));
  const lockFile = path.join(dir, 'kubelet.lock');
  const kubelets: KubeletProcess[] = [];
  const kubelet = (...extraArgs: string[]) => {
    const k = new KubeletProcess({ extraArgs: [`--lock-file=${lockFile}`, ...extraArgs] });
    kubelets.push(k);
    return k;
  };
  const healthy = async (k: KubeletProcess) =>
    fetch(`http://127.0.0.1:${k.healthzPort}/healthz`, { signal: AbortSignal.timeout(1000) }).then(
      (r) => r.status === 200,
      () => false,
    );

  afterEach(async () => {
    for (const k of kubelets.splice(0)) await k.dispose();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a second kubelet with the same --lock-file does not start; it starts once the first is gone', async () => {
    const first = kubelet();
    await first.start();
    const second = kubelet();
    await assert.rejects(second.start(), /timed out/);
    assert.ok(second.isRunning(), 'the second waits for the lock');
    assert.equal(await healthy(second), false);
    assert.match(
      await second.logs(),
      /The lock file is held by another process.*waiting until it is released/,
    );
    assert.ok(await healthy(first), 'the first runs on');

    assert.equal(await first.stop(), 0);
    await waitFor('the second kubelet to answer /healthz', () => healthy(second), 30_000);
    assert.match(await second.logs(), /Acquired file lock/);
  });

  test('--exit-on-lock-contention: the holder exits when another kubelet asks for the lock', async () => {
    const first = kubelet('--exit-on-lock-contention');
    await first.start();
    const firstExited = new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (!first.isRunning()) {
          clearInterval(check);
          resolve();
        }
      }, 100);
    });
    const second = kubelet();
    await second.start();
    await Promise.race([
      firstExited,
      new Promise((_, reject) => setTimeout(() => reject(new Error('first still running')), 15_000)),
    ]);
    assert.match(
      await first.logs(),
      /Lock file contention: exiting.*another process is waiting for the lock/,
    );
    assert.ok(await healthy(second));
  });
});
